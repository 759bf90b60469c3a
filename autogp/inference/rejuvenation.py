"""A round's rejuvenation (structure moves, then optimiser steps) with one call site of the
likelihood.

XLA compiles every call site of the likelihood separately, and the likelihood is the largest
part of a round's program. The moves score a batch of proposals; the optimiser steps score the
current parameters and take their gradient. So both run as the steps of one ``lax.scan``: step
``i`` builds the likelihood's inputs (a proposal when ``i < moves``, else the particles as they
are), evaluates the log posterior once through ``jax.vjp``, and pulls the gradient back only on
optimiser steps (``lax.cond`` on the step kind, so a move step does not pay for it).

The result is that of :func:`autogp.inference.moves.structure_move` applied ``moves`` times,
followed by :func:`autogp.inference.refine.optimize` (same keys, same updates, same rule keeping
the end point only when it scores at least as well as the start); ``tests/test_rejuvenation.py``
checks the two against each other. HMC refinement is not a step of this scan: the round runs it
after the moves, with its own call site.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from autogp.inference import grammar as gr
from autogp.inference import moves, periods, refine
from autogp.inference.settings import SMCSettings

Array = jax.Array


class Rejuvenated(NamedTuple):
    particles: moves.ParticleState
    accepted: Array  # bool [moves, P]: the structure moves' acceptance flags


def log_posterior_fn(grammar: gr.Grammar, loglik, ops: Array, *, key: Array | None = None):
    """``(params, noise) -> (log posterior, log likelihood)`` of particles with structures
    ``ops``: what the optimiser, HMC and the posterior draws move the parameters on. ``key``
    (optional) goes to ``loglik`` for its gradient's probes."""

    def fn(params, noise):
        ll = loglik(ops, params, noise) if key is None else loglik(ops, params, noise, key=key)
        lp = ll + gr.log_prior_params(grammar, ops, params) + gr.log_prior_noise(grammar, noise)
        return lp, ll

    return fn


def move_keys(settings: SMCSettings, key: Array) -> Array:
    """One key per structure move (at least one)."""
    return jax.random.split(key, max(settings.structure_moves, 1))


def optimizer_steps(settings: SMCSettings) -> int:
    """Optimiser steps of the rejuvenation (0 unless ``refine.mode`` is ``"optimize"``)."""
    r = settings.refine
    return r.steps if r.mode == "optimize" else 0


def rejuvenate(
    grammar: gr.Grammar,
    settings: SMCSettings,
    particles: moves.ParticleState,
    loglik,
    *,
    key: Array,
    period_proposal: periods.PeriodProposal | None = None,
    steps: Array | None = None,
    probe_key: Array | None = None,
    first_step: int = 0,
) -> Rejuvenated:
    """``settings.structure_moves`` structure moves, then ``optimizer_steps(settings)``
    optimiser steps, of a flat batch of particles; ``loglik(ops, params, noise) -> [P]``.

    ``steps``: this call's optimiser steps as data (at most ``optimizer_steps(settings)``), one
    count for the batch or one per particle ``[P]``, so rounds with fewer steps share the
    program; the steps then run in a ``lax.while_loop`` that stops after the largest count, and
    a particle's parameters stop moving after its own count (its result is that of a call with
    its count alone). None: all of them, in a ``lax.scan``.

    ``key`` is split into one key per move, as a scan of ``moves.structure_move`` over
    ``jax.random.split(key, moves)`` would use them. ``probe_key``: when given, step ``i``
    passes ``jax.random.fold_in(probe_key, i)`` to ``loglik`` as ``key`` (its gradient's
    probes, see :func:`autogp.inference.rounds.likelihood_fn`); the values do not depend on it.
    ``first_step`` is added to ``i`` there: a call that runs only the optimiser's passes of a
    rejuvenation whose moves ran elsewhere gives its passes the probes they had in the whole."""
    num_moves = settings.structure_moves
    num_steps = optimizer_steps(settings)
    P = particles.noise.shape[0]
    # The optimiser's passes: steps + 1, the extra one scoring the end point.
    passes = num_steps + 1 if num_steps > 0 else 0
    if num_moves + passes == 0:
        return Rejuvenated(particles, jnp.zeros((0, P), bool))

    r = settings.refine
    optimizer = refine.make_optimizer(r.optimizer, r.learning_rate)
    steps_now = (num_steps if steps is None
                 else jnp.broadcast_to(jnp.minimum(steps, num_steps), (P,)))
    keys = move_keys(settings, key)

    def proposal_of(state: moves.ParticleState, i):
        return moves.propose_structure_move(
            grammar, state, key=keys[jnp.minimum(i, num_moves - 1)],
            replace_prob=settings.replace_prob, pick=settings.pick,
            period_proposal=period_proposal,
        )

    def unchanged(state: moves.ParticleState, i):
        return (moves.Proposal(state.ops, state.params, jnp.zeros_like(state.log_likelihood)),
                keys[0])

    def step(carry, i):
        state, opt_state, start = carry
        is_move = i < num_moves
        if num_moves == 0:
            proposal, key_accept = unchanged(state, i)
        elif passes == 0:
            proposal, key_accept = proposal_of(state, i)
        else:
            proposal, key_accept = jax.lax.cond(is_move, proposal_of, unchanged, state, i)

        log_posterior = log_posterior_fn(
            grammar, loglik, proposal.ops,
            key=None if probe_key is None else jax.random.fold_in(
                probe_key, i if first_step == 0 else i + first_step))
        (lp, ll), pullback = jax.vjp(log_posterior, proposal.params, state.noise)
        if num_moves > 0:
            moved, accepted = moves.metropolis_hastings(state, proposal, ll, key=key_accept)
            accepted = accepted & is_move
        else:
            moved, accepted = state, jnp.zeros_like(ll, bool)
        if passes == 0:
            return (moved, opt_state, start), (accepted, lp, ll)

        # An optimiser pass: the gradient of -sum(finite log posteriors), as refine.optimize.
        def gradient():
            return pullback((-jnp.isfinite(lp).astype(lp.dtype), jnp.zeros_like(ll)))

        def no_gradient():
            return jnp.zeros_like(state.params), jnp.zeros_like(state.noise)

        is_pass = ~is_move
        grads = jax.lax.cond(is_pass, gradient, no_gradient)
        first_pass = i == num_moves
        variables = (state.params, state.noise)
        # Each round starts the optimiser afresh from the particles the moves left.
        opt_state = jax.tree_util.tree_map(
            lambda fresh, old: jnp.where(first_pass, fresh, old),
            optimizer.init(variables), opt_state)
        grads = (
            jnp.where(refine.active_mask(state.ops), grads[0], 0.0),
            grads[1] if r.learn_noise else jnp.zeros_like(grads[1]),
        )
        grads = jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), grads)
        updates, new_opt_state = optimizer.update(grads, opt_state, variables)
        scale = refine.step_scale(state.ops, r.period_step)
        new_variables = optax.apply_updates(variables, (updates[0] * scale, updates[1]))
        # A particle's passes after its own step count only score it (the last one always).
        update = jnp.broadcast_to(is_pass & (i < num_moves + steps_now), (P,))

        def where_updated(new, old):
            if jnp.ndim(new) == 0:  # state shared by the batch (Adam's step count)
                return jnp.where(jnp.any(update), new, old)
            return jnp.where(update.reshape((-1,) + (1,) * (jnp.ndim(new) - 1)), new, old)

        variables, opt_state = jax.tree_util.tree_map(
            where_updated, (new_variables, new_opt_state), (variables, opt_state))
        start = jax.tree_util.tree_map(
            lambda now, kept: jnp.where(first_pass, now, kept),
            (state.params, state.noise, lp, ll), start)
        refined = state._replace(params=variables[0], noise=variables[1])
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(is_move, a, b), moved, refined)
        return (state, opt_state, start), (accepted, lp, ll)

    start = (particles.params, particles.noise, jnp.zeros_like(particles.log_likelihood),
             jnp.zeros_like(particles.log_likelihood))
    opt_state = optimizer.init((particles.params, particles.noise))
    if steps is None:
        (state, _, start), (accepted, lps, lls) = jax.lax.scan(
            step, (particles, opt_state, start), jnp.arange(num_moves + passes))
        after, ll_after, refined_now = lps[-1], lls[-1], passes > 0
    else:
        refined_now = steps_now > 0  # [P]
        most = jnp.max(steps_now)
        total = num_moves + jnp.where(most > 0, most + 1, 0)
        moves_kept = max(num_moves, 1)

        def body(c):
            i, carry, accepted, _, _ = c
            carry, (acc, lp, ll) = step(carry, i)
            row = jnp.minimum(i, moves_kept - 1)
            accepted = accepted.at[row].set(jnp.where(i < num_moves, acc, accepted[row]))
            return i + 1, carry, accepted, lp, ll

        zeros = jnp.zeros_like(particles.log_likelihood)
        _, (state, _, start), accepted, after, ll_after = jax.lax.while_loop(
            lambda c: c[0] < total, body,
            (jnp.zeros((), jnp.int32), (particles, opt_state, start),
             jnp.zeros((moves_kept, P), bool), zeros, zeros))
    if passes > 0:
        params0, noise0, before, ll_before = start
        ran = jnp.asarray(refined_now)
        better = ran & jnp.isfinite(after) & (
            after >= jnp.where(jnp.isfinite(before), before, -jnp.inf))
        # The optimiser's end point where it scored at least as well as its start; the moves'
        # particles where no optimiser pass ran.
        keep = better | ~ran
        state = state._replace(
            params=jnp.where(keep[:, None, None], state.params, params0),
            noise=jnp.where(keep, state.noise, noise0),
            log_likelihood=jnp.where(better, ll_after,
                                     jnp.where(ran, ll_before, state.log_likelihood)),
        )
    return Rejuvenated(state, accepted[:num_moves])


__all__ = ["Rejuvenated", "log_posterior_fn", "move_keys", "optimizer_steps", "rejuvenate"]
