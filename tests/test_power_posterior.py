"""The power posterior (``smc.likelihood_power`` = eta): every likelihood the SMC weighs by is
eta times the exact one, so a round's weights and evidence follow the tempered formulas; the
key is validated; eta is per-series data (``Data.power``), 1 multiplying by exactly 1.0; series
shorter than ``smc.power_from`` points get eta = 1."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from autogp.config import ConfigError, load_config
from autogp.evaluator import log_marginal_likelihood
from autogp.inference import rounds
from autogp.inference.settings import SMCSettings
from tests.helpers import small_smc_problem


def _one_round(power: float):
    """One reweighting round on 12 points, no resampling, no moves, no refinement."""
    grammar, settings, data, state = small_smc_problem((30,), 6, regular=True, moves=0, steps=0)
    settings = dataclasses.replace(settings, ess_threshold=0.0)
    data = eqx.tree_at(lambda d: d.power, data, jnp.asarray([power]))
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


def test_each_series_is_weighed_by_its_own_rate_and_a_rate_of_one_is_exact():
    """A panel of two series with rates (1, 0.25): the batched likelihood is the evaluator's
    own, bit for bit, on the first and a quarter of it on the second."""
    grammar, _, data, state = small_smc_problem((30, 40), 4, regular=True)
    data = eqx.tree_at(lambda d: d.power, data, jnp.asarray([1.0, 0.25]))
    G, P = state.noise.shape
    flat = [a.reshape((G * P,) + a.shape[2:]) for a in (state.ops, state.params, state.noise)]
    got = np.asarray(rounds.likelihood_fn(data, data.length, P)(*flat)).reshape(G, P)
    mask = data.rank < data.length[:, None]
    exact = np.asarray(log_marginal_likelihood(
        *flat, jnp.repeat(data.x, P, axis=0), jnp.repeat(data.y, P, axis=0),
        jnp.repeat(mask, P, axis=0), regular_grid=data.regular_grid)).reshape(G, P)
    assert np.all(np.isfinite(exact))
    np.testing.assert_array_equal(got[0], exact[0])
    np.testing.assert_allclose(got[1], 0.25 * exact[1], rtol=1e-14)


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5])
def test_the_key_names_itself_when_out_of_range(bad):
    with pytest.raises(ConfigError, match="smc.likelihood_power"):
        load_config({"smc": {"likelihood_power": bad}})


def test_make_data_rejects_rates_outside_zero_one():
    x = [np.linspace(0, 1, 5)]
    with pytest.raises(ValueError, match="learning rate"):
        rounds.make_data(x, x, power=[0.0])
    with pytest.raises(ValueError, match="learning rate"):
        rounds.make_data(x, x, power=[0.5, 0.5])


def test_the_learning_rate_applies_from_power_from_points():
    settings = SMCSettings(likelihood_power=0.5, power_from=60)
    assert [settings.power_for(n) for n in (1, 59, 60, 5000)] == [1.0, 1.0, 0.5, 0.5]
    assert SMCSettings(likelihood_power=0.25, power_from=0).power_for(1) == 0.25
    assert SMCSettings(likelihood_power=1.0, power_from=0).power_for(100) == 1.0


def test_a_panel_fit_gives_each_series_the_rate_of_its_length(monkeypatch):
    """run_smc_panel builds its data with the rule's rate per series (30 points: 1; 70: 0.5)."""
    from autogp.inference import smc

    class DataSeen(Exception):
        """Stops the fit once its data are built: they are all this test needs."""

    seen = {}
    make_data = smc.make_data

    def spy(*args, **kwargs):
        data = make_data(*args, **kwargs)
        seen["power"] = np.asarray(data.power)
        raise DataSeen

    monkeypatch.setattr(smc, "make_data", spy)
    grammar, settings, _, _ = small_smc_problem((30,), 4, regular=True)
    settings = dataclasses.replace(settings, likelihood_power=0.5, power_from=60)
    xs = [np.linspace(0, 1, n) for n in (30, 70)]
    with pytest.raises(DataSeen):
        smc.run_smc_panel(xs, [np.sin(9 * x) for x in xs], grammar, settings,
                          key=jax.random.key(0))
    np.testing.assert_array_equal(seen["power"], [1.0, 0.5])
