"""The SMC round as steps split by what depends on the data size.

A round program (:func:`autogp.inference.smc_round.smc_round`) holds the structure moves' tree
code, which does not depend on the data, beside the likelihood, which does; a fit whose rounds
grow through four data sizes compiled the tree code four times, and it is most of a round's
compile time (``benchmarks/smc/``). Here the round is the same mathematics as steps, each its
own program (:mod:`autogp.inference.rounds` runs them):

- per data size: :func:`score` (the likelihood of a batch of particles) and :func:`refine`
  (the optimiser's passes);
- once for every size: :func:`reweight_resample`, :func:`propose` (a structure move's
  proposals) and :func:`accept` (its Metropolis-Hastings step).

A round is then ``score``, ``reweight_resample``, ``structure_moves`` times ``propose``,
``score``, ``accept``, then ``refine``: the keys and the arithmetic of ``smc_round``, so the two
give the same particles (``tests/test_round_steps.py``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from autogp.inference import grammar as gr
from autogp.inference import moves, periods, rejuvenation, resampling
from autogp.inference.settings import SMCSettings

Array = jax.Array


def reweight(state, new_ll: Array):
    """Weights times each particle's incremental likelihood ``new_ll - log_likelihood``
    ``[G, P]`` (a particle whose likelihood failed gets weight 0; a series whose particles all
    failed keeps equal weights); the running evidence grows by the normaliser."""
    P = state.noise.shape[1]
    increment = jnp.where(jnp.isfinite(new_ll), new_ll - state.log_likelihood, -jnp.inf)
    unnormalised = state.log_weights + increment
    log_norm = jax.nn.logsumexp(unnormalised, axis=1)
    log_weights = unnormalised - log_norm[:, None]
    all_failed = ~jnp.isfinite(log_norm)
    log_weights = jnp.where(all_failed[:, None], -jnp.log(P), log_weights)
    return state._replace(log_likelihood=new_ll, log_weights=log_weights,
                          log_evidence=state.log_evidence + log_norm)


def effective_sample_size(log_weights: Array) -> Array:
    return jnp.exp(-jax.nn.logsumexp(2.0 * log_weights, axis=-1))


def resample(settings: SMCSettings, state, *, key: Array):
    """Resample the series whose effective sample size is below ``ess_threshold * P``;
    returns ``(state, ess [G], resampled [G])``."""
    G, P = state.noise.shape
    ess = effective_sample_size(state.log_weights)
    resampled = ess < settings.ess_threshold * P
    idx = jax.vmap(lambda lw, k: resampling.resample(settings.resampling, lw, key=k))(
        state.log_weights, jax.random.split(key, G)
    )
    idx = jnp.where(resampled[:, None], idx, jnp.arange(P)[None, :])
    gather = jax.vmap(lambda a, i: a[i])
    state = state._replace(
        ops=gather(state.ops, idx),
        params=gather(state.params, idx),
        noise=gather(state.noise, idx),
        log_likelihood=gather(state.log_likelihood, idx),
        log_weights=jnp.where(resampled[:, None], -jnp.log(P), state.log_weights),
    )
    return state, ess, resampled


def reweight_resample(settings: SMCSettings, state, new_ll: Array, *, key: Array):
    """:func:`reweight` by ``new_ll``, then :func:`resample` with ``key``."""
    return resample(settings, reweight(state, new_ll), key=key)


def round_keys(key: Array) -> tuple[Array, Array, Array]:
    """The round key's parts: resampling, structure moves, optimiser probes (or HMC)."""
    k_resample, k_moves, k_refine = jax.random.split(key, 3)
    return k_resample, k_moves, k_refine


def period_proposal(settings: SMCSettings, centers: Array, log_weights: Array, P: int):
    """The period proposal's per-particle arrays from the series' periodogram peaks ``[G, K]``
    (None when ``period_proposal`` is off)."""
    if settings.period_proposal <= 0:
        return None
    return periods.for_particles(centers, log_weights, P, mix=settings.period_proposal,
                                 scale=settings.period_spread)


def propose(grammar: gr.Grammar, settings: SMCSettings, particles: moves.ParticleState,
            centers: Array, log_weights: Array, *, key: Array):
    """One structure move's proposals for a flat batch of particles of G series (``[G, K]``
    periodogram peaks) and the key of its accept step."""
    P = particles.noise.shape[0] // centers.shape[0]
    return moves.propose_structure_move(
        grammar, particles, key=key, replace_prob=settings.replace_prob, pick=settings.pick,
        period_proposal=period_proposal(settings, centers, log_weights, P))


def accept(particles: moves.ParticleState, proposal: moves.Proposal, ll: Array, *, key: Array):
    """The Metropolis-Hastings step of proposals whose log likelihoods are ``ll``."""
    return moves.metropolis_hastings(particles, proposal, ll, key=key)


def score(loglik, ops: Array, params: Array, noise: Array) -> Array:
    """The log likelihood of a flat batch of particles (``loglik`` of
    :func:`autogp.inference.smc_round.likelihood_fn`)."""
    return loglik(ops, params, noise)


def refine(grammar: gr.Grammar, settings: SMCSettings, particles: moves.ParticleState, loglik,
           steps: Array | None, *, probe_key: Array | None) -> moves.ParticleState:
    """The optimiser's passes of a rejuvenation after its structure moves, as
    :func:`autogp.inference.rejuvenation.rejuvenate` runs them (``steps``: each particle's
    count, or None for all; the probe keys continue from the moves' step numbers)."""
    no_moves = dataclasses.replace(settings, structure_moves=0)
    return rejuvenation.rejuvenate(
        grammar, no_moves, particles, loglik, key=jax.random.key(0), steps=steps,
        probe_key=probe_key, first_step=settings.structure_moves).particles


def kept(rejuvenated: Array, new, old):
    """The rejuvenated particles of series ``rejuvenated`` ``[G]`` and the others' as they
    were (flat ``[G * P, ...]`` arrays)."""
    P = jax.tree_util.tree_leaves(new)[0].shape[0] // rejuvenated.shape[0]
    keep = jnp.repeat(rejuvenated, P)
    return jax.tree_util.tree_map(
        lambda a, b: jnp.where(keep.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), new, old)


__all__ = ["accept", "effective_sample_size", "kept", "period_proposal",
           "propose", "refine", "resample", "reweight", "reweight_resample", "round_keys",
           "score"]
