"""Growing round sizes: early annealing rounds compute on a prefix of the padded data.

The prefix must change nothing but the cost: the same points are masked in, so likelihoods,
rounds and fits agree with rounds on all the padded data; and the programs stay few."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.config import engine_settings, load_config
from autogp.inference import rounds, smc
from tests.helpers import small_smc_problem


@pytest.mark.parametrize("padded", [32, 64, 96, 128, 160, 512, 1024])
def test_round_size_is_the_smallest_quarter_step_holding_the_points(padded):
    steps = [min(padded, rounds.padded_length(-(-padded * k // 4))) for k in range(1, 5)]
    sizes = set()
    for count in range(1, padded + 1):
        size = rounds.round_size(count, padded, "grow")
        # Brute force: the first quarter step (rounded up to the padding multiple) that fits.
        assert size == next(s for s in steps if s >= count)
        assert size % rounds.PAD_MULTIPLE == 0 and count <= size <= padded
        assert rounds.round_size(count, padded, "full") == padded
        sizes.add(size)
    assert len(sizes) <= rounds.ROUND_SIZE_STEPS
    with pytest.raises(ValueError, match="round_sizes 'half'"):
        rounds.round_size(1, padded, "half")


def test_sizes_of_common_lengths_are_shared():
    def sizes(padded):
        return {rounds.round_size(c, padded) for c in range(1, padded + 1)}

    assert sizes(128) == {32, 64, 96, 128}
    assert sizes(96) <= sizes(128) and sizes(64) <= sizes(128)


def _setup(n=(75, 90), particles=4):
    return small_smc_problem(n, particles, regular=True)


@pytest.mark.parametrize("count", [[10, 20], [40, 17], [60, 64]])
def test_likelihood_on_the_prefix_equals_the_likelihood_on_all_padded_data(count):
    grammar, _, data, state = _setup()
    count = jnp.asarray(count, dtype=jnp.int32)
    size = rounds.round_size(int(count.max()), data.x.shape[1])
    assert size < data.x.shape[1]
    flat = [a.reshape((-1,) + a.shape[2:]) for a in (state.ops, state.params, state.noise)]
    full = rounds.likelihood_fn(data, count, state.noise.shape[1])(*flat)
    prefix = rounds.likelihood_fn(rounds.data_prefix(data, size), count,
                                  state.noise.shape[1])(*flat)
    assert np.all(np.isfinite(np.asarray(full)))
    np.testing.assert_allclose(np.asarray(prefix), np.asarray(full), rtol=1e-10, atol=1e-9)


def test_a_round_on_the_prefix_matches_a_round_on_all_the_data():
    grammar, settings, data, state = _setup()
    count = jnp.asarray([30, 35], dtype=jnp.int32)
    key = jax.random.key(4)
    # Compiled, as every fit runs it (op by op the round ran slower here).
    smc_round = jax.jit(rounds.smc_round, static_argnums=(0, 1))
    full, diag_full = smc_round(grammar, settings, state, data, count, key=key)
    size = rounds.round_size(35, data.x.shape[1])
    part, diag_part = smc_round(grammar, settings, state, rounds.data_prefix(data, size), count,
                                key=key)
    np.testing.assert_array_equal(np.asarray(part.ops), np.asarray(full.ops))
    for name in ("params", "noise", "log_likelihood", "log_weights", "log_evidence"):
        np.testing.assert_allclose(np.asarray(getattr(part, name)),
                                   np.asarray(getattr(full, name)), rtol=1e-7, atol=1e-8,
                                   err_msg=name)
    np.testing.assert_array_equal(np.asarray(diag_part["resampled"]),
                                  np.asarray(diag_full["resampled"]))


def test_grow_compiles_one_round_per_size_and_a_shorter_series_reuses_them():
    cfg = load_config({"grammar": {"max_depth": 1}, "smc": {
        "num_particles": 2, "num_rounds": 4, "structure_moves": 1}, "refine": {"steps": 1}})
    grammar, settings = engine_settings(cfg)
    x = np.linspace(0, 1, 60)  # padded to 64: sizes 32 and 64
    before = smc.compilation_counts()["round"]
    a = smc.run_smc(x, np.sin(7 * x), grammar, settings, key=jax.random.key(0))
    assert smc.compilation_counts()["round"] - before <= 2
    middle = smc.compilation_counts()["round"]
    x2 = np.linspace(0, 1, 30)  # padded to 32: compiled above
    smc.run_smc(x2, np.cos(5 * x2), grammar, settings, key=jax.random.key(1))
    assert smc.compilation_counts()["round"] == middle
    # The same fit with every round on all the padded data: the same evidence.
    b = smc.run_smc(x, np.sin(7 * x), grammar,
                    dataclasses.replace(settings, round_sizes="full"), key=jax.random.key(0))
    np.testing.assert_array_equal(a.ops, b.ops)
    np.testing.assert_allclose(a.log_marginal_likelihood, b.log_marginal_likelihood, rtol=1e-7)


def test_settings_the_programs_do_not_read_share_their_programs():
    cfg = load_config({"grammar": {"max_depth": 1}, "smc": {
        "num_particles": 2, "num_rounds": 4, "structure_moves": 1}, "refine": {"steps": 1}})
    grammar, settings = engine_settings(cfg)
    host_only = dataclasses.replace(settings, num_rounds=3, schedule="log", power_from=10,
                                    likelihood_power=0.25, sparse_above=5000)
    assert host_only.for_programs() == settings.for_programs()
    assert dataclasses.replace(settings, structure_moves=2).for_programs() != \
        settings.for_programs()
    x = np.linspace(0, 1, 60)
    a = smc.run_smc(x, np.sin(7 * x), grammar, settings, key=jax.random.key(0))
    before = smc.compilation_counts()["round"]
    b = smc.run_smc(x, np.sin(7 * x), grammar, host_only, key=jax.random.key(0))
    assert smc.compilation_counts()["round"] == before
    # ...and the rounds still see the fields that vary by series: the rate of this 60-point
    # series is 0.25 now, so the evidence differs.
    assert a.log_marginal_likelihood != b.log_marginal_likelihood


@pytest.mark.parametrize(("shuffle", "expected"), [(False, [32, 96]), (True, [96, 96])])
def test_shuffled_data_use_every_column(monkeypatch, shuffle, expected):
    grammar, settings, data, state = _setup(n=[70])
    settings = dataclasses.replace(settings, shuffle=shuffle, num_rounds=2)
    seen = []

    def spy(grammar, settings, state, data, count, **kw):  # records the width, computes nothing
        seen.append(data.x.shape[1])
        return state, {"ess": 0.0, "resampled": False, "acceptance": 0.0}

    monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")  # nothing prepared ahead of the rounds
    monkeypatch.setattr(rounds, "run_round", spy)
    rounds.run_rounds(grammar, settings, state, data, np.array([[10], [70]]),
                      key=jax.random.key(0))
    assert seen == expected
