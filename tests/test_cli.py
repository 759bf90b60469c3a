"""The ``autogp`` command line, through typer's CliRunner.

Fast tests use a stand-in SMC engine (fixed particles); ``test_fit_end_to_end_with_the_real_engine``
runs the real one on the airline data with configs/quick.toml.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, __version__
from autogp.cli.main import app
from tests.test_forecast import FAKE_TEXTS, install_fake_smc

AIRLINE = "examples/data/airline.csv"
QUICK = "configs/quick.toml"
COLUMNS = ["unique_id", "ds", "AutoGP", "AutoGP-lo-95", "AutoGP-lo-80", "AutoGP-hi-80",
           "AutoGP-hi-95"]  # fmt: skip

runner = CliRunner()


def _check_forecast(df: pd.DataFrame, rows: int) -> None:
    assert list(df.columns) == COLUMNS
    assert len(df) == rows
    values = df[COLUMNS[2:]].to_numpy()
    assert np.all(np.isfinite(values))
    lo95, lo80, mean, hi80, hi95 = (df[c].to_numpy() for c in COLUMNS[3:5] + COLUMNS[2:3]
                                    + COLUMNS[5:])  # fmt: skip
    assert np.all(lo95 <= lo80) and np.all(lo80 <= mean) and np.all(mean <= hi80)
    assert np.all(hi80 <= hi95)


def _one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def saved_model(tmp_path):
    model = AutoGP.from_kernels(pd.read_csv(AIRLINE), FAKE_TEXTS, weights=[0.7, 0.3])
    return model.save(tmp_path / "model.autogp")


# ---- basics ----------------------------------------------------------------------------------
def test_help_and_version():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("fit", "forecast", "explain", "run"):
        assert command in result.stdout
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"autogp {__version__}"
    assert runner.invoke(app, ["fit", "--help"]).exit_code == 0


# ---- fit with a stand-in engine --------------------------------------------------------------
def test_fit_headerless_csv_to_stdout(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    src = pd.read_csv(AIRLINE)
    path = tmp_path / "noheader.csv"
    path.write_text("".join(f"{d},{y}\n" for d, y in zip(src["ds"], src["y"], strict=True)))
    result = runner.invoke(app, ["fit", str(path), "--horizon", "18", "--quiet"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(io.StringIO(result.stdout))
    _check_forecast(df, 18)
    assert df["ds"].iloc[0] == "1961-01-01"


def test_fit_panel_levels_quantiles_and_outputs(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    src = pd.read_csv(AIRLINE)
    panel = pd.concat([src.assign(id="a"), src.assign(id="b", y=src["y"] + 10)])
    path = tmp_path / "panel.csv"
    panel.to_csv(path, index=False)
    out, plot, comps = tmp_path / "fc.csv", tmp_path / "fc.png", tmp_path / "comp.png"
    saved = tmp_path / "m.autogp"
    args = ["fit", str(path), "--id-col", "id", "--horizon", "6", "-l", "50", "-l", "90",
            "--output", str(out), "--plot", str(plot), "--save", str(saved),
            "--explain"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "Posterior over kernel structures" in result.stderr
    df = pd.read_csv(out)
    assert list(df.columns) == ["unique_id", "ds", "AutoGP", "AutoGP-lo-90", "AutoGP-lo-50",
                                "AutoGP-hi-50", "AutoGP-hi-90"]  # fmt: skip
    assert df["unique_id"].tolist() == ["a"] * 6 + ["b"] * 6
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = runner.invoke(app, ["forecast", str(saved), "--horizon", "3", "-q", "0.1", "-q",
                                 "0.9"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(io.StringIO(result.stdout))
    assert list(df.columns) == ["unique_id", "ds", "AutoGP", "AutoGP-q-10", "AutoGP-q-90"]
    assert len(df) == 6
    single = tmp_path / "single.csv"
    src.to_csv(single, index=False)
    result = runner.invoke(app, ["fit", str(single), "--quiet", "-o", str(out), "--components",
                                 str(comps)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert comps.stat().st_size > 0


# ---- user errors: one line, exit code 2 ------------------------------------------------------
def test_bad_inputs_give_one_line_errors(tmp_path, saved_model):
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("a,b\nx,1\n")
    line = _one_line_error(runner.invoke(app, ["fit", str(bad_csv)]))
    assert "no column 'ds'" in line
    line = _one_line_error(runner.invoke(app, ["fit", AIRLINE, "--set", "smc.num_particle=3"]))
    assert "did you mean 'smc.num_particles'" in line
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[smc]\nnum_particles = 0\n")
    line = _one_line_error(runner.invoke(app, ["fit", AIRLINE, "--config", str(bad_toml)]))
    assert "smc.num_particles" in line
    line = _one_line_error(runner.invoke(app, ["forecast", str(tmp_path / "none.autogp")]))
    assert "not found" in line
    broken = tmp_path / "broken.autogp"
    broken.write_bytes(saved_model.read_bytes()[:100])
    line = _one_line_error(runner.invoke(app, ["explain", str(broken)]))
    assert "not a valid autogp model file" in line


def test_explain_table(saved_model):
    result = runner.invoke(app, ["explain", str(saved_model)])
    assert result.exit_code == 0, result.output
    assert "70.0%" in result.stdout and "LIN + PER * LIN" in result.stdout
    words = " ".join(result.stdout.replace("│", " ").split())
    assert "yearly" in words and "seasonality" in words
    assert "PER(l=1, period=12; amp=" in result.stdout  # full expression, not wrapped


def test_explain_says_when_a_fit_saw_only_its_window(tmp_path):
    model = AutoGP.from_kernels(pd.read_csv(AIRLINE), FAKE_TEXTS, weights=[0.7, 0.3],
                                overrides={"data.window": 100})
    path = model.save(tmp_path / "windowed.autogp")
    result = runner.invoke(app, ["explain", str(path)])
    assert result.exit_code == 0, result.output
    assert "fitted on the last 100 of 144 observations (data.window)" in result.stdout


def test_interrupted_write_leaves_the_previous_output_intact(saved_model, tmp_path, monkeypatch):
    out = tmp_path / "fc.csv"
    assert runner.invoke(app, ["forecast", str(saved_model), "-o", str(out)]).exit_code == 0
    before = out.read_bytes()
    original = pd.DataFrame.to_csv

    def failing_to_csv(self, path_or_buf=None, *args, **kwargs):
        text = original(self, None, *args, **kwargs)
        path_or_buf.write(text[: len(text) // 2])  # half the file, then the "crash"
        raise KeyboardInterrupt("interrupted while writing")

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing_to_csv)
    result = runner.invoke(app, ["forecast", str(saved_model), "--horizon", "30", "-o", str(out)])
    assert result.exit_code != 0
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fc.csv", "model.autogp"]


# ---- autogp run ------------------------------------------------------------------------------
def test_run_experiment_with_split_column(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    src = pd.read_csv(AIRLINE)
    src["split"] = ["train"] * 126 + ["test"] * 18
    data = tmp_path / "split.csv"
    src.to_csv(data, index=False)
    config = tmp_path / "exp.toml"
    config.write_text(
        f"""
[data]
path = "{data.name}"
split_col = "split"

[forecast]
levels = [80, 95]

[output]
dir = "{(tmp_path / "out").as_posix()}"
plot = "forecast.png"
model = "model.autogp"

[experiment]
name = "split-test"
metrics = ["smape", "mase", "coverage", "lpd"]
"""
    )
    result = runner.invoke(app, ["run", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    for word in ("smape", "mase", "coverage_95", "lpd_per_point"):
        assert word in result.stdout
    out = tmp_path / "out"
    assert {p.name for p in out.iterdir()} == {"forecast.csv", "metrics.csv", "summary.json",
                                              "model.autogp", "forecast.png", "train.csv",
                                              "structures.csv", "report.md", "scores.csv",
                                              "metric_by_group.png",
                                              "structure_families.png"}  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["comparison"]) == {"AutoGP"}
    assert summary["comparison"]["AutoGP"]["smape"] == pytest.approx(summary["metrics"]["smape"])
    assert np.isfinite(summary["metrics"]["crps_mixture_scaled"])
    fc = pd.read_csv(out / "forecast.csv")
    assert len(fc) == 18 and fc["ds"].iloc[0] == "1959-07-01"
    np.testing.assert_allclose(fc["y"], src["y"].iloc[126:])
    metrics = pd.read_csv(out / "metrics.csv")
    assert metrics["n_test"].tolist() == [18] and 0 < metrics["smape"].iloc[0] < 50


def test_run_scores_each_series_on_its_test_rows_with_its_season(monkeypatch, tmp_path):
    # A panel like the development panel: monthly dates and trading-day numbers in one ds
    # column, test rows of different lengths, the calendar of the numbers in a freq column.
    install_fake_smc(monkeypatch)
    src = pd.read_csv(AIRLINE)
    monthly = src.assign(unique_id="monthly", freq="MS",
                         split=["train"] * 126 + ["test"] * 18)
    days = np.arange(1, 101)
    trading = pd.DataFrame({"unique_id": "trading", "ds": days, "freq": "B",
                            "y": 100 + 10 * np.sin(days / 3.0) + 0.3 * days,
                            "split": ["train"] * 86 + ["test"] * 14})
    (tmp_path / "data").mkdir()
    pd.concat([monthly, trading]).to_csv(tmp_path / "data" / "panel.csv", index=False)
    (tmp_path / "configs").mkdir()
    config = tmp_path / "configs" / "exp.toml"
    config.write_text(
        f"""
[data]
path = "../data/panel.csv"   # relative to the config file, not to the working directory
id_col = "unique_id"
split_col = "split"
freq_col = "freq"

[output]
dir = "{(tmp_path / "out").as_posix()}"
plot = ""
model = ""

[experiment]
metrics = ["mase", "coverage"]
"""
    )
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = runner.invoke(app, ["run", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv").set_index("unique_id")
    assert metrics.loc["monthly", "n_test"] == 18 and metrics.loc["trading", "n_test"] == 14
    fc = pd.read_csv(tmp_path / "out" / "forecast.csv")
    for uid, season in (("monthly", 12), ("trading", 5)):
        rows = fc[fc["unique_id"] == uid]
        train = pd.concat([monthly, trading])
        y_train = train[(train["unique_id"] == uid) & (train["split"] == "train")]["y"]
        y_train = y_train.to_numpy(dtype=float)
        scale = np.mean(np.abs(y_train[season:] - y_train[:-season]))
        expected = np.mean(np.abs(rows["y"] - rows["AutoGP"])) / scale
        assert metrics.loc[uid, "mase"] == pytest.approx(expected)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["comparison"]["AutoGP"]["mase"] == pytest.approx(metrics["mase"].mean())


def test_run_needs_a_data_path(tmp_path):
    config = tmp_path / "nodata.toml"
    config.write_text("[smc]\nnum_particles = 2\n")
    line = _one_line_error(runner.invoke(app, ["run", str(config)]))
    assert "data.path must be set" in line


# ---- the real engine -------------------------------------------------------------------------
@pytest.mark.slow
def test_fit_end_to_end_with_the_real_engine(tmp_path):
    out1, out2 = tmp_path / "a.csv", tmp_path / "b.csv"
    saved = tmp_path / "m.autogp"
    args = ["fit", AIRLINE, "--config", QUICK, "--horizon", "18", "--seed", "7", "--quiet"]
    result = runner.invoke(app, [*args, "--output", str(out1), "--save", str(saved)])
    assert result.exit_code == 0, result.output
    _check_forecast(pd.read_csv(out1), 18)
    result = runner.invoke(app, [*args, "--output", str(out2)])
    assert result.exit_code == 0, result.output
    assert out1.read_bytes() == out2.read_bytes()  # same seed, byte-identical output
    result = runner.invoke(app, ["forecast", str(saved), "--horizon", "18"])
    assert result.exit_code == 0, result.output
    assert result.stdout.encode() == out1.read_bytes()  # the saved model predicts the same
    result = runner.invoke(app, ["explain", str(saved)])
    assert result.exit_code == 0 and "%" in result.stdout
