"""The forecast scale from the rounds' held-out forecasts (``smc.calibrate``): scores against a
numpy GP and a numerically integrated mixture CDF, the scale's formula by hand, and a fit whose
particles are unchanged by it and whose variances widen only beyond the data."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import numpy as np
import pandas as pd
from scipy.stats import norm

from autogp.config import engine_settings, load_config
from autogp.data import Scaler, from_arrays
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.inference import calibration, smc
from autogp.inference.padding import make_data
from autogp.inference.posterior import Posterior
from autogp.kernels import pack
from tests.helpers import random_expression
from tests.reference_numpy import gram_numpy


def _numpy_scores(log_weights, means, variances, y):
    """Phi^-1 of the mixture CDF at y, the CDF by the trapezoid rule on the mixture density."""
    w = np.exp(log_weights - np.max(log_weights))
    w /= w.sum()
    out = []
    for m in range(len(y)):
        sd = np.sqrt(variances[:, m])
        grid = np.linspace(np.min(means[:, m] - 12 * sd), y[m], 200_001)
        pdf = np.sum(w[:, None] * norm.pdf(grid[None, :], means[:, m, None], sd[:, None]), 0)
        out.append(norm.ppf(np.trapezoid(pdf, grid)))
    return np.array(out)


def test_mixture_scores_match_the_integrated_mixture_cdf():
    rng = np.random.default_rng(0)
    P, M = 4, 6
    log_weights = rng.normal(size=P)
    means, variances = rng.normal(size=(P, M)), rng.uniform(0.1, 2.0, (P, M))
    y = rng.normal(scale=2.0, size=M)
    np.testing.assert_allclose(calibration.mixture_scores(log_weights, means, variances, y),
                               _numpy_scores(log_weights, means, variances, y), atol=1e-6)
    # A failed particle (NaN mean) and a zero-weight one are left out.
    bad_means = np.vstack([means, np.full((1, M), np.nan), rng.normal(size=(1, M))])
    bad_vars = np.vstack([variances, np.ones((2, M))])
    bad_weights = np.append(log_weights, [0.0, -np.inf])
    np.testing.assert_allclose(calibration.mixture_scores(bad_weights, bad_means, bad_vars, y),
                               _numpy_scores(log_weights, means, variances, y), atol=1e-6)
    # Far outside every particle: clipped, not infinite.
    far = calibration.mixture_scores(log_weights, means, variances, np.full(M, 1e3))
    np.testing.assert_array_equal(far, calibration.MAX_SCORE)


class _State(NamedTuple):
    ops: np.ndarray
    params: np.ndarray
    noise: np.ndarray
    log_weights: np.ndarray


def test_held_out_scores_are_the_rounds_gp_forecasts_of_the_points_they_had_not_seen():
    rng = np.random.default_rng(1)
    n, P = 20, 4
    x = np.linspace(0.0, 1.0, n)
    y = np.sin(6 * x) + 0.3 * rng.normal(size=n)
    data = make_data([x], [y])
    exprs = [random_expression(rng, 2) for _ in range(P)]
    ops, params = pack(exprs, 2)
    rounds = []
    for c in (6, 10, 13, 17, 20):
        state = _State(ops[None], params[None], rng.uniform(-3.0, -1.0, (1, P)),
                       rng.normal(size=(1, P)))
        rounds.append((np.array([c]), state))
    scores = calibration.held_out_scores(rounds, data, 0)
    steps = math.ceil(calibration.STEPS_SHARE * n)
    # Rounds on at least half of the points and short of all of them: 10, 13 and 17.
    assert [len(z) for z in scores] == [steps, steps, n - 17]
    for z, (counts, state) in zip(scores, rounds[1:4], strict=True):
        c = int(counts[0])
        new = x[c : c + len(z)]
        means, variances = [], []
        for p, expr in enumerate(exprs):
            noise_var = float(np.exp(state.noise[0, p]))
            K = gram_numpy(expr, x[:c], x[:c])
            A = K + (noise_var + BASE_JITTER * np.mean(np.diag(K))) * np.eye(c)
            K_star = gram_numpy(expr, x[:c], new)
            means.append(K_star.T @ np.linalg.solve(A, y[:c]))
            variances.append(np.diag(gram_numpy(expr, new, new)
                                     - K_star.T @ np.linalg.solve(A, K_star)) + noise_var)
        ref = _numpy_scores(state.log_weights[0], np.array(means), np.array(variances),
                            y[c : c + len(z)])
        np.testing.assert_allclose(z, ref, atol=1e-5)


def test_predictive_scale_by_hand():
    squares = calibration.origin_mean_squares([np.array([2.0, 2.0]), np.array([1.0, -1.0]),
                                               np.array([3.0])])
    assert squares == [4.0, 1.0, 9.0]
    assert math.isclose(calibration.predictive_scale(squares, 2.0), math.sqrt(16.0 / 5.0))
    assert math.isclose(calibration.predictive_scale(squares, 0.0), math.sqrt(14.0 / 3.0))
    assert calibration.predictive_scale([0.25, 0.36], 0.0) == 1.0  # never narrower
    assert calibration.predictive_scale([], 0.0) == 1.0


def _fit(calibrate: bool, x, y):
    config = load_config(None, {"smc.num_particles": 4, "smc.num_rounds": 6,
                                "smc.structure_moves": 2, "grammar.max_depth": 2,
                                "refine.steps": 5, "smc.calibrate": calibrate})
    grammar, settings = engine_settings(config)
    return smc.run_smc(x, y, grammar, settings, key=jax.random.key(3))


def test_calibrate_keeps_the_particles_and_widens_only_beyond_the_data():
    rng = np.random.default_rng(2)
    n = 24
    values = 10 + 0.2 * np.arange(n) + rng.normal(size=n)
    values[16:] += 4.0  # a level shift the early rounds cannot foresee
    series = from_arrays(pd.date_range("2000", periods=n, freq="YS"), values)
    scaler = Scaler.fit(series.t, values)
    x, y = scaler.forward_t(series.t), scaler.forward_y(values)
    off, on = _fit(False, x, y), _fit(True, x, y)
    for a, b in zip(off[:4], on[:4], strict=True):  # ops, params, noise, log weights
        np.testing.assert_array_equal(a, b)
    squares = on.history["held_out_mean_squares"]
    assert len(squares) == sum(1 for c in on.history["count"] if n / 2 <= c[0] < n)
    assert on.history["predictive_scale"] == [
        calibration.predictive_scale(squares, load_config(None, {}).smc.calibration_prior)]
    assert "predictive_scale" not in off.history
    plain = Posterior.from_smc(series, scaler, off)
    widened = Posterior.from_smc(series, scaler, off._replace(
        history={**off.history, "predictive_scale": [1.7]}))
    t_new = np.concatenate([series.t[-3:], series.future_t(4)])
    for noise in (False, True):
        m0, v0 = plain.predictive(t_new, noise)
        m1, v1 = widened.predictive(t_new, noise)
        np.testing.assert_array_equal(m0, m1)
        np.testing.assert_allclose(v1[:, :3], v0[:, :3], rtol=1e-12)
        np.testing.assert_allclose(v1[:, 3:], 1.7**2 * v0[:, 3:], rtol=1e-12)
    _, c0 = plain.predictive(t_new, True, full_cov=True)
    _, c1 = widened.predictive(t_new, True, full_cov=True)
    factor = np.where(np.arange(7) < 3, 1.0, 1.7)
    np.testing.assert_allclose(c1, c0 * np.outer(factor, factor), rtol=1e-12, atol=1e-15)
