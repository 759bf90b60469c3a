"""Revised data: remove_data / replace_data move the posterior by Bayes' rule and continue the SMC.

References: a plain-numpy GP (``tests/reference_numpy.py``) and scipy's multivariate normal for
the particles' likelihood ratios and the closed-form posterior mean on the remaining points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from autogp import AutoGP, parse
from autogp.data import DataError
from tests.reference_numpy import gram_numpy

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

KERNELS = ("LIN + PER(l=1.0, period=0.0839; amp=1.0)", "SE(l=0.3; amp=1.0) + LIN")
NOISE = 0.05
TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "refine.steps": 2, "grammar.max_depth": 2,
        "smc.workers": 1, "data.transform": "none"}  # fmt: skip


def monthly(n: int = 30) -> pd.DataFrame:
    ds = pd.date_range("2001-01-01", periods=n, freq="MS")
    i = np.arange(n, dtype=np.float64)
    y = 20 + 3 * np.sin(2 * np.pi * i / 12) + 0.1 * i + 0.3 * np.cos(1.7 * i)
    return pd.DataFrame({"ds": ds, "y": y})


def fixed_model(df: pd.DataFrame, kernels=KERNELS, weights=(0.6, 0.4)) -> AutoGP:
    return AutoGP.from_kernels(df, list(kernels), weights=list(weights), noise=NOISE,
                               config={"data": {"transform": "none"}})


def log_density(expr, x, z) -> float:
    gram = gram_numpy(expr, x, x) + NOISE * np.eye(x.size)
    return float(multivariate_normal(np.zeros(x.size), gram).logpdf(z))


def test_replaced_values_reweight_the_particles_by_their_exact_likelihood_ratio():
    df = monthly()
    model = fixed_model(df)
    fit = model.fits["series"]
    s, x = fit.scaler, fit.x
    z_old = fit.y
    fit.log_marginal_likelihood = -3.0  # given kernels carry no evidence estimate
    revised = df.iloc[[5, 20]].assign(y=[30.0, 12.5])
    model.replace_data(revised, rounds=0)
    new = model.fits["series"]
    y_new = df["y"].to_numpy().copy()
    y_new[[5, 20]] = [30.0, 12.5]
    np.testing.assert_array_equal(new.series.y, y_new)
    z_new = s.forward_y(y_new)
    exprs = [parse(k) for k in KERNELS]
    ratio = np.array([log_density(e, x, z_new) - log_density(e, x, z_old) for e in exprs])
    expected = np.log([0.6, 0.4]) + ratio
    np.testing.assert_allclose(new.log_weights, expected - logsumexp(expected), atol=1e-8)
    # The evidence moves by log sum_p w_p * ratio_p.
    np.testing.assert_allclose(new.log_marginal_likelihood + 3.0, logsumexp(expected),
                               atol=1e-8)
    # Predictions are the mixture of the GPs on the revised data with those weights.
    w = np.exp(expected - logsumexp(expected))
    t_star = fit.series.future_t(3)
    x_star = s.forward_t(t_star)
    means = [gram_numpy(e, x_star, x) @ np.linalg.solve(
        gram_numpy(e, x, x) + NOISE * np.eye(x.size), z_new) for e in exprs]
    expected_mean = s.value_offset + s.value_scale * (w @ np.asarray(means))
    np.testing.assert_allclose(model.predict(3)["AutoGP"].to_numpy(), expected_mean, rtol=1e-7)


def test_removed_points_no_longer_affect_the_predictive_mean():
    df = monthly()
    model = fixed_model(df, kernels=KERNELS[1:], weights=(1.0,))
    fit = model.fits["series"]
    s = fit.scaler
    gone = df["ds"].iloc[[3, 4, 17, 29]]
    model.remove_data(gone, rounds=0)
    new = model.fits["series"]
    keep = ~df["ds"].isin(gone).to_numpy()
    assert list(new.series.ds) == list(df["ds"][keep])
    # Forecasts still start after the last stamp, although its value was removed.
    fc = model.predict(3)
    assert fc["ds"].tolist() == list(pd.date_range("2003-07-01", periods=3, freq="MS"))
    x = s.forward_t(fit.series.t[keep])
    z = s.forward_y(df["y"].to_numpy()[keep])
    x_star = s.forward_t(fit.series.future_t(3))
    expr = parse(KERNELS[1])
    mean = gram_numpy(expr, x_star, x) @ np.linalg.solve(
        gram_numpy(expr, x, x) + NOISE * np.eye(x.size), z)
    np.testing.assert_allclose(fc["AutoGP"].to_numpy(), s.value_offset + s.value_scale * mean,
                               rtol=1e-8)
    # Changing a removed point's value changes nothing: it is gone.
    assert not np.isin(fit.series.t[~keep], new.series.t).any()


def test_unknown_stamps_are_named_and_leave_the_model_unchanged():
    df = monthly()
    model = fixed_model(df)
    before = model.fits["series"]
    with pytest.raises(DataError, match=r"no fitted observation at 2005-01-01"):
        model.remove_data(["2005-01-01", "2001-03-01"])
    with pytest.raises(DataError, match=r"no fitted observation at 2001-03-15"):
        model.replace_data(pd.DataFrame({"ds": ["2001-03-15"], "y": [1.0]}))
    with pytest.raises(DataError, match=r"the value at 2001-03-01 is nan; use remove_data"):
        model.replace_data(pd.DataFrame({"ds": [pd.Timestamp("2001-03-01")], "y": [np.nan]}))
    with pytest.raises(DataError, match=r"the stamps repeat"):
        model.remove_data(["2001-03-01", "2001-03-01"])
    with pytest.raises(DataError, match=r"at least 2 are needed"):
        model.remove_data(df["ds"].iloc[1:])
    assert model.fits["series"] is before


def test_a_panel_names_the_series_and_revises_only_it():
    df = pd.concat([monthly().assign(unique_id="a"), monthly(26).assign(unique_id="b")])
    model = AutoGP(seed=1, overrides=TINY, progress=False).fit(df)
    b = model.fits["b"]
    with pytest.raises(DataError, match=r"series 'a' has no fitted observation at 2009-01-01"):
        model.replace_data(pd.DataFrame({"unique_id": ["b", "a"], "ds": ["2001-02-01",
                                         "2009-01-01"], "y": [1.0, 2.0]}))
    assert model.fits["b"] is b  # nothing changed: every series is checked first
    model.remove_data(["2001-02-01"], unique_id="a")
    assert model.fits["a"].series.n == 29 and model.fits["b"] is b


def test_the_smc_continues_on_the_revised_data_and_the_seed_decides_the_result():
    df = monthly()
    revised = df.iloc[[10]].assign(y=[40.0])

    def run(seed):
        model = AutoGP(seed=seed, overrides=TINY, progress=False).fit(df)
        before = model.fits["series"]
        model.replace_data(revised, rounds=2)
        return before, model.fits["series"], model.predict(4)

    before, after, fc = run(5)
    _, after_again, fc_again = run(5)
    pd.testing.assert_frame_equal(fc, fc_again, check_exact=True)
    np.testing.assert_array_equal(after.params, after_again.params)
    assert after.updates == before.updates + 1
    assert after.history["count"][-2:] == [[30], [30]]
    assert after.series.y[10] == 40.0
    # The first round's evidence increment is log sum_p w_p p(y_new | p) / p(y_old | p), which
    # the particles before the round give in closed form (exact likelihoods, eta = 1).
    exprs, x = before.expressions(), before.x
    noise = np.exp(before.noise)
    z_new = before.scaler.forward_y(after.series.y)

    def ll(e, v, z):
        return multivariate_normal(np.zeros(x.size), gram_numpy(e, x, x) + v * np.eye(x.size)
                                   ).logpdf(z)

    lw = before.log_weights - logsumexp(before.log_weights)
    inc = logsumexp([w + ll(e, v, z_new) - ll(e, v, before.y)
                     for w, e, v in zip(lw, exprs, noise, strict=True)])
    np.testing.assert_allclose(after.history["log_evidence"][-2][0]
                               - before.log_marginal_likelihood, inc, rtol=1e-6)
