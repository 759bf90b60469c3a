"""A likelihood that scales: the collapsed variational bound of Titsias (2009) ("SGPR").

With M inducing inputs ``z`` on a regular grid over the span of the data in use,

    F = log N(y | 0, Qff + s I) - tr(Kff - Qff) / (2 s),    Qff = Kfu Kuu^-1 Kuf,

is a lower bound on the exact log marginal likelihood ``log N(y | 0, Kff + s I)``, tight when
the inducing grid resolves the kernel (equal when ``z`` are the data points). It costs O(N M^2)
time and, because the data are streamed in chunks of ``chunk`` points, O(M (M + chunk)) memory
per particle: nothing N x N is ever formed. The evaluator's cross-covariances ``gram(z, x)`` and
diagonal ``gram_pairs(x)`` carry their own hand-written gradients; the O(M^3) and O(N M^2)
algebra around them is differentiated by JAX (chunks are recomputed in the backward pass).

Like the dense likelihood it takes a mask over padded data (masked points contribute nothing;
the grid follows the masked-in span, so early annealing rounds get the same resolution on less
data), works on a whole batch of particles with one compiled program, and gives ``-inf`` with a
zero gradient to a particle whose factorisations fail. ``Kuu`` gets a relative jitter (the
bound stays a bound: it is Titsias' bound for inducing values observed with that tiny noise).

White noise (``WN``, which is non-zero only where two inputs are equal) cannot be carried by
inducing values; it is split off exactly as a per-point noise ``d_i = k(x_i, x_i) - k(x_i,
x_i + DELTA)`` and the bound is the one for heteroscedastic noise ``s + d_i``, with the
continuous part of the kernel in ``Kuu``, ``Kuf`` and the trace term (the inducing inputs sit
``DELTA`` off the grid so that they never coincide with a data point).

Known observation variances (measurement error, ``known_var``) enter the same way: they are
per-point noise, so the bound is the heteroscedastic one with ``s + d_i + known_i``. Like the
dense likelihood's, they are the variances of the training observations only: predictions of new
observations add the learned noise ``s`` alone.

The predictive (:func:`sparse_posterior_predictive`) is the one of the optimal q(u).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from autogp.evaluator.gram import gram, gram_pairs
from autogp.evaluator.linalg import cholesky, solve_triangular

#: Relative jitter of Kuu (times the mean of its diagonal), raised tenfold where a factorisation
#: fails, at most ``MAX_JITTER_RUNGS`` times.
KUU_JITTER = 1e-6
MAX_JITTER_RUNGS = 4
#: Inducing points when the config leaves the number to us (see docs/long-series.md).
DEFAULT_INDUCING = 256
#: Data points per streamed chunk.
CHUNK = 1024
#: Offset (in the normalised time units, where data span [0, 1]) that separates "the same
#: input" from "a neighbouring input": far below any data spacing, far above rounding.
DELTA = 1e-9
_LOG_2PI = math.log(2.0 * math.pi)


def default_inducing_points(n: int) -> int:
    """Inducing points for ``n`` data points when the config leaves it to us."""
    return int(min(n, DEFAULT_INDUCING))


def inducing_points_for(n: int, likelihood: str, inducing_points: int, sparse_above: int) -> int:
    """How a series of ``n`` points is fitted: 0 for the exact likelihood, else the number of
    inducing points of the sparse bound (``likelihood``: "auto", "exact" or "sparse";
    ``inducing_points`` 0: :func:`default_inducing_points`)."""
    if likelihood not in ("auto", "exact", "sparse"):
        raise ValueError(f"likelihood must be 'auto', 'exact' or 'sparse', got {likelihood!r}")
    if likelihood == "exact" or (likelihood == "auto" and n <= sparse_above):
        return 0
    return int(inducing_points) if inducing_points > 0 else default_inducing_points(n)


def inducing_grid(x, mask, num_inducing: int):
    """``[B, M]`` evenly spaced inputs from the first to the last masked-in point of each row
    (shifted by ``DELTA``).

    ``x``, ``mask`` ``[B, N]``. Rows with fewer than two points get a small span around their
    point (a grid of identical inputs would make ``Kuu`` singular).
    """
    big = jnp.finfo(x.dtype).max
    lo = jnp.min(jnp.where(mask, x, big), axis=-1)
    hi = jnp.max(jnp.where(mask, x, -big), axis=-1)
    empty = ~jnp.any(mask, axis=-1)
    lo = jnp.where(empty, x[..., 0], lo)
    hi = jnp.where(empty, x[..., 0], hi)
    width = jnp.maximum(hi - lo, 1e-3 * jnp.maximum(jnp.abs(lo), 1.0))
    centre = 0.5 * (lo + hi)
    grid = jnp.linspace(-0.5, 0.5, num_inducing, dtype=x.dtype)
    return centre[..., None] + width[..., None] * grid + DELTA


def _kuu_jitter(Kuu):
    """Jitter ``[B]`` that lets each ``Kuu`` factorise, and whether one did: a rung of the
    ladder (chosen without gradient) times the mean of the diagonal (with gradient, so that
    the bound's gradient is the gradient of the bound as evaluated)."""
    eye = jnp.eye(Kuu.shape[-1], dtype=Kuu.dtype)
    scale = jnp.maximum(jnp.abs(jnp.mean(jnp.einsum("...ii->...i", Kuu), axis=-1)), 1e-300)
    fixed_scale = jax.lax.stop_gradient(scale)
    fixed_Kuu = jax.lax.stop_gradient(Kuu)

    def works(rung):
        L = cholesky(fixed_Kuu + (rung * fixed_scale)[..., None, None] * eye)
        return jnp.all(jnp.isfinite(L), axis=(-2, -1))

    rung = jnp.full(scale.shape, KUU_JITTER, Kuu.dtype)
    ok = works(rung)

    def cond(state):
        _, ok, count = state
        return jnp.logical_and(~jnp.all(ok), count < MAX_JITTER_RUNGS)

    def body(state):
        rung, ok, count = state
        rung = jnp.where(ok, rung, 10.0 * rung)
        return rung, ok | works(rung), count + 1

    rung, ok, _ = jax.lax.while_loop(cond, body, (rung, ok, 0))
    return jax.lax.stop_gradient(rung) * scale, ok


class _Stats(NamedTuple):
    """What the bound and the predictive need, per particle (A = Luu^-1 Kuf diag(s + d)^-1/2,
    sums over the masked-in points)."""

    z: jax.Array  # [B, M] inducing inputs
    L: jax.Array  # [B, M, M] Cholesky factor of Kuu + jitter
    ok: jax.Array  # [B] Kuu factorised
    AAt: jax.Array  # [B, M, M]
    Ay: jax.Array  # [B, M]   A diag(s + d)^-1/2 y
    trace_term: jax.Array  # [B] sum of k_c(x_i, x_i) / (s + d_i), continuous part k_c
    yy: jax.Array  # [B]      sum of y_i^2 / (s + d_i)
    log_noise: jax.Array  # [B] sum of log(s + d_i)
    n: jax.Array  # [B]
    noise_var: jax.Array  # [B]


def _stats(ops, params, noise, x, y, mask, num_inducing: int, chunk: int,
           known_var=None) -> _Stats:
    B = ops.shape[0]
    N = x.shape[-1]
    x, y, mask = (jnp.broadcast_to(a, (B, N)) for a in (x, y, mask))
    # Known variances (0 where there are none: the same program either way).
    known = (jnp.zeros((B, N), x.dtype) if known_var is None
             else jnp.broadcast_to(jnp.asarray(known_var, x.dtype), (B, N)))
    noise_var = jnp.exp(noise)
    z = inducing_grid(x, mask, num_inducing)
    # The continuous part of Kuu (z + DELTA never equals z), symmetrised.
    Kuu = gram(ops, params, z, z + DELTA)
    Kuu = 0.5 * (Kuu + jnp.swapaxes(Kuu, -1, -2))
    jitter, ok = _kuu_jitter(Kuu)
    eye = jnp.eye(num_inducing, dtype=Kuu.dtype)
    # Failed particles factorise the identity instead, so that nothing downstream is NaN.
    Kuu = jnp.where(ok[:, None, None], Kuu + jitter[:, None, None] * eye, eye)
    L = cholesky(Kuu)

    C = min(chunk, N)
    pad = (-N) % C
    if pad:
        x = jnp.concatenate([x, jnp.broadcast_to(x[:, -1:], (B, pad))], axis=1)
        y = jnp.concatenate([y, jnp.zeros((B, pad), y.dtype)], axis=1)
        mask = jnp.concatenate([mask, jnp.zeros((B, pad), bool)], axis=1)
        known = jnp.concatenate([known, jnp.zeros((B, pad), x.dtype)], axis=1)

    def split(a):  # [B, N'] -> [chunks, B, C]
        return jnp.swapaxes(a.reshape(B, -1, C), 0, 1)

    def diagonals(_, xc):
        # k(x, x) and k(x, x + DELTA) in one call (one compiled copy of the evaluator). Its
        # residuals are only the inputs: no need to recompute this scan in the backward pass.
        both = gram_pairs(ops, params, jnp.concatenate([xc, xc], axis=1),
                          jnp.concatenate([xc, xc + DELTA], axis=1))
        return None, (both[:, : xc.shape[1]], both[:, xc.shape[1]:])

    _, (k_all, k_cont) = jax.lax.scan(diagonals, None, split(x))  # [chunks, B, C] each

    def chunk_terms(xc, yc, mc, kc, k_all, k_cont):
        m = mc.astype(x.dtype)
        # Per-point noise; masked points get weight 0 through m (and a harmless variance).
        var = noise_var[:, None] + jnp.maximum(k_all - k_cont, 0.0) + jnp.where(mc, kc, 0.0)
        w = m / jnp.sqrt(var)
        A = solve_triangular(L, gram(ops, params, z, xc) * w[:, None, :], lower=True)
        yw = jnp.where(mc, yc, 0.0) * w
        return (
            jnp.einsum("bmc,bkc->bmk", A, A),
            jnp.einsum("bmc,bc->bm", A, yw),
            jnp.sum(k_cont * m / var, axis=-1),
            jnp.sum(yw * yw, axis=-1),
            jnp.sum(jnp.log(var) * m, axis=-1),
        )

    def zeros():
        M = num_inducing
        return (jnp.zeros((B, M, M), x.dtype), jnp.zeros((B, M), x.dtype)) + tuple(
            jnp.zeros((B,), x.dtype) for _ in range(3)
        )

    @jax.checkpoint  # recompute each chunk in the backward pass instead of storing [B, M, N]
    def body(carry, inputs):
        # Chunks beyond every particle's data (early annealing rounds) cost nothing.
        terms = jax.lax.cond(jnp.any(inputs[2]), chunk_terms, lambda *_: zeros(), *inputs)
        return tuple(c + t for c, t in zip(carry, terms, strict=True)), None

    (AAt, Ay, trace_term, yy, log_noise), _ = jax.lax.scan(
        body, zeros(), (split(x), split(y), split(mask), split(known), k_all, k_cont)
    )
    AAt = 0.5 * (AAt + jnp.swapaxes(AAt, -1, -2))
    n = jnp.sum(mask, axis=-1).astype(x.dtype)
    return _Stats(z, L, ok, AAt, Ay, trace_term, yy, log_noise, n, noise_var)


def _bound_from_stats(s: _Stats):
    """The bound per particle, and the Cholesky factor of B = I + A A^T."""
    eye = jnp.eye(s.AAt.shape[-1], dtype=s.AAt.dtype)
    LB = cholesky(eye + s.AAt)
    c = solve_triangular(LB, s.Ay[..., None], lower=True)[..., 0]
    value = (
        -0.5 * s.n * _LOG_2PI
        - 0.5 * s.log_noise
        - jnp.sum(jnp.log(jnp.einsum("...ii->...i", LB)), axis=-1)
        - 0.5 * s.yy
        + 0.5 * jnp.sum(c * c, axis=-1)
        - 0.5 * s.trace_term
        + 0.5 * jnp.einsum("...ii->...", s.AAt)
    )
    return value, LB, c


def _bound(ops, params, noise, x, y, mask, num_inducing, chunk, known_var=None):
    stats = _stats(ops, params, noise, x, y, mask, num_inducing, chunk, known_var)
    value, _, _ = _bound_from_stats(stats)
    return jnp.where(stats.ok & jnp.isfinite(value), value, -jnp.inf)


def _make_bound(num_inducing: int, chunk: int):
    """The bound as a function of (params, noise) with a VJP that zeroes failed particles."""

    @jax.custom_vjp
    def bound(params, noise, ops, x, y, mask, known):
        return _bound(ops, params, noise, x, y, mask, num_inducing, chunk, known)

    def fwd(params, noise, ops, x, y, mask, known):
        value, vjp = jax.vjp(
            lambda p, s: _bound(ops, p, s, x, y, mask, num_inducing, chunk, known), params,
            noise,
        )
        return value, (value, vjp)

    def bwd(residuals, g):
        value, vjp = residuals
        ok = jnp.isfinite(value)
        d_params, d_noise = vjp(jnp.where(ok, g, 0.0))
        d_params = jnp.where(ok[:, None, None] & jnp.isfinite(d_params), d_params, 0.0)
        d_noise = jnp.where(ok & jnp.isfinite(d_noise), d_noise, 0.0)
        return d_params, d_noise, None, None, None, None, None

    bound.defvjp(fwd, bwd)
    return bound


def sparse_log_marginal_likelihood(ops, params, noise, x, y, mask=None, *, num_inducing: int,
                                   chunk: int = CHUNK, known_var=None):
    """Titsias' lower bound on ``log p(y[mask] | tree, params, noise)`` per particle ``[P]``.

    Same arguments as :func:`autogp.evaluator.log_marginal_likelihood` (``noise`` the log
    noise variance ``[P]``; ``x``, ``y``, ``mask`` ``[N]`` or ``[P, N]``; ``known_var``
    ``[N]`` or ``[P, N]`` the observations' known variances, or None), plus the number of
    inducing inputs (static) and the streaming chunk. ``-inf`` and a zero gradient where a
    factorisation fails.
    """
    ops = jnp.asarray(ops)
    P = ops.shape[0]
    x = jnp.asarray(x)
    N = x.shape[-1]
    mask = jnp.ones((N,), bool) if mask is None else jnp.asarray(mask)
    x, y, mask = (jnp.broadcast_to(jnp.asarray(a), (P, N)) for a in (x, y, mask))
    if known_var is not None:
        known_var = jnp.broadcast_to(jnp.asarray(known_var), (P, N))
    return _make_bound(int(num_inducing), int(chunk))(params, noise, ops, x, y, mask, known_var)


def _posterior_u(stats: _Stats):
    """``LB`` and ``alpha_u = Kuu^-1 m_u`` of the optimal q(u): the posterior mean at any
    ``x*`` is ``K(x*, z) alpha_u``."""
    _, LB, c = _bound_from_stats(stats)
    v = solve_triangular(LB, c[..., None], lower=True, trans=1)
    alpha_u = solve_triangular(stats.L, v, lower=True, trans=1)[..., 0]
    return LB, alpha_u


def sparse_weights(ops, params, noise, x, y, mask, *, num_inducing: int, chunk: int = CHUNK,
                   known_var=None):
    """``(alpha_u [P, M], z [P, M], ok [P])`` with posterior mean ``K(x*, z) @ alpha_u``; by
    the same formula each additive term's mean is ``K_term(x*, z) @ alpha_u``."""
    stats = _stats(jnp.asarray(ops), params, noise, x, y, mask, int(num_inducing), int(chunk),
                   known_var)
    _, alpha_u = _posterior_u(stats)
    ok = stats.ok & jnp.all(jnp.isfinite(alpha_u), axis=-1)
    return jnp.where(ok[:, None], alpha_u, 0.0), stats.z, ok


def sparse_posterior_predictive(ops, params, noise, x, y, mask, x_new, *,
                                observation_noise=False, full_cov=True, num_inducing: int,
                                chunk: int = CHUNK, known_var=None):
    """The SGPR predictive of f(x_new) (or of noisy observations: the learned noise) per
    particle: the arguments and results of :func:`autogp.evaluator.posterior_predictive`
    (``known_var``: the training observations' known variances), in O(N M^2)."""
    ops = jnp.asarray(ops)
    P = ops.shape[0]
    stats = _stats(ops, params, noise, x, y, mask, int(num_inducing), int(chunk), known_var)
    LB, alpha_u = _posterior_u(stats)
    Kus = gram(ops, params, stats.z, x_new)  # [P, M, Ms]
    mean = jnp.einsum("pms,pm->ps", Kus, alpha_u)
    t1 = solve_triangular(stats.L, Kus, lower=True)
    t2 = solve_triangular(LB, t1, lower=True)
    if full_cov:
        cov = (gram(ops, params, x_new) - jnp.einsum("pms,pmt->pst", t1, t1)
               + jnp.einsum("pms,pmt->pst", t2, t2))
        if observation_noise:
            cov = cov + stats.noise_var[:, None, None] * jnp.eye(cov.shape[-1], dtype=cov.dtype)
    else:
        x_new = jnp.broadcast_to(jnp.asarray(x_new), (P, Kus.shape[-1]))
        cov = gram_pairs(ops, params, x_new) - jnp.sum(t1 * t1, axis=1) + jnp.sum(t2 * t2, axis=1)
        if observation_noise:
            cov = cov + stats.noise_var[:, None]
    bad = ~(stats.ok & jnp.all(jnp.isfinite(mean), axis=-1))
    mean = jnp.where(bad[:, None], jnp.nan, mean)
    cov = jnp.where(bad.reshape((-1,) + (1,) * (cov.ndim - 1)), jnp.nan, cov)
    return mean, cov
