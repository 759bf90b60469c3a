"""Updates and revisions of a fit with covariates: new and revised rows carry their covariates'
values, which reach the likelihood in the first fit's standardisation.

Reference: each particle's dense GP likelihood written out in numpy (time normalised onto
[0, 1] over the training span, values z-scored, the covariate standardised by the training
mean and sd), at the particles' parameters: the likelihood a refit would evaluate there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from autogp import AutoGP
from autogp.config import engine_settings
from autogp.data import DataError
from tests.helpers import temperature_frame

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

N, H = 30, 4
KERNELS = ("LIN(intercept=0.5; bias=1.0, amp=1.0) + LIN[temp](amp=1.0)",
           "SE(l=0.3; amp=1.0) + SE[temp](l=1.0; amp=0.5)")
WEIGHTS = (0.6, 0.4)
NOISE = 0.05
CONFIG = {"data": {"transform": "none"}, "grammar": {"max_depth": 2},
          "smc": {"num_rounds": 2}, "refine": {"steps": 2}}


def frame(n=N + H, seed=0):
    return temperature_frame(n, seed)


def kernel_numpy(p: int, t1, z1, t2, z2) -> np.ndarray:
    """KERNELS[p] on normalised time ``t`` and standardised covariate ``z``."""
    if p == 0:
        return 1.0 + np.outer(t1 - 0.5, t2 - 0.5) + np.outer(z1, z2)
    return (np.exp(-0.5 * np.subtract.outer(t1, t2) ** 2 / 0.3**2)
            + 0.5 * np.exp(-0.5 * np.subtract.outer(z1, z2) ** 2))


class Reference:
    """The first fit's normalisation of time and the covariate, written out (the values' offset
    and scale are the fit's: its centring is checked elsewhere), and the particles'
    likelihoods."""

    def __init__(self, train: pd.DataFrame, model: AutoGP):
        days = (train["ds"] - train["ds"].iloc[0]).dt.days.to_numpy(float)
        self.t0, self.span = days[0], days[-1] - days[0]
        self.start = train["ds"].iloc[0]
        scaler = model.fits["series"].scaler
        self.y_mean, self.y_sd = scaler.value_offset, scaler.value_scale
        z = train["temp"].to_numpy()
        self.z_mean, self.z_sd = z.mean(), z.std()

    def inputs(self, df: pd.DataFrame):
        days = (df["ds"] - self.start).dt.days.to_numpy(float)
        return ((days - self.t0) / self.span, (df["temp"].to_numpy() - self.z_mean) / self.z_sd,
                (df["y"].to_numpy() - self.y_mean) / self.y_sd)

    def log_likelihoods(self, df: pd.DataFrame) -> np.ndarray:
        t, z, y = self.inputs(df)
        return np.array([
            multivariate_normal(np.zeros(t.size), kernel_numpy(p, t, z, t, z)
                                + NOISE * np.eye(t.size)).logpdf(y) for p in range(2)])

    def mean(self, weights, df: pd.DataFrame, future: pd.DataFrame) -> np.ndarray:
        """The mixture's predictive mean (data units) at ``future`` given the data ``df``."""
        t, z, y = self.inputs(df)
        ts, zs, _ = self.inputs(future.assign(y=0.0))
        means = [kernel_numpy(p, ts, zs, t, z) @ np.linalg.solve(
            kernel_numpy(p, t, z, t, z) + NOISE * np.eye(t.size), y) for p in range(2)]
        return self.y_mean + self.y_sd * (np.asarray(weights) @ np.asarray(means))


def fixed_model(train: pd.DataFrame) -> AutoGP:
    model = AutoGP.from_kernels(train, list(KERNELS), weights=list(WEIGHTS), noise=NOISE,
                                config=CONFIG)
    fit = model.fits["series"]
    assert fit.covariates == ("temp",)
    fit.log_marginal_likelihood = -3.0  # given kernels carry no evidence estimate
    return model


def eta(model: AutoGP, n: int) -> float:
    return engine_settings(model.config)[1].power_for(n)


def test_the_scaling_written_out_is_the_fits():
    df = frame()
    model = fixed_model(df.iloc[:N])
    fit = model.fits["series"]
    t, z, y = Reference(df.iloc[:N], model).inputs(df.iloc[:N])
    np.testing.assert_allclose(fit.x, np.column_stack([t, z]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fit.y, y, rtol=1e-12, atol=1e-12)


def assert_revised_as_numpy(model, ref, train, data, future) -> np.ndarray:
    """The revised fit (``rounds=0``) holds ``data``'s covariates, its weights are the prior
    weights times numpy's likelihood ratio of ``data`` to ``train`` (to the power eta), and it
    forecasts ``future`` as numpy's mixture; returns the unnormalised log weights."""
    new = model.fits["series"]
    np.testing.assert_array_equal(new.series.covariates["temp"].to_numpy(),
                                  data["temp"].to_numpy())
    e = eta(model, N)
    expected = np.log(WEIGHTS) + e * (ref.log_likelihoods(data) - ref.log_likelihoods(train))
    np.testing.assert_allclose(new.log_weights, expected - logsumexp(expected), atol=1e-8)
    w = np.exp(expected - logsumexp(expected))
    np.testing.assert_allclose(model.predict(H, X_df=future[["ds", "temp"]])["AutoGP"],
                               ref.mean(w, data, future), rtol=1e-8)
    return expected


def test_replaced_rows_with_revised_covariates_reweight_by_the_exact_likelihood_ratio():
    df = frame()
    train = df.iloc[:N]
    model = fixed_model(train)
    ref = Reference(train, model)
    revised = train.iloc[[5, 20]].assign(y=[75.0, 50.0], temp=[26.0, 15.5])
    model.replace_data(revised, rounds=0)
    new = model.fits["series"]
    data = train.copy()
    data.loc[data.index[[5, 20]], ["y", "temp"]] = [[75.0, 26.0], [50.0, 15.5]]
    expected = assert_revised_as_numpy(model, ref, train, data, df.iloc[N:])
    np.testing.assert_allclose(new.log_marginal_likelihood + 3.0, logsumexp(expected),
                               atol=1e-8)


def test_removed_rows_take_their_covariates_with_them():
    df = frame()
    train = df.iloc[:N]
    model = fixed_model(train)
    ref = Reference(train, model)
    gone = [3, 4, 17]
    model.remove_data(train["ds"].iloc[gone], rounds=0)
    data = train.drop(train.index[gone])
    assert_revised_as_numpy(model, ref, train, data, df.iloc[N:])


def test_an_update_reweights_by_the_new_rows_with_their_covariates():
    df = frame()
    train, new_rows = df.iloc[:N], df.iloc[N:N + 2]
    model = fixed_model(train)
    ref = Reference(train, model)
    model.update(new_rows, rounds=1)
    new = model.fits["series"]
    assert new.covariates == ("temp",) and new.series.n == N + 2
    np.testing.assert_array_equal(new.series.covariates["temp"].to_numpy(),
                                  df["temp"].to_numpy()[: N + 2])
    # The first fit's standardisation is kept: new rows are read in its units.
    t, z, _ = ref.inputs(df.iloc[: N + 2])
    np.testing.assert_allclose(new.x, np.column_stack([t, z]), rtol=1e-12, atol=1e-12)
    # The round's evidence increment: log sum_p w_p (p(y_new rows | y_old, particle))^eta,
    # before the particles are rejuvenated.
    increment = eta(model, N) * (ref.log_likelihoods(df.iloc[: N + 2])
                                 - ref.log_likelihoods(train))
    np.testing.assert_allclose(new.log_marginal_likelihood + 3.0,
                               logsumexp(np.log(WEIGHTS) + increment), atol=1e-6)
    fc = model.predict(2, X_df=df.iloc[N + 2:N + 4][["ds", "temp"]])
    assert np.all(np.isfinite(fc["AutoGP"].to_numpy()))
    assert fc["ds"].iloc[0] == df["ds"].iloc[N + 2]


def test_rows_without_their_covariates_are_refused_naming_the_column():
    df = frame()
    train = df.iloc[:N]
    model = fixed_model(train)
    before = model.fits["series"]
    with pytest.raises(DataError, match=r"update: series 'series' was fitted with covariates "
                       r"\['temp'\].*covariate 'temp' is missing .the new data have no column"):
        model.update(df.iloc[N:N + 2][["ds", "y"]])
    with pytest.raises(DataError, match=r"covariate 'temp' is missing .a \(t, y\) pair"):
        model.update((df["ds"].iloc[N:N + 2], df["y"].iloc[N:N + 2]))
    bad = df.iloc[N:N + 2].astype({"temp": object})
    bad.loc[bad.index[1], "temp"] = "hot"
    with pytest.raises(DataError, match=r"covariate 'temp' at 2020-02-01 is not a finite "
                       r"number .'hot'"):
        model.update(bad)
    with pytest.raises(DataError, match=r"replace_data: .*covariate 'temp' is missing"):
        model.replace_data(train.iloc[[2]][["ds", "y"]].assign(y=1.0))
    gap = train.iloc[[2, 7]].assign(temp=[20.0, np.nan])
    with pytest.raises(DataError, match=r"replace_data: .*'temp' at 2020-01-08 is not a finite"):
        model.replace_data(gap)
    assert model.fits["series"] is before  # nothing changed
