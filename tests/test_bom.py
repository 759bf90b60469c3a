"""CSV files that start with a UTF-8 byte-order mark (Excel's "CSV UTF-8"): every reader of a
CSV header reads them as the same file without the mark (issue 66). Each marked file sits in
its own folder under the plain file's name, so forecasts (named by the file) compare byte for
byte; most checks compare what the readers parse, a few run the command line. Config files
with the mark (Notepad writes one) read as the same file without it; and CSV files that are
not UTF-8 read everywhere as :func:`autogp.read_csv` reads them (Latin-1 with its warning, or
its error under ``data.strict``), the covariates and ``--future`` included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP
from autogp.cli.main import app
from autogp.cli.options import read_future
from autogp.config import Config, load_config, loads_config
from autogp.data import AutoGPDataWarning, DataError, read_csv
from autogp.data.header import csv_columns, read_frame
from autogp.experiments.runner import group_members, panel_ids
from autogp.experiments.sampling import read_strata
from autogp.forecast.reading import read_panel, read_series
from tests.helpers import temperature_frame
from tests.test_forecast import install_fake_smc

AIRLINE = "examples/data/airline.csv"
QUICK = "configs/quick.toml"
# (separator, line end): what Excel writes in comma and semicolon locales, on Windows or not.
VARIANTS = {"comma-lf": (",", "\n"), "comma-crlf": (",", "\r\n"), "semicolon-lf": (";", "\n"),
            "semicolon-crlf": (";", "\r\n")}  # fmt: skip
KERNEL = "LIN(intercept=0.5; bias=1.0, amp=1.0) + LIN[temp](amp=1.0)"
N_COV, H = 40, 6

runner = CliRunner()


def _frames() -> dict[str, pd.DataFrame]:
    """The files' contents: a series, a panel (id first, as statsforecast writes it), the panel
    with a split, a calendar and a category (for ``autogp run``), training rows with a
    covariate and its future values."""
    air = pd.read_csv(AIRLINE)[["ds", "y"]]
    split = ["train"] * 132 + ["test"] * 12
    panel = pd.concat([air.assign(unique_id=uid, y=air["y"] * k, split=split, freq="MS",
                                  category=cat)
                       for uid, k, cat in (("A", 1, "X"), ("B", 2, "X"), ("C", 3, "Y"))])
    cov = temperature_frame(N_COV + H)
    cov["ds"] = cov["ds"].dt.strftime("%Y-%m-%d")
    return {
        "series.csv": air,
        "panel.csv": panel[["unique_id", "ds", "y"]],
        "run.csv": panel[["unique_id", "ds", "y", "split", "freq", "category"]],
        "train.csv": cov.iloc[:N_COV],
        "future.csv": cov.iloc[N_COV:][["ds", "temp"]],
    }


def _write(folder: Path, sep: str, newline: str, bom: bool) -> Path:
    folder.mkdir(parents=True)
    for name, frame in _frames().items():
        text = frame.to_csv(index=False, sep=sep, lineterminator=newline)
        (folder / name).write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return folder


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("bom") / "plain", ",", "\n", bom=False)


@pytest.fixture(scope="module", params=list(VARIANTS))
def marked(request, tmp_path_factory) -> Path:
    sep, newline = VARIANTS[request.param]
    folder = _write(tmp_path_factory.mktemp("bom") / request.param, sep, newline, bom=True)
    assert (folder / "series.csv").read_bytes().startswith(b"\xef\xbb\xbfds" + sep.encode())
    return folder


def _same_series(a, b) -> None:
    assert [s.unique_id for s in a] == [s.unique_id for s in b]
    for s, p in zip(a, b, strict=True):
        np.testing.assert_array_equal(s.t, p.t)
        np.testing.assert_array_equal(s.y, p.y)
        if p.covariates is None:
            assert s.covariates is None
        else:
            pd.testing.assert_frame_equal(s.covariates, p.covariates)


# ---- the readers, on every variant ------------------------------------------------------------
def test_headers_and_frames(marked, plain):
    for name in _frames():
        columns = csv_columns(plain / name)
        assert csv_columns(marked / name) == columns
        frame = read_frame(marked / name)
        assert list(frame.columns) == columns
        pd.testing.assert_frame_equal(frame, read_frame(plain / name))


def test_series_panels_and_covariates_read_as_without_the_mark(marked, plain):
    config = Config()
    _same_series(read_series(marked / "series.csv", config), read_series(plain / "series.csv",
                                                                          config))
    covariates = read_series(marked / "train.csv", config)
    assert list(covariates[0].covariates.columns) == ["temp"]
    _same_series(covariates, read_series(plain / "train.csv", config))
    series, errors = read_panel(marked / "panel.csv", config)
    assert [s.unique_id for s in series] == ["A", "B", "C"] and errors == {}
    _same_series(series, read_panel(plain / "panel.csv", config)[0])
    future = read_future(marked / "future.csv", None, None, config)
    assert list(future.columns) == ["ds", "temp"]
    pd.testing.assert_frame_equal(future, read_future(plain / "future.csv", None, None, config))


def test_a_panel_with_a_bad_series_still_reads_its_other_series(marked, plain, tmp_path):
    # The whole read fails on C (too short); the series are then read one by one from a
    # frame of the file, which needs the id column by its name.
    panel = pd.read_csv(plain / "panel.csv")
    panel = panel[(panel["unique_id"] != "C") | (panel.groupby("unique_id").cumcount() < 2)]
    sep, newline = VARIANTS[marked.name]
    text = panel.to_csv(index=False, sep=sep, lineterminator=newline)
    (tmp_path / "marked.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    panel.to_csv(tmp_path / "plain.csv", index=False)
    series, errors = read_panel(tmp_path / "marked.csv", Config())
    assert [s.unique_id for s in series] == ["A", "B"] and list(errors) == ["C"]
    _same_series(series, read_panel(tmp_path / "plain.csv", Config())[0])


def test_autogp_run_reads_the_ids_groups_and_strata(marked, plain):
    # Its calendars (data.freq_col) are read in test_cli_run_on_a_marked_panel.
    config = load_config(overrides={"data.id_col": "unique_id",
                                    "experiment.group_col": "category",
                                    "experiment.group_value": "X"})
    assert group_members(marked / "run.csv", config) == {"A", "B"}
    assert panel_ids(marked / "run.csv", config) == ["A", "B", "C"]
    assert panel_ids(plain / "run.csv", config) == ["A", "B", "C"]
    if VARIANTS[marked.name][0] == ",":  # the strata are read from comma-separated files only
        assert read_strata(marked / "run.csv", "unique_id") == {"A": "X", "B": "X", "C": "Y"}


# ---- the command line ------------------------------------------------------------------------
def _fit(folder: Path, *args: str) -> str:
    result = runner.invoke(app, ["fit", str(folder / "series.csv"), "--horizon", "3", "--quiet",
                                 *args])  # a later --horizon wins
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def plain_fits(plain) -> dict[str, str]:
    """The command line's outputs on the plain files, with the stand-in engine."""
    with pytest.MonkeyPatch.context() as mp:
        install_fake_smc(mp)
        return {"series": _fit(plain), "panel": _cli(["fit", str(plain / "panel.csv"),
                                                      "--horizon", "3"]),
                "covariates": _covariate_fit(plain)}


def _cli(args: list[str]) -> str:
    # fit and run print progress notes unless quiet; forecast prints none.
    result = runner.invoke(app, args + (["--quiet"] if args[0] != "forecast" else []))
    assert result.exit_code == 0, result.output
    return result.stdout


def _covariate_fit(folder: Path) -> str:
    return _cli(["fit", str(folder / "train.csv"), "--horizon", str(H), "--future",
                 str(folder / "future.csv")])


def test_cli_fit_forecasts_as_without_the_mark(marked, plain_fits, monkeypatch):
    install_fake_smc(monkeypatch)
    assert _fit(marked) == plain_fits["series"]
    panel = _cli(["fit", str(marked / "panel.csv"), "--horizon", "3"])
    assert panel == plain_fits["panel"] and "\nB," in panel
    assert _covariate_fit(marked) == plain_fits["covariates"]


def test_cli_forecast_reads_a_marked_future_file(marked, plain, tmp_path):
    # A fit whose forecast moves with the covariate: the future file's values are read.
    model = AutoGP.from_kernels(plain / "train.csv", [KERNEL], noise=0.05)
    saved = model.save(tmp_path / "model.autogp")
    args = ["forecast", str(saved), "--horizon", str(H), "--future"]
    forecast = _cli([*args, str(marked / "future.csv")])
    assert forecast == _cli([*args, str(plain / "future.csv")])
    warmer = _frames()["future.csv"].assign(temp=lambda f: f["temp"] + 1.0)
    warmer.to_csv(tmp_path / "warmer.csv", index=False)
    assert _cli([*args, str(tmp_path / "warmer.csv")]) != forecast


def test_cli_run_on_a_marked_panel(tmp_path, monkeypatch):
    # The readers are compared on every variant above; one run, on the variant that differs
    # most from the plain file, is enough.
    install_fake_smc(monkeypatch)
    marked = _write(tmp_path / "semicolon-crlf", ";", "\r\n", bom=True)
    plain = _write(tmp_path / "plain", ",", "\n", bom=False)
    outputs = []
    for folder in (marked, plain):
        config = tmp_path / f"{folder.name}.toml"
        mark = "\ufeff" if folder is marked else ""  # Notepad marks the config too
        config.write_text(mark + f"""
[data]
path = "{(folder / "run.csv").as_posix()}"
id_col = "unique_id"
split_col = "split"
freq_col = "freq"

[output]
dir = "{(tmp_path / f"out-{folder.name}").as_posix()}"
plot = ""
model = ""

[experiment]
group_col = "category"
group_value = "X"
metrics = ["mase"]
""", encoding="utf-8")
        _cli(["run", str(config), "--limit", "1"])
        outputs.append(pd.read_csv(tmp_path / f"out-{folder.name}" / "forecast.csv"))
    assert len(outputs[0]) == 12 and outputs[0]["unique_id"].nunique() == 1
    pd.testing.assert_frame_equal(*outputs)


# ---- config files -----------------------------------------------------------------------------
CONFIG = 'seed = 3\n\n[smc]\nnum_particles = 8\n\n[forecast]\nlevels = [50]\n'


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_marked_config_reads_as_the_plain_one(tmp_path, newline):
    text = CONFIG.replace("\n", newline)
    (tmp_path / "plain.toml").write_bytes(text.encode())
    (tmp_path / "marked.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    plain = load_config(tmp_path / "plain.toml")
    assert (plain.seed, plain.smc.num_particles, plain.forecast.levels) == (3, 8, (50,))
    assert load_config(tmp_path / "marked.toml") == plain
    assert Config.load(tmp_path / "marked.toml", {"seed": 4}) == plain.with_overrides({"seed": 4})
    assert loads_config("\ufeff" + text) == plain  # a marked file read as UTF-8 text


def test_cli_fit_reads_a_marked_config(plain, tmp_path, monkeypatch):
    # autogp run reads its marked config in test_cli_run_on_a_marked_panel.
    install_fake_smc(monkeypatch)
    (tmp_path / "plain.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "marked.toml").write_text("\ufeff" + CONFIG, encoding="utf-8")
    forecast = _fit(plain, "--config", str(tmp_path / "marked.toml"))
    assert "-lo-50" in forecast.splitlines()[0]  # the config's levels
    assert forecast == _fit(plain, "--config", str(tmp_path / "plain.toml"))


# ---- files that are not UTF-8 --------------------------------------------------------------------
TIME, COVARIATE = "année", "température"  # not ASCII: Latin-1 and UTF-8 write them differently


def _encoded(folder: Path, encoding: str) -> Path:
    """The covariate files (train.csv, future.csv) with French column names, in ``encoding``."""
    folder.mkdir(parents=True)
    frames = _frames()
    for name in ("train.csv", "future.csv"):
        frame = frames[name].rename(columns={"ds": TIME, "temp": COVARIATE})
        (folder / name).write_bytes(frame.to_csv(index=False).encode(encoding))
    return folder


@pytest.fixture
def latin1(tmp_path) -> Path:
    return _encoded(tmp_path / "latin-1", "latin-1")


@pytest.fixture
def utf8(tmp_path) -> Path:
    return _encoded(tmp_path / "utf-8", "utf-8")


def _encoding_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught
            if issubclass(w.category, AutoGPDataWarning) and "not UTF-8" in str(w.message)]


def test_a_latin1_file_reads_as_the_main_reader_reads_it(latin1, utf8):
    config = load_config(overrides={"data.time_col": TIME})
    assert csv_columns(latin1 / "train.csv") == [TIME, "y", COVARIATE]
    with pytest.warns(AutoGPDataWarning) as caught:
        series = read_series(latin1 / "train.csv", config)
    # The main reader's warning, once: the covariate reader reads the same file again.
    assert _encoding_warnings(caught) == [
        f"{latin1 / 'train.csv'}: not UTF-8 text (byte 0xe9 at offset 3); reading it as Latin-1"]
    assert list(series[0].covariates.columns) == [COVARIATE]
    _same_series(series, read_series(utf8 / "train.csv", config))

    with pytest.warns(AutoGPDataWarning) as main:
        read_csv(latin1 / "future.csv", TIME, COVARIATE)
    with pytest.warns(AutoGPDataWarning) as caught:
        future = read_future(latin1 / "future.csv", None, None, config)
    assert _encoding_warnings(caught) == _encoding_warnings(main) != []
    pd.testing.assert_frame_equal(future, read_future(utf8 / "future.csv", None, None, config))
    assert list(future.columns) == ["ds", COVARIATE]


def test_a_latin1_file_under_strict_is_refused_naming_the_file(latin1):
    config = load_config(overrides={"data.time_col": TIME, "data.strict": True})
    with pytest.raises(DataError, match="not UTF-8 text"):
        read_series(latin1 / "train.csv", config)
    with pytest.raises(DataError) as main:
        read_csv(latin1 / "future.csv", TIME, COVARIATE, strict=True)
    with pytest.raises(DataError) as future:
        read_future(latin1 / "future.csv", None, None, config)
    assert str(future.value) == f"--future {main.value}"
    assert str(main.value).startswith(f"{latin1 / 'future.csv'}: not UTF-8 text")
    with pytest.raises(DataError) as frame:
        read_frame(latin1 / "train.csv", strict=True)
    assert frame.value.source == str(latin1 / "train.csv")


def _covariate_fit_of(train: Path, future: Path, *args: str):
    return runner.invoke(app, ["fit", str(train), "--time-col", TIME, "--horizon", str(H),
                               "--future", str(future), "--quiet", *args])


def test_cli_fit_on_latin1_files_forecasts_as_on_utf8_ones(latin1, utf8, monkeypatch):
    install_fake_smc(monkeypatch)
    with pytest.warns(AutoGPDataWarning) as caught:
        result = _covariate_fit_of(latin1 / "train.csv", latin1 / "future.csv")
    assert result.exit_code == 0, result.output
    assert [m.split(":")[0] for m in _encoding_warnings(caught)] == [
        str(latin1 / "future.csv"), str(latin1 / "train.csv")]
    plain = _covariate_fit_of(utf8 / "train.csv", utf8 / "future.csv")
    assert plain.exit_code == 0, plain.output
    assert result.stdout == plain.stdout


def test_cli_fit_strict_refuses_a_latin1_future_file(latin1, utf8, monkeypatch):
    install_fake_smc(monkeypatch)
    result = _covariate_fit_of(utf8 / "train.csv", latin1 / "future.csv", "--strict")
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith(f"error: --future {latin1 / 'future.csv'}: not UTF-8 text "
                                    "(byte 0xe9 at offset "), result.stderr
    assert "re-save the file as UTF-8" in result.stderr and result.stdout == ""


@pytest.mark.slow
def test_cli_fit_with_the_real_engine(tmp_path):
    # One full search on the variant that differs most from the plain file, with the settings
    # of test_cli's real-engine fit (same series): the session's cache holds their programs.
    marked = _write(tmp_path / "semicolon-crlf", ";", "\r\n", bom=True)
    plain = _write(tmp_path / "plain", ",", "\n", bom=False)
    args = ["--config", QUICK, "--horizon", "18", "--seed", "7"]
    forecast = _fit(marked, *args)
    assert forecast.count("\n") == 19
    assert forecast == _fit(plain, *args)
