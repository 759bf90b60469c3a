"""The one-call-site rejuvenation equals structure moves followed by the optimiser, step for step.

Reference: ``moves.structure_move`` scanned over the same keys, then ``refine.optimize`` on the
log posterior, as a round composed them before the two shared one likelihood call site
(``separate`` in ``scripts/bench_rejuvenation.py``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.inference import grammar as gr
from autogp.inference import moves, periods, refine, rejuvenation, rounds
from autogp.inference.settings import RefineSettings, SMCSettings
from autogp.kernels import spec
from tests.helpers import assert_allclose, load_script

GRAMMAR = gr.Grammar.default(max_depth=2)  # the equivalence does not depend on the depth


# The old composition, as the benchmark of the two designs times it.
_reference = load_script("bench_rejuvenation").separate


def _toy_loglik(ops, params, noise):
    """Smooth in the parameters, structure-dependent, and -inf for trees holding a PER leaf (so
    the non-finite handling of both paths is exercised)."""
    used = refine.active_mask(ops)
    fit = -jnp.sum(jnp.where(used, (params - 0.3) ** 2, 0.0), axis=(1, 2)) - (noise + 1.0) ** 2
    size = jnp.sum(ops != spec.EMPTY, axis=1)
    has_per = jnp.any(ops == spec.PER, axis=1)
    return jnp.where(has_per, -jnp.inf, fit - 0.7 * size)


def _particles(P, loglik, key):
    ops, params, noise = gr.sample_prior(GRAMMAR, P, key=key)
    return moves.ParticleState(ops, params, noise, loglik(ops, params, noise))


def _compare(settings, loglik, proposal=None, P=6):
    particles = _particles(P, loglik, jax.random.key(3))
    key = jax.random.key(11)
    ours = jax.jit(lambda s, k: rejuvenation.rejuvenate(
        GRAMMAR, settings, s, loglik, key=k, period_proposal=proposal))(particles, key)
    ref, ref_accepted = jax.jit(lambda s, k: _reference(
        GRAMMAR, settings, s, loglik, key=k, period_proposal=proposal))(particles, key)
    np.testing.assert_array_equal(ours.accepted, ref_accepted)
    np.testing.assert_array_equal(ours.particles.ops, ref.ops)
    assert_allclose(ours.particles.params, ref.params, rtol=1e-9, atol=1e-12)
    assert_allclose(ours.particles.noise, ref.noise, rtol=1e-9, atol=1e-12)
    assert_allclose(ours.particles.log_likelihood, ref.log_likelihood, rtol=1e-9, atol=1e-12)
    return ours, ref_accepted


@pytest.mark.parametrize("moves_, steps", [(3, 0), (0, 4)])  # both: the GP test below
def test_matches_moves_then_optimizer_on_a_toy_target(moves_, steps):
    settings = SMCSettings(structure_moves=moves_, refine=RefineSettings(steps=steps))
    ours, accepted = _compare(settings, _toy_loglik)
    assert accepted.shape == (moves_, 6)
    if moves_:  # the moves did something, or the comparison says little
        assert 0 < int(jnp.sum(accepted)) < accepted.size
    if steps:  # the optimiser moved the parameters of the particles it could score
        start = _particles(6, _toy_loglik, jax.random.key(3))
        assert not np.allclose(ours.particles.noise, start.noise)


def test_matches_on_the_gp_likelihood_with_the_period_proposal():
    x = np.linspace(0.0, 1.0, 40)
    y = np.sin(2 * np.pi * 6 * x) + 0.5 * x
    data = rounds.make_data([x], [(y - y.mean()) / y.std()])
    P = 6
    loglik = rounds.likelihood_fn(data, jnp.array([40], jnp.int32), P)
    proposal = periods.for_particles(data.period_centers, data.period_log_weights, P,
                                     mix=0.5, scale=0.05)
    settings = SMCSettings(structure_moves=3, refine=RefineSettings(steps=3))
    ours, accepted = _compare(settings, loglik, proposal=proposal, P=P)
    assert np.all(np.isfinite(ours.particles.log_likelihood))


def test_learn_noise_off_keeps_the_noise():
    settings = SMCSettings(structure_moves=0, refine=RefineSettings(steps=3, learn_noise=False))
    ours, _ = _compare(settings, _toy_loglik)
    start = _particles(6, _toy_loglik, jax.random.key(3))
    np.testing.assert_array_equal(ours.particles.noise, start.noise)


def test_optimizer_steps_counts_only_the_optimize_mode():
    base = SMCSettings()
    assert rejuvenation.optimizer_steps(base) == base.refine.steps
    hmc = dataclasses.replace(base, refine=RefineSettings(mode="hmc"))
    assert rejuvenation.optimizer_steps(hmc) == 0


@pytest.mark.parametrize("steps", [0, 2, 5])
def test_steps_as_data_run_that_many_optimiser_steps_in_one_program(steps):
    # refine.late_steps: a round passes its step count as data, so rounds with full and
    # with fewer steps share one program; each must equal the static count's rejuvenation.
    particles = _particles(6, _toy_loglik, jax.random.key(3))
    key = jax.random.key(11)
    full = SMCSettings(structure_moves=3, refine=RefineSettings(steps=5))
    traces = []

    def dynamic(s, k, n):
        traces.append(1)
        return rejuvenation.rejuvenate(GRAMMAR, full, s, _toy_loglik, key=k, steps=n)

    ours = jax.jit(dynamic)(particles, key, jnp.asarray(steps))
    static = SMCSettings(structure_moves=3, refine=RefineSettings(steps=steps))
    ref = jax.jit(lambda s, k: rejuvenation.rejuvenate(GRAMMAR, static, s, _toy_loglik, key=k))(
        particles, key)
    np.testing.assert_array_equal(ours.accepted, ref.accepted)
    np.testing.assert_array_equal(ours.particles.ops, ref.particles.ops)
    assert_allclose(ours.particles.params, ref.particles.params, rtol=1e-12, atol=1e-14)
    assert_allclose(ours.particles.noise, ref.particles.noise, rtol=1e-12, atol=1e-14)
    assert_allclose(ours.particles.log_likelihood, ref.particles.log_likelihood,
                    rtol=1e-12, atol=1e-14)
    if steps == 0:  # the moves' particles, untouched by the optimiser
        moved = jax.jit(lambda s, k: rejuvenation.rejuvenate(
            GRAMMAR, SMCSettings(structure_moves=3, refine=RefineSettings(steps=0)), s,
            _toy_loglik, key=k))(particles, key)
        np.testing.assert_array_equal(ours.particles.params, moved.particles.params)
    # the other counts reuse the trace
    for other in (0, 2, 5):
        jax.jit(dynamic)(particles, key, jnp.asarray(other))
    assert len(traces) == 1


def test_late_steps_refine_only_the_rounds_on_at_most_half_the_data():
    from tests.helpers import small_smc_problem

    grammar, settings, data, state = small_smc_problem((30,), 4, regular=True, moves=1, steps=2)
    settings = dataclasses.replace(settings, round_sizes="full")
    counts = np.array([[10], [15], [20], [30]])  # rounds 1-2 on at most half the 30 points
    key = jax.random.key(5)

    def late(n):
        return dataclasses.replace(settings, refine=dataclasses.replace(
            settings.refine, late_steps=n, late_from=0))

    none_late = rounds.run_rounds(grammar, late(0), state, data, counts, key=key)[0]
    # by hand: the rounds one at a time, the last two with no optimiser steps at all (and,
    # to show that this differs, with the steps in every round)
    no_steps = dataclasses.replace(settings, refine=dataclasses.replace(settings.refine, steps=0))
    by_hand = all_steps = state
    for r, k in enumerate(jax.random.split(key, len(counts))):
        by_hand, _ = rounds.run_round(grammar, settings if r < 2 else no_steps, by_hand, data,
                                      jnp.asarray(counts[r]), key=k)
        all_steps, _ = rounds.run_round(grammar, settings, all_steps, data,
                                        jnp.asarray(counts[r]), key=k)
    np.testing.assert_array_equal(none_late.ops, by_hand.ops)
    assert_allclose(none_late.params, by_hand.params, rtol=1e-12, atol=1e-14)
    assert_allclose(none_late.log_weights, by_hand.log_weights, rtol=1e-12, atol=1e-12)
    assert not np.allclose(none_late.params, all_steps.params)


def test_per_particle_step_counts_equal_each_count_alone():
    # refine.late_from: particles of one batch may have different step counts; each particle
    # must end where a rejuvenation with its count alone leaves it.
    particles = _particles(6, _toy_loglik, jax.random.key(4))
    key = jax.random.key(12)
    # no structure moves: the counts only touch the optimiser, and the moves' tree code would
    # make this test compile for half a minute
    full = SMCSettings(structure_moves=0, refine=RefineSettings(steps=5))
    counts = jnp.array([0, 2, 5, 5, 2, 0])
    run = jax.jit(lambda s, k, n: rejuvenation.rejuvenate(
        GRAMMAR, full, s, _toy_loglik, key=k, steps=n))
    ours = run(particles, key, counts)
    for n in (0, 2, 5):
        alone = run(particles, key, jnp.full(counts.shape, n))  # every particle with count n
        rows = np.flatnonzero(np.asarray(counts) == n)
        np.testing.assert_array_equal(ours.particles.ops[rows], alone.particles.ops[rows])
        for field in ("params", "noise", "log_likelihood"):
            assert_allclose(getattr(ours.particles, field)[rows],
                            getattr(alone.particles, field)[rows], rtol=1e-12, atol=1e-14)
    assert not np.allclose(ours.particles.params[1], ours.particles.params[2])


def test_late_step_counts_follow_each_series_own_length():
    # a 30-point and a 12-point series, 2 particles each, late_from = 20: only the long
    # series gets late steps, and only in rounds on more than half of its points
    data = rounds.make_data([np.linspace(0, 1, 30), np.linspace(0, 1, 12)],
                            [np.zeros(30), np.zeros(12)])
    settings = SMCSettings(refine=RefineSettings(steps=3, late_steps=1, late_from=20))

    def counts(c):
        return np.asarray(rounds.late_step_counts(settings, data, jnp.asarray(c), 2))

    np.testing.assert_array_equal(counts([16, 12]), [1, 1, 3, 3])
    np.testing.assert_array_equal(counts([15, 12]), [3, 3, 3, 3])  # 15 is half, not more
    every = dataclasses.replace(settings, refine=RefineSettings(steps=3, late_steps=1))
    np.testing.assert_array_equal(
        np.asarray(rounds.late_step_counts(every, data, jnp.asarray([16, 7]), 2)), [1, 1, 1, 1])
    off = SMCSettings(refine=RefineSettings(steps=3))
    assert rounds.late_step_counts(off, data, jnp.asarray([16, 7]), 2) is None
