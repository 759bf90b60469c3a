"""Priors learned across series (empirical Bayes, type II), from each series' SMC particles.

A short series cannot tell its trend from its noise: its posterior is mostly its prior. A
panel can: the prior that makes the panel's series likeliest, each integrated over its own
kernel structure and parameters, is the type-II (evidence-maximising) hyperprior.

Each series i was fitted under a base prior p0 (the grammar it ran with); its SMC run gives an
estimate Z_i of its evidence under p0 and weighted particles (w_ik, T_ik, theta_ik). Under a
candidate prior p_eta the same particles estimate its evidence by importance reweighting:

    Z_i(eta) = Z_i * sum_k w_ik p_eta(T_ik, theta_ik) / p0(T_ik, theta_ik),

so maximising sum_i log Z_i(eta) needs no new fit: log Z_i is a constant and the gain
``sum_i logsumexp_k(log w_ik + log p_eta - log p0)`` is a smooth function of eta. eta holds what
the grammar holds (:class:`~autogp.inference.grammar.Grammar`): a normal mean and log-std per
(opcode, parameter) in unconstrained space, the noise's, and the log production weights. Only
what the base grammar can produce is learned (a zero-weight opcode stays off); a weak normal
hyperprior around the base values keeps entries that few particles inform near where they were.
The estimate is good where p_eta is close to p0 in the particles' region (the particles are
the base fit's); :func:`learn_prior` can be repeated after refitting under the learned prior.

The second objective, :func:`predictive_gain`, is closer to what forecasts need: the pooled
one-step-ahead predictive density of each series' second half given its first, under eta,
from the same particles reweighted to the first half's posterior (leave-future-out importance
sampling). Each particle then also needs its density of the second half given the first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm

from autogp.inference.grammar import Grammar, cp_allowed_mask
from autogp.inference.heap import tables_of
from autogp.kernels import spec

Array = jax.Array


class Hyperprior(NamedTuple):
    """The numbers a learned prior is made of (a pytree; every field is learned)."""

    mean: Array  # [NUM_OPS, MAX_PARAMS] normal mean of each unconstrained parameter
    log_std: Array  # [NUM_OPS, MAX_PARAMS]
    noise: Array  # [2]: mean and log-std of the unconstrained noise
    log_weights: Array  # [NUM_OPS] log production weights (-inf: off)


class ParticleSets(NamedTuple):
    """The final particles of many series' fits, padded to one particle count ``P``.

    ``log_weights`` are normalised per series; padding particles have weight ``-inf``."""

    ops: Array  # int32 [N, P, S]
    params: Array  # [N, P, S, MAX_PARAMS]
    noise: Array  # [N, P]
    log_weights: Array  # [N, P]
    # log p(y_{h+1..n} | y_{1..h}, theta) of each particle, h the first half of its series
    # (the one-step-ahead predictive densities of the second half): the predictive objective's
    holdout: Array | None = None  # [N, P]
    # Laplace posterior variances of each unconstrained parameter and of the noise, around
    # ``params``/``noise`` (the modes): where given, the prior ratio of each coordinate is
    # integrated over its mode's width instead of read at the mode (:func:`log_prior_ratio`).
    param_var: Array | None = None  # [N, P, S, MAX_PARAMS]; inf where the data say nothing
    noise_var: Array | None = None  # [N, P]


def stack_particles(fits: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                    holdout: Sequence[np.ndarray] | None = None,
                    variances: Sequence[tuple[np.ndarray, np.ndarray]] | None = None
                    ) -> ParticleSets:
    """``ParticleSets`` from per-series ``(ops [P_i, S], params, noise, log_weights)`` (and
    each series' ``holdout`` log densities ``[P_i]`` for the predictive objective, and its
    Laplace ``(param_var, noise_var)``)."""
    if not fits:
        raise ValueError("no fitted series to learn a prior from")
    width = max(len(f[3]) for f in fits)
    slots = fits[0][0].shape[1]
    normalised = []
    for i, (ops, _, _, lw) in enumerate(fits):
        if ops.shape[1] != slots:
            raise ValueError(f"series {i}: trees of {ops.shape[1]} slots, the first has {slots}"
                             " (fit every series with one grammar depth)")
        lw = np.asarray(lw, dtype=np.float64)
        if not np.any(np.isfinite(lw)):
            raise ValueError(f"series {i}: no particle has a finite weight")
        normalised.append(lw - np.logaddexp.reduce(lw[np.isfinite(lw)]))

    def padded(arrays, fill=0.0, dtype=np.float64):
        """Each series' ``[P_i, ...]`` array padded to ``width`` particles, stacked."""
        return jnp.asarray(np.stack([
            np.pad(np.asarray(a, dtype=dtype), [(0, width - len(a))]
                   + [(0, 0)] * (np.ndim(a) - 1), constant_values=fill) for a in arrays]))

    return ParticleSets(
        ops=padded([f[0] for f in fits], 0, np.int32),
        params=padded([f[1] for f in fits]),
        noise=padded([f[2] for f in fits]),
        log_weights=padded(normalised, -np.inf),
        holdout=None if holdout is None else padded(holdout),
        param_var=None if variances is None else padded([v[0] for v in variances], np.inf),
        noise_var=None if variances is None else padded([v[1] for v in variances], np.inf),
    )


def hyperprior_of(grammar: Grammar) -> Hyperprior:
    """The hyperprior that is ``grammar``'s prior."""
    with np.errstate(divide="ignore"):
        log_w = np.log(np.asarray(grammar.weights))
    return Hyperprior(
        mean=jnp.asarray(grammar.prior_mean_table, dtype=jnp.float64),
        log_std=jnp.log(jnp.asarray(grammar.prior_std_table, dtype=jnp.float64)),
        noise=jnp.asarray([grammar.noise_prior[0], np.log(grammar.noise_prior[1])]),
        log_weights=jnp.asarray(log_w, dtype=jnp.float64),
    )


def grammar_of(hyper: Hyperprior, base: Grammar) -> Grammar:
    """``base`` with the priors and production weights of ``hyper`` (weights scaled so the
    largest is that of ``base``: only their ratios matter)."""
    log_w = np.asarray(hyper.log_weights)
    on = np.isfinite(log_w)
    weights = np.zeros_like(log_w)
    weights[on] = np.exp(log_w[on] - log_w[on].max()) * max(base.weights)
    return dataclasses.replace(
        base,
        weights=tuple(weights),
        param_prior_mean=tuple(map(tuple, np.asarray(hyper.mean))),
        param_prior_std=tuple(map(tuple, np.exp(np.asarray(hyper.log_std)))),
        noise_prior=(float(hyper.noise[0]), float(np.exp(hyper.noise[1]))),
    )


def _node_log_prob_table(log_weights: Array, max_depth: int) -> Array:
    """``Grammar.node_log_prob_table`` as a function of the log weights: ``[D+1, 2, NUM_OPS]``."""
    is_op = jnp.asarray(spec.IS_OPERATOR)
    is_cp = jnp.arange(spec.NUM_OPS) == spec.CP
    rows = []
    for depth in range(max_depth + 1):
        pair = []
        for cp_allowed in (False, True):
            off = (is_op if depth == max_depth else jnp.zeros_like(is_op)) | (
                is_cp if not cp_allowed else jnp.zeros_like(is_cp))
            lw = jnp.where(off, -jnp.inf, log_weights)
            pair.append(lw - logsumexp(lw))
        rows.append(jnp.stack(pair))
    return jnp.stack(rows)


def structure_log_prior(hyper: Hyperprior, ops: Array) -> Array:
    """log p_eta(T) of trees ``ops [..., S]``."""
    tables = tables_of(ops)
    cp_ok = jnp.vectorize(cp_allowed_mask, signature="(s)->(s)")(ops).astype(jnp.int32)
    table = _node_log_prob_table(hyper.log_weights, tables.max_depth)
    node = table[jnp.asarray(tables.depth), cp_ok, ops]
    return jnp.sum(jnp.where(ops != spec.EMPTY, node, 0.0), axis=-1)


def _used(ops: Array) -> Array:
    return jnp.arange(spec.MAX_PARAMS) < jnp.asarray(spec.NUM_PARAMS)[ops][..., None]


#: A coordinate's likelihood counts as informative where its precision is at least this
#: fraction of the prior's.
INFORMED = 0.1


def _laplace_ratio(theta, var, mean, std, mean0, std0) -> Array:
    """log of the integral of N(mean, std) against a coordinate's likelihood, over the same
    with N(mean0, std0): the likelihood is the Gaussian that the Laplace posterior
    N(theta, var) under N(mean0, std0) implies; 0 where it is flat (var at the prior's)."""
    precision = 1.0 / var - 1.0 / std0**2
    # Under a tenth of the prior's precision the likelihood's own width and mode are the
    # difference of two nearly equal numbers (rounding, a floored Hessian): read as flat.
    informed = precision > INFORMED / std0**2
    v = 1.0 / jnp.where(informed, precision, 1.0)
    m = v * (jnp.where(informed, theta / var, 0.0) - mean0 / std0**2)
    ratio = (norm.logpdf(m, mean, jnp.sqrt(v + std**2))
             - norm.logpdf(m, mean0, jnp.sqrt(v + std0**2)))
    return jnp.where(informed, ratio, 0.0)


def log_prior_ratio(hyper: Hyperprior, base: Hyperprior, particles: ParticleSets) -> Array:
    """``[N, P]``: log of p_eta / p0 for each particle: at its parameters, or with Laplace
    variances (``particles.param_var``) integrated over its mode's width, which a parameter
    the data do not inform leaves at 0 (its spread across series is then not its prior's)."""
    ops = particles.ops
    if particles.param_var is None:
        return (particle_log_prior(hyper, ops, particles.params, particles.noise)
                - particle_log_prior(base, ops, particles.params, particles.noise))
    structure = structure_log_prior(hyper, ops) - structure_log_prior(base, ops)
    theta = _laplace_ratio(particles.params, particles.param_var, hyper.mean[ops],
                           jnp.exp(hyper.log_std[ops]), base.mean[ops],
                           jnp.exp(base.log_std[ops]))
    theta = jnp.sum(jnp.where(_used(ops), theta, 0.0), axis=(-2, -1))
    noise = _laplace_ratio(particles.noise, particles.noise_var, hyper.noise[0],
                           jnp.exp(hyper.noise[1]), base.noise[0], jnp.exp(base.noise[1]))
    return structure + theta + noise


def particle_log_prior(hyper: Hyperprior, ops: Array, params: Array, noise: Array) -> Array:
    """log p_eta(T, theta, noise) of particles ``ops [..., S]`` (the same number as
    ``grammar.log_prior`` of :func:`grammar_of` for well-formed trees), differentiable in
    ``hyper``."""
    structure = structure_log_prior(hyper, ops)
    mean, std = hyper.mean[ops], jnp.exp(hyper.log_std[ops])
    density = jnp.where(_used(ops), norm.logpdf(params, mean, std), 0.0)
    theta = jnp.sum(density, axis=(-2, -1))
    noise_term = norm.logpdf(noise, hyper.noise[0], jnp.exp(hyper.noise[1]))
    return structure + theta + noise_term


def evidence_gain(hyper: Hyperprior, base: Hyperprior, particles: ParticleSets) -> Array:
    """sum_i log Z_i(eta) - log Z_i: the panel's log evidence under ``hyper`` minus under the
    base prior, by importance reweighting of each series' particles."""
    finite = jnp.isfinite(particles.log_weights)
    ratio = jnp.where(finite, particles.log_weights + log_prior_ratio(hyper, base, particles),
                      -jnp.inf)
    return jnp.sum(logsumexp(ratio, axis=-1))


def _supported(particles: ParticleSets, base_log_prior: Array) -> ParticleSets:
    """``particles`` without those the base prior cannot produce (an atom a covariate or a
    moved weight added), weights renormalised; a series left with none is dropped."""
    lw = jnp.where(jnp.isfinite(base_log_prior), particles.log_weights, -jnp.inf)
    total = logsumexp(lw, axis=-1, keepdims=True)
    keep = np.asarray(jnp.isfinite(total[:, 0]))
    if not keep.any():
        raise ValueError("no series has a particle the base prior can produce")
    lw = jnp.where(jnp.isfinite(lw), lw - total, -jnp.inf)
    return ParticleSets(*(None if a is None else a[keep] for a in particles._replace(
        log_weights=lw)))


def predictive_gain(hyper: Hyperprior, base: Hyperprior, particles: ParticleSets) -> Array:
    """sum_i log p_eta(y_i2 | y_i1): the one-step-ahead predictive log density of each
    series' second half given its first, under ``hyper``, pooled over the series.

    The fitted particles are reweighted to the posterior of the first half under ``hyper``
    (weights ``w_k p_eta / p0 / p(y2 | y1, theta_k)``: leave-future-out importance
    sampling), whose predictive density of the second half is then
    ``sum_k w_k r_k / sum_k w_k r_k / p(y2 | y1, theta_k)``, ``r = p_eta / p0``."""
    ok = jnp.isfinite(particles.log_weights) & jnp.isfinite(particles.holdout)
    a = jnp.where(ok, particles.log_weights + log_prior_ratio(hyper, base, particles), -jnp.inf)
    b = jnp.where(ok, particles.holdout, 0.0)
    return jnp.sum(logsumexp(a, axis=-1) - logsumexp(a - b, axis=-1))


#: What :func:`learn_prior` maximises: the panel's evidence (type II) or its pooled
#: one-step-ahead predictive density of each series' second half.
OBJECTIVES = {"evidence": evidence_gain, "predictive": predictive_gain}


class LearnedPrior(NamedTuple):
    grammar: Grammar
    hyper: Hyperprior
    gain: float  # nats of the objective the learned prior adds over the base, over the panel
    num_series: int


#: Spread of the weak normal hyperprior around the base prior: means (unconstrained units),
#: log-stds, log-weights.
HYPER_SPREAD = (2.0, 0.5, 2.0)
#: The smallest prior std learned. The particles are optimised modes, not posterior draws:
#: their spread across series leaves out each series' own posterior width, so a learned std
#: would come out too narrow where the data say little (a parameter left near its prior).
MIN_STD = 0.4


def learn_prior(particles: ParticleSets, base: Grammar, *, steps: int = 400,
                learning_rate: float = 0.05, learn_weights: bool = True,
                objective: str = "evidence") -> LearnedPrior:
    """The hyperprior that maximises ``objective`` (:data:`OBJECTIVES`: the type-II
    :func:`evidence_gain`, or :func:`predictive_gain`, which needs ``particles.holdout``)
    plus a weak normal hyperprior around ``base`` (spreads :data:`HYPER_SPREAD`), by Adam in
    one ``lax.scan``. Entries ``base`` does not use (unused parameter slots, zero-weight
    opcodes; the weights too when ``learn_weights`` is False) stay as they are."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, got {objective!r}")
    if objective == "predictive" and particles.holdout is None:
        raise ValueError("the predictive objective needs each particle's holdout density")
    gain_fn = OBJECTIVES[objective]
    start = hyperprior_of(base)
    used = np.arange(spec.MAX_PARAMS)[None, :] < spec.NUM_PARAMS[:, None]
    on = np.isfinite(np.asarray(start.log_weights))
    free_params = jnp.asarray(used & on[:, None])
    free_weights = jnp.asarray(on if learn_weights else np.zeros_like(on))
    particles = _supported(particles, particle_log_prior(start, particles.ops,
                                                         particles.params, particles.noise))
    floor = float(np.log(MIN_STD))
    spread_mean, spread_std, spread_w = HYPER_SPREAD
    safe_start_w = jnp.where(jnp.isfinite(start.log_weights), start.log_weights, 0.0)

    def assemble(free: Hyperprior) -> Hyperprior:
        return Hyperprior(
            mean=jnp.where(free_params, free.mean, start.mean),
            log_std=jnp.where(free_params, floor + jax.nn.softplus(free.log_std - floor),
                              start.log_std),
            noise=jnp.stack([free.noise[0], floor + jax.nn.softplus(free.noise[1] - floor)]),
            log_weights=jnp.where(free_weights, free.log_weights, start.log_weights),
        )

    def objective(free: Hyperprior) -> Array:
        hyper = assemble(free)
        reg = (jnp.sum(jnp.where(free_params, norm.logpdf(hyper.mean, start.mean, spread_mean)
                                 + norm.logpdf(hyper.log_std, start.log_std, spread_std), 0.0))
               + norm.logpdf(hyper.noise[0], start.noise[0], spread_mean)
               + norm.logpdf(hyper.noise[1], start.noise[1], spread_std)
               + jnp.sum(jnp.where(free_weights, norm.logpdf(
                   jnp.where(free_weights, hyper.log_weights, 0.0), safe_start_w, spread_w),
                   0.0)))
        return -(gain_fn(hyper, start, particles) + reg)

    # softplus^-1 so that assemble(init) == start
    def inv(v):
        return v + jnp.log(-jnp.expm1(-v))
    init = Hyperprior(
        mean=start.mean,
        log_std=jnp.where(free_params, floor + inv(jnp.maximum(start.log_std - floor, 1e-6)), 0.0),
        noise=jnp.stack([start.noise[0], floor + inv(jnp.maximum(start.noise[1] - floor, 1e-6))]),
        log_weights=safe_start_w,
    )
    optimiser = optax.adam(learning_rate)

    @jax.jit
    def run(init: Hyperprior) -> Hyperprior:
        def step(carry, _):
            free, state = carry
            value, grad = jax.value_and_grad(objective)(free)
            updates, state = optimiser.update(grad, state, free)
            return (optax.apply_updates(free, updates), state), value

        (free, _), _ = jax.lax.scan(step, (init, optimiser.init(init)), None, length=steps)
        return free

    hyper = assemble(run(init))
    gain = float(gain_fn(hyper, start, particles) - gain_fn(start, start, particles))
    if not np.isfinite(gain):
        raise FloatingPointError(f"the learned prior's {objective} gain is not finite")
    return LearnedPrior(grammar_of(hyper, base), hyper, gain, int(particles.ops.shape[0]))


__all__ = ["HYPER_SPREAD", "Hyperprior", "LearnedPrior", "MIN_STD", "OBJECTIVES",
           "ParticleSets", "evidence_gain", "grammar_of", "hyperprior_of", "learn_prior",
           "log_prior_ratio", "particle_log_prior", "predictive_gain", "stack_particles",
           "structure_log_prior"]
