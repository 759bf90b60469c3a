"""The filter's exact gradient by a backward (adjoint) pass instead of reverse mode through the
scan.

With the filter's predictive ``N(m^-_k, P^-_k)`` for the state at each point, the backward
Bryson-Frazier recursion gives the adjoint ``lam_k = dl / dm^-_k`` and
``dl / dP^-_k = G_k = (lam_k lam_k^T - Lam_k) / 2`` (Lam_k its information). The model enters
the predictions through ``m^-_k = A_k m^+_(k-1)`` and
``P^-_k = A_k (P^+_(k-1) - P(t_(k-1))) A_k^T + P(t_k)``, so

* ``dl / dA_k = lam_k m^+_(k-1)^T + 2 G_k A_k E_(k-1)``, ``E = P^+ - P(t)``;
* ``dl / dP(t_k) = G_k - A_(k+1)^T G_(k+1) A_(k+1)``;

and the observation ``y_k = H_k x_k + N(0, R_k)`` by Fisher's identity on its own factor (the
smoothed moments ``m^s``, ``P^s`` of ``x_k``): ``dl / dH_k = ((y_k - H m^s) m^s - P^s H) / R`` and
``dl / dR_k = ((y_k - H m^s)^2 + H P^s H - R) / (2 R^2)``. The per-step model matrices are pulled
back to the natural parameters by the VJP of their (cheap) tables, inside the backward scan;
with the transition's blocks the whole pass costs ``O(N D^2 b)`` with nothing stored per step
but the filter's mean and ``E``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from autogp.kernels.transforms import constrain
from autogp.statespace import compose
from autogp.statespace.filter import Model, Options, kalman_scan, model, observed


def _builder(mod: Model, options: Options):
    """``(theta, per_q2, noise_var, t, dt) -> (A blocks, P(t) blocks, H, R)`` of one tree."""
    lay, ops = mod.layout, mod.ops

    def build(theta, per_q2, noise_var, t, dt):
        A = compose.gather(compose.transition_table(ops, theta, dt, options.harmonics), lay.idx_a)
        Pt = compose.gather(compose.covariance_table(ops, theta, t, per_q2), lay.idx_p)
        table = compose.observation_table(ops, theta, t)
        H = compose.gather(table, lay.idx_h)
        return A, Pt, H, noise_var + compose.observation_noise(lay, theta, table)

    return build


def _diagonal_blocks(M, nb, b):
    ar = jnp.arange(nb)
    return M.reshape(nb, b, nb, b)[ar, :, ar, :]


def _value_and_residuals(ops, params, noise, x, y, ok, options, regular_grid):
    mod = model(ops, params, noise, options)
    fine = mod.layout.reason == 0
    yv, ok = observed(y, ok)
    ok = ok & fine
    ll, outs = kalman_scan(mod, x, yv, ok, options, regular_grid, "adjoint")
    return jnp.where(fine, ll, -jnp.inf), (mod, x, yv, ok, outs, fine)


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7))
def adjoint_log_likelihood(ops, params, noise, x, y, ok, options, regular_grid):
    """One tree's log likelihood (as ``filter._one``) whose reverse mode is the adjoint pass."""
    return _value_and_residuals(ops, params, noise, x, y, ok, options, regular_grid)[0]


def _fwd(ops, params, noise, x, y, ok, options, regular_grid):
    value, res = _value_and_residuals(ops, params, noise, x, y, ok, options, regular_grid)
    return value, (ops, params, noise, res)


def _bwd(options, regular_grid, residuals, g):
    ops, params, noise, (mod, x, y, ok, outs, fine) = residuals
    m_prev, E_prev = outs
    build = _builder(mod, options)
    D, b = options.dim, options.block
    nb = D // b
    dts = jnp.diff(x, prepend=x[:1])
    fixed_dt = x[1] - x[0]

    def step(carry, inp):
        lam, Lam, pending, d_theta, d_q2, d_nv, dA_sum = carry
        t, dt, yk, okk, mp, Ep = inp
        (A, Pt, H, R), pull = jax.vjp(
            lambda th, q2, nv: build(th, q2, nv, t, fixed_dt if regular_grid else dt),
            mod.theta, mod.per_q2, mod.noise_var)
        m = compose.block_matvec(A, mp)
        AE1 = compose.block_left(A, Ep)  # A E_(k-1)
        Pm = compose.add_blocks(compose.block_sandwich(A, Ep), Pt)
        PH = Pm @ H
        S = H @ PH + R
        v = yk - H @ m
        gain = PH / S
        lam_t = jnp.where(okk, H * (v / S) + lam - H * (gain @ lam), lam)
        B = Lam - jnp.outer(H, gain @ Lam)
        Lam_t = jnp.where(okk, jnp.outer(H, H) / S + B - jnp.outer(B @ gain, H), Lam)
        G = 0.5 * (jnp.outer(lam_t, lam_t) - Lam_t)
        ms = m + Pm @ lam_t
        PsH = PH - Pm @ (Lam_t @ PH)
        vs = yk - H @ ms
        dR = jnp.where(okk, 0.5 * (vs * vs + H @ PsH - R) / (R * R), 0.0)
        dH = jnp.where(okk, (vs * ms - PsH) / R, 0.0)
        Gb = _diagonal_blocks(G, nb, b)
        dPt = Gb - pending
        dA = (_diagonal_blocks(jnp.outer(lam_t, mp), nb, b)
              + 2.0 * jnp.einsum("nxj,jny->nxy", G.reshape(nb, b, D), AE1.reshape(D, nb, b)))
        if regular_grid:
            dA_sum = dA_sum + dA
            dA = jnp.zeros_like(dA)
        gt, gq, gn = pull((dA, dPt, dH, dR))
        pending = jnp.einsum("nyx,nyz,nzw->nxw", A, Gb, A)  # diagonal blocks of A^T G A
        lam = compose.block_rmatvec(A, lam_t)
        Lam = compose.block_sandwich(A, Lam_t, transpose=True)
        return (lam, Lam, pending, d_theta + gt, d_q2 + gq, d_nv + gn, dA_sum), None

    dtype = mod.theta.dtype
    init = (jnp.zeros(D, dtype), jnp.zeros((D, D), dtype), jnp.zeros((nb, b, b), dtype),
            jnp.zeros_like(mod.theta), jnp.zeros_like(mod.per_q2), jnp.zeros_like(mod.noise_var),
            jnp.zeros((nb, b, b), dtype))
    (_, _, _, d_theta, d_q2, d_nv, dA_sum), _ = jax.lax.scan(
        step, init, (x, dts, y, ok, m_prev, E_prev), reverse=True)
    if regular_grid:
        _, pull_a = jax.vjp(lambda th: build(th, mod.per_q2, mod.noise_var, x[0], fixed_dt)[0],
                            mod.theta)
        d_theta = d_theta + pull_a(dA_sum)[0]

    def parts(p, s):
        theta = constrain(ops, p)
        return theta, compose.covariance_weights(ops, theta, options.harmonics), jnp.exp(s)

    _, pull_params = jax.vjp(parts, params, noise)
    scale = jnp.where(fine, g, 0.0)
    d_params, d_noise = pull_params((d_theta * scale, d_q2 * scale, d_nv * scale))
    return None, d_params, d_noise, None, None, None


adjoint_log_likelihood.defvjp(_fwd, _bwd)

__all__ = ["adjoint_log_likelihood"]
