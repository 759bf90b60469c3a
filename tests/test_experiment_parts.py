"""``autogp run configs/m3_all.toml``: an experiment made of parts (M3's four groups), each with
its own horizon, season, baselines and published results, checked against the data files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp.cli.main import app
from autogp.config import ConfigError
from autogp.experiments import run_experiment
from tests.test_forecast import install_fake_smc

ROOT = Path(__file__).resolve().parents[1]
M3_ALL = ROOT / "configs" / "m3_all.toml"
DATA = ROOT / "benchmarks" / "data"
# part: (data file, freq of its series, horizon, MASE season)
PARTS = {
    "m3_monthly": ("m3_monthly.csv.gz", None, 18, 12),
    "m3_quarterly": ("m3_other.csv.gz", "QS", 8, 4),
    "m3_yearly": ("m3_other.csv.gz", "YS", 6, 1),
    "m3_other": ("m3_other.csv.gz", "other", 8, 1),
}
LIMIT = 3
runner = CliRunner()


def _report_rows(text: str) -> dict[str, list[str]]:
    """The cells of each Markdown table row, by its first cell."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.setdefault(cells[0], cells[1:])
    return rows


def _scores(y, point, lo95, hi95, quantiles, y_train, season):
    """MASE, sMAPE, scaled CRPS (pinball over the quantiles) and 95% coverage, from scratch."""
    scale = np.mean(np.abs(y_train[season:] - y_train[:-season]))
    mase = np.mean(np.abs(y - point)) / scale
    smape = 200 * np.mean(np.abs(y - point) / (np.abs(y) + np.abs(point)))
    losses = [np.mean(np.maximum(tau * (y - q), (tau - 1) * (y - q))) for tau, q in quantiles]
    crps = 2 * np.mean(losses) / np.mean(np.abs(y))
    coverage = np.mean((lo95 <= y) & (y <= hi95))
    return np.array([mase, smape, crps, coverage])


def _model_scores(fc: pd.DataFrame, model: str, source: pd.DataFrame, season: int) -> np.ndarray:
    """Per-series means of the scores of ``model`` in ``fc`` (held-out rows with ``y``)."""
    per_series = []
    for uid, rows in fc.groupby("unique_id", sort=False):
        train = source[(source["unique_id"] == uid) & (source["split"] == "train")]
        quantiles = [(0.5, rows[model].to_numpy())]
        for level in (50, 80, 90, 95):
            a = (1 - level / 100) / 2
            quantiles += [(a, rows[f"{model}-lo-{level}"].to_numpy()),
                          (1 - a, rows[f"{model}-hi-{level}"].to_numpy())]
        per_series.append(_scores(rows["y"].to_numpy(), rows[model].to_numpy(),
                                  rows[f"{model}-lo-95"].to_numpy(),
                                  rows[f"{model}-hi-95"].to_numpy(), quantiles,
                                  train["y"].to_numpy(dtype=float), season))
    return np.mean(per_series, axis=0)


def _stamp(ds: pd.Series) -> pd.Series:
    """Time stamps as text, step numbers of the 'other' series as 9 whether written 9 or 9.0."""
    return ds.astype(str).str.replace(r"\.0$", "", regex=True)


@pytest.fixture(scope="module")
def sources():
    return {name: pd.read_csv(DATA / name) for name in ("m3_monthly.csv.gz", "m3_other.csv.gz")}


@pytest.fixture(scope="module")
def m3_all_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("m3_all")
    calls: list[tuple[str, int]] = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        # A tiny fixed model (the test is about the plumbing) that counts its fits.
        install_fake_smc(monkeypatch, calls=calls)
        args = ["run", str(M3_ALL), "--limit", str(LIMIT), "--output-dir", str(out), "--quiet",
                "--resume"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        first = {part: (out / part / "forecast.csv").read_bytes() for part in PARTS}
        fits = len(calls)
        again = runner.invoke(app, args)
        assert again.exit_code == 0, again.output
    return out, {"first": first, "fits": fits, "refits": len(calls) - fits}


def test_each_part_has_its_group_horizon_and_season(m3_all_run, sources):
    out, _ = m3_all_run
    for part, (file, freq, horizon, season) in PARTS.items():
        summary = json.loads((out / part / "summary.json").read_text())
        assert summary["horizons"] == [horizon] and summary["seasons"] == [season], part
        fc = pd.read_csv(out / part / "forecast.csv")
        assert (fc.groupby("unique_id").size() == horizon).all()
        ids = set(fc["unique_id"])
        assert len(ids) == LIMIT and summary["series"] == LIMIT
        source = sources[file]
        if freq is not None:
            assert set(source[source["unique_id"].isin(ids)]["freq"]) == {freq}
        test = source[source["unique_id"].isin(ids) & (source["split"] == "test")]
        np.testing.assert_allclose(fc.sort_values(["unique_id", "ds"])["y"],
                                   test.sort_values(["unique_id", "ds"])["y"])


def test_reports_match_scores_computed_from_the_files(m3_all_run, sources):
    out, _ = m3_all_run
    shipped = pd.read_csv(DATA / "m3_other_baselines.csv.gz")
    overall = _report_rows((out / "report.md").read_text())
    for part, (file, _, _, season) in PARTS.items():
        source = sources[file]
        fc = pd.read_csv(out / part / "forecast.csv")
        rows = _report_rows((out / part / "report.md").read_text())
        ours = _model_scores(fc, "AutoGP", source, season)
        np.testing.assert_allclose([float(v) for v in rows["AutoGP"][:4]], ours, atol=6e-5)
        # The overall report repeats AutoGP's four scores of each part.
        np.testing.assert_allclose([float(v) for v in overall[part][3:7]], ours, atol=6e-5)
        if file == "m3_other.csv.gz":
            # statsforecast's shipped forecasts, joined on the test rows' stamps by hand.
            joined = fc[["unique_id", "y"]].assign(ds=_stamp(fc["ds"])).merge(
                shipped.assign(ds=_stamp(shipped["ds"])), on=["unique_id", "ds"], how="left")
            assert joined["AutoETS"].notna().all()
            ets = _model_scores(joined, "AutoETS", source, season)
            np.testing.assert_allclose([float(v) for v in rows["AutoETS"][:4]], ets, atol=6e-5)
        else:
            assert "AutoETS" not in rows  # no --baselines and no shipped file
    monthly = (out / "m3_monthly" / "report.md").read_text()
    assert re.search(r"Published results.*\n\n.*\n.*\n\| TiRex \| mase \| 0\.8310 \| "
                     r"autogluon/fev", monthly)
    assert "Published" not in (out / "m3_other" / "report.md").read_text()
    assert overall["m3_yearly"][-1] == "TiRex 2.7100" and overall["m3_other"][-1] == "-"


def test_reports_link_their_figures(m3_all_run):
    out, _ = m3_all_run
    for part in PARTS:
        report = (out / part / "report.md").read_text()
        figures = ["metric_by_group.png", "structure_families.png"]
        if part == "m3_monthly":  # no --baselines and no shipped file: said, not drawn
            assert "the run has no baselines to compare with" in report
            assert not (out / part / "lost_and_won.png").exists()
        else:
            figures.append("lost_and_won.png")
        for name in figures:
            assert re.search(rf"!\[[^]]+\]\({name}\)", report), (part, name)  # shown
            assert (out / part / name).read_bytes()[:4] == b"\x89PNG"
    overall = (out / "report.md").read_text()
    for name in ("metric_by_group.png", "structure_families.png"):
        assert f"]({name})" in overall and (out / name).read_bytes()[:4] == b"\x89PNG"
    assert "lost_and_won" not in overall and "[m3_other](m3_other/report.md)" in overall


def test_resume_loads_every_part_and_gives_the_same_outputs(m3_all_run):
    out, run = m3_all_run
    assert run["fits"] == LIMIT * len(PARTS) and run["refits"] == 0
    for part in PARTS:
        assert (out / part / "forecast.csv").read_bytes() == run["first"][part]


def test_parts_must_have_distinct_names(tmp_path):
    part = tmp_path / "a.toml"
    part.write_text('[data]\npath = "x.csv"\n[experiment]\nname = "same"\n')
    config = tmp_path / "all.toml"
    config.write_text('[experiment]\nparts = ["a.toml", "a.toml"]\n')
    with pytest.raises(ConfigError, match="two parts are called 'same'"):
        run_experiment(config, quiet=True)


def test_settings_the_parts_would_ignore_are_an_error(tmp_path):
    config = tmp_path / "all.toml"
    config.write_text('[smc]\nnum_particles = 8\n[experiment]\nparts = ["a.toml"]\n')
    with pytest.raises(ConfigError, match=r"smc is set in an experiment with parts.*--set"):
        run_experiment(config, quiet=True)


def test_a_group_absent_from_the_file_is_named(tmp_path):
    config = tmp_path / "q.toml"
    config.write_text(
        f'[data]\npath = "{(DATA / "m3_other.csv.gz").as_posix()}"\nid_col = "unique_id"\n'
        '[experiment]\ngroup_col = "freq"\ngroup_value = "MS"\n')
    with pytest.raises(ValueError, match=r"no series has freq = 'MS'.*'QS'"):
        run_experiment(config, quiet=True)
