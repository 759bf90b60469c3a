"""GP log marginal likelihood of a batch of particles, with a data mask and a hand-written VJP.

Masking instead of reshaping: every data size up to the padded length shares one compiled
program. Masked points get unit variance, no correlation and a zero target, so they add exactly
``-0.5 log(2 pi)`` each, which is removed again.

The gradient with respect to the (noise-free) covariance is the textbook
``G = (alpha alpha^T - (K + s I)^-1) / 2`` and with respect to the noise variance ``trace(G)``;
writing it by hand uses one inverse from the Cholesky factor (by blocks) instead of
differentiating through the Cholesky factorisation and the triangular solves.

With ``probes`` the backward pass replaces ``(K + s I)^-1`` by Hutchinson's unbiased estimate
``sym(U Z^T) / S`` with ``U = (K + s I)^-1 Z`` for ``S`` Rademacher columns ``Z``: two triangular
solves against ``S`` columns (``2 S N^2`` flops) instead of the inverse (about ``N^3``). The value
stays exact; the gradient becomes a random vector whose mean is the exact one (as GPyTorch's
stochastic trace estimates). It is for the optimiser's passes on long windows, where the inverse
is most of the cost; ``benchmarks/scaling/`` measures the time and the forecasts.

A Cholesky factorisation that fails (an ill-conditioned matrix) is retried with growing jitter;
a particle that still fails gets log likelihood ``-inf`` and zero gradient, never NaN.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from autogp.evaluator.linalg import cho_solve, cholesky, inverse_from_cholesky

# Relative jitter ladder (times the mean of the diagonal): the first rung is always applied.
BASE_JITTER = 1e-10
MAX_JITTER_RUNGS = 6  # retries after the first try: 1e-9 ... 1e-4
_LOG_2PI = math.log(2.0 * math.pi)


def _masked_cov(K, noise_var, mask, jitter, known_var=None):
    m = mask.astype(K.dtype)
    diag = jnp.einsum("...ii->...i", K)
    scale = jnp.sum(diag * m, axis=-1) / jnp.maximum(jnp.sum(m, axis=-1), 1.0)
    scale = jnp.maximum(jnp.abs(scale), 1e-300)
    Km = K * m[..., :, None] * m[..., None, :]
    noise = noise_var[..., None]
    if known_var is not None:  # per-point known variances; None keeps the arithmetic as it was
        noise = noise + known_var
    extra = (noise + jitter[..., None] * scale[..., None]) * m + (1.0 - m)
    return Km + jnp.einsum("...i,ij->...ij", extra, jnp.eye(K.shape[-1], dtype=K.dtype))


def robust_cholesky(K, noise_var, mask, known_var=None):
    """Cholesky factors of the masked ``K + diag(noise + known_var)``, with growing jitter
    where needed. ``known_var``: ``[..., N]`` known variances of the observations (measurement
    error), added to the noise; None: none.

    Returns ``(L, ok)``: ``ok[p]`` is False where every rung failed (then ``L[p]`` is the identity).
    """
    batch = K.shape[:-2]

    def attempt(jitter):
        L = cholesky(_masked_cov(K, noise_var, mask, jitter, known_var))
        return L, jnp.all(jnp.isfinite(L), axis=(-2, -1))

    jitter = jnp.full(batch, BASE_JITTER, K.dtype)
    L, ok = attempt(jitter)

    def cond(state):
        _, ok, rung, _ = state
        return jnp.logical_and(~jnp.all(ok), rung < MAX_JITTER_RUNGS)

    def body(state):
        L, ok, rung, jitter = state
        jitter = jnp.where(ok, jitter, jitter * 10.0)
        L_new, ok_new = attempt(jitter)
        L = jnp.where(ok[..., None, None], L, L_new)
        return L, ok | ok_new, rung + 1, jitter

    L, ok, _, _ = jax.lax.while_loop(cond, body, (L, ok, 0, jitter))
    eye = jnp.eye(K.shape[-1], dtype=K.dtype)
    return jnp.where(ok[..., None, None], L, eye), ok


def _logml_parts(K, noise_var, y, mask, known_var=None):
    L, ok = robust_cholesky(K, noise_var, mask, known_var)
    ym = jnp.where(mask, y, 0.0)
    alpha = cho_solve(L, ym[..., None])[..., 0]
    n = jnp.sum(mask, axis=-1)
    logdet_half = jnp.sum(jnp.log(jnp.einsum("...ii->...i", L)), axis=-1)
    value = -0.5 * jnp.sum(ym * alpha, axis=-1) - logdet_half - 0.5 * n * _LOG_2PI
    value = jnp.where(ok, value, -jnp.inf)
    return value, (L, alpha, ok)


@jax.custom_vjp
def _logml(K, noise_var, y, mask, probes, known_var):
    return _logml_parts(K, noise_var, y, mask, known_var)[0]


def _logml_fwd(K, noise_var, y, mask, probes, known_var):
    value, (L, alpha, ok) = _logml_parts(K, noise_var, y, mask, known_var)
    return value, (L, alpha, ok, mask, probes)


def _logml_bwd(residuals, g):
    L, alpha, ok, mask, probes = residuals
    if probes is None:
        # (K + s I)^-1 = L^-T L^-1 by 2 x 2 blocks, recursively (about N^3 flops against the
        # 3 N^3 of L^-1 by a solve against the identity and then W^T W;
        # ``scripts/bench_linalg.py``).
        inv = inverse_from_cholesky(L)
    else:
        # E[Z Z^T] = S I, so E[U Z^T] / S = (K + s I)^-1; symmetric like the matrix it estimates.
        inv = (cho_solve(L, probes) @ jnp.swapaxes(probes, -1, -2)) / probes.shape[-1]
        inv = 0.5 * (inv + jnp.swapaxes(inv, -1, -2))
    m = mask.astype(L.dtype)
    G = 0.5 * (alpha[..., :, None] * alpha[..., None, :] - inv) * m[..., :, None] * m[..., None, :]
    G = jnp.where(ok[..., None, None], G, 0.0) * g[..., None, None]
    # Known variances sit beside the noise on the diagonal: d/d noise is the same trace.
    d_noise = jnp.einsum("...ii->...", G)
    return G, d_noise, None, None, None, None


_logml.defvjp(_logml_fwd, _logml_bwd)


def gaussian_log_marginal(K, noise_var, y, mask=None, *, probes=None, known_var=None):
    """log N(y[mask] | 0, K[mask, mask] + diag(noise_var + known_var)) for a batch of
    covariance matrices.

    Args:
      K: ``[..., N, N]`` noise-free covariance matrices.
      noise_var: ``[...]`` observation-noise variances (natural scale).
      y: ``[..., N]`` targets (broadcast against the batch).
      mask: bool ``[..., N]``; ``None`` means all points count.
      probes: ``[..., N, S]`` (typically Rademacher) columns for a stochastic gradient (see the
        module docstring); ``None``: the exact gradient. The value is exact either way.
      known_var: ``[..., N]`` known variances of the observations (measurement error, not
        learned; broadcast against the batch); ``None``: none (the plain ``noise_var I``).

    Returns ``[...]``; ``-inf`` for a particle whose matrix cannot be factorised. Differentiable
    in ``K`` and ``noise_var``.
    """
    batch = K.shape[:-2]
    N = K.shape[-1]
    y = jnp.broadcast_to(y, batch + (N,))
    mask = jnp.ones(batch + (N,), bool) if mask is None else jnp.broadcast_to(mask, batch + (N,))
    if probes is not None:
        probes = jnp.broadcast_to(probes, batch + probes.shape[-2:]).astype(K.dtype)
    if known_var is not None:
        known_var = jnp.broadcast_to(known_var, batch + (N,)).astype(K.dtype)
    return _logml(K, noise_var, y, mask, probes, known_var)
