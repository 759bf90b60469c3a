"""The state-space log likelihood of a batch of packed trees: the filter vmapped over the
trees in one compiled program, with the adjoint gradient (or reverse mode through the scan);
on a regular grid, a batch of time-invariant trees takes the Chandrasekhar recursions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.statespace import chandrasekhar
from autogp.statespace.filter import (
    BLOCK,
    MAX_FACTORS,
    RANK,
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


def _invariant(ops, params, noise, x, y, mask, options):
    """Each tree's :func:`chandrasekhar.time_invariant` ``[P]``."""
    def one(o, p, s, xs, ys, ms):
        return chandrasekhar.time_invariant(model(o, p, s, options), xs, observed(ys, ms)[1],
                                            options.rank)

    return jax.vmap(one)(ops, params, noise, x, y, mask)


_invariant_jit = jax.jit(_invariant, static_argnames=("options",))


def _fast(ops, params, noise, x, y, options):
    return chandrasekhar.log_likelihood(model(ops, params, noise, options), x, y, options,
                                        options.rank)


def _kalman(ops, params, noise, x, y, mask, options, regular_grid, adjoint):
    return jax.vmap(_one, in_axes=(0, 0, 0, 0, 0, 0, None, None, None))(
        ops, params, noise, x, y, mask, options, regular_grid, adjoint)


def _forms(ops, x, y, mask, options, adjoint):
    """Whether every tree is time-invariant, and the two forms as functions of the parameters."""
    def every(params, noise):
        return jnp.all(_invariant(ops, params, noise, x, y, mask, options))

    def fast(params, noise):
        return jax.vmap(_fast, in_axes=(0, 0, 0, 0, 0, None))(ops, params, noise, x, y, options)

    def kalman(params, noise):
        return _kalman(ops, params, noise, x, y, mask, options, True, adjoint)

    return every, fast, kalman


# One tree that is not time-invariant sends the whole batch to the filter: a value selected per
# tree would pass the unused form's non-finite partials into the gradient. The choice is a
# custom VJP, not a differentiated ``lax.cond``, whose residuals are both forms' (the filter's
# are N D^2 floats, zeros when the recursions run).
@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7))
def _auto(ops, params, noise, x, y, mask, options, adjoint):
    every, fast, kalman = _forms(ops, x, y, mask, options, adjoint)
    return jax.lax.cond(every(params, noise), fast, kalman, params, noise)


def _auto_fwd(ops, params, noise, x, y, mask, options, adjoint):
    return _auto(ops, params, noise, x, y, mask, options, adjoint), (ops, params, noise, x, y,
                                                                     mask)


def _auto_bwd(options, adjoint, residuals, cotangent):
    ops, params, noise, x, y, mask = residuals
    every, fast, kalman = _forms(ops, x, y, mask, options, adjoint)

    def pullback(form):
        return lambda p, s: jax.vjp(form, p, s)[1](cotangent)

    d_params, d_noise = jax.lax.cond(every(params, noise), pullback(fast), pullback(kalman),
                                     params, noise)
    return None, d_params, d_noise, None, None, None


_auto.defvjp(_auto_fwd, _auto_bwd)


@functools.partial(jax.jit, static_argnames=("options", "regular_grid", "adjoint", "method"))
def _batch(ops, params, noise, x, y, mask, options, regular_grid, adjoint, method):
    if not (regular_grid and method == "auto"):
        return _kalman(ops, params, noise, x, y, mask, options, regular_grid, adjoint)
    return _auto(ops, params, noise, x, y, mask, options, adjoint)


def _batch_inputs(ops, x, y, mask, dim, tolerance, harmonics, max_factors, block, rank):
    """The public functions' arguments as the compiled batch takes them: ``ops`` as an array,
    ``x``, ``y``, ``mask`` ``[P, N]`` and the static :class:`Options`."""
    ops = jnp.asarray(ops)
    x, y, mask = broadcast_data(ops.shape[0], x, y, mask)
    options = Options(round_up(dim, block), tolerance, harmonics, max_factors, block, int(rank))
    return ops, x, y, mask, options


def time_invariant(ops, params, noise, x, y, mask=None, *, dim: int,
                   tolerance: float = PER_TOLERANCE, harmonics: int = MAX_HARMONICS,
                   max_factors: int = MAX_FACTORS, block: int = BLOCK, rank: int = RANK):
    """Which trees ``[P]`` (numpy bool) the Chandrasekhar recursions score exactly on ``x``, a
    regular grid (:func:`chandrasekhar.time_invariant`): supported, every point observed, no
    change point, ``LIN``, ``BM`` and ``IBM`` under sums only, at most ``rank - 1`` of their
    states, and ``BM``/``IBM`` starting at or before the first point."""
    ops, x, y, mask, options = _batch_inputs(ops, x, y, mask, dim, tolerance, harmonics,
                                             max_factors, block, rank)
    return np.asarray(_invariant_jit(ops, jnp.asarray(params), jnp.asarray(noise), x, y, mask,
                                     options))


def state_space_log_likelihood(ops, params, noise, x, y, mask=None, *, dim: int,
                               regular_grid: bool = False, tolerance: float = PER_TOLERANCE,
                               harmonics: int = MAX_HARMONICS, max_factors: int = MAX_FACTORS,
                               block: int = BLOCK, gradient: str = "adjoint",
                               method: str = "auto", rank: int = RANK):
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
    ``method="auto"``: on a regular grid where every tree of the batch is time-invariant
    (:func:`time_invariant`), the same likelihood by the Chandrasekhar recursions,
    ``O(N D rank)`` instead of ``O(N D^2)`` (gradient by reverse mode; the filter's gradient
    then costs one more forward pass, so a caller that knows its batch is not time-invariant
    passes ``"kalman"``); ``"kalman"``: always the filter.
    """
    if gradient not in ("adjoint", "autodiff"):
        raise ValueError(f"gradient must be 'adjoint' or 'autodiff', got {gradient!r}")
    if method not in ("auto", "kalman"):
        raise ValueError(f"method must be 'auto' or 'kalman', got {method!r}")
    ops, x, y, mask, options = _batch_inputs(ops, x, y, mask, dim, tolerance, harmonics,
                                             max_factors, block, rank)
    return _batch(ops, params, noise, x, y, mask, options, bool(regular_grid),
                  gradient == "adjoint", method)


__all__ = ["state_space_log_likelihood", "time_invariant"]
