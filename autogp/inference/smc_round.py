"""The SMC round as a pure function of its inputs: the particle state, one round (reweight,
resample, rejuvenate), the posterior draws and the initial particles. Nothing here compiles,
caches or exports: :mod:`autogp.inference.rounds` runs these functions as compiled programs.

Every array of the state carries a leading *series* axis G in front of the particle axis P, so
a panel of series is one program: for likelihoods the two axes are flattened into the
evaluator's batch (each particle carrying its series' data), which keeps the evaluator's loops
unbatched; resampling and weights work per series. The settings, the grammar and the number of
inducing points are static: part of each compiled program's key.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import log_marginal_likelihood
from autogp.evaluator.sparse import sparse_log_marginal_likelihood
from autogp.inference import grammar as gr
from autogp.inference import (
    moves,
    periods,
    refine,
    rejuvenation,
    round_steps,
    seasonal_start,
)
from autogp.inference.settings import RefineSettings, SMCSettings
from autogp.kernels import spec

Array = jax.Array

class SMCState(NamedTuple):
    """Particles of G series: arrays ``[G, P, ...]``."""

    ops: Array
    params: Array
    noise: Array
    log_likelihood: Array  # on the data of the current round
    log_weights: Array  # normalised per series
    log_evidence: Array  # [G] running estimate of log p(y_1:n)


class Data(eqx.Module):
    """Padded data of G series: ``x`` ``[G, N]`` (or ``[G, N, 1 + C]``: time, then C
    covariates), ``y`` ``[G, N]``; ``rank`` the order in which points are
    added (a point is in round r's data when ``rank < count[r]``); ``length`` ``[G]``;
    ``period_centers``/``period_log_weights`` ``[G, K]`` the periodogram peaks (log periods)
    behind the period proposal; ``power`` ``[G]`` each series' learning rate eta (the SMC
    weighs by ``eta * log p(y)``; data, not a static setting, so one program serves series
    with different rates, see :meth:`SMCSettings.power_for`); ``regular_grid`` (static)
    whether every row of ``x`` is evenly spaced, padding included; ``known_var`` ``[G, N]``
    the observations' known variances (measurement error, added to the learned noise), None
    where no series has any (the likelihood then runs exactly as without them)."""

    x: Array
    y: Array
    rank: Array
    length: Array
    period_centers: Array
    period_log_weights: Array
    power: Array
    regular_grid: bool = eqx.field(static=True, default=False)
    known_var: Array | None = None



def _flat(a):
    return a.reshape((-1,) + a.shape[2:])


def _unflat(a, G):
    return a.reshape((G, -1) + a.shape[1:])


def likelihood_fn(data: Data, count: Array, P: int, num_inducing: int = 0, probes: int = 0):
    """Batched log likelihood on round data, over flattened [G*P] particles (the sparse bound
    with ``num_inducing`` inducing points when positive), times each series' learning rate
    (``data.power``; a rate of 1 multiplies by exactly 1.0, the Bayesian likelihood).

    ``fn(ops, params, noise, *, key=None)``; with ``probes > 0`` (exact likelihood only) and a
    ``key``, its gradient is the stochastic one from that many Rademacher probes drawn with
    ``key`` (:func:`autogp.evaluator.gaussian_log_marginal`)."""
    mask = data.rank < count[:, None]  # [G, N]
    x = jnp.repeat(data.x, P, axis=0)
    y = jnp.repeat(data.y, P, axis=0)
    m = jnp.repeat(mask, P, axis=0)
    power = jnp.repeat(data.power, P, axis=0)
    known = None if data.known_var is None else jnp.repeat(data.known_var, P, axis=0)

    def fn(ops, params, noise, *, key=None):
        if num_inducing > 0:
            ll = sparse_log_marginal_likelihood(ops, params, noise, x, y, m,
                                                num_inducing=num_inducing, known_var=known)
        else:
            Z = (None if key is None or probes <= 0 else
                 jax.random.rademacher(key, y.shape + (probes,), x.dtype))
            ll = log_marginal_likelihood(ops, params, noise, x, y, m,
                                         regular_grid=data.regular_grid, probes=Z,
                                         known_var=known)
        return power * ll

    return fn


def late_step_counts(settings: SMCSettings, data: Data, count: Array, P: int) -> Array | None:
    """Each particle's optimiser steps this round ``[G * P]``: ``refine.late_steps`` for
    series of at least ``refine.late_from`` points in a round on more than half of them,
    ``refine.steps`` otherwise; None when ``late_steps`` is off (-1). A series' count depends
    only on its own data, so its fit does not depend on the panel it is fitted in."""
    r = settings.refine
    if r.late_steps < 0:
        return None
    late = (2 * count > data.length) & (data.length >= r.late_from)
    return jnp.repeat(jnp.where(late, r.late_steps, r.steps), P)


def gradient_probes(settings: SMCSettings, columns: int) -> int:
    """Rademacher probes of the optimiser's gradient in a round computed on ``columns`` (its
    padded size, static in the round's program): ``refine.probes`` from ``refine.probes_from``
    columns on, else 0 (the exact gradient)."""
    r = settings.refine
    return r.probes if r.mode == "optimize" and columns >= r.probes_from else 0


def _period_proposal(settings: SMCSettings, data: Data, P: int):
    return round_steps.period_proposal(settings, data.period_centers, data.period_log_weights, P)


def smc_round(
    grammar: gr.Grammar,
    settings: SMCSettings,
    state: SMCState,
    data: Data,
    count: Array,
    *,
    key: Array,
    num_inducing: int = 0,
) -> tuple[SMCState, dict[str, Array]]:
    """One round: extend the data to ``count`` [G] points, reweight, resample, rejuvenate.

    ``num_inducing``: inducing points of the sparse likelihood (0: exact), see
    :meth:`SMCSettings.num_inducing`."""
    G, P = state.noise.shape
    # Probes (a stochastic gradient) only for the exact likelihood, and only where a key is
    # passed: the optimiser's passes. Reweighting and HMC call it without one (exact).
    num_probes = 0 if num_inducing > 0 else gradient_probes(settings, data.y.shape[-1])
    loglik = likelihood_fn(data, count, P, num_inducing, num_probes)

    # Reweight by the incremental likelihood, resample where the effective sample size is low.
    new_ll = _unflat(loglik(_flat(state.ops), _flat(state.params), _flat(state.noise)), G)
    k_resample, k_moves, k_refine = round_steps.round_keys(key)
    state, ess, resample = round_steps.reweight_resample(settings, state, new_ll, key=k_resample)

    # Rejuvenate: structure moves (exact MH), then refine the hyperparameters.
    rejuvenate = jnp.ones((G,), bool) if settings.rejuvenate == "always" else resample
    particles = moves.ParticleState(
        ops=_flat(state.ops),
        params=_flat(state.params),
        noise=_flat(state.noise),
        log_likelihood=_flat(state.log_likelihood),
    )
    before = particles

    # Structure moves and optimiser steps share one call site of the likelihood; HMC, when
    # chosen, runs after the moves with its own.
    steps = late_step_counts(settings, data, count, P)
    # k_refine serves HMC only, so the probes take it: the moves' keys, and every fit without
    # probes, stay as they were.
    done = rejuvenation.rejuvenate(
        grammar, settings, particles, loglik, key=k_moves,
        period_proposal=_period_proposal(settings, data, P), steps=steps,
        probe_key=k_refine if num_probes > 0 else None,
    )
    particles = done.particles
    acceptance = (jnp.mean(done.accepted.astype(float)) if settings.structure_moves > 0
                  else jnp.zeros(()))
    if settings.refine.mode == "hmc" and settings.refine.hmc_steps > 0:
        log_posterior = rejuvenation.log_posterior_fn(grammar, loglik, particles.ops)
        refined = _hmc(settings.refine, log_posterior, particles.ops, particles.params,
                       particles.noise, key=k_refine)
        particles = particles._replace(
            params=refined.params, noise=refined.noise, log_likelihood=refined.log_likelihood
        )

    particles = round_steps.kept(rejuvenate, particles, before)
    state = state._replace(
        ops=_unflat(particles.ops, G),
        params=_unflat(particles.params, G),
        noise=_unflat(particles.noise, G),
        log_likelihood=_unflat(particles.log_likelihood, G),
    )
    diagnostics = {"ess": ess, "resampled": resample, "acceptance": acceptance}
    return state, diagnostics


def _hmc(settings: RefineSettings, log_posterior, ops, params, noise, *, key: Array):
    return refine.hmc(
        log_posterior, ops, params, noise,
        key=key, steps=settings.hmc_steps, step_size=settings.hmc_step_size,
        leapfrog_steps=settings.hmc_leapfrog_steps, learn_noise=settings.learn_noise,
    )


def state_shapes(grammar: gr.Grammar, num_series: int, num_particles: int) -> SMCState:
    """Shapes and dtypes of the state of ``num_series`` series of ``num_particles`` particles
    (as :func:`init_state` makes it), without tracing the sampler."""
    G, P = num_series, num_particles
    real = jax.dtypes.canonicalize_dtype(float)

    def of(*shape, dtype=real):
        return jax.ShapeDtypeStruct(shape, dtype)

    return SMCState(ops=of(G, P, grammar.num_slots, dtype=jnp.int32),
                    params=of(G, P, grammar.num_slots, spec.MAX_PARAMS), noise=of(G, P),
                    log_likelihood=of(G, P), log_weights=of(G, P), log_evidence=of(G))


def draw_parameters(
    grammar: gr.Grammar, settings: SMCSettings, draws: int, state: SMCState, data: Data, *,
    key: Array, num_inducing: int = 0,
) -> SMCState:
    """Replace each particle by ``draws`` copies whose parameters are moved
    by independent HMC chains on all the data; the copies share the particle's weight.

    Optimised parameters are one point of each structure's posterior; forecasts from them miss
    the parameters' uncertainty and their intervals are too narrow far ahead. Chains start at
    that point, so a few transitions suffice and the copies' median stays near it.
    """
    G, P = state.noise.shape

    def copies(a):  # [G, P, ...] -> [G, P * draws, ...], copies of a particle adjacent
        return jnp.repeat(a, draws, axis=1)

    ops, params, noise = (_flat(copies(a)) for a in (state.ops, state.params, state.noise))
    log_posterior = rejuvenation.log_posterior_fn(
        grammar, likelihood_fn(data, data.length, P * draws, num_inducing), ops)
    drawn = _hmc(settings.refine, log_posterior, ops, params, noise, key=key)
    return state._replace(
        ops=_unflat(ops, G),
        params=_unflat(drawn.params, G),
        noise=_unflat(drawn.noise, G),
        log_likelihood=_unflat(drawn.log_likelihood, G),
        log_weights=copies(state.log_weights) - jnp.log(draws),
    )


def check_finite(state: SMCState) -> None:
    """Debug check: no NaN or infinity in weights, parameters or noise (``-inf`` log weights
    of failed particles are allowed)."""
    for name in ("params", "noise"):
        if not np.all(np.isfinite(np.asarray(getattr(state, name)))):
            raise FloatingPointError(f"non-finite {name} in the SMC state")
    lw = np.asarray(state.log_weights)
    if np.any(np.isnan(lw)) or np.any(lw == np.inf):
        raise FloatingPointError("NaN or +inf log weights in the SMC state")


def prior_state(grammar: gr.Grammar, G: int, P: int, key: Array) -> SMCState:
    keys = jax.random.split(key, G)
    ops, params, noise = jax.vmap(lambda k: gr.sample_prior(grammar, P, key=k))(keys)
    dtype = params.dtype
    # Explicit dtypes (no weak types): the compiled round must see the same avals every round.
    return SMCState(
        ops=ops, params=params, noise=noise,
        log_likelihood=jnp.zeros((G, P), dtype),  # likelihood of zero points
        log_weights=jnp.full((G, P), -math.log(P), dtype),
        log_evidence=jnp.zeros((G,), dtype),
    )


def proposal_state(
    grammar: gr.Grammar, settings: SMCSettings, G: int, P: int, key: Array, data: Data
) -> SMCState:
    """Initial particles from the period proposal q0 (the prior with PER periods from q), and
    with ``settings.seasonal_start`` > 0 from the mixture of q0 and ``S + PER`` trees
    (:mod:`autogp.inference.seasonal_start`); log weights ``log p - log proposal``."""
    key_prior, key_period = jax.random.split(key)
    state = prior_state(grammar, G, P, key_prior)
    proposal = _period_proposal(settings, data, P)
    mean, std = periods.period_prior(grammar)
    ops, params = _flat(state.ops), _flat(state.params)
    everywhere = jnp.ones(ops.shape[-1], bool)

    def one(o, p, q, k):
        p = periods.redraw_periods(o, p, everywhere, q, key=k)
        return p, -periods.region_correction(o, p, everywhere, mean, std, q)

    params, log_p_over_q = jax.vmap(one)(
        ops, params, proposal, jax.random.split(key_period, ops.shape[0])
    )
    if settings.seasonal_start > 0 and seasonal_start.available(grammar):
        # Its own key, so the draws of q0 are as without it. Not fold_in(key, 1): that is
        # split(key)[1] (key_period) under threefry's partitionable split.
        share = seasonal_start.share_of(proposal, settings.seasonal_start)

        def seasonal(o, p, q, s, k):
            o, p, log_q_over_q0 = seasonal_start.propose(grammar, o, p, q, s, key=k)
            log_p_over_q0 = -periods.region_correction(o, p, everywhere, mean, std, q)
            return o, p, log_p_over_q0 - log_q_over_q0

        ops, params, log_p_over_q = jax.vmap(seasonal)(
            ops, params, proposal, share, jax.random.split(jax.random.fold_in(key, 2), len(share))
        )
    log_w = _unflat(log_p_over_q, G)
    log_norm = jax.nn.logsumexp(log_w, axis=1)
    return state._replace(
        ops=_unflat(ops, G),
        params=_unflat(params, G),
        log_weights=log_w - log_norm[:, None],
        log_evidence=log_norm - math.log(P),
    )



__all__ = [
    "Data",
    "SMCState",
    "check_finite",
    "draw_parameters",
    "gradient_probes",
    "late_step_counts",
    "likelihood_fn",
    "prior_state",
    "proposal_state",
    "smc_round",
    "state_shapes",
]
