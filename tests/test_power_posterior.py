"""The power posterior (``smc.likelihood_power`` = eta): every likelihood the SMC weighs by is
eta times the exact one, so a round's weights and evidence follow the tempered formulas; the
key is validated; eta = 1 is the Bayesian program itself; series shorter than
``smc.power_from`` points get eta = 1."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from scipy.special import logsumexp

from autogp.config import ConfigError, load_config
from autogp.inference import rounds
from autogp.inference.settings import SMCSettings
from tests.helpers import small_smc_problem


def _one_round(power: float):
    """One reweighting round on 12 points, no resampling, no moves, no refinement."""
    grammar, settings, data, state = small_smc_problem((30,), 6, regular=True, moves=0, steps=0)
    settings = dataclasses.replace(settings, likelihood_power=power, power_from=0,
                                   ess_threshold=0.0)
    final, _ = rounds.run_rounds(grammar, settings, state, data, np.array([[12]]),
                                 key=jax.random.key(0))
    return state, final


def test_a_round_weighs_by_eta_times_the_log_likelihood():
    start, exact = _one_round(1.0)
    _, tempered = _one_round(0.5)
    ll = np.asarray(exact.log_likelihood[0])  # the start state's likelihood of 0 points is 0
    assert np.all(np.asarray(start.log_likelihood) == 0.0)
    assert np.ptp(ll) > 1.0  # the particles differ, so the weights below are informative
    np.testing.assert_allclose(np.asarray(tempered.log_likelihood[0]), 0.5 * ll, rtol=1e-12)
    # Uniform start weights: w_i proportional to exp(eta * ll_i); evidence = mean of exp(eta*ll).
    expected_weights = 0.5 * ll - logsumexp(0.5 * ll)
    np.testing.assert_allclose(np.asarray(tempered.log_weights[0]), expected_weights, atol=1e-10)
    expected_evidence = logsumexp(0.5 * ll) - np.log(len(ll))
    np.testing.assert_allclose(float(tempered.log_evidence[0]), expected_evidence, rtol=1e-12)
    # Tempering flattens the weights: the effective sample size grows.
    ess = [1.0 / np.sum(np.exp(2 * np.asarray(s.log_weights[0]))) for s in (exact, tempered)]
    assert ess[1] > ess[0]


def test_eta_one_leaves_the_likelihood_function_itself():
    def loglik(ops, params, noise):
        return ops

    assert rounds.tempered(loglik, 1.0) is loglik
    assert rounds.tempered(loglik, 0.25)(8.0, None, None) == 2.0


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5])
def test_the_key_names_itself_when_out_of_range(bad):
    with pytest.raises(ConfigError, match="smc.likelihood_power"):
        load_config({"smc": {"likelihood_power": bad}})


def test_the_learning_rate_applies_from_power_from_points():
    settings = SMCSettings(likelihood_power=0.5, power_from=60)
    assert [settings.power_for(n) for n in (1, 59, 60, 5000)] == [1.0, 1.0, 0.5, 0.5]
    for n in (59, 60):
        resolved = settings.for_length(n)
        assert resolved.power_from == 0 and resolved.likelihood_power == settings.power_for(n)
        assert resolved.for_length(1) == resolved  # resolving twice changes nothing
    assert SMCSettings(likelihood_power=0.25, power_from=0).power_for(1) == 0.25


def _rounds(**power):
    """Two rounds (6, then 12 points) of the small problem with the given learning-rate keys."""
    grammar, settings, data, state = small_smc_problem((30,), 6, regular=True, moves=1, steps=2)
    settings = dataclasses.replace(settings, **power)
    final, _ = rounds.run_rounds(grammar, settings, state, data, np.array([[6], [12]]),
                                 key=jax.random.key(3))
    return final


def test_the_rounds_use_the_rate_of_their_final_data_length():
    """12 points: tempered when power_from <= 12, the Bayesian rounds when it is 13."""
    from_12 = _rounds(likelihood_power=0.5, power_from=12)
    everywhere = _rounds(likelihood_power=0.5, power_from=0)
    for a, b in zip(jax.tree.leaves(from_12), jax.tree.leaves(everywhere), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    from_13 = _rounds(likelihood_power=0.5, power_from=13)
    bayes = _rounds(likelihood_power=1.0)
    for a, b in zip(jax.tree.leaves(from_13), jax.tree.leaves(bayes), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # and the two differ: the rate reached the weights
    assert not np.allclose(np.asarray(from_12.log_evidence), np.asarray(bayes.log_evidence))
