"""autogp as a statsforecast model (``autogp.integrations.statsforecast.AutoGP``).

statsforecast's own calls (``forecast``, ``fit``/``predict``, ``cross_validation``, fitted
values, ``X_df``) with ``[AutoGP(...), AutoETS(...)]`` give, in the AutoGP columns, exactly
autogp's own fits of each series on integer steps with the same seed, with ``n_jobs=1`` and
``n_jobs=2`` (forked workers, whose fits run in fresh helper processes; in a subprocess with a
timeout, so a hang fails instead of stalling the suite); ``season_length`` names a calendar;
``data.freq_col`` names it for ``AutoGP.fit``; misuse gets clear errors; and without
statsforecast the import fails with one line naming the extra.

References: ``autogp.AutoGP(...).fit(pd.DataFrame({"ds": 1..n, "y": y, "freq": "MS"}))`` built
here by hand (the documented equivalence), autogp's own ``cross_validation(refit=False)``,
statsforecast's AutoETS beside it.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autogp
from autogp.data import DataError
from autogp.forecast.reading import read_series
from autogp.integrations import arrays, forksafe
from tests.test_forecast import install_fake_smc

statsforecast = pytest.importorskip("statsforecast")
from statsforecast import StatsForecast  # noqa: E402
from statsforecast.models import AutoETS  # noqa: E402

from autogp.integrations.statsforecast import AutoGP  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

ROOT = Path(__file__).resolve().parents[1]
TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "refine.steps": 2, "grammar.max_depth": 2,
        "data.transform": "none"}  # fmt: skip
H, LEVEL = 4, [80, 95]
SEED = 3
AUTOGP_COLUMNS = ["AutoGP", "AutoGP-lo-95", "AutoGP-lo-80", "AutoGP-hi-80", "AutoGP-hi-95"]


def panel_frame() -> pd.DataFrame:
    """Three monthly series of 28, 30 and 32 points: trend, a 12-month season, wiggles."""
    parts = []
    for k, uid in enumerate("abc"):
        n = 28 + 2 * k
        i = np.arange(n, dtype=np.float64)
        y = 10 + k + 3 * np.sin(2 * np.pi * i / 12) + 0.1 * i + 0.3 * np.cos(1.7 * i + k)
        parts.append(pd.DataFrame({"unique_id": uid, "y": y,
                                   "ds": pd.date_range("2001-01-01", periods=n, freq="MS")}))
    return pd.concat(parts, ignore_index=True)


def model(**kwargs) -> AutoGP:
    return AutoGP(12, seed=SEED, overrides=TINY, **kwargs)


def reference(y: np.ndarray) -> autogp.AutoGP:
    """autogp's own fit of ``y`` on the steps 1..n, its calendar named monthly."""
    train = pd.DataFrame({"ds": np.arange(1, len(y) + 1), "y": y, "freq": "MS"})
    return autogp.AutoGP(seed=SEED, overrides={**TINY, "data.freq_col": "freq"},
                         progress=False).fit(train)


def values_of(frame: pd.DataFrame, uid: str, **where) -> np.ndarray:
    rows = frame[frame["unique_id"] == uid]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows[AUTOGP_COLUMNS].to_numpy()


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    return panel_frame()


@pytest.fixture(scope="module")
def references(panel) -> dict[str, autogp.AutoGP]:
    return {uid: reference(g["y"].to_numpy()) for uid, g in panel.groupby("unique_id")}


@pytest.fixture(scope="module")
def one_job(panel):
    """statsforecast's forecast (with fitted values) and cross-validation, n_jobs=1."""
    sf = StatsForecast(models=[model(), AutoETS(season_length=12)], freq="MS", n_jobs=1)
    fc = sf.forecast(df=panel, h=H, level=LEVEL, fitted=True)
    fitted = sf.forecast_fitted_values()
    cv = sf.cross_validation(df=panel, h=H, n_windows=2, step_size=H, level=LEVEL)
    return fc, fitted, cv


# ---- the equivalence -------------------------------------------------------------------------
def test_the_model_config_is_the_documented_one():
    expected = autogp.AutoGP(seed=SEED, overrides={**TINY, "data.freq_col": "freq"}).config
    assert model().config == expected
    assert model().freq == "MS" and repr(model()) == "AutoGP"


def test_forecast_equals_autogp_fits_on_integer_steps(one_job, references):
    fc, _, _ = one_job
    assert list(fc.columns[:7]) == ["unique_id", "ds", *AUTOGP_COLUMNS]
    assert {"AutoETS", "AutoETS-lo-95", "AutoETS-hi-95"} <= set(fc.columns)
    for uid, fit in references.items():
        want = fit.predict(H, level=LEVEL)[AUTOGP_COLUMNS].to_numpy()
        np.testing.assert_array_equal(values_of(fc, uid), want)


def test_fitted_values_are_the_posterior_predictive_at_the_training_steps(one_job, references,
                                                                        panel):
    _, fitted, _ = one_job
    for uid, fit in references.items():
        n = int((panel["unique_id"] == uid).sum())
        want = fit.predict(pd.Index(np.arange(1, n + 1)), level=LEVEL)
        np.testing.assert_array_equal(values_of(fitted, uid), want[AUTOGP_COLUMNS].to_numpy())
        np.testing.assert_array_equal(fitted.loc[fitted["unique_id"] == uid, "y"],
                                      panel.loc[panel["unique_id"] == uid, "y"])


def test_cross_validation_equals_autogp_fits_at_each_cutoff(one_job, panel):
    _, _, cv = one_job
    assert cv.groupby("unique_id")["cutoff"].nunique().eq(2).all()
    for (uid, cutoff), _rows in cv.groupby(["unique_id", "cutoff"]):
        g = panel[panel["unique_id"] == uid]
        want = reference(g.loc[g["ds"] <= cutoff, "y"].to_numpy()).predict(H, level=LEVEL)
        np.testing.assert_array_equal(values_of(cv, uid, cutoff=cutoff),
                                      want[AUTOGP_COLUMNS].to_numpy())


def test_fit_then_predict_gives_the_forecast(one_job, panel):
    fc, fitted, _ = one_job
    sf = StatsForecast(models=[model()], freq="MS").fit(panel)
    pd.testing.assert_frame_equal(sf.predict(h=H, level=LEVEL), fc[["unique_id", "ds",
                                                                     *AUTOGP_COLUMNS]])
    first = sf.fitted_[0, 0].predict_in_sample(level=[80])
    a = fitted[fitted["unique_id"] == "a"]
    assert list(first) == ["fitted", "fitted-lo-80", "fitted-hi-80"]
    np.testing.assert_array_equal(first["fitted"], a["AutoGP"])
    np.testing.assert_array_equal(first["fitted-hi-80"], a["AutoGP-hi-80"])
    assert sf.fitted_[0, 0].model_.unique_ids == ["series"]  # autogp's own model, to explain


def test_refit_false_conditions_the_first_fit_as_autogp_cross_validation_does(panel):
    b = panel[panel["unique_id"] == "b"]
    cv = StatsForecast(models=[model()], freq="MS").cross_validation(
        df=b, h=H, n_windows=3, step_size=H, level=LEVEL, refit=False)
    train = pd.DataFrame({"ds": np.arange(1, len(b) + 1), "y": b["y"].to_numpy(), "freq": "MS"})
    own = autogp.AutoGP(seed=SEED, overrides={**TINY, "data.freq_col": "freq"},
                        progress=False).cross_validation(train, h=H, n_windows=3, level=LEVEL,
                                                         refit=False)
    np.testing.assert_array_equal(cv[AUTOGP_COLUMNS].to_numpy(), own[AUTOGP_COLUMNS].to_numpy())


def test_covariates_come_from_the_frame_and_x_df(monkeypatch):
    """A stand-in SMC whose particles read the covariate (so the test needs no SMC compile):
    statsforecast's X columns and X_df reach autogp as its own fit and predict take them."""
    install_fake_smc(monkeypatch, texts=("LIN(intercept=0.5; bias=1.0, amp=1.0) + "
                                         "LIN[1](amp=1.0)", "SE(l=0.3; amp=1.0)"),
                     weights=(0.7, 0.3))
    n = 30
    i = np.arange(n + H, dtype=np.float64)
    temp = np.sin(i / 3.0) + 0.05 * i
    y = 5 + 0.1 * i + 2 * temp
    ds = pd.date_range("2020-01-01", periods=n + H, freq="D")
    df = pd.DataFrame({"unique_id": "s", "ds": ds[:n], "y": y[:n], "temp": temp[:n]})
    X_df = pd.DataFrame({"unique_id": "s", "ds": ds[n:], "temp": temp[n:]})
    sf = StatsForecast(models=[AutoGP(7, seed=SEED, overrides=TINY, covariates=["temp"])],
                       freq="D")
    fc = sf.forecast(df=df, h=H, X_df=X_df, level=LEVEL)
    train = pd.DataFrame({"ds": np.arange(1, n + 1), "y": y[:n], "temp": temp[:n], "freq": "D"})
    own = autogp.AutoGP(seed=SEED, overrides={**TINY, "data.freq_col": "freq"},
                        progress=False).fit(train)
    assert list(own.fits["series"].covariates) == ["temp"]
    want = own.predict(H, level=LEVEL, X_df=pd.DataFrame({"ds": np.arange(n + 1, n + H + 1),
                                                          "temp": temp[n:]}))
    np.testing.assert_array_equal(fc[AUTOGP_COLUMNS].to_numpy(), want[AUTOGP_COLUMNS].to_numpy())
    with pytest.raises(ValueError, match="X_df"):
        sf.forecast(df=df, h=H)  # statsforecast's own check: uses_exog needs X_df


# ---- n_jobs=2: forked workers --------------------------------------------------------------
TWO_JOBS = textwrap.dedent("""
    import pickle, sys
    import jax.numpy as jnp
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS
    from tests.test_statsforecast_model import H, LEVEL, model, panel_frame

    (jnp.ones(3) * 2).block_until_ready()  # JAX's runtime runs when statsforecast forks
    sf = StatsForecast(models=[model(), AutoETS(season_length=12)], freq="MS", n_jobs=2)
    fc = sf.forecast(df=panel_frame(), h=H, level=LEVEL, fitted=True)
    fitted = sf.forecast_fitted_values()
    cv = sf.cross_validation(df=panel_frame(), h=H, n_windows=2, step_size=H, level=LEVEL)
    with open(sys.argv[1], "wb") as out:
        pickle.dump((fc, fitted, cv), out)
""")


@pytest.mark.slow
def test_two_jobs_fork_safely_and_give_the_one_job_results(one_job, tmp_path):
    """statsforecast's n_jobs=2 forks a process whose JAX runtime is running (Pool for
    cross-validation, ProcessPoolExecutor for forecast); the model's fits then run in fresh
    helper processes. Run in a subprocess with a timeout: a deadlock fails the test."""
    out = tmp_path / "two_jobs.pkl"
    env = dict(os.environ, JAX_ENABLE_X64="1")
    run = subprocess.Popen([sys.executable, "-c", TWO_JOBS, str(out)], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        stdout, stderr = run.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)  # the pool workers and their helpers too
        stdout, stderr = run.communicate()
        pytest.fail(f"n_jobs=2 did not finish in 420 s (a hang?):\n{stderr[-3000:]}")
    assert run.returncode == 0, stderr[-3000:]
    with open(out, "rb") as f:
        two = pickle.load(f)
    for got, want in zip(two, one_job, strict=True):
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_a_forked_child_runs_calls_in_a_helper_that_ends_with_it(tmp_path):
    import multiprocessing

    assert not forksafe.forked() and forksafe.call(os.getpid) == os.getpid()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        child, helper, again, error = pool.apply(_in_forked_child)
        pool.terminate()
    assert helper != child and again == helper  # one helper, reused
    assert error == ("ValueError", True)
    for _ in range(50):  # the helper ends once its parent is gone
        if not _alive(helper):
            break
        time.sleep(0.1)
    assert not _alive(helper)


def _in_forked_child():
    try:
        forksafe.call(int, "not a number")
    except ValueError as exc:
        error = ("ValueError", "helper process" in "".join(getattr(exc, "__notes__", [])))
    return os.getpid(), forksafe.call(os.getpid), forksafe.call(os.getpid), error


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---- calendars, errors, the optional dependency ---------------------------------------------
def test_season_length_names_a_calendar():
    assert [arrays.calendar(s, None) for s in (None, 1, 4, 12, 52, 7, 5, 24)] == [
        None, None, "QS", "MS", "W", "D", "B", "h"]
    assert arrays.calendar(12, "MS") == "MS" and arrays.calendar(None, "ME") == "ME"
    with pytest.raises(ValueError, match="season_length=6 is no calendar"):
        AutoGP(6)
    with pytest.raises(ValueError, match="contradicts"):
        AutoGP(4, freq="MS")
    with pytest.raises(ValueError, match="distinct names"):
        AutoGP(covariates=["y"])


def test_freq_col_names_the_calendar_of_autogp_fit(tmp_path):
    config = autogp.load_config(None, {"data.freq_col": "freq"})
    frame = pd.DataFrame({"ds": np.arange(1, 31), "y": np.arange(30.0) % 7,
                          "freq": "B", "x": np.arange(30.0) ** 2})
    (series,) = read_series(frame, config)
    assert series.axis.freq == "B" and list(series.covariates.columns) == ["x"]
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert read_series(tmp_path / "s.csv", config)[0].axis.freq == "B"
    assert read_series(frame, autogp.load_config())[0].axis.freq is None  # unset: no calendar
    panel = pd.DataFrame({"unique_id": np.repeat(["p", "q"], 30), "ds": np.tile(frame.ds, 2),
                          "y": np.tile(frame.y, 2), "freq": np.repeat(["MS", "QS"], 30)})
    assert [s.axis.freq for s in read_series(panel, config)] == ["MS", "QS"]
    panel.loc[3, "freq"] = "W"
    with pytest.raises(DataError, match="several frequencies"):
        read_series(panel, config)
    with pytest.raises(DataError, match="no column 'freq'"):
        read_series(frame.drop(columns="freq"), config)


def test_misuse_gets_clear_errors():
    from statsforecast.utils import ConformalIntervals

    m = model()
    with pytest.raises(RuntimeError, match="not fitted"):
        m.predict(H)
    m.train_ = arrays.training_frame(np.arange(10.0), freq="MS")
    m.model_ = None  # forward refuses before it computes anything
    with pytest.raises(ValueError, match="continue the fitted series"):
        m.forward(np.arange(1.0, 13.0), H)
    with pytest.raises(ValueError, match="conformal"):
        StatsForecast(models=[model()], freq="MS").forecast(
            df=panel_frame(), h=H, level=[80],
            prediction_intervals=ConformalIntervals(h=H, n_windows=2))
    with pytest.raises(ValueError, match="future values"):
        arrays.future_frame(arrays.training_frame(np.arange(5.0), np.ones((5, 1))), 2)


def test_without_statsforecast_the_import_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "statsforecast", None)  # not installed
    monkeypatch.delitem(sys.modules, "autogp.integrations.statsforecast")
    with pytest.raises(ImportError) as caught:
        importlib.import_module("autogp.integrations.statsforecast")
    assert str(caught.value) == ('autogp.integrations.statsforecast needs statsforecast: '
                                 'pip install "autogp[bench]"')
