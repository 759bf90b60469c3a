"""Distributed lags of covariates (``data.covariate_lags``): the lagged design against pandas'
shift, fits and forecasts with lags against the same columns built by hand, cross-validation,
model files, the command line, the choice of lags by cross-validation, and every error."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, load
from autogp.cli.main import app
from autogp.config import ConfigError, load_config
from autogp.data import AutoGPDataWarning, DataError
from autogp.data.lags import lag_sources, lag_times, prior_shares
from autogp.forecast.lag_choice import cv_mase
from autogp.forecast.reading import read_series
from tests.helpers import temperature_frame

LAGS = [0, 1, 3]
NONE = {"data": {"transform": "none"}}


def _lagged(config=None, lags=LAGS):
    return load_config(config or NONE, {"data.covariate_lags": list(lags)})


def _by_hand(df: pd.DataFrame, columns: list[str], lags: list[int]) -> pd.DataFrame:
    """The lagged columns written out with pandas' shift, first rows without a lag dropped."""
    out = df[[c for c in df.columns if c not in columns]].copy()
    for c in columns:
        for k in lags:
            out[c if k == 0 else f"{c}_lag{k}"] = df[c].shift(k)
    return out.iloc[max(lags):].reset_index(drop=True)


# ---- the design ----------------------------------------------------------------------------------
def test_lagged_design_matches_pandas_shift_and_reads_rows_without_y():
    df = temperature_frame(30).assign(wind=np.arange(30.0) ** 1.5)
    df.loc[[5, 12], "y"] = np.nan  # their covariates still give the lags of later rows
    with pytest.warns(AutoGPDataWarning, match=r"dropped 2 rows"), \
            pytest.warns(AutoGPDataWarning, match=r"first 3 rows \(2020-01-01 to 2020-01-03\) are "
                                               r"left out .*covariate_lags = \[0, 1, 3\]"):
        (series,) = read_series(df, _lagged())
    want = _by_hand(df, ["temp", "wind"], LAGS).dropna(subset=["y"])
    assert list(series.covariates.columns) == ["temp", "temp_lag1", "temp_lag3", "wind",
                                               "wind_lag1", "wind_lag3"]
    np.testing.assert_array_equal(series.covariates.to_numpy(),
                                  want[series.covariates.columns].to_numpy())
    np.testing.assert_array_equal(series.ds.as_unit("ns"), pd.DatetimeIndex(want["ds"]))
    # lags [0]: the columns as they are, no row left out
    (plain,) = read_series(df, load_config(NONE))
    assert list(plain.covariates.columns) == ["temp", "wind"] and plain.n == 28


def test_business_day_lags_skip_weekends():
    with pytest.warns(AutoGPDataWarning, match=r"first 2 rows \(2024-01-01 to 2024-01-02\)"):
        (series,) = read_series(pd.DataFrame({
            "ds": pd.bdate_range("2024-01-01", periods=12), "y": np.arange(12.0),
            "x": np.arange(12.0) ** 2}), _lagged(lags=[0, 2]))
    ds = series.ds
    want = (ds - pd.offsets.BDay(2))
    back = series.axis.to_ds(lag_times(series.axis, series.t, 2))
    assert back.equals(pd.DatetimeIndex(want).as_unit(back.unit))
    # x = day index squared: x_lag2 is the value two trading days back
    index = np.searchsorted(pd.bdate_range("2024-01-01", periods=12), want)
    np.testing.assert_array_equal(series.covariates["x_lag2"], index.astype(float) ** 2)


# ---- forecasts equal the columns built by hand ---------------------------------------------------
N, H = 40, 6
KERNEL = "LIN(intercept=0.5; bias=1.0, amp=1.0) + LIN[temp](amp=1.0) + LIN[temp_lag1](amp=0.5)"


def _frames():
    df = temperature_frame(N + H)
    hand = _by_hand(df, ["temp"], [0, 1])
    return df, hand


def test_lagged_forecast_equals_hand_built_columns():
    df, hand = _frames()
    with pytest.warns(AutoGPDataWarning, match="first row"):
        lagged = AutoGP.from_kernels(df.iloc[:N], [KERNEL], noise=0.05,
                                     config=_lagged(lags=[0, 1]))
    manual = AutoGP.from_kernels(hand.iloc[:N - 1], [KERNEL], noise=0.05, config=NONE)
    fc = lagged.predict(H, X_df=df.iloc[N:][["ds", "temp"]])
    want = manual.predict(H, X_df=hand.iloc[N - 1:][["ds", "temp", "temp_lag1"]])
    np.testing.assert_array_equal(fc["AutoGP"].to_numpy(), want["AutoGP"].to_numpy())
    np.testing.assert_array_equal(fc["AutoGP-hi-95"].to_numpy(), want["AutoGP-hi-95"].to_numpy())
    assert re.search(r"temp_lag1: y (rises|falls) [0-9.]+ per unit of temp_lag1",
                     lagged.explain())
    # The first step's lag is the last training temperature: an X_df row at that date (with
    # another value) is not read.
    wrong = df.iloc[N - 1:][["ds", "temp"]].assign(temp=lambda f: f["temp"] + 10.0)
    np.testing.assert_array_equal(lagged.predict(H, X_df=wrong)["AutoGP"].to_numpy(),
                                  lagged.predict(H, X_df=wrong.iloc[1:])["AutoGP"].to_numpy())


def test_saved_lagged_model_forecasts_the_same(tmp_path):
    df, _ = _frames()
    with pytest.warns(AutoGPDataWarning):
        model = AutoGP.from_kernels(df.iloc[:N], [KERNEL], noise=0.05, config=_lagged(lags=[0, 1]))
    model.save(tmp_path / "m.autogp")
    future = df.iloc[N:][["ds", "temp"]]
    np.testing.assert_array_equal(load(tmp_path / "m.autogp").predict(H, X_df=future)["AutoGP"],
                                  model.predict(H, X_df=future)["AutoGP"])


SMC = {"smc": {"num_particles": 2, "num_rounds": 2}, "seed": 0, "data": {"transform": "none"}}


@pytest.fixture(scope="module")
def smc_fits():
    df, hand = _frames()
    config = load_config(SMC, {"data.covariate_lags": [0, 1]})
    with pytest.warns(AutoGPDataWarning):
        lagged = AutoGP(config, progress=False).fit(df.iloc[:N])
    # The two lagged copies of temp share temp's prior weight: hand-built columns match them
    # with half the weight each.
    manual = AutoGP(SMC, overrides={"grammar.covariate_weight": 3.0},
                    progress=False).fit(hand.iloc[:N - 1])
    return df, hand, config, lagged, manual


def test_smc_fit_with_lags_equals_hand_built_fit_and_cross_validation(smc_fits):
    df, hand, config, lagged, manual = smc_fits
    fc = lagged.predict(H, X_df=df.iloc[N:][["ds", "temp"]])
    want = manual.predict(H, X_df=hand.iloc[N - 1:][["ds", "temp", "temp_lag1"]])
    np.testing.assert_array_equal(fc["AutoGP"].to_numpy(), want["AutoGP"].to_numpy())
    with pytest.warns(AutoGPDataWarning):
        cv = AutoGP(config, progress=False).cross_validation(df, h=H, n_windows=1)
    np.testing.assert_array_equal(cv["AutoGP"].to_numpy(), fc["AutoGP"].to_numpy())
    # remove_data keeps the rows' lagged values (they do not depend on y)
    kept = AutoGP.from_fits(lagged.fits.values(), config)
    kept.remove_data(df["ds"].iloc[[10]], rounds=0)
    assert kept.series().n == N - 2


def test_cli_fit_with_lags_equals_the_api(smc_fits, tmp_path):
    df, _, _, lagged, _ = smc_fits
    data, future, out = tmp_path / "data.csv", tmp_path / "future.csv", tmp_path / "fc.csv"
    df.iloc[:N].to_csv(data, index=False)
    df.iloc[N:][["ds", "temp"]].to_csv(future, index=False)
    result = CliRunner().invoke(app, [
        "fit", str(data), "--horizon", str(H), "--particles", "2", "--seed", "0", "--set",
        "smc.num_rounds=2", "--set", "data.transform=none", "--set", "data.covariate_lags=[0,1]",
        "--quiet", "--output", str(out), "--future", str(future)])
    assert result.exit_code == 0, result.output
    api = lagged.predict(H, X_df=df.iloc[N:][["ds", "temp"]])
    np.testing.assert_allclose(pd.read_csv(out)["AutoGP"], api["AutoGP"], rtol=1e-12)


def test_lagged_copies_share_their_covariates_prior_weight():
    names = ["temp", "temp_lag1", "temp_lag3", "work", "work_lag1", "work_lag3"]
    assert prior_shares(lag_sources(names, [0, 1, 3])) == (1 / 3,) * 6
    # without lags a column named like a copy is a covariate of its own
    assert prior_shares(lag_sources(["temp", "temp_lag1", "work"], [0])) == (1.0, 1.0, 1.0)
    assert prior_shares(lag_sources(["temp", "temp_lag1", "work"], [0, 1])) == (0.5, 0.5, 1.0)


# ---- choosing the lags ---------------------------------------------------------------------------
def test_cv_mase_is_the_mean_of_the_windows_mase():
    cv = pd.DataFrame({"unique_id": "a", "cutoff": [1, 1, 2, 2], "y": [1.0, 2.0, 3.0, 4.0],
                       "AutoGP": [1.5, 2.0, 2.0, 4.0]})
    y_train = np.array([0.0, 1.0, 3.0, 2.0])  # seasonal-naive (m = 1) scale: mean |diff| = 4/3
    assert cv_mase(cv, {"a": y_train}, {"a": 1}) == pytest.approx(
        np.mean([0.25 / (4 / 3), 0.5 / (4 / 3)]), rel=1e-12)


# ---- errors --------------------------------------------------------------------------------------
def test_a_lag_needing_a_missing_training_value_names_column_and_date():
    df = temperature_frame(30)
    df.loc[9, "temp"] = np.nan
    with pytest.raises(DataError, match=r"covariate 'temp' has no value at 2020-01-10 in the "
                                        r"training data, which column 'temp' at 2020-01-10"):
        read_series(df, _lagged(lags=[0, 2]))
    df = df.drop(index=9)  # a missing row: its lag 2 two days later has no value either
    df.loc[11, "temp"] = 1.0
    with pytest.raises(DataError, match=r"'temp' has no value at 2020-01-10 .*'temp_lag2' at "
                                        r"2020-01-12"):
        read_series(df, _lagged(lags=[0, 2]))


def test_forecast_lags_name_column_and_date():
    df, _ = _frames()
    with pytest.warns(AutoGPDataWarning):
        model = AutoGP.from_kernels(df.iloc[:N], [KERNEL], noise=0.05, config=_lagged(lags=[0, 1]))
    with pytest.raises(DataError, match=r"covariate 'temp' at 2020-02-10 is in neither the "
                                        r"training data nor X_df \(no X_df was given\)"):
        model.predict(H)
    with pytest.raises(DataError, match=r"covariate 'temp' at 2020-02-13 is in neither .*X_df "
                                        r"has no row or no number for that date"):
        model.predict(H, X_df=df.iloc[N:N + 3][["ds", "temp"]])
    with pytest.raises(DataError, match=r"X_df has no column 'temp'"):
        model.predict(3, X_df=df.iloc[N:][["ds"]].assign(other=1.0))
    with pytest.raises(DataError, match=r"X_df has no row or no number for that date"):
        model.predict(3, X_df=df.iloc[N:][["ds", "temp"]].assign(temp=np.nan))
    # A forecast date far ahead: its lag reaches a date that neither the training rows nor
    # X_df hold.
    ahead = df.iloc[N + 4:N + 5][["ds", "temp"]]
    np.testing.assert_array_equal(  # the lag of the step before comes from X_df
        model.predict(ahead[["ds"]], X_df=df.iloc[N + 3:N + 5][["ds", "temp"]])["AutoGP"],
        model.predict(H, X_df=df.iloc[N:][["ds", "temp"]])["AutoGP"].iloc[4:5])
    with pytest.raises(DataError, match=r"covariate 'temp' at 2020-02-13, which column "
                                        r"'temp_lag1' needs at 2020-02-14, is in neither the "
                                        r"training data nor X_df"):
        model.predict(ahead[["ds"]], X_df=ahead)


def test_update_and_replace_refuse_lagged_fits_naming_the_setting():
    df, _ = _frames()
    with pytest.warns(AutoGPDataWarning):
        model = AutoGP.from_kernels(df.iloc[:N], [KERNEL], noise=0.05, config=_lagged(lags=[0, 1]))
    with pytest.raises(NotImplementedError, match=r"update: .*data.covariate_lags = \[0, 1\]"):
        model.update(df.iloc[N:N + 1], rounds=0)
    with pytest.raises(NotImplementedError, match=r"replace_data: .*covariate_lags"):
        model.replace_data(df.iloc[[5]], rounds=0)


def test_bad_lag_settings_and_names_are_refused():
    with pytest.raises(ConfigError, match=r"covariate_lags = \[0, 0\]: give each lag once"):
        load_config({"data": {"covariate_lags": [0, 0]}})
    with pytest.raises(ConfigError, match=r"covariate_lags = \[1, 2\]: .* 0 among them"):
        load_config({"data": {"covariate_lags": [1, 2]}})
    with pytest.raises(ConfigError, match="covariate_lags"):
        load_config({"data": {"covariate_lags": []}})
    with pytest.raises(ConfigError, match="covariate_lags"):
        load_config({"data": {"covariate_lags": [-1]}})
    df = temperature_frame(20).assign(temp_lag1=1.0 + np.arange(20.0))
    with pytest.raises(DataError, match=r"column 'temp_lag1' is named like a lagged copy of "
                                        r"'temp'"):
        read_series(df, _lagged(lags=[0, 1]))
    with pytest.raises(DataError, match=r"every one of its 5 rows has a covariate lag .* reaches "
                                        r"before the covariates' first row \(2020-01-01\)"):
        read_series(temperature_frame(5), _lagged(lags=[0, 5]))
