"""refine.period_step: the optimiser moves PER periods by that fraction of its update and every
other parameter as before, in refine.optimize and in the rejuvenation's own optimiser loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from autogp.inference import grammar as gr
from autogp.inference import moves, refine, rejuvenation
from autogp.inference.settings import RefineSettings, SMCSettings
from autogp.kernels import pack, parse, spec

PERIOD = spec.PARAM_NAMES[spec.PER].index("period")
GRAMMAR = gr.Grammar.default(max_depth=2)


def _particles():
    ops, params = pack([parse("LIN + PER"), parse("PER * GE")], max_depth=2)
    return jnp.asarray(ops), jnp.asarray(params), jnp.array([-2.0, -1.0])


def _loglik(ops, params, noise):
    # Any smooth function of every entry: the updates' sizes are what the test compares.
    return -jnp.sum((params - 0.3) ** 2, axis=(1, 2)) - (noise + 1.5) ** 2


def _period_mask(ops):
    return np.asarray((ops == spec.PER)[..., None] & (np.arange(spec.MAX_PARAMS) == PERIOD))


def _check(step_of, ops, params):
    full, tenth = step_of(1.0), step_of(0.1)
    period = _period_mask(ops)
    assert period.sum() == 2
    np.testing.assert_allclose(tenth[period], 0.1 * full[period], rtol=1e-12)
    assert np.all(np.abs(full[period]) > 1e-3)
    np.testing.assert_array_equal(tenth[~period], full[~period])


def test_optimize_scales_the_period_updates_only():
    ops, params, noise = _particles()
    post = rejuvenation.log_posterior_fn(GRAMMAR, _loglik, ops)

    def step_of(period_step):
        out = refine.optimize(post, ops, params, noise, optimizer=optax.adam(0.05), steps=1,
                              period_step=period_step)
        return np.asarray(out.params - params)

    _check(step_of, ops, params)


def test_rejuvenation_scales_the_period_updates_only():
    ops, params, noise = _particles()
    state = moves.ParticleState(ops, params, noise, _loglik(ops, params, noise))

    def step_of(period_step):
        settings = SMCSettings(structure_moves=0,
                               refine=RefineSettings(steps=1, period_step=period_step))
        out = rejuvenation.rejuvenate(GRAMMAR, settings, state, _loglik, key=jax.random.key(0))
        return np.asarray(out.particles.params - params)

    _check(step_of, ops, params)
