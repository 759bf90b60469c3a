"""The damped-trend atom (``IOU``, integrated Ornstein-Uhlenbeck), one row of the atom table: its
covariance against a numerical double integral of the OU slope's, its limits (LIN from origin,
BM), its custom VJP against finite differences, the forecast against a two-state Kalman filter
(level and OU slope), units, text form and reading, and that it is off unless configured."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.integrate
import scipy.linalg

from autogp.data import TimeAxis
from autogp.evaluator import gram, log_marginal_likelihood, posterior_predictive
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.forecast import explain
from autogp.kernels import DampedTrend, pack, parse, spec, structure, to_text, unpack
from tests.helpers import (
    assert_allclose,
    assert_atom_off_by_default_and_on_when_configured,
    assert_atom_vjp_matches_finite_differences,
    kalman_first_state,
)
from tests.reference_numpy import gram_numpy

IOU = spec.OPCODE_OF_NAME["IOU"]
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, 20))
X[7] = X[6]  # a repeated time point


def iou_covariance(t: float, s: float, origin: float, l: float, amp: float) -> float:
    """Cov(I(t), I(s)) for I(t) = int_origin^t v(a) da, v a stationary OU process with variance
    amp and correlation time l: the double integral of amp * exp(-|a - b| / l)."""
    if min(t, s) <= origin:
        return 0.0
    def inner(a: float) -> float:  # int_origin^s exp(-|a - b| / l) db, split at its kink b = a
        kink = [a] if origin < a < s else None
        return scipy.integrate.quad(lambda b: math.exp(-abs(a - b) / l), origin, s,
                                    points=kink, epsabs=1e-14, epsrel=1e-12)[0]

    outer_kink = [s] if origin < s < t else None  # inner(a) has a kink where a passes s
    return amp * scipy.integrate.quad(inner, origin, t, points=outer_kink,
                                      epsabs=1e-14, epsrel=1e-12)[0]


def test_iou_is_an_atom_with_an_appended_opcode():
    assert IOU == 17 and IOU in spec.ATOMS and spec.NUM_OPS >= 18
    assert spec.PARAM_NAMES[IOU] == ("origin", "l", "amp") and IOU not in spec.STATIONARY
    assert DampedTrend.opcode == IOU


@pytest.mark.parametrize(("origin", "l", "amp"), [(-0.1, 0.3, 1.0), (0.3, 2.0, 2.5),
                                                  (-1.0, 0.05, 0.2)])
def test_covariance_is_the_double_integral_of_an_ou_slope(origin, l, amp):
    x = X[::3]
    expected = np.array([[iou_covariance(a, b, origin, l, amp) for b in x] for a in x])
    expr = DampedTrend(origin=origin, l=l, amp=amp)
    ops, params = pack([expr], max_depth=1)
    assert_allclose(gram(ops, params, x)[0], expected, rtol=1e-7, atol=1e-11)
    assert_allclose(gram_numpy(expr, x, x), expected, rtol=1e-7, atol=1e-11)
    x_new = np.array([1.2, 2.0])
    cross = np.array([[iou_covariance(a, b, origin, l, amp) for b in x_new] for a in x])
    assert_allclose(gram(ops, params, x, x_new)[0], cross, rtol=1e-7, atol=1e-11)


def test_limits_are_a_line_from_origin_and_a_random_walk():
    origin, amp = -0.1, 1.7
    s = np.minimum(X[:, None], X[None, :]) - origin
    u = np.maximum(X[:, None], X[None, :]) - origin
    slow = gram(*pack([DampedTrend(origin=origin, l=1e4, amp=amp)], 1), X)[0]
    assert_allclose(slow, amp * s * u, rtol=1e-4)  # LIN from origin: a fixed random slope
    fast = gram(*pack([DampedTrend(origin=origin, l=1e-4, amp=amp)], 1), X)[0]
    assert_allclose(fast, 2.0 * amp * 1e-4 * s, rtol=1e-3)  # BM with variance 2 amp l per time


def test_custom_vjp_matches_finite_differences_of_the_numpy_formula():
    rng = np.random.default_rng(1)
    cot = rng.normal(size=(X.size, X.size))
    u = np.array([-0.15, math.log(0.4), math.log(1.3)])  # origin (identity), l and amp (log)

    def reference(u):
        expr = DampedTrend(origin=u[0], l=math.exp(u[1]), amp=math.exp(u[2]))
        return float(np.sum(cot * gram_numpy(expr, X, X)))

    assert_atom_vjp_matches_finite_differences(IOU, u, X, cot, reference)
    # An origin inside the data: the kink at s = 0 gives finite gradients.
    ops = np.array([[IOU, spec.EMPTY, spec.EMPTY]], np.int32)
    params = np.zeros((1, 3, spec.MAX_PARAMS))
    params[0, 0, :3] = [X[5], u[1], u[2]]
    inside = jax.grad(lambda p: jnp.sum(cot * gram(ops, p, X)[0]))(jnp.asarray(params))
    assert np.all(np.isfinite(np.asarray(inside)))


def kalman_damped_trend(x, y, origin, l, amp, noise_var, x_new):
    """A Kalman filter of (level, slope) with an OU slope: the slope starts at its stationary
    law N(0, amp) and the level at 0 exactly, at ``origin``. The transition over a step d and its
    process noise come from the matrix exponential of the continuous system (Van Loan's
    method): drift [[0, 1], [0, -1/l]], diffusion 2 amp / l into the slope. Returns the log
    likelihood of y and the latent forecast's mean and variance at ``x_new``."""
    A = np.array([[0.0, 1.0], [0.0, -1.0 / l]])
    Qc = np.array([[0.0, 0.0], [0.0, 2.0 * amp / l]])

    def step(m, P, d):
        M = scipy.linalg.expm(np.block([[-A, Qc], [np.zeros((2, 2)), A.T]]) * d)
        F = M[2:, 2:].T
        Q = F @ M[:2, 2:]
        return F @ m, F @ P @ F.T + Q

    return kalman_first_state(x, y, step, np.zeros(2), np.diag([0.0, amp]), origin, noise_var,
                              x_new)


def test_likelihood_and_forecast_are_the_damped_trend_kalman_filter():
    rng = np.random.default_rng(7)
    origin, l, amp, noise_var = -0.2, 0.3, 3.0, 0.01
    x = np.sort(rng.uniform(0.0, 1.0, 30))
    y = 1.5 * x + 0.1 * np.sin(6 * x) + rng.normal(scale=0.1, size=x.size)
    x_new = np.array([1.05, 1.3, 2.0, 4.0])
    expected_ll, expected_mean, expected_var = kalman_damped_trend(
        x, y, origin, l, amp, noise_var, x_new)
    expr = DampedTrend(origin=origin, l=l, amp=amp)
    ops, params = pack([expr], 1)
    jitter = BASE_JITTER * np.mean(np.diag(gram_numpy(expr, x, x)))
    ll = log_marginal_likelihood(ops, params, np.log([noise_var - jitter]), x, y)
    assert_allclose(ll[0], expected_ll, rtol=1e-9)
    mean, var = posterior_predictive(
        ops, params, np.log([noise_var]), x, y, np.ones(x.size, bool), x_new, full_cov=False
    )
    mean = np.asarray(mean)[0]
    assert_allclose(mean, expected_mean, rtol=1e-6, atol=1e-9)
    assert_allclose(np.asarray(var)[0], expected_var, rtol=1e-6, atol=1e-9)
    # The trend is damped: the forecast's increments shrink by e^{-d/l} over each stretch d.
    step1, step2 = mean[2] - mean[1], mean[3] - mean[2]
    assert 0 < step2 < step1


def test_text_form_round_trips():
    expr = parse("IOU(origin=-0.1, l=0.5; amp=1.5)")
    assert isinstance(expr, DampedTrend) and expr.params == (-0.1, 0.5, 1.5)
    assert to_text(expr, params=True) == "IOU(origin=-0.1, l=0.5; amp=1.5)"
    assert structure(parse("IOU + PER * LIN")) == "IOU + PER * LIN"
    assert parse(to_text(expr, params=True, precision=None)) == expr
    assert unpack(*pack([expr]))[0].params == pytest.approx(expr.params, rel=1e-15)


def test_units_and_reading():
    """amp is a slope variance (value^2 / time^2), l a duration, origin a point in time."""
    axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    normalised = parse("IOU(origin=-0.1, l=0.5; amp=1.5)")
    data = normalised.in_data_units(12.0, 3.0, 2.0)
    assert data.params == pytest.approx((-0.1 * 12.0 + 3.0, 0.5 * 12.0, 1.5 * 4.0 / 12.0**2))
    t = np.array([0.2, 0.5, 0.9])
    assert_allclose(gram_numpy(data, t * 12.0 + 3.0, t * 12.0 + 3.0),
                    4.0 * gram_numpy(normalised, t, t), rtol=1e-12)
    assert explain.describe(data, axis) == "trend whose slope fades over ~6 months"
    assert explain.classify_term(data) == "trend"


def test_off_by_default_and_on_when_configured():
    assert_atom_off_by_default_and_on_when_configured("IOU")
