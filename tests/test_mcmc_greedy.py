"""The baselines: independent MCMC chains (fit_mcmc) and the greedy BIC search (greedy_search)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from autogp.config import engine_settings, load_config
from autogp.inference import smc
from autogp.kernels import nodes, spec, to_text, unpack
from lab import greedy, mcmc
from tests.reference_numpy import gram_numpy


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, n)
    y = 2.0 * x + np.sin(2 * np.pi * x / 0.25) + 0.05 * rng.normal(size=n)
    return x, (y - y.mean()) / y.std()


def _numpy_log_likelihood(expr, noise, x, y):
    K = gram_numpy(expr, x, x) + math.exp(noise) * np.eye(len(x))
    return float(multivariate_normal(np.zeros(len(x)), K, allow_singular=False).logpdf(y))


# --- MCMC ------------------------------------------------------------------------------------
MCMC_GRAMMAR, MCMC_SETTINGS = engine_settings(load_config(
    {
        "grammar": {"max_depth": 1},  # small trees: the compiled round is half as big
        "smc": {"num_particles": 4, "num_rounds": 2, "structure_moves": 2},
        "refine": {"steps": 5},
    }
))


@pytest.fixture(scope="module")
def mcmc_runs():
    x, y = _data()
    before = smc.compilation_counts()["round"]
    a = mcmc.fit_mcmc(x, y, MCMC_GRAMMAR, MCMC_SETTINGS, key=jax.random.key(7))
    b = mcmc.fit_mcmc(x, y, MCMC_GRAMMAR, MCMC_SETTINGS, key=jax.random.key(7))
    calls = []
    c = mcmc.fit_mcmc(
        x,
        y,
        MCMC_GRAMMAR,
        MCMC_SETTINGS,
        key=jax.random.key(8),
        num_iterations=3,
        callback=lambda i, total: calls.append((i, total)),
    )
    traces = smc.compilation_counts()["round"] - before
    return x, y, a, b, c, calls, traces


def test_mcmc_chains_are_finite_with_uniform_weights(mcmc_runs):
    x, y, a, _, c, calls, _ = mcmc_runs
    P, S = 4, spec.num_slots(1)
    for r in (a, c):
        assert r.ops.shape == (P, S) and r.params.shape == (P, S, spec.MAX_PARAMS)
        assert np.all(np.isfinite(r.params)) and np.all(np.isfinite(r.noise))
        np.testing.assert_array_equal(r.log_weights, np.full(P, -math.log(P)))
        assert math.isnan(r.log_marginal_likelihood)
    assert len(a.history["acceptance"]) == 2 and len(c.history["acceptance"]) == 3
    assert c.history["count"] == [len(x)] * 3
    assert calls == [(1, 3), (2, 3), (3, 3)]
    # The chains' stored log likelihoods are on all the data (checked with plain numpy).
    for p, expr in enumerate(unpack(c.ops, c.params)):
        expected = _numpy_log_likelihood(expr, c.noise[p], x, y)
        assert np.isclose(c.history["log_likelihood"][p], expected, rtol=1e-6, atol=1e-6)


def test_mcmc_is_deterministic_for_a_fixed_key(mcmc_runs):
    _, _, a, b, c, _, _ = mcmc_runs
    for field in ("ops", "params", "noise", "log_weights"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.params, c.params)


def test_mcmc_compiles_once_across_iterations_and_fits(mcmc_runs):
    assert mcmc_runs[-1] <= 1


# --- greedy search ---------------------------------------------------------------------------
GREEDY_GRAMMAR, GREEDY_SETTINGS = engine_settings(load_config(
    {
        "grammar": {
            "max_depth": 2,
            "weights": {"LIN": 1, "PER": 1, "GE": 0, "BM": 0, "PLUS": 1, "TIMES": 1, "CP": 0},
        },
        "refine": {"steps": 80, "learning_rate": 0.1},
    }
))


@pytest.fixture(scope="module")
def greedy_run():
    x, y = _data()
    before = greedy.compilation_count()
    # max_size=2 stops after two atoms (a third step would fit 33 more candidates: slow here).
    result = greedy.greedy_search(
        x, y, GREEDY_GRAMMAR, GREEDY_SETTINGS.refine, key=jax.random.key(0), restarts=3,
        max_size=2,
    )
    return x, y, result, greedy.compilation_count() - before


def test_greedy_finds_linear_plus_periodic_with_decreasing_bic(greedy_run):
    _, _, result, traces = greedy_run
    path = result.history["path"]
    text = to_text(unpack(result.ops, result.params)[0])
    assert "LIN" in text and "PER" in text, path
    assert path[-1][0] == text
    bics = [b for _, b in path]
    assert len(bics) >= 2 and all(b < a for a, b in zip(bics, bics[1:], strict=False)), path
    assert result.ops.shape == (1, spec.num_slots(2)) and result.log_weights.tolist() == [0.0]
    assert traces <= 1  # fixed-size chunks: one compiled program for the whole search


def test_greedy_bic_matches_an_independent_numpy_computation(greedy_run):
    x, y, result, _ = greedy_run
    expr = unpack(result.ops, result.params)[0]
    ll = _numpy_log_likelihood(expr, float(result.noise[0]), x, y)
    k = sum(len(node.params) for node in nodes(expr)) + 1
    bic = -2.0 * ll + k * math.log(len(x))
    assert np.isclose(result.log_marginal_likelihood, ll, rtol=1e-7, atol=1e-5)
    assert np.isclose(result.history["path"][-1][1], bic, rtol=1e-7, atol=1e-5)


def test_expansions_cover_every_one_step_edit():
    from autogp.kernels import parse

    edits = {to_text(e) for e in greedy.expansions(parse("LIN + PER"), (spec.LIN,), (spec.PLUS,))}
    assert edits == {"LIN + PER + LIN", "LIN + LIN + PER", "LIN + (PER + LIN)"}
