"""Quantiles and densities of the particle mixture (autogp.inference.mixture) and of a model."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from autogp import AutoGP
from autogp.inference.mixture import (
    AutoGPPredictionWarning,
    PredictionError,
    make_mixture,
    mixture_logpdf,
    mixture_quantiles,
)

AIRLINE = "examples/data/airline.csv"


def _exact_cdf(w, mu, sd, q):
    return np.sum(w[:, None] * stats.norm.cdf((q[None, :] - mu) / sd), axis=0)


def test_quantiles_agree_with_monte_carlo_samples():
    rng = np.random.default_rng(0)
    w = np.array([0.5, 0.3, 0.2])
    mu = np.array([[0.0, 10.0], [3.0, 10.5], [-4.0, 30.0]])  # [P, M]: two points
    sd = np.array([[1.0, 0.5], [0.5, 2.0], [2.0, 0.1]])
    probs = np.array([0.025, 0.1, 0.5, 0.9, 0.975])
    q = mixture_quantiles(w, mu, sd, probs)  # [K, M]
    assert q.shape == (5, 2)
    n = 200_000
    for m in range(2):
        comp = rng.choice(3, size=n, p=w)
        samples = rng.normal(mu[comp, m], sd[comp, m])
        empirical = np.mean(samples[:, None] <= q[None, :, m], axis=0)
        mc_sd = np.sqrt(probs * (1 - probs) / n)
        assert np.all(np.abs(empirical - probs) < 5 * mc_sd), (empirical, probs)
        # and the exact mixture CDF at the computed quantiles is the level, to round-off
        exact = _exact_cdf(w, mu[:, [m]], sd[:, [m]], q[:, m])
        np.testing.assert_allclose(exact, probs, atol=1e-12)


def test_single_gaussian_quantiles_equal_norm_ppf():
    probs = np.array([1e-6, 0.01, 0.1, 0.5, 0.8, 0.975, 1 - 1e-6])
    mu, sd = np.array([[3.7, -120.0]]), np.array([[0.2, 45.0]])
    q = mixture_quantiles(np.array([1.0]), mu, sd, probs)
    expected = mu + sd * stats.norm.ppf(probs)[:, None]
    np.testing.assert_allclose(q, expected, rtol=0, atol=1e-10 * 45)


def test_zero_weight_and_point_mass_components():
    w = np.array([1.0, 0.0])
    mu, sd = np.array([[0.0], [50.0]]), np.array([[1.0], [1.0]])
    q = mixture_quantiles(w, mu, sd, [0.5, 0.975])
    np.testing.assert_allclose(q[:, 0], [0.0, stats.norm.ppf(0.975)], atol=1e-12)
    # A point mass (sd 0) with half the weight: the median sits on it.
    q = mixture_quantiles(np.array([0.5, 0.5]), np.array([[0.0], [5.0]]), np.array([[1.0], [0.0]]),
                          [0.25, 0.75])  # fmt: skip
    assert q[0, 0] == pytest.approx(stats.norm.ppf(0.5), abs=1e-9)
    assert q[1, 0] == pytest.approx(5.0, abs=1e-9)


def test_make_mixture_drops_bad_particles_with_a_warning():
    lw = np.log(np.array([0.5, 0.25, 0.25]))
    means = np.array([[0.0, 1.0], [np.nan, 1.0], [2.0, 3.0]])
    var = np.ones((3, 2))
    with pytest.warns(AutoGPPredictionWarning, match="dropped 1 of 3"):
        mix = make_mixture(lw, means, var)
    np.testing.assert_allclose(mix.weights, [2 / 3, 1 / 3])
    np.testing.assert_array_equal(mix.keep, [True, False, True])
    # Zero-weight NaN particles go silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mix = make_mixture(np.array([0.0, -np.inf]), np.array([[1.0], [np.nan]]),
                           np.array([[1.0], [np.nan]]))  # fmt: skip
    assert mix.weights.tolist() == [1.0]
    with pytest.raises(PredictionError, match="no usable"):
        make_mixture(np.log([0.5, 0.5]), np.full((2, 1), np.nan), np.ones((2, 1)))
    with pytest.raises(PredictionError):
        make_mixture(np.array([-np.inf, -np.inf]), np.zeros((2, 1)), np.ones((2, 1)))


def test_mixture_logpdf_matches_scipy():
    w = np.array([0.2, 0.8])
    mu = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 5.0]])
    sd = np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 4.0]])
    y = np.array([0.5, -3.0, 2.5])
    expected = np.log(np.sum(w[:, None] * stats.norm.pdf(y[None], mu, sd), axis=0))
    np.testing.assert_allclose(mixture_logpdf(w, mu, sd, y), expected, rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    weights=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
    p=st.floats(0.001, 0.999),
)
def test_mixture_cdf_at_quantile_is_the_level(weights, seed, p):
    rng = np.random.default_rng(seed)
    w = np.asarray(weights) / np.sum(weights)
    mu = rng.normal(0, 10, size=(len(w), 1))
    sd = rng.uniform(0.05, 5, size=(len(w), 1))
    q = mixture_quantiles(w, mu, sd, [p])
    assert _exact_cdf(w, mu, sd, q[:, 0]) == pytest.approx(p, abs=1e-9)
    qs = mixture_quantiles(w, mu, sd, [0.1, 0.5, 0.9])[:, 0]
    assert np.all(np.diff(qs) > 0)


# ---- through the model -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def single():
    df = pd.read_csv(AIRLINE)
    return AutoGP.from_kernels(df, ["LIN + PER(l=1.0, period=0.0839; amp=1.0) * LIN"], noise=0.01)


def test_single_particle_model_quantiles_equal_the_gaussian(single):
    fit = single.fits["series"]
    fc = single.predict(12, level=[50, 80, 95], quantiles=None)
    t = fit.series.future_t(12)
    mean, var = fit.predictive(t, include_noise=True)
    s = fit.scaler
    mu, sd = s.inverse_y(mean[0]), np.sqrt(var[0]) * s.value_scale
    np.testing.assert_allclose(fc["AutoGP"], mu, rtol=1e-12)
    for lv in (50, 80, 95):
        z = stats.norm.ppf(0.5 + lv / 200)
        np.testing.assert_allclose(fc[f"AutoGP-hi-{lv}"], mu + z * sd, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fc[f"AutoGP-lo-{lv}"], mu - z * sd, rtol=0, atol=1e-8)
    fq = single.predict(12, quantiles=[0.1, 0.5, 0.9])
    assert list(fq.columns) == ["unique_id", "ds", "AutoGP", "AutoGP-q-10", "AutoGP-q-50",
                                "AutoGP-q-90"]  # fmt: skip
    np.testing.assert_allclose(fq["AutoGP-q-50"], mu, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fq["AutoGP-q-10"], mu + stats.norm.ppf(0.1) * sd, rtol=0, atol=1e-8)


def test_single_particle_log_predictive_density_is_the_gaussians(single):
    fit = single.fits["series"]
    ds = fit.series.future_ds(3)
    t = fit.series.future_t(3)
    y = np.array([420.0, 400.0, 460.0])
    mean, var = fit.predictive(t, include_noise=True)
    s = fit.scaler
    expected = stats.norm.logpdf(y, s.inverse_y(mean[0]), np.sqrt(var[0]) * s.value_scale)
    got = single.log_predictive_density(ds, y, pointwise=True)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert single.log_predictive_density(ds, y) == pytest.approx(expected.sum(), rel=1e-10)
    # The joint density of one point is the pointwise one.
    one = single.log_predictive_density(ds[:1], y[:1], joint=True)
    assert one == pytest.approx(expected[0], rel=1e-8)


def test_log_transform_back_transforms_quantiles_and_mean():
    df = pd.read_csv(AIRLINE)
    model = AutoGP.from_kernels(
        df, ["LIN + PER(l=1.0, period=0.0839; amp=1.0)"], noise=0.01, log_transform=True
    )
    fit = model.fits["series"]
    fc = model.predict(6, level=[90], quantiles=None)
    mean, var = fit.predictive(fit.series.future_t(6), include_noise=True)
    s = fit.scaler
    mu_log = s.value_offset + s.value_scale * mean[0]
    sd_log = s.value_scale * np.sqrt(var[0])
    np.testing.assert_allclose(fc["AutoGP"], np.exp(mu_log + sd_log**2 / 2), rtol=1e-10)
    np.testing.assert_allclose(
        fc["AutoGP-hi-90"], np.exp(mu_log + stats.norm.ppf(0.95) * sd_log), rtol=1e-9
    )
    y = np.array([450.0, 430.0])
    lpd = model.log_predictive_density(fit.series.future_ds(2), y, pointwise=True)
    expected = stats.lognorm.logpdf(y, s=sd_log[:2], scale=np.exp(mu_log[:2]))
    np.testing.assert_allclose(lpd, expected, rtol=1e-9)
