"""The posterior predictive against the closed-form GP posterior computed in numpy.

One jitted function returns all four combinations of ``full_cov`` and ``observation_noise`` (one
compilation; the masks change only array values).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from autogp.evaluator import posterior_predictive
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.kernels import pack, spec, to_text
from tests.helpers import TIME_ATOMS, assert_allclose, random_expression
from tests.reference_numpy import gram_numpy

P, N, M = 16, 28, 11
_FLAGS = [(full_cov, obs) for full_cov in (True, False) for obs in (True, False)]


@jax.jit
def _predict_all(ops, params, noise, x, y, mask, x_new):
    return [
        posterior_predictive(
            ops, params, noise, x, y, mask, x_new, full_cov=full_cov, observation_noise=obs
        )
        for full_cov, obs in _FLAGS
    ]


def _problem(seed):
    rng = np.random.default_rng(seed)
    every = set(TIME_ATOMS) | set(spec.OPERATORS)
    while True:  # draw until the batch uses every atom and operator (the test checks all)
        exprs = [random_expression(rng, 3) for _ in range(P)]
        ops, params = pack(exprs, 3)
        if every <= set(np.unique(ops).tolist()):
            break
    x = rng.uniform(0.0, 1.0, N)
    x[[3, 4]] = x[2]  # repeated training points
    # Test points: inside, beyond the data, and two exactly at training points (white noise).
    x_new = np.concatenate([rng.uniform(-0.2, 1.4, M - 2), x[[2, 10]]])
    y = rng.normal(size=N)
    noise = rng.uniform(-4.0, -1.0, P)
    return rng, exprs, ops, params, noise, x, y, x_new


def _reference(expr, noise_var, x, y, mask, x_new):
    """Closed-form posterior of f(x_new) given y[mask]: mean K*^T A^-1 y and covariance
    K** - K*^T A^-1 K*, with A = K + s I. ``s`` includes the first rung of the evaluator's jitter
    ladder (``BASE_JITTER`` times the mean observed prior variance) so the match can be tight."""
    xm, ym = x[mask], y[mask]
    K = gram_numpy(expr, xm, xm)
    A = K + (noise_var + BASE_JITTER * np.mean(np.diag(K))) * np.eye(xm.size)
    K_star = gram_numpy(expr, xm, x_new)
    mean = K_star.T @ np.linalg.solve(A, ym)
    cov = gram_numpy(expr, x_new, x_new) - K_star.T @ np.linalg.solve(A, K_star)
    return mean, cov


def _masks(rng):
    subset = rng.random(N) < 0.6
    subset[[2, 3]] = [True, False]
    return {"all": np.ones(N, bool), "suffix": np.arange(N) < 19, "subset": subset}


@pytest.mark.parametrize("seed", [0, 1])
def test_posterior_predictive_equals_closed_form(seed):
    rng, exprs, ops, params, noise, x, y, x_new = _problem(seed)
    assert set(TIME_ATOMS) | set(spec.OPERATORS) <= set(np.unique(ops).tolist())
    for name, mask in _masks(rng).items():
        results = _predict_all(ops, params, noise, x, y, mask, x_new)
        for (full_cov, obs), (mean, cov) in zip(_FLAGS, results, strict=True):
            mean, cov = np.asarray(mean), np.asarray(cov)
            assert mean.shape == (P, M)
            assert cov.shape == ((P, M, M) if full_cov else (P, M))
            for p, expr in enumerate(exprs):
                s = float(np.exp(noise[p]))
                ref_mean, ref_cov = _reference(expr, s, x, y, mask, x_new)
                if obs:
                    ref_cov = ref_cov + s * np.eye(M)
                if not full_cov:
                    ref_cov = np.diag(ref_cov)
                # The covariance is a difference of nearly equal terms: absolute tolerance
                # relative to the prior variance.
                scale = np.max(np.abs(gram_numpy(expr, x_new, x_new)))
                msg = f"{name}, full_cov={full_cov}, obs={obs}: {to_text(expr)}"
                assert_allclose(mean[p], ref_mean, rtol=1e-10, atol=1e-11 * scale, err_msg=msg)
                assert_allclose(cov[p], ref_cov, rtol=1e-10, atol=1e-11 * scale, err_msg=msg)


def test_failed_particle_gets_nan_and_others_are_unaffected():
    rng, exprs, ops, params, noise, x, y, x_new = _problem(0)
    mask = np.arange(N) < 19
    good = _predict_all(ops, params, noise, x, y, mask, x_new)
    bad_params = params.copy()
    bad_params[5] = np.nan
    bad = _predict_all(ops, bad_params, noise, x, y, mask, x_new)
    others = np.arange(P) != 5
    for result_good, result_bad in zip(good, bad, strict=True):
        for array_good, array_bad in zip(result_good, result_bad, strict=True):  # mean, cov
            array_good, array_bad = np.asarray(array_good), np.asarray(array_bad)
            assert np.all(np.isnan(array_bad[5]))
            np.testing.assert_array_equal(array_bad[others], array_good[others])


def test_brownian_motion_forecast_is_the_local_level_kalman_filter():
    """BM + noise is the local-level state-space model: the GP posterior beyond the data must equal
    the Kalman filter's forecast (flat at the filtered level, variance growing by amp per unit
    time), computed here by the textbook recursions."""
    from autogp.kernels import Brownian

    rng = np.random.default_rng(7)
    origin, amp, noise_var = -0.2, 1.7, 0.09
    x = np.sort(rng.uniform(0.0, 1.0, 25))
    y = np.cumsum(rng.normal(scale=0.3, size=x.size))
    x_new = np.array([1.05, 1.3, 2.0])
    ops, params = pack([Brownian(origin=origin, amp=amp)], 1)
    mean, var = posterior_predictive(
        ops, params, np.log([noise_var]), x, y, np.ones(x.size, bool), x_new, full_cov=False
    )
    # Kalman filter: the level starts at 0 with variance 0 at `origin`.
    level, level_var, t_prev = 0.0, 0.0, origin
    for t, obs in zip(x, y, strict=True):
        level_var += amp * (t - t_prev)
        gain = level_var / (level_var + noise_var)
        level, level_var = level + gain * (obs - level), (1.0 - gain) * level_var
        t_prev = t
    assert_allclose(np.asarray(mean)[0], np.full(3, level), rtol=1e-7, atol=1e-9)
    assert_allclose(np.asarray(var)[0], level_var + amp * (x_new - x[-1]), rtol=1e-7, atol=1e-9)
