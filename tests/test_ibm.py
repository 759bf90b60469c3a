"""The integrated Brownian motion atom (``IBM``), one row of the atom table: its covariance against
a numerical double integral of Brownian motion's, its custom VJP against finite differences, the
batched marginal likelihood and the forecast against a two-state Kalman filter (the local linear
trend), units, text form and reading, and that it is off unless configured."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.integrate

from autogp.data import TimeAxis
from autogp.evaluator import gram, log_marginal_likelihood, posterior_predictive
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.forecast import explain
from autogp.kernels import IntegratedBrownian, pack, parse, spec, structure, to_text, unpack
from tests.helpers import (
    assert_allclose,
    assert_atom_off_by_default_and_on_when_configured,
    assert_atom_vjp_matches_finite_differences,
    kalman_first_state,
)
from tests.reference_numpy import gram_numpy

IBM = spec.OPCODE_OF_NAME["IBM"]
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, 20))
X[7] = X[6]  # a repeated time point


def integrated_bm_covariance(t: float, s: float, origin: float, amp: float) -> float:
    """Cov(I(t), I(s)) for I(t) = int_origin^t W(a) da, W Brownian motion with variance amp per
    unit time from ``origin``: the double integral of amp * min(a - origin, b - origin)."""
    if min(t, s) <= origin:
        return 0.0

    def inner(a: float) -> float:  # int_origin^s min(a, b) - origin db, split at its kink b = a
        kink = [a] if origin < a < s else None
        return scipy.integrate.quad(lambda b: min(a, b) - origin, origin, s, points=kink,
                                    epsabs=1e-14, epsrel=1e-12)[0]

    return amp * scipy.integrate.quad(inner, origin, t, epsabs=1e-14, epsrel=1e-12)[0]


def test_ibm_is_an_atom_with_an_appended_opcode():
    assert IBM == 16 and IBM in spec.ATOMS and spec.NUM_OPS >= 17
    assert spec.PARAM_NAMES[IBM] == ("origin", "amp") and IBM not in spec.STATIONARY
    assert IntegratedBrownian.opcode == IBM
    # Shares BM's origin parameter (one prior, one config key).
    assert spec.PARAM_OF_NAME["origin"].prior == (-0.1, 0.1)


@pytest.mark.parametrize(("origin", "amp"), [(-0.1, 1.0), (0.3, 2.5), (-1.0, 0.2)])
def test_covariance_is_the_double_integral_of_brownian_motion(origin, amp):
    x = X[::3]
    expected = np.array([[integrated_bm_covariance(a, b, origin, amp) for b in x] for a in x])
    expr = IntegratedBrownian(origin=origin, amp=amp)
    ops, params = pack([expr], max_depth=1)
    assert_allclose(gram(ops, params, x)[0], expected, rtol=1e-8, atol=1e-12)
    assert_allclose(gram_numpy(expr, x, x), expected, rtol=1e-8, atol=1e-12)
    # Cross-covariances (forecast points beyond the data) as well.
    x_new = np.array([1.2, 2.0])
    cross = np.array([[integrated_bm_covariance(a, b, origin, amp) for b in x_new] for a in x])
    assert_allclose(gram(ops, params, x, x_new)[0], cross, rtol=1e-8, atol=1e-12)


def test_custom_vjp_matches_finite_differences_of_the_numpy_formula():
    rng = np.random.default_rng(1)
    cot = rng.normal(size=(X.size, X.size))
    u = np.array([-0.15, math.log(1.3)])  # unconstrained origin (identity) and amp (log)

    def reference(u):
        expr = IntegratedBrownian(origin=u[0], amp=math.exp(u[1]))
        return float(np.sum(cot * gram_numpy(expr, X, X)))

    assert_atom_vjp_matches_finite_differences(IBM, u, X, cot, reference)
    ops = np.array([[IBM, spec.EMPTY, spec.EMPTY]], np.int32)
    params = np.zeros((1, 3, spec.MAX_PARAMS))
    params[0, 0, :2] = u
    params = jnp.asarray(params)
    # An origin inside the data: the kink at s = 0 gives finite gradients.
    params_inside = params.at[0, 0, 0].set(X[5])
    inside = jax.grad(lambda p: jnp.sum(cot * gram(ops, p, X)[0]))(params_inside)
    assert np.all(np.isfinite(np.asarray(inside)))


def kalman_local_linear_trend(x, y, origin, amp, noise_var, x_new):
    """The textbook Kalman filter of the integrated random walk: state (level, slope), both 0 with
    variance 0 at ``origin``; over a step d the transition is [[1, d], [0, 1]] with process noise
    amp [[d^3/3, d^2/2], [d^2/2, d]]. Returns the log likelihood of y and the latent forecast's
    mean and variance at ``x_new`` (beyond the data)."""

    def step(m, P, d):
        F = np.array([[1.0, d], [0.0, 1.0]])
        Q = amp * np.array([[d**3 / 3, d**2 / 2], [d**2 / 2, d]])
        return F @ m, F @ P @ F.T + Q

    return kalman_first_state(x, y, step, np.zeros(2), np.zeros((2, 2)), origin, noise_var, x_new)


def test_likelihood_and_forecast_are_the_local_linear_trend_kalman_filter():
    rng = np.random.default_rng(7)
    origin, amp, noise_var = -0.2, 40.0, 0.05
    x = np.sort(rng.uniform(0.0, 1.0, 30))
    y = np.cumsum(np.cumsum(rng.normal(scale=0.05, size=x.size)))
    x_new = np.array([1.05, 1.3, 2.0])
    expected_ll, expected_mean, expected_var = kalman_local_linear_trend(
        x, y, origin, amp, noise_var, x_new
    )
    ops, params = pack([IntegratedBrownian(origin=origin, amp=amp)], 1)
    K = gram_numpy(IntegratedBrownian(origin=origin, amp=amp), x, x)
    jitter = BASE_JITTER * np.mean(np.diag(K))  # the evaluator's always-applied first rung
    ll = log_marginal_likelihood(ops, params, np.log([noise_var - jitter]), x, y)
    assert_allclose(ll[0], expected_ll, rtol=1e-9)
    mean, var = posterior_predictive(
        ops, params, np.log([noise_var]), x, y, np.ones(x.size, bool), x_new, full_cov=False
    )
    assert_allclose(np.asarray(mean)[0], expected_mean, rtol=1e-6, atol=1e-9)
    assert_allclose(np.asarray(var)[0], expected_var, rtol=1e-6, atol=1e-9)
    # The forecast carries the last slope on: its variance grows faster than linearly.
    far = np.asarray(var)[0]
    assert (far[2] - far[1]) / (2.0 - 1.3) > (far[1] - far[0]) / (1.3 - 1.05)


def test_text_form_round_trips():
    expr = parse("IBM(origin=-0.1; amp=1.5)")
    assert isinstance(expr, IntegratedBrownian) and expr.params == (-0.1, 1.5)
    assert to_text(expr, params=True) == "IBM(origin=-0.1; amp=1.5)"
    assert structure(parse("IBM + PER * LIN")) == "IBM + PER * LIN"
    assert parse(to_text(expr, params=True, precision=None)) == expr
    assert unpack(*pack([expr]))[0].params == pytest.approx(expr.params, rel=1e-15)


def test_units_and_reading():
    """amp is a slope variance per unit time (value^2 / time^3); origin is a point in time."""
    axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    data = parse("IBM(origin=-0.1; amp=1.5)").in_data_units(12.0, 3.0, 2.0)
    assert data.params == pytest.approx((-0.1 * 12.0 + 3.0, 1.5 * 4.0 / 12.0**3))
    # The covariance is unchanged: k_data(t, t') = value_scale^2 k(t_n, t_n').
    t = np.array([0.2, 0.5, 0.9])
    normalised = gram_numpy(parse("IBM(origin=-0.1; amp=1.5)"), t, t)
    assert_allclose(gram_numpy(data, t * 12.0 + 3.0, t * 12.0 + 3.0), 4.0 * normalised, rtol=1e-12)
    assert explain.describe(data, axis) == "trend with a wandering slope"
    assert explain.classify_term(data) == "trend"


def test_off_by_default_and_on_when_configured():
    assert_atom_off_by_default_and_on_when_configured("IBM")
