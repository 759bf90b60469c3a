"""Box-Cox transforms, Guerrero's lambda and the automatic choice (autogp.data.transform)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import inv_boxcox as scipy_inv_boxcox

from autogp.data import DataError, Scaler
from autogp.data.transform import (
    LOG_RULE_MAX_VALUES,
    LOG_SEASONS,
    NONE_RATIO,
    boxcox,
    boxcox_log_jacobian,
    choose_transform,
    guerrero_cv,
    guerrero_lambda,
    inv_boxcox,
    inverse_mean,
)
from autogp.experiments.scoring import boxcox_mixture_crps, mixture_crps

AIRLINE = Path(__file__).resolve().parents[1] / "examples" / "data" / "airline.csv"


def airline() -> np.ndarray:
    return pd.read_csv(AIRLINE)["y"].to_numpy(dtype=np.float64)


@pytest.mark.parametrize("lam", [-1.0, -0.3, 0.0, 0.25, 0.5, 1.0, 1.7, 2.0])
def test_boxcox_and_inverse_match_scipy(lam):
    y = np.array([0.01, 0.5, 1.0, 3.0, 120.0, 4.5e4])
    z = boxcox(y, lam)
    np.testing.assert_allclose(z, stats.boxcox(y, lmbda=lam), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inv_boxcox(z, lam), scipy_inv_boxcox(z, lam), rtol=1e-10)
    # The log Jacobian is log of the derivative (finite differences).
    h = 1e-6 * y
    deriv = (boxcox(y + h, lam) - boxcox(y - h, lam)) / (2 * h)
    np.testing.assert_allclose(boxcox_log_jacobian(y, lam), np.log(deriv), atol=1e-6)


def test_no_transform_is_the_identity():
    y = np.array([-3.0, 0.0, 2.5])
    np.testing.assert_array_equal(boxcox(y, None), y)
    np.testing.assert_array_equal(inv_boxcox(y, None), y)
    np.testing.assert_array_equal(boxcox_log_jacobian(y, None), 0.0)


@settings(max_examples=200, deadline=None)
@given(
    y=st.floats(1e-6, 1e8, allow_nan=False),
    lam=st.floats(-1.0, 2.0, allow_nan=False),
)
def test_round_trip_property(y, lam):
    z = boxcox(np.array([y]), lam)[0]
    back = inv_boxcox(np.array([z]), lam)[0]
    # Up to the float64 conditioning: a rounding of z by eps |z| moves y by eps |z| / y^lam
    # relatively (dz/dy = y^(lam - 1)); e.g. lam = -1, y = 1e8 keeps only 8 digits of y in z.
    assert back == pytest.approx(y, rel=1e-10 + 1e-13 * (1.0 + abs(z)) / y**lam)


@settings(max_examples=100, deadline=None)
@given(
    z=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=20),
    lam=st.floats(-1.0, 2.0, allow_nan=False),
)
def test_inverse_is_monotone_and_finite_or_huge_never_nan(z, lam):
    z = np.sort(np.asarray(z))
    x = inv_boxcox(z, lam)
    assert not np.any(np.isnan(x))
    assert np.all(x >= 0)
    assert np.all(x[1:] >= x[:-1])  # quantiles stay ordered


def test_inverse_clips_outside_the_range():
    # lam = 0.5: lam z + 1 < 0 below z = -2, where the inverse is ~0 (not NaN).
    x = inv_boxcox(np.array([-10.0, -2.0, 0.0]), 0.5)
    assert x[0] == pytest.approx(0.0, abs=1e-20) and x[1] == pytest.approx(0.0, abs=1e-20)
    assert x[2] == pytest.approx(1.0)


def test_guerrero_cv_by_hand():
    # Blocks of 2: [1, 3], [10, 30], [100, 300]; means 2, 20, 200; sds sqrt(2) * (1, 10, 100).
    y = np.array([1.0, 3.0, 10.0, 30.0, 100.0, 300.0])
    # lam = 1: ratio = sd = sqrt(2) * (1, 10, 100): CV = sd(1, 10, 100) / 37.
    assert guerrero_cv(y, 1.0, 2) == pytest.approx(np.sqrt(5994 / 2) / 37, rel=1e-12)
    # lam = 0: ratio = sd / mean = sqrt(2) / 2 for every block: CV = 0.
    assert guerrero_cv(y, 0.0, 2) == pytest.approx(0.0, abs=1e-12)
    assert guerrero_lambda(y, 2) == pytest.approx(0.0, abs=1e-4)
    # Only the last k whole blocks count (as R's forecast::BoxCox.lambda).
    assert guerrero_cv(np.concatenate([[1e6], y]), 1.0, 2) == guerrero_cv(y, 1.0, 2)


def test_guerrero_on_air_passengers_matches_r():
    # R: forecast::BoxCox.lambda(AirPassengers) (method "guerrero") = -0.2947156.
    assert guerrero_lambda(airline(), 12) == pytest.approx(-0.2947156, abs=2e-4)


def test_auto_picks_log_on_airline_training_part():
    choice = choose_transform(airline()[:126], 12)
    assert choice.lam == 0.0
    assert "log units" in choice.reason and "Guerrero lambda" in choice.reason


def test_auto_picks_none_for_constant_variance():
    rng = np.random.default_rng(3)
    t = np.arange(144)
    y = 100 + 0.8 * t + 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 2, t.size)
    # A season outside LOG_SEASONS (here: one week of days, the same values) keeps the verdict.
    assert choose_transform(y, 7).lam is None
    assert "does not grow" in choose_transform(y, 7).reason


@pytest.mark.parametrize("period", sorted(LOG_SEASONS))
def test_monthly_and_quarterly_series_are_logged_where_guerrero_says_none(period):
    rng = np.random.default_rng(3)

    def trend_and_constant_swing(n):
        t = np.arange(n)
        return 100 + 0.8 * t + 10 * np.sin(2 * np.pi * t / period) + rng.normal(0, 2, n)

    def guerrero_says_none(y):  # the criterion at lam = 1 within NONE_RATIO of its best in [0, 1]
        best = min(max(guerrero_lambda(y, period), 0), 1)
        return guerrero_cv(y, 1.0, period) <= NONE_RATIO * guerrero_cv(y, best, period)

    y = trend_and_constant_swing(12 * period)
    assert guerrero_says_none(y)
    choice = choose_transform(y, period)
    assert choice.lam == 0.0 and "monthly and quarterly" in choice.reason
    # Fewer than three seasons, more than LOG_RULE_MAX_VALUES values, or a value <= 0: still
    # data units (the same kind of series, long, with Guerrero's verdict checked again).
    assert choose_transform(y[: 3 * period - 1], period).lam is None
    y_long = trend_and_constant_swing(LOG_RULE_MAX_VALUES + 1)
    assert guerrero_says_none(y_long)
    assert choose_transform(y_long, period).lam is None
    assert choose_transform(y_long[-LOG_RULE_MAX_VALUES:], period).lam == 0.0
    y[5] = 0.0
    assert choose_transform(y, period).lam is None


def test_auto_picks_log_for_a_multiplicative_series():
    rng = np.random.default_rng(4)
    t = np.arange(120)
    y = np.exp(0.02 * t) * (10 + 3 * np.sin(2 * np.pi * t / 12)) * np.exp(rng.normal(0, 0.02, 120))
    assert choose_transform(y, 12).lam == 0.0


@pytest.mark.parametrize("bad", [0.0, -5.0])
def test_never_transformed_with_zeros_or_negatives(bad):
    t = np.arange(120)
    y = np.exp(0.03 * t) * (10 + 3 * np.sin(2 * np.pi * t / 12))  # would be logged
    assert choose_transform(y, 12).lam == 0.0
    y[40] = bad
    choice = choose_transform(y, 12)
    assert choice.lam is None and "<= 0" in choice.reason
    for mode in ("log", "boxcox"):
        with pytest.raises(ValueError, match="positive"):
            choose_transform(y, 12, mode)


def test_explicit_modes():
    y = airline()[:126]
    assert choose_transform(y, 12, "none").lam is None
    assert choose_transform(y, 12, "log").lam == 0.0
    assert choose_transform(y, 12, "boxcox", 0.5).lam == 0.5
    assert choose_transform(y, 12, "boxcox").lam == pytest.approx(guerrero_lambda(y, 12))
    assert choose_transform(y[:10], 12).lam is None  # too short to judge


@pytest.mark.parametrize("lam", [0.5, 1.0 / 3.0])
def test_inverse_mean_closed_forms(lam):
    # lam = 1/k: x = (lam z + 1)^k is a polynomial in z; its normal moments are closed form.
    mu, sd = np.array([3.0, 10.0]), np.array([0.4, 1.5])
    a = lam * mu + 1.0  # lam z + 1 = a + lam sd e, e ~ N(0, 1)
    b = lam * sd
    if lam == 0.5:
        expected = a**2 + b**2
    else:
        expected = a**3 + 3 * a * b**2
    np.testing.assert_allclose(inverse_mean(mu, sd, lam), expected, rtol=1e-10)
    np.testing.assert_allclose(inverse_mean(mu, sd, 0.0), np.exp(mu + sd**2 / 2))


def test_scaler_box_cox_round_trip_and_old_files():
    t = np.arange(30.0)
    y = np.linspace(5.0, 50.0, 30) ** 1.3
    s = Scaler.fit(t, y, boxcox_lambda=0.5, transform_reason="why")
    z = s.forward_y(y)
    assert np.mean(z) == pytest.approx(0.0, abs=1e-12) and np.std(z) == pytest.approx(1.0)
    np.testing.assert_allclose(s.inverse_y(z), y, rtol=1e-12)
    assert Scaler.from_dict(s.to_dict()) == s
    assert s.units == "boxcox" and not s.log
    old = {"time_offset": 0.0, "time_scale": 29.0, "value_offset": 1.0, "value_scale": 2.0,
           "log": True}
    loaded = Scaler.from_dict(old)
    assert loaded.log and loaded.boxcox_lambda == 0.0
    assert Scaler.from_dict({**old, "log": False}).boxcox_lambda is None
    with pytest.raises(DataError, match="positive"):
        Scaler.fit(t, y - 10.0, boxcox_lambda=0.5)


def _crps_brute_force(w, mu, sd, y, lam, lo, hi, n=400_001):
    x = np.linspace(lo, hi, n)
    cdf = np.zeros_like(x)
    pos = x > 0
    for wp, m, s in zip(w, mu, sd, strict=True):
        cdf[pos] += wp * stats.norm.cdf((stats.boxcox(x[pos], lmbda=lam) - m) / s)
    return np.trapezoid((cdf - (x >= y)) ** 2, x)


@pytest.mark.parametrize("lam", [0.5, 0.25])
def test_boxcox_mixture_crps_against_brute_force(lam):
    w = np.array([0.7, 0.3])
    mu = np.array([[boxcox(np.array([40.0]), lam)[0]], [boxcox(np.array([55.0]), lam)[0]]])
    sd = np.array([[0.4], [0.8]])
    for y in (35.0, 48.0, 90.0):
        got = boxcox_mixture_crps(w, mu, sd, np.array([y]), lam)[0]
        ref = _crps_brute_force(w, mu[:, 0], sd[:, 0], y, lam, 1e-9, 400.0)
        assert got == pytest.approx(ref, rel=2e-4)


def test_boxcox_mixture_crps_at_lambda_one_is_gaussian():
    # lam = 1: x = z + 1, a Gaussian mixture shifted by 1 (closed form CRPS).
    w = np.array([0.5, 0.5])
    mu = np.array([[50.0, 20.0], [53.0, 25.0]])
    sd = np.array([[2.0, 4.0], [3.0, 1.0]])
    y = np.array([52.0, 30.0])
    np.testing.assert_allclose(
        boxcox_mixture_crps(w, mu, sd, y, 1.0), mixture_crps(w, mu + 1.0, sd, y), rtol=1e-4
    )
