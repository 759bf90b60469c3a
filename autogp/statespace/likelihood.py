"""The state-space log likelihood of a batch of packed trees: the filter vmapped over the
trees in one compiled program, with the adjoint gradient (or reverse mode through the scan)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from autogp.statespace.filter import (
    BLOCK,
    MAX_FACTORS,
    Options,
    broadcast_data,
    kalman_scan,
    model,
    observed,
    round_up,
)
from autogp.statespace.gradient import adjoint_log_likelihood
from autogp.statespace.models import MAX_HARMONICS, PER_TOLERANCE


def _one(ops, params, noise, x, y, mask, options, regular_grid, adjoint):
    if adjoint:
        return adjoint_log_likelihood(ops, params, noise, x, y, mask, options, regular_grid)
    mod = model(ops, params, noise, options)
    fine = mod.layout.reason == 0
    yv, ok = observed(y, mask)
    # An unsupported tree observes nothing (finite, zero gradient) and scores -inf.
    ll, _ = kalman_scan(mod, x, yv, ok & fine, options, regular_grid)
    return jnp.where(fine, ll, -jnp.inf)


@functools.partial(jax.jit, static_argnames=("options", "regular_grid", "adjoint"))
def _batch(ops, params, noise, x, y, mask, options, regular_grid, adjoint):
    return jax.vmap(_one, in_axes=(0, 0, 0, 0, 0, 0, None, None, None))(
        ops, params, noise, x, y, mask, options, regular_grid, adjoint)


def state_space_log_likelihood(ops, params, noise, x, y, mask=None, *, dim: int,
                               regular_grid: bool = False, tolerance: float = PER_TOLERANCE,
                               harmonics: int = MAX_HARMONICS, max_factors: int = MAX_FACTORS,
                               block: int = BLOCK, gradient: str = "adjoint"):
    """log p(y[mask] | tree, params, noise) per tree ``[P]`` by the Kalman filter.

    The same arguments as the dense ``evaluator.log_marginal_likelihood`` (packed ``ops [P, S]``,
    unconstrained ``params [P, S, MAX_PARAMS]`` and ``noise [P]``; ``x``, ``y``, ``mask`` ``[N]``
    or ``[P, N]``, ``x`` sorted increasing, NaN targets count as missing) plus the static state
    dimension ``dim`` every tree is laid out in (rounded up to a multiple of ``block``, the size
    of the transition's diagonal blocks). ``regular_grid``: the steps are all equal (one
    transition matrix). Trees without a state-space form here score ``-inf``: ask
    :func:`autogp.statespace.support` first and send them to the dense likelihood.
    Differentiable in ``params`` and ``noise``: ``gradient="adjoint"`` by the backward pass of
    ``statespace.gradient`` (exact; nothing stored per step but the filter's mean and
    covariance), ``"autodiff"`` by reverse mode through the scan (the reference).
    """
    if gradient not in ("adjoint", "autodiff"):
        raise ValueError(f"gradient must be 'adjoint' or 'autodiff', got {gradient!r}")
    ops = jnp.asarray(ops)
    x, y, mask = broadcast_data(ops.shape[0], x, y, mask)
    options = Options(round_up(dim, block), tolerance, harmonics, max_factors, block)
    return _batch(ops, params, noise, x, y, mask, options, bool(regular_grid),
                  gradient == "adjoint")


__all__ = ["state_space_log_likelihood"]
