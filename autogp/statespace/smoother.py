"""Posterior of the latent function from the Kalman filter and a backward (smoothing) pass.

The backward pass is the modified Bryson-Frazier form: it carries the adjoint ``lam`` and its
information ``Lam`` of the filtered state and needs only the innovation variances (scalars),
never the inverse of a predicted covariance, which is singular for deterministic states (LIN)
and for the inactive states of the fixed dimension. With the filter's predictions ``m^-``,
``P^-``: smoothed mean ``m^- + P^- lam`` and covariance ``P^- - P^- Lam P^-``.

Predictions at new times are points with no observation in the same pass (a forecast is the
filter continued without data), so means, variances and the per-component means of a
decomposition cost O(N) time and O(N dim^2) memory.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels import spec
from autogp.statespace import compose
from autogp.statespace.filter import (
    BLOCK,
    MAX_FACTORS,
    Options,
    broadcast_data,
    kalman_scan,
    model,
    observed,
    round_up,
    steps,
    transition,
)
from autogp.statespace.models import MAX_HARMONICS, PER_TOLERANCE


def _descendants(slots: int) -> np.ndarray:
    """``[S, S]`` bool: slot ``l`` is in the subtree of slot ``c`` (itself included)."""
    out = np.eye(slots, dtype=bool)
    for l in range(1, slots):
        a = (l - 1) // 2
        while True:
            out[l, a] = True
            if a == 0:
                break
            a = (a - 1) // 2
    return out


def _smooth_one(ops, params, noise, x, y, ok_data, components, options):
    mod = model(ops, params, noise, options)
    yv, ok = observed(y, ok_data)
    ok = ok & (mod.layout.reason == 0)
    _, (m_pred, P_pred, H, S, v) = kalman_scan(mod, x, yv, ok, options, False, "smoother")
    D = options.dim
    # component c holds the root states whose first atom lies under slot components[c]
    inside = jnp.asarray(_descendants(ops.shape[0]))[:, jnp.maximum(components, 0)]  # [S, C]
    leaf = mod.layout.leaf  # [D]
    member = inside[jnp.maximum(leaf, 0)] & (leaf >= 0)[:, None] & (components >= 0)[None, :]
    dts = jnp.concatenate([steps(x)[1:], jnp.zeros(1, x.dtype)])  # step to the next point

    def back(carry, inp):
        lam, Lam = carry  # adjoint of the filtered state at this point, from the future
        m, P, h, s, innov, okt, dt_next = inp
        gain = P @ h / s
        lam_t = jnp.where(okt, h * (innov / s) + lam - h * (gain @ lam), lam)
        B = Lam - jnp.outer(h, gain @ Lam)
        Lam_t = jnp.where(okt, jnp.outer(h, h) / s + B - jnp.outer(B @ gain, h), Lam)
        mean = m + P @ lam_t
        # f's variance h P^s h with P^s = P - P Lam P, for f and each component: O(D^2)
        hc = jnp.concatenate([h[:, None], h[:, None] * member], axis=1)  # [D, 1 + C]
        Ph = P @ hc
        var = jnp.sum(hc * Ph, 0) - jnp.sum(Ph * (Lam_t @ Ph), 0)
        means = hc.T @ mean
        out = (means[0], var[0], means[1:], var[1:])
        return (lam_t, Lam_t), out

    def step_back(carry, inp):
        lam, Lam = carry
        *rest, dt_next = inp
        # move the adjoint from the next point back to this one
        A = transition(mod, dt_next, options.harmonics)
        return back((compose.block_rmatvec(A, lam), compose.block_sandwich(A, Lam, transpose=True)),
                    (*rest, dt_next))

    zeros = (jnp.zeros(D, x.dtype), jnp.zeros((D, D), x.dtype))
    # the last point has no next step: its incoming adjoint is zero whatever A is
    _, outs = jax.lax.scan(step_back, zeros, (m_pred, P_pred, H, S, v, ok, dts), reverse=True)
    mean, var, comp_mean, comp_var = outs
    wn = jax.vmap(lambda t: compose.observation_noise(
        mod.layout, mod.theta, compose.observation_table(ops, mod.theta, t)))(x)
    bad = mod.layout.reason != 0
    nan = lambda a: jnp.where(bad, jnp.nan, a)  # noqa: E731
    return nan(mean), nan(var + wn), nan(comp_mean.T), nan(comp_var.T), mod.noise_var


@functools.partial(jax.jit, static_argnames=("options",))
def _smooth_batch(ops, params, noise, x, y, ok, components, options):
    return jax.vmap(_smooth_one, in_axes=(0, 0, 0, 0, 0, 0, 0, None))(
        ops, params, noise, x, y, ok, components, options)


def top_level_terms(ops: np.ndarray) -> np.ndarray:
    """Slots of each tree's top-level summands (under ``+`` nodes from the root), ``-1``-padded:
    ``[P, C]`` for :func:`state_space_posterior`'s ``components``."""
    ops = np.asarray(ops)
    terms = []
    for row in ops:
        out, stack = [], [0]
        while stack:
            s = stack.pop()
            if row[s] == spec.PLUS:
                stack += [2 * s + 2, 2 * s + 1]
            else:
                out.append(s)
        terms.append(out)
    width = max(len(t) for t in terms)
    return np.array([t + [-1] * (width - len(t)) for t in terms], dtype=np.int32)


def state_space_posterior(ops, params, noise, x, y, mask, x_new, *, dim: int, components=None,
                          observation_noise: bool = False,
                          tolerance: float = PER_TOLERANCE, harmonics: int = MAX_HARMONICS,
                          max_factors: int = MAX_FACTORS, block: int = BLOCK):
    """Posterior mean and variance of f at ``x_new`` ``[M]`` (any times: inside the data,
    between points, or a forecast after them) per tree, as the dense ``posterior_predictive``
    with ``full_cov=False`` (white-noise atoms count in f's variance, as in the dense kernel).

    ``components``: ``[P, C]`` slots (``-1`` padding) whose subtrees' means and variances are
    also returned (default: each tree's top-level summands, :func:`top_level_terms`).
    Returns ``(mean [P, M], var [P, M], comp_mean [P, C, M], comp_var [P, C, M])``; NaN for a
    tree with no state-space form here.
    """
    ops = np.asarray(ops)
    P = ops.shape[0]
    x, y, mask = broadcast_data(P, x, y, mask)
    x_new = jnp.broadcast_to(jnp.asarray(x_new, x.dtype), (P, jnp.shape(x_new)[-1]))
    components = top_level_terms(ops) if components is None else np.asarray(components)
    M = x_new.shape[1]
    times = jnp.concatenate([x, x_new], axis=1)
    order = jnp.argsort(times, axis=1, stable=True)
    take = lambda a: jnp.take_along_axis(a, order, axis=1)  # noqa: E731
    ys = take(jnp.concatenate([y, jnp.zeros_like(x_new)], axis=1))
    ok = take(jnp.concatenate([mask, jnp.zeros(x_new.shape, bool)], axis=1))
    options = Options(round_up(dim, block), tolerance, harmonics, max_factors, block)
    mean, var, cm, cv, noise_var = _smooth_batch(
        jnp.asarray(ops), params, noise, take(times), ys, ok, jnp.asarray(components), options)
    where_new = jnp.argsort(order, axis=1)[:, x.shape[1]:]  # positions of the new points
    pick = lambda a: jnp.take_along_axis(a, where_new, axis=-1)  # noqa: E731
    var = pick(var)
    if observation_noise:
        var = var + noise_var[:, None]
    where_c = jnp.broadcast_to(where_new[:, None, :], cm.shape[:2] + (M,))
    return (pick(mean), var, jnp.take_along_axis(cm, where_c, axis=-1),
            jnp.take_along_axis(cv, where_c, axis=-1))


__all__ = ["state_space_posterior", "top_level_terms"]
