"""Cross-validation: statsforecast's windows and layout, fits equal to separate fits at each
cutoff, refit=False as Bayes' rule over the particles, the CLI, and the scores.

References: statsforecast's own cross_validation (windows, cutoffs, y), separate ``fit`` calls
on truncated data (the real engine), a plain-numpy GP (``tests/reference_numpy.py``) for the
conditioned particles, and scores worked out by hand.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal
from typer.testing import CliRunner

from autogp import AutoGP, parse
from autogp.cli.main import app
from autogp.data import DataError, from_frame
from autogp.experiments.cv_scores import cross_validation_metrics
from tests.reference_numpy import gram_numpy
from tests.test_forecast import FAKE_TEXTS, FAKE_WEIGHTS, install_fake_smc

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

FAST = {"data.transform": "none"}
COLUMNS = ["unique_id", "ds", "cutoff", "y", "AutoGP", "AutoGP-lo-95", "AutoGP-lo-80",
           "AutoGP-hi-80", "AutoGP-hi-95"]  # fmt: skip


def monthly(uid: str, n: int, shift: float = 0.0) -> pd.DataFrame:
    ds = pd.date_range("2001-01-01", periods=n, freq="MS")
    i = np.arange(n, dtype=np.float64)
    y = 20 + shift + 3 * np.sin(2 * np.pi * i / 12) + 0.1 * i + 0.3 * np.cos(1.7 * i)
    return pd.DataFrame({"unique_id": uid, "ds": ds, "y": y})


@pytest.fixture
def panel():
    return pd.concat([monthly("b", 30), monthly("a", 26, shift=5.0)], ignore_index=True)


# ---- windows and layout ----------------------------------------------------------------------
def test_windows_cutoffs_and_values_are_statsforecasts(monkeypatch, panel):
    from statsforecast import StatsForecast
    from statsforecast.models import Naive

    install_fake_smc(monkeypatch)
    cv = AutoGP(particles=2, overrides=FAST).cross_validation(
        panel, h=3, n_windows=3, step_size=2, level=[80, 95])
    assert list(cv.columns) == COLUMNS
    ref = StatsForecast(models=[Naive()], freq="MS").cross_validation(
        df=panel, h=3, n_windows=3, step_size=2)
    ref = ref.sort_values(["unique_id", "cutoff", "ds"]).reset_index(drop=True)
    for col in ("unique_id", "ds", "cutoff"):
        assert cv[col].astype(str).tolist() == ref[col].astype(str).tolist(), col
    np.testing.assert_array_equal(cv["y"].to_numpy(), ref["y"].to_numpy())
    # The last window ends at each series' last stamp.
    last = cv.groupby("unique_id")["ds"].max()
    assert last.to_dict() == panel.groupby("unique_id")["ds"].max().to_dict()


def test_default_step_is_the_horizon_and_missing_last_values_stay_in_the_grid(monkeypatch):
    install_fake_smc(monkeypatch)
    df = monthly("s", 24)
    df.loc[df.index[-2:], "y"] = np.nan
    cv = AutoGP(particles=2, overrides=FAST).cross_validation(df, h=4, n_windows=2, level=[80])
    # Stamps (missing ones included) 0..23: cutoffs at positions 15 and 19.
    assert cv["cutoff"].drop_duplicates().tolist() == [df["ds"][15], df["ds"][19]]
    assert cv["ds"].tolist() == df["ds"][16:24].tolist()
    np.testing.assert_array_equal(cv["y"].to_numpy(), df["y"][16:24].to_numpy())
    assert np.isnan(cv["y"].iloc[-2:]).all()


def test_rows_with_missing_values_count_as_statsforecast_counts_them(monkeypatch):
    from statsforecast import StatsForecast
    from statsforecast.models import Naive

    install_fake_smc(monkeypatch)
    df = monthly("s", 24)
    df.loc[[20, 23], "y"] = np.nan
    cv = AutoGP(particles=2, overrides=FAST).cross_validation(df, h=2, n_windows=3, step_size=1)
    # Windows depend on the rows only: statsforecast's, on the rows with any value filled in.
    ref = StatsForecast(models=[Naive()], freq="MS").cross_validation(
        df=df.fillna(0.0), h=2, n_windows=3, step_size=1)
    for col in ("ds", "cutoff"):
        assert cv[col].tolist() == ref[col].tolist(), col
    np.testing.assert_array_equal(cv["y"].to_numpy(), df.set_index("ds")["y"][cv["ds"]])
    # The window whose cutoff has a missing value forecasts from that cutoff.
    assert cv["cutoff"].iloc[2] == df["ds"][20] and cv["ds"].iloc[2] == df["ds"][21]


def test_irregular_time_forecasts_the_next_rows(monkeypatch):
    install_fake_smc(monkeypatch)
    df = pd.DataFrame({"ds": [0.0, 1.1, 2.5, 3.0, 4.7, 5.0, 6.6],
                       "y": [1.0, 2.0, 1.5, 2.5, 3.0, 2.0, 2.2]})  # fmt: skip
    cv = AutoGP(particles=2, overrides=FAST).cross_validation(df, h=2, n_windows=2, step_size=1)
    assert cv["cutoff"].tolist() == [3.0, 3.0, 4.7, 4.7]
    assert cv["ds"].tolist() == [4.7, 5.0, 5.0, 6.6]
    assert cv["y"].tolist() == [3.0, 2.0, 2.0, 2.2]


def test_a_window_too_short_to_fit_names_its_series_and_cutoff(monkeypatch, panel):
    install_fake_smc(monkeypatch)
    model = AutoGP(particles=2, overrides=FAST)
    with pytest.raises(DataError, match=r"series 'a': the window with cutoff 2001-02-01 has 2 "
                                        r"observations"):
        model.cross_validation(panel, h=4, n_windows=6)
    with pytest.raises(DataError, match=r"series 'b': 30 time stamps are too few for 3 windows"):
        model.cross_validation(panel, h=10, n_windows=3)
    with pytest.raises(ValueError, match="step_size must be an integer >= 1, got 0"):
        model.cross_validation(panel, h=2, step_size=0)


def test_resumed_runs_load_finished_windows(monkeypatch, panel, tmp_path):
    calls: list = []
    install_fake_smc(monkeypatch, calls=calls)
    model = AutoGP(particles=2, overrides=FAST)
    first = model.cross_validation(panel, h=2, n_windows=3, resume=tmp_path / "cv")
    assert len(calls) == 6
    again = model.cross_validation(panel, h=2, n_windows=3, resume=tmp_path / "cv")
    assert len(calls) == 6
    pd.testing.assert_frame_equal(first, again)


# ---- refit=True: each window is the fit of the truncated data --------------------------------
TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "refine.steps": 2, "grammar.max_depth": 2,
        "smc.workers": 1}  # fmt: skip


def test_each_window_equals_a_separate_fit_at_its_cutoff_with_the_real_engine(panel):
    model = AutoGP(seed=3, overrides=TINY, progress=False)
    cv = model.cross_validation(panel, h=2, n_windows=2, level=[90])
    cutoffs = cv.groupby("unique_id")["cutoff"].unique()
    for i in range(2):
        cut = {uid: c[i] for uid, c in cutoffs.items()}
        truncated = panel[panel["ds"] <= panel["unique_id"].map(cut)]
        ref = AutoGP(seed=3, overrides=TINY, progress=False).fit(truncated).predict(2, level=[90])
        ref = ref.sort_values(["unique_id", "ds"], kind="stable").reset_index(drop=True)
        got = cv[cv["cutoff"] == cv["unique_id"].map(cut)].drop(columns=["cutoff", "y"])
        pd.testing.assert_frame_equal(got.reset_index(drop=True), ref, check_exact=True)
    # A single series: its windows' keys are those of a single-series fit.
    single = panel[panel["unique_id"] == "b"].drop(columns="unique_id")
    cv1 = AutoGP(seed=3, overrides=TINY).cross_validation(single, h=2, n_windows=2)
    cut = cv1["cutoff"].iloc[0]
    ref = AutoGP(seed=3, overrides=TINY).fit(single[single["ds"] <= cut]).predict(2)
    got = cv1[cv1["cutoff"] == cut].drop(columns=["cutoff", "y"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


@pytest.mark.slow
def test_windows_on_the_process_pool_match_this_process(panel):
    here = AutoGP(seed=3, overrides=TINY, progress=False).cross_validation(
        panel, h=2, n_windows=2, level=[90])
    pool = AutoGP(seed=3, overrides={**TINY, "smc.workers": 2}, progress=False).cross_validation(
        panel, h=2, n_windows=2, level=[90])
    pd.testing.assert_frame_equal(pool[["unique_id", "ds", "cutoff", "y"]],
                                  here[["unique_id", "ds", "cutoff", "y"]])
    # This process runs XLA multi-threaded, the workers single-threaded: equal to rounding.
    values = ["AutoGP", "AutoGP-lo-90", "AutoGP-hi-90"]
    np.testing.assert_allclose(pool[values].to_numpy(), here[values].to_numpy(), rtol=1e-9)


# ---- refit=False: the first fit conditioned on later data ------------------------------------
def test_no_refit_reweights_the_particles_by_bayes_rule(monkeypatch):
    install_fake_smc(monkeypatch)
    df = monthly("s", 24).drop(columns="unique_id")
    eta = 0.5
    overrides = {**FAST, "smc.power_from": 0, "smc.likelihood_power": eta}
    cv = AutoGP(particles=2, overrides=overrides).cross_validation(
        df, h=2, n_windows=3, refit=False, level=[80])
    # Cutoffs at positions 17, 19, 21; the first window's fit sees the first 18 points.
    first = AutoGP(particles=2, overrides=overrides).fit(df.iloc[:18]).fits["series"]
    series = from_frame(df, "ds", "y")
    s = first.scaler
    x, z = s.forward_t(series.t), s.forward_y(series.y)
    exprs = [parse(t) for t in FAKE_TEXTS]
    w0 = np.asarray(FAKE_WEIGHTS) / np.sum(FAKE_WEIGHTS)
    for k, end in enumerate([18, 20, 22]):
        x_star = s.forward_t(series.axis.future_numeric(series.t[end - 1], 2))
        log_w, means = [], []
        for expr in exprs:
            gram = gram_numpy(expr, x[:end], x[:end]) + 0.01 * np.eye(end)
            old = gram[:18, :18]
            lp = (multivariate_normal(np.zeros(end), gram).logpdf(z[:end])
                  - multivariate_normal(np.zeros(18), old).logpdf(z[:18]))
            log_w.append(eta * lp)
            means.append(gram_numpy(expr, x_star, x[:end]) @ np.linalg.solve(gram, z[:end]))
        w = w0 * np.exp(np.asarray(log_w) - max(log_w))
        w /= w.sum()
        expected = s.value_offset + s.value_scale * (w @ np.asarray(means))
        got = cv["AutoGP"].to_numpy()[2 * k : 2 * k + 2]
        np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert cv["cutoff"].drop_duplicates().tolist() == df["ds"][[17, 19, 21]].tolist()


# ---- scores ----------------------------------------------------------------------------------
def test_metrics_match_a_hand_computation():
    train = pd.DataFrame({"unique_id": "a", "ds": [1.0, 2, 3, 4, 5, 6],
                          "y": [1.0, 3, 2, 4, 3, np.nan]})  # fmt: skip
    cv = pd.DataFrame({
        "unique_id": "a", "ds": [4.0, 5, 5, 6], "cutoff": [3.0, 3, 4, 4],
        "y": [4.0, 3, 3, np.nan], "AutoGP": [3.5, 3.5, 3, 5],
        "AutoGP-lo-80": [3.0, 3.2, 2, 4], "AutoGP-hi-80": [4.5, 4, 5, 6],
    })
    got = cross_validation_metrics(cv, train, season_length=1).set_index("step")
    # Window 1 (training 1, 3, 2: naive MAE 1.5); window 2 (1, 3, 2, 4: 5/3), y at 6 missing.
    mase1, mase2 = 0.5 / 1.5, 0.0
    smape1 = 100 * (0.5 / 7.5 + 0.5 / 6.5)
    # Pinball losses at taus 0.1 (lo-80), 0.5 (point), 0.9 (hi-80), times 2 over mean |y|.
    crps1 = 2 * np.mean([(0.1 + 0.18) / 2, 0.25, (0.05 + 0.1) / 2]) / 3.5
    crps2 = 2 * np.mean([0.1, 0.0, 0.2]) / 3.0
    expected = {
        "all": (2, (mase1 + mase2) / 2, smape1 / 2, (crps1 + crps2) / 2, 0.75),
        1: (2, (0.5 / 1.5 + 0) / 2, (200 * 0.5 / 7.5) / 2,
            (2 * np.mean([0.1, 0.25, 0.05]) / 4 + crps2) / 2, 1.0),
        2: (1, 0.5 / 1.5, 200 * 0.5 / 6.5, 2 * np.mean([0.18, 0.25, 0.1]) / 3, 0.0),
    }
    assert list(got.index) == ["all", 1, 2]
    for step, (windows, mase, smape, crps, cover) in expected.items():
        row = got.loc[step]
        assert row["model"] == "AutoGP" and row["windows"] == windows
        np.testing.assert_allclose(
            row[["mase", "smape", "scaled_crps", "coverage_80"]].to_numpy(dtype=float),
            [mase, smape, crps, cover], rtol=1e-12)


# ---- command line ----------------------------------------------------------------------------
def test_cli_writes_the_frame_and_the_metrics(monkeypatch, panel, tmp_path):
    install_fake_smc(monkeypatch)
    path = tmp_path / "panel.csv"
    panel.to_csv(path, index=False)
    out, metrics = tmp_path / "cv.csv", tmp_path / "metrics.csv"
    args = ["cv", str(path), "--horizon", "3", "--windows", "2", "--step", "1", "--level", "80",
            "--output", str(out), "--metrics", str(metrics), "--set", "data.transform=none",
            "--id-col", "unique_id"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    cv = pd.read_csv(out, parse_dates=["ds", "cutoff"])
    api = AutoGP(overrides=FAST).cross_validation(panel, h=3, n_windows=2, step_size=1,
                                                  level=[80])
    pd.testing.assert_frame_equal(cv, api, check_dtype=False)
    scores = pd.read_csv(metrics)
    assert scores["step"].astype(str).tolist() == ["all", "1", "2", "3"]
    expected = cross_validation_metrics(api, panel)
    np.testing.assert_allclose(scores["mase"], expected["mase"], rtol=1e-9)
    assert (tmp_path / "metrics_by_step.png").read_bytes()[:4] == b"\x89PNG"  # beside it
    result = CliRunner().invoke(app, ["cv", str(path), "--horizon", "9", "--windows", "3",
                                      "--id-col", "unique_id", "--no-refit"])
    assert result.exit_code == 2
    assert "error: series 'a': 26 time stamps are too few" in result.stderr
    assert "Traceback" not in result.output


def test_cli_to_stdout_without_refit(monkeypatch, panel, tmp_path):
    install_fake_smc(monkeypatch)
    path = tmp_path / "panel.csv"
    panel.to_csv(path, index=False)
    result = CliRunner().invoke(app, ["cv", str(path), "--horizon", "2", "-w", "2", "--no-refit",
                                      "--quiet", "--id-col", "unique_id"])
    assert result.exit_code == 0, result.output
    cv = pd.read_csv(io.StringIO(result.stdout))
    assert list(cv.columns) == COLUMNS
    assert len(cv) == 2 * 2 * 2
