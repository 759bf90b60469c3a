"""A round run as its steps split by what depends on the data size
(``autogp.inference.round_steps``) gives the particles, weights and evidence of the round as one
program (``smc_round``), bit for bit, whatever the settings that change the round's path; and
its structure moves compile once for every round size."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.inference import exported, rounds
from tests.helpers import small_smc_problem


def _problem(**changes):
    grammar, settings, data, state = small_smc_problem((75, 90), 3, regular=True, moves=2,
                                                       steps=3)
    refine = {k[len("refine_"):]: v for k, v in changes.items() if k.startswith("refine_")}
    smc = {k: v for k, v in changes.items() if not k.startswith("refine_")}
    settings = dataclasses.replace(settings, **smc,
                                   refine=dataclasses.replace(settings.refine, **refine))
    return grammar, settings, data, state


def _both(grammar, settings, state, data, count, key, num_inducing=0):
    fused = jax.jit(rounds.smc_round, static_argnums=(0, 1), static_argnames="num_inducing")(
        grammar, settings, state, data, count, key=key, num_inducing=num_inducing)
    split = rounds.run_round_steps(grammar, settings, state, data, count, key=key,
                                   num_inducing=num_inducing)
    return fused, split


def _assert_same(fused, split, acceptance=True, rtol=0.0):
    (a, da), (b, db) = fused, split
    for name in rounds.SMCState._fields:
        if name == "ops" or rtol == 0.0:
            np.testing.assert_array_equal(np.asarray(getattr(b, name)),
                                          np.asarray(getattr(a, name)), err_msg=name)
        else:
            np.testing.assert_allclose(np.asarray(getattr(b, name)),
                                       np.asarray(getattr(a, name)), rtol=rtol, atol=1e-15,
                                       err_msg=name)
    for name in ("ess", "resampled") + (("acceptance",) if acceptance else ()):
        np.testing.assert_array_equal(np.asarray(db[name]), np.asarray(da[name]), err_msg=name)


#: Settings that change the round's path, and how close the two must be: bit for bit, except
#: per-particle optimiser counts (a while loop) with probes in the gradient, where XLA compiles
#: the loop of the two programs to sums that differ in the last bit (each alone is exact).
CASES = {
    # the defaults' path: every round rejuvenates, one optimiser count for all (a scan)
    "defaults": ({}, 0.0),
    # per-particle optimiser counts, probes in the optimiser's gradient (their keys continue
    # from the moves' step numbers), no period proposal
    "late steps, probes": ({"refine_late_steps": 1, "refine_late_from": 10, "refine_probes": 4,
                            "refine_probes_from": 32, "period_proposal": 0.0}, 1e-12),
    # no structure moves: the optimiser alone
    "no moves": ({"structure_moves": 0}, 0.0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_steps_give_the_round_bit_for_bit(case):
    changes, rtol = CASES[case]
    grammar, settings, data, state = _problem(**changes)
    count = jnp.asarray([60, 70], dtype=jnp.int32)
    fused, split = _both(grammar, settings, state, data, count, jax.random.key(4))
    assert np.all(np.asarray(fused[0].log_weights) > -np.inf)  # a real round, not all failed
    if settings.structure_moves:
        assert 0 < float(fused[1]["acceptance"]) < 1
    _assert_same(fused, split, rtol=rtol)


def test_rejuvenating_after_resampling_only_keeps_the_other_series_as_they_were():
    """``rejuvenate = "after_resample"``: a round where some series resample rejuvenates those
    (as the single program does), and one where none does runs no move at all."""
    grammar, settings, data, state = _problem(rejuvenate="after_resample")
    # resampling where the effective sample size is below 0.5 * P: the first series' weights
    # are made uneven (one particle holds nearly all), the second's even
    lw = np.log(np.array([[0.98, 0.01, 0.01], [1 / 3, 1 / 3, 1 / 3]]))
    uneven = state._replace(log_weights=jnp.asarray(lw),
                            log_likelihood=jnp.zeros_like(state.log_likelihood))
    # with zero counts the likelihood adds nothing, so the weights decide alone
    zero = jnp.asarray([0, 0], dtype=jnp.int32)
    fused, split = _both(grammar, settings, uneven, data, zero, jax.random.key(5))
    assert np.asarray(fused[1]["resampled"]).tolist() == [True, False]
    _assert_same(fused, split)
    np.testing.assert_array_equal(np.asarray(split[0].ops[1]), np.asarray(state.ops[1]))

    even = state._replace(log_likelihood=jnp.zeros_like(state.log_likelihood))
    calls = exported.programs("round_propose")
    fused, split = _both(grammar, settings, even, data, zero, jax.random.key(6))
    assert not np.any(np.asarray(fused[1]["resampled"]))
    # no move ran (nothing would be kept), so no acceptance to report
    _assert_same(fused, split, acceptance=False)
    assert float(split[1]["acceptance"]) == 0.0
    assert exported.programs("round_propose") == calls


def test_the_sparse_likelihood_and_known_noise_take_the_same_steps():
    """Within the last bits: XLA compiles the sparse bound alone to sums in another order than
    inside the whole round (the exact likelihood compiles to the same sums)."""
    grammar, settings, data, state = _problem()
    known = jnp.where(data.rank < jnp.asarray([75, 90])[:, None], 0.01, 0.0)
    data = dataclasses.replace(data, known_var=known)
    count = jnp.asarray([60, 70], dtype=jnp.int32)
    _assert_same(*_both(grammar, settings, state, data, count, jax.random.key(7),
                        num_inducing=8), rtol=1e-12)


def test_the_moves_compile_once_for_every_round_size():
    grammar, settings, data, state = _problem()
    before = rounds.compilation_counts()
    final, history = rounds.run_rounds(grammar, settings, state, data,
                                       np.array([[10, 9], [40, 45], [75, 90]]),
                                       key=jax.random.key(8))
    after = rounds.compilation_counts()
    sizes = {rounds.round_size(c, 96) for c in (10, 45, 90)}
    assert len(sizes) == 3
    assert after["round"] - before["round"] <= 3  # one optimiser per size
    assert after["moves"] - before["moves"] <= 1  # one proposal program for all of them
    assert len(history["acceptance"]) == 3 and np.all(np.isfinite(final.log_evidence))
