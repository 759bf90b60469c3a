"""The compiled SMC round over padded data: the particle state, one round (reweight, resample,
rejuvenate), the posterior draws and the initial particles.

Shapes change little during a fit: the data are padded to a multiple of 32 points and each
round moves a mask over a prefix of them (the smallest quarter of the padded length that holds
its points, see :func:`round_size`), so at most four compiled rounds serve a whole fit, and
later fits of similar lengths.
Every array of the state carries a leading *series* axis G in front of the particle axis P, so
a panel of series is one program: for likelihoods the two axes are flattened into the
evaluator's batch (each particle carrying its series' data), which keeps the evaluator's loops
unbatched; resampling and weights work per series. The settings, the grammar and the number of
inducing points are static: part of each compiled program's key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import is_regular_grid, log_marginal_likelihood
from autogp.evaluator.sparse import sparse_log_marginal_likelihood
from autogp.inference import exported, moves, periods, refine, rejuvenation, resampling
from autogp.inference import grammar as gr
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
    """Padded data of G series: ``x``, ``y`` ``[G, N]``; ``rank`` the order in which points are
    added (a point is in round r's data when ``rank < count[r]``); ``length`` ``[G]``;
    ``period_centers``/``period_log_weights`` ``[G, K]`` the periodogram peaks (log periods)
    behind the period proposal; ``power`` ``[G]`` each series' learning rate eta (the SMC
    weighs by ``eta * log p(y)``; data, not a static setting, so one program serves series
    with different rates, see :meth:`SMCSettings.power_for`); ``regular_grid`` (static)
    whether every row of ``x`` is evenly spaced, padding included."""

    x: Array
    y: Array
    rank: Array
    length: Array
    period_centers: Array
    period_log_weights: Array
    power: Array
    regular_grid: bool = eqx.field(static=True, default=False)


# --- the compiled round --------------------------------------------------------------------------
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

    def fn(ops, params, noise, *, key=None):
        if num_inducing > 0:
            ll = sparse_log_marginal_likelihood(ops, params, noise, x, y, m,
                                                num_inducing=num_inducing)
        else:
            Z = (None if key is None or probes <= 0 else
                 jax.random.rademacher(key, x.shape + (probes,), x.dtype))
            ll = log_marginal_likelihood(ops, params, noise, x, y, m,
                                         regular_grid=data.regular_grid, probes=Z)
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
    if settings.period_proposal <= 0:
        return None
    return periods.for_particles(
        data.period_centers, data.period_log_weights, P,
        mix=settings.period_proposal, scale=settings.period_spread,
    )


def _ess(log_weights):
    return jnp.exp(-jax.nn.logsumexp(2.0 * log_weights, axis=-1))


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
    num_probes = 0 if num_inducing > 0 else gradient_probes(settings, data.x.shape[-1])
    loglik = likelihood_fn(data, count, P, num_inducing, num_probes)

    # Reweight by the incremental likelihood.
    new_ll = _unflat(loglik(_flat(state.ops), _flat(state.params), _flat(state.noise)), G)
    increment = jnp.where(jnp.isfinite(new_ll), new_ll - state.log_likelihood, -jnp.inf)
    unnormalised = state.log_weights + increment
    log_norm = jax.nn.logsumexp(unnormalised, axis=1)
    log_evidence = state.log_evidence + log_norm
    log_weights = unnormalised - log_norm[:, None]
    all_failed = ~jnp.isfinite(log_norm)
    log_weights = jnp.where(all_failed[:, None], -jnp.log(P), log_weights)
    state = state._replace(
        log_likelihood=new_ll, log_weights=log_weights, log_evidence=log_evidence
    )

    # Resample where the effective sample size is low.
    k_resample, k_moves, k_refine = jax.random.split(key, 3)
    ess = _ess(state.log_weights)
    resample = ess < settings.ess_threshold * P
    idx = jax.vmap(lambda lw, k: resampling.resample(settings.resampling, lw, key=k))(
        state.log_weights, jax.random.split(k_resample, G)
    )
    idx = jnp.where(resample[:, None], idx, jnp.arange(P)[None, :])
    gather = jax.vmap(lambda a, i: a[i])
    state = SMCState(
        ops=gather(state.ops, idx),
        params=gather(state.params, idx),
        noise=gather(state.noise, idx),
        log_likelihood=gather(state.log_likelihood, idx),
        log_weights=jnp.where(resample[:, None], -jnp.log(P), state.log_weights),
        log_evidence=state.log_evidence,
    )

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

    keep = jnp.repeat(rejuvenate, P)
    particles = jax.tree_util.tree_map(
        lambda new, old: jnp.where(keep.reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
        particles, before,
    )
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


_compiled_round = jax.jit(smc_round, static_argnums=(0, 1), static_argnames=("num_inducing",))
_DIAGNOSTICS = {"ess": 0, "resampled": 0, "acceptance": 0}  # smc_round's second result's keys


def _smc_round_on_key_data(grammar, settings, num_inducing, state, data, count, key_data):
    return smc_round(grammar, settings, state, data, count,
                     key=jax.random.wrap_key_data(key_data), num_inducing=num_inducing)


def _run_round(grammar: gr.Grammar, settings: SMCSettings, state: SMCState, data: Data,
               count: Array, *, key: Array, num_inducing: int = 0):
    """One compiled round: through an exported program (``autogp.inference.exported``: kept on
    disk where JAX's persistent cache is on, so a fresh process skips tracing), or the jitted
    round where ``AUTOGP_EXPORTED_ROUNDS=0``."""
    if not exported.enabled():
        return _compiled_round(grammar, settings.for_programs(), state, data, count, key=key,
                               num_inducing=num_inducing)
    program = _round_program(grammar, settings, num_inducing, state, data, count,
                             jax.random.key_data(key))
    out_treedef = jax.tree_util.tree_structure((state, _DIAGNOSTICS))
    return exported.call(exported.directory(), program, out_treedef)


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


def _key_data_shape():
    return exported.shapes(jax.random.key_data(jax.random.key(0)))


def _init_program(grammar: gr.Grammar, settings: SMCSettings | None, G: int, P: int,
                  data: Data | None, key_data) -> exported.Program:
    """The exported program of :func:`init_state` (with the period proposal when ``settings``
    is given)."""
    if settings is None:
        return exported.Program("init_prior", _init_prior_on_key_data, (grammar, G, P),
                                (key_data,))
    return exported.Program("init_proposal", _init_proposal_on_key_data,
                            (grammar, settings.for_programs(), G, P), (key_data, data))


def _round_program(grammar: gr.Grammar, settings: SMCSettings, num_inducing: int, state, data,
                   count, key_data) -> exported.Program:
    return exported.Program("smc_round", _smc_round_on_key_data,
                            (grammar, settings.for_programs(), num_inducing),
                            (state, data, count, key_data))


def round_sizes(settings: SMCSettings, counts: np.ndarray, padded: int) -> list[int]:
    """The data columns each round of ``counts`` ``[R, G]`` computes on (see :func:`round_size`;
    shuffled data enter in random column order, so then every round needs every column)."""
    sizes = "full" if settings.shuffle else settings.round_sizes
    return [round_size(int(np.max(c)), padded, sizes) for c in np.asarray(counts)]


def prepare_programs(grammar: gr.Grammar, settings: SMCSettings, data: Data, counts: np.ndarray,
                     *, num_particles: int, num_inducing: int = 0, init: bool = True) -> None:
    """Where rounds run through exported programs, get every program a fit needs (its initial
    particles when ``init``, one round per round size of ``counts``) before it starts, compiled
    side by side (``exported.prepare``)."""
    if not exported.enabled():
        return
    G = data.x.shape[0]
    state = state_shapes(grammar, G, num_particles)
    count = jax.ShapeDtypeStruct((G,), jnp.int32)
    key_data = _key_data_shape()
    programs = []
    if init:
        proposal = settings.period_proposal > 0
        programs.append(_init_program(grammar, settings if proposal else None, G, num_particles,
                                      exported.shapes(data) if proposal else None, key_data))
    for size in sorted(set(round_sizes(settings, counts, data.x.shape[1]))):
        programs.append(_round_program(grammar, settings, num_inducing, state,
                                       exported.shapes(data_prefix(data, size)), count, key_data))
    exported.prepare(exported.directory(), programs)


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


_compiled_draws = jax.jit(draw_parameters, static_argnums=(0, 1, 2),
                          static_argnames=("num_inducing",))


def run_draws(
    grammar: gr.Grammar, settings: SMCSettings, draws: int, state: SMCState, data: Data, *,
    key: Array, num_inducing: int = 0,
) -> SMCState:
    """:func:`draw_parameters`, compiled once per grammar, settings and draw count."""
    return _compiled_draws(grammar, settings.for_programs(), draws, state, data, key=key,
                           num_inducing=num_inducing)


def compilation_counts() -> dict[str, int]:
    """Programs held by the jitted round and posterior-draw functions (their own caches), the
    rounds run through exported programs included: a fit that reuses the compiled round leaves
    the counts unchanged."""
    return {"round": _compiled_round._cache_size() + exported.programs("smc_round"),
            "draws": _compiled_draws._cache_size()}


def check_finite(state: SMCState) -> None:
    """Debug check: no NaN or infinity in weights, parameters or noise (``-inf`` log weights
    of failed particles are allowed)."""
    for name in ("params", "noise"):
        if not np.all(np.isfinite(np.asarray(getattr(state, name)))):
            raise FloatingPointError(f"non-finite {name} in the SMC state")
    lw = np.asarray(state.log_weights)
    if np.any(np.isnan(lw)) or np.any(lw == np.inf):
        raise FloatingPointError("NaN or +inf log weights in the SMC state")


# --- initial particles and padded data ---------------------------------------------------------
def init_state(
    grammar: gr.Grammar, num_series: int, num_particles: int, *, key: Array,
    data: Data | None = None, settings: SMCSettings | None = None,
) -> SMCState:
    """Particles drawn from the prior for ``num_series`` series (one compiled program: run
    eagerly, the tree sampler dispatches hundreds of small computations, ~15 s on 2 cores).

    With ``data`` and ``settings`` whose ``period_proposal`` is positive, PER periods are drawn
    from the period proposal q instead and the particles start with importance weights
    ``p / q``; the evidence estimate starts at ``log mean(p / q)`` (unbiased, as before).
    """
    use_proposal = data is not None and settings is not None and settings.period_proposal > 0
    if exported.enabled():
        program = _init_program(grammar, settings if use_proposal else None, num_series,
                                num_particles, data if use_proposal else None,
                                jax.random.key_data(key))
        out_treedef = jax.tree_util.tree_structure(state_shapes(grammar, 1, 1))
        return exported.call(exported.directory(), program, out_treedef)
    if not use_proposal:
        return _compiled_init(grammar, num_series, num_particles, key)
    return _compiled_init_proposal(grammar, settings.for_programs(), num_series, num_particles,
                                   key, data)


def _prior_state(grammar: gr.Grammar, G: int, P: int, key: Array) -> SMCState:
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


_compiled_init = jax.jit(_prior_state, static_argnums=(0, 1, 2))


def _init_prior_on_key_data(grammar, G, P, key_data):
    return _prior_state(grammar, G, P, jax.random.wrap_key_data(key_data))


def _init_proposal_on_key_data(grammar, settings, G, P, key_data, data):
    return _init_with_proposal(grammar, settings, G, P, jax.random.wrap_key_data(key_data), data)


def _init_with_proposal(
    grammar: gr.Grammar, settings: SMCSettings, G: int, P: int, key: Array, data: Data
) -> SMCState:
    key_prior, key_period = jax.random.split(key)
    state = _prior_state(grammar, G, P, key_prior)
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
    log_w = _unflat(log_p_over_q, G)
    log_norm = jax.nn.logsumexp(log_w, axis=1)
    return state._replace(
        params=_unflat(params, G),
        log_weights=log_w - log_norm[:, None],
        log_evidence=log_norm - math.log(P),
    )


_compiled_init_proposal = jax.jit(_init_with_proposal, static_argnums=(0, 1, 2, 3))


PAD_MULTIPLE = 32


def padded_length(n: int) -> int:
    """Data are padded to a multiple of ``PAD_MULTIPLE`` points, so series of similar length
    (a panel, an online update, the next fit) reuse one compiled round."""
    return int(math.ceil(n / PAD_MULTIPLE) * PAD_MULTIPLE)


ROUND_SIZE_STEPS = 4


def round_size(count: int, padded: int, sizes: str = "grow") -> int:
    """Columns of the padded data that a round with at most ``count`` points needs.

    ``"full"``: always all ``padded`` columns. ``"grow"``: the smallest of
    ``ceil(padded * k / ROUND_SIZE_STEPS)`` (k = 1..4), rounded up to ``PAD_MULTIPLE``, that
    holds ``count``: the early rounds of the data annealing then pay for the data they have, not
    for all of it (a fit costs about half as much), at the price of at most four compiled rounds
    per padded length. The sizes are multiples of ``PAD_MULTIPLE`` shared between lengths
    (128 -> 32, 64, 96, 128; 96 -> 32, 64, 96), so a panel of lengths needs few programs.
    """
    if sizes == "full":
        return padded
    if sizes != "grow":
        raise ValueError(f"unknown round_sizes {sizes!r} (expected 'grow' or 'full')")
    for k in range(1, ROUND_SIZE_STEPS + 1):
        size = min(padded, padded_length(math.ceil(padded * k / ROUND_SIZE_STEPS)))
        if size >= count:
            return size
    return padded


def data_prefix(data: Data, size: int) -> Data:
    """The first ``size`` columns of padded data whose points enter in column order (no
    shuffle): a round whose counts are at most ``size`` sees exactly the same masked-in points,
    and masked-out columns add nothing to a likelihood."""
    if size == data.x.shape[1]:
        return data
    return eqx.tree_at(lambda d: (d.x, d.y, d.rank),
                       data, (data.x[:, :size], data.y[:, :size], data.rank[:, :size]))


def make_data(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], *, pad_to: int | None = None,
              shuffle: bool = False, key: Array | None = None,
              period_peaks: int = SMCSettings.period_peaks,
              seasonal_periods: Sequence[float | Sequence[float] | None] | None = None,
              power: Sequence[float] | None = None) -> Data:
    """Pad a list of series to a common length (padding is masked out forever) and find each
    series' periodogram peaks for the period proposal. ``power``: each series' learning rate
    (default 1, the Bayesian posterior; :meth:`SMCSettings.power_for` gives the rule's)."""
    G = len(xs)
    power = np.ones(G) if power is None else np.asarray(power, dtype=float)
    if power.shape != (G,) or not np.all((power > 0) & (power <= 1)):
        raise ValueError(f"power must hold one learning rate in (0, 1] per series, got {power}")
    N = padded_length(max(len(x) for x in xs)) if pad_to is None else pad_to
    x = np.zeros((G, N))
    y = np.zeros((G, N))
    rank = np.full((G, N), np.iinfo(np.int32).max, dtype=np.int32)
    rng = None
    if shuffle:
        if key is None:
            raise ValueError("shuffle needs a key")
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
    for g, (xg, yg) in enumerate(zip(xs, ys, strict=True)):
        n = len(xg)
        x[g, :n], y[g, :n] = xg, yg
        if n < N:  # padding continues the series' grid (it is masked out; no duplicate inputs)
            step = (xg[-1] - xg[0]) / (n - 1) if n > 1 else 1.0
            x[g, n:] = xg[-1] + step * (1 + np.arange(N - n))
        rank[g, :n] = rng.permutation(n) if rng is not None else np.arange(n)
    centers, log_weights = periods.proposal_arrays(
        [np.asarray(v) for v in xs], [np.asarray(v) for v in ys], num=period_peaks,
        seasonal_periods=list(seasonal_periods) if seasonal_periods is not None else None,
    )
    return Data(jnp.asarray(x), jnp.asarray(y), jnp.asarray(rank),
                jnp.asarray([len(v) for v in xs], dtype=jnp.int32),
                jnp.asarray(centers), jnp.asarray(log_weights), jnp.asarray(power),
                is_regular_grid(x))


# --- the rounds of a fit ------------------------------------------------------------------------
def run_rounds(
    grammar: gr.Grammar,
    settings: SMCSettings,
    state: SMCState,
    data: Data,
    counts: np.ndarray,
    *,
    key: Array,
    num_inducing: int = 0,
    callback: Callable[[int, int], None] | None = None,
    debug: bool = False,
) -> tuple[SMCState, dict[str, list]]:
    """Run the rounds given by ``counts`` ``[R, G]`` (absolute counts per series)."""
    counts = np.asarray(counts, dtype=np.int32)
    history: dict[str, list] = {name: [] for name in (*_DIAGNOSTICS, "count", "log_evidence")}
    sizes = round_sizes(settings, counts, data.x.shape[1])
    prepare_programs(grammar, settings, data, counts, num_particles=state.noise.shape[1],
                     num_inducing=num_inducing, init=False)
    for r, k in enumerate(jax.random.split(key, len(counts))):
        size = sizes[r]
        state, diag = _run_round(grammar, settings, state, data_prefix(data, size),
                                 jnp.asarray(counts[r]), key=k, num_inducing=num_inducing)
        if debug:
            check_finite(state)
        for name, value in diag.items():
            history[name].append(np.asarray(value).tolist())
        history["count"].append(counts[r].tolist())
        # the running log evidence: its differences are the rounds' predictive log scores
        history["log_evidence"].append(np.asarray(state.log_evidence).tolist())
        if callback is not None:
            callback(r + 1, len(counts))
    return state, history


__all__ = [
    "Data",
    "SMCState",
    "check_finite",
    "compilation_counts",
    "data_prefix",
    "draw_parameters",
    "init_state",
    "likelihood_fn",
    "make_data",
    "padded_length",
    "prepare_programs",
    "round_size",
    "round_sizes",
    "run_draws",
    "run_rounds",
    "smc_round",
    "state_shapes",
]
