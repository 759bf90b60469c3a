"""The progress of long commands: series done, failed, time spent and an estimate of the time
left, in the bar or, where stderr is not a terminal, as a plain line every few series; nothing
under --quiet."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from autogp import AutoGP
from autogp.cli.main import app
from autogp.data import from_arrays
from autogp.parallel import fit_panel
from autogp.parallel.progress import (
    SeriesProgress,
    duration_text,
    estimate_text,
    progress_bar,
    time_left,
)
from tests.test_forecast import install_fake_smc
from tests.test_parallel import install_smc_failing_on_seven_points

LINE = re.compile(r"autogp: (\d+)/(\d+) (series|windows), (\d+) failed, (\S+) spent"
                  r"(?:, (about \S+) left)?")


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_time_left_is_the_pace_so_far_and_none_before_the_first_series():
    assert time_left(0, 120, 35.0) is None
    assert time_left(40, 120, 192.0) == pytest.approx(384.0)  # 4.8 s a series, 80 to go
    assert time_left(120, 120, 600.0) == 0.0
    assert time_left(0, 0, 1.0) is None
    assert [duration_text(s) for s in (4.6, 192, 3700)] == ["5s", "3m12s", "1h01m"]
    assert [estimate_text(s) for s in (3, 44, 384, 4800)] == [
        "about 3s", "about 40s", "about 6m", "about 1h20m"]


def _lines(text: str) -> list[tuple]:
    return [m.groups() for m in map(LINE.fullmatch, text.splitlines()) if m]


def test_without_a_terminal_a_plain_line_every_few_series_counts_the_failed_ones():
    stream, clock = io.StringIO(), FakeClock()
    with progress_bar(True, Console(file=stream, width=100)) as bar:
        progress = SeriesProgress(bar, 120, clock=clock)
        for k in range(12):  # chunks of 10 series, 19.2 s each; one failure in two chunks
            clock.t += 19.2
            progress.advance(10, failed=int(k in (1, 5)))
            if k == 3:
                assert progress.line() == ("autogp: 40/120 series, 1 failed, 1m17s spent, "
                                           "about 3m left")
    lines = _lines(stream.getvalue())
    assert [int(done) for done, *_ in lines] == list(range(10, 121, 10))
    assert [int(line[3]) for line in lines] == [0] + [1] * 4 + [2] * 7
    assert lines[-1] == ("120", "120", "series", "2", "3m50s", None)  # no estimate at the end
    assert all(left is not None for *_, left in lines[:-1])


def test_resumed_series_count_as_done_but_not_in_the_pace():
    stream, clock = io.StringIO(), FakeClock()
    with progress_bar(True, Console(file=stream, width=100)) as bar:
        progress = SeriesProgress(bar, 19, resumed=10, unit="windows", clock=clock, every=1)
        assert progress.left() is None  # loaded from the resume folder: no pace yet
        clock.t += 30.0
        progress.advance(1)
    (line,) = _lines(stream.getvalue())
    assert line == ("11", "19", "windows", "0", "30s", "about 4m")  # 8 left at 30 s each


def test_a_terminal_gets_the_bar_alone():
    stream = io.StringIO()
    console = Console(file=stream, width=100, force_terminal=True)
    with progress_bar(True, console) as bar:
        progress = SeriesProgress(bar, 4, clock=FakeClock(), every=1)
        for _ in range(4):
            progress.advance(1, failed=1)
    assert not _lines(stream.getvalue()) and "4 failed" in stream.getvalue()


def test_a_panel_fit_says_how_many_series_failed(monkeypatch, capsys):
    install_smc_failing_on_seven_points(monkeypatch)
    series = [from_arrays(np.arange(float(n)), np.sin(np.arange(float(n))), unique_id=u)
              for u, n in (("a", 10), ("bad", 7), ("c", 11))]
    config = AutoGP(particles=2).config
    result = fit_panel(config, series, progress=True, workers=1)
    assert set(result.errors) == {"bad"}
    lines = _lines(capsys.readouterr().err)
    assert lines[-1][:4] == ("3", "3", "series", "1")


def test_quiet_commands_say_nothing_on_stderr(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    rng = np.random.default_rng(0)
    panel = pd.concat([pd.DataFrame({"unique_id": u, "ds": np.arange(30.0),
                                     "y": rng.normal(size=30).cumsum()}) for u in "abc"])
    path = tmp_path / "panel.csv"
    panel.to_csv(path, index=False)
    fit = ["fit", str(path), "--horizon", "2", "--output", str(tmp_path / "fc.csv")]
    cv = ["cv", str(path), "--horizon", "2", "--windows", "2", "--output",
          str(tmp_path / "cv.csv")]
    for args, unit, total in ((fit, "series", 3), (cv, "windows", 6)):
        loud = CliRunner().invoke(app, args)
        assert loud.exit_code == 0, loud.output
        assert _lines(loud.stderr)[-1][:4] == (str(total), str(total), unit, "0")
        quiet = CliRunner().invoke(app, [*args, "--quiet"])
        assert quiet.exit_code == 0, quiet.output
        assert quiet.stderr == ""
