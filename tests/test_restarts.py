"""Independent SMC runs pooled by their evidence (``smc.restarts``)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from scipy.special import logsumexp

from autogp._x64 import x64
from autogp.config import engine_settings, load_config
from autogp.inference import smc

TINY = {"smc": {"num_particles": 3, "num_rounds": 2, "structure_moves": 1},
        "refine": {"steps": 2}, "grammar": {"max_depth": 2}}


def _fake(log_weights, log_z, tag):
    p = len(log_weights)
    return smc.SMCResult(
        ops=np.full((p, 4), tag), params=np.full((p, 4, 3), float(tag)),
        noise=np.full(p, float(tag)), log_weights=np.asarray(log_weights, float),
        log_marginal_likelihood=float(log_z), history={"count": [5]},
    )


def test_pooled_weights_are_run_weights_times_evidence_shares():
    a = _fake(np.log([0.2, 0.8]) + 3.0, log_z=-10.0, tag=1)  # weights need not be normalised
    b = _fake(np.log([0.5, 0.25, 0.25]), log_z=-10.0 + np.log(3.0), tag=2)
    pooled = smc.pool_runs([a, b])
    # Z_b = 3 Z_a: run a gets 1/4 of the mass, run b 3/4.
    np.testing.assert_allclose(np.exp(pooled.log_weights),
                               [0.05, 0.2, 0.375, 0.1875, 0.1875], rtol=1e-12)
    assert pooled.log_marginal_likelihood == pytest.approx(np.log((1.0 + 3.0) / 2) - 10.0)
    assert list(pooled.ops[:, 0]) == [1, 1, 2, 2, 2] and pooled.noise.shape == (5,)
    assert pooled.history["run_log_marginal_likelihood"] == pytest.approx([-10.0,
                                                                          -10.0 + np.log(3)])


def test_jointly_computed_weights_are_kept():
    # Laplace weights are computed over every run's modes at once: no evidence shares.
    a = _fake(np.log([0.1, 0.2]), log_z=-10.0, tag=1)
    b = _fake(np.log([0.3, 0.4]), log_z=-2.0, tag=2)
    pooled = smc.pool_runs([a, b], joint_weights=True)
    np.testing.assert_allclose(np.exp(pooled.log_weights), [0.1, 0.2, 0.3, 0.4], rtol=1e-12)
    assert pooled.log_marginal_likelihood == pytest.approx(logsumexp([-10.0, -2.0]) - np.log(2))


def test_a_failed_run_gets_no_weight():
    good = _fake([0.0, 0.0], log_z=-5.0, tag=1)
    bad = _fake([0.0, 0.0], log_z=-np.inf, tag=2)
    pooled = smc.pool_runs([good, bad])
    np.testing.assert_allclose(np.exp(pooled.log_weights), [0.5, 0.5, 0.0, 0.0])
    assert pooled.log_marginal_likelihood == pytest.approx(-5.0 - np.log(2))


@pytest.mark.slow
def test_restarts_are_the_panel_of_copies_pooled():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 24)
    y = np.sin(2 * np.pi * x / 0.25) + 0.1 * rng.normal(size=24)
    y = (y - y.mean()) / y.std()
    grammar, settings = engine_settings(load_config(TINY))
    key = jax.random.key(5)
    with x64():
        pooled = smc.run_smc(x, y, grammar, dataclasses.replace(settings, restarts=2), key=key)
        copies = smc.run_smc_panel([x, x], [y, y], grammar, settings, key=key,
                                   seasonal_periods=[None, None])
    assert len(pooled.noise) == 2 * settings.num_particles
    # The two copies are independent runs (different draws), not one run twice.
    assert copies[0].log_marginal_likelihood != copies[1].log_marginal_likelihood
    expected = smc.pool_runs(copies)
    np.testing.assert_array_equal(pooled.ops, expected.ops)
    np.testing.assert_allclose(pooled.log_weights, expected.log_weights, rtol=1e-12)
    log_z = [c.log_marginal_likelihood for c in copies]
    assert pooled.log_marginal_likelihood == pytest.approx(logsumexp(log_z) - np.log(2))
    assert logsumexp(pooled.log_weights) == pytest.approx(0.0, abs=1e-12)


def test_config_key_reaches_the_engine():
    _, settings = engine_settings(load_config({"smc": {"restarts": 3}}))
    assert settings.restarts == 3
    with pytest.raises(Exception, match="smc.restarts"):
        load_config({"smc": {"restarts": 0}})
