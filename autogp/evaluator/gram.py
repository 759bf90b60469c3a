"""Covariance matrices of a batch of packed kernel trees: one compiled program for every structure.

Design (see README, "The evaluator"):

* Per particle, the occupied slots form two *work lists* (slots sorted with a static size): the
  leaves, then the operators with children before parents. ``lax.fori_loop`` walks only those
  entries, so the work is proportional to the number of nodes actually present, not to the
  ``P * (2**(D+1) - 1)`` padded slots. Inside the loops ``lax.switch`` on the node's opcode runs
  exactly one formula: the loops are *not* vmapped, so the switch stays a real branch instead of
  becoming a ``select`` over every formula. Leaves have their own loop so that they never copy
  children out of the scratch buffer.
* Node values live in a small scratch buffer indexed by heap slot, reused from one particle to the
  next; roots are written to their own rows, which become the output.
* The derivative is a ``jax.custom_vjp``: the backward pass walks per-particle work lists too,
  first recomputing (bottom-up) only the node values that a product or change point needs, then
  pushing adjoints top-down and reducing each leaf's cotangent to its few parameter gradients with
  the analytic formulas of the atom table (``kernels/atom_table.py``). Nothing is stored per matrix
  entry between the passes, and the loop never has to be differentiated by JAX.

Parameters arrive unconstrained (``spec`` transforms); gradients are returned for them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator.gram_backward import gram_backward, gram_backward_grid
from autogp.evaluator.gram_values import broadcast_x, gram_values, gram_values_grid
from autogp.kernels.transforms import constrain  # re-exported: ``gram.constrain`` stays importable


# --- public ------------------------------------------------------------------------------------
def _values(ops, theta, x1, x2, grid):
    return gram_values_grid(ops, theta, x1) if grid else gram_values(ops, theta, x1, x2)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gram(ops, params, x1, x2, grid):
    return _values(ops, constrain(ops, params), x1, x2, grid)


def _gram_fwd(ops, params, x1, x2, grid):
    # The transform is elementwise on [P, S, MAX_PARAMS]: its VJP is cheap and keeps the chain rule
    # for the transforms in one place (``kernels.transforms``).
    theta, constrain_vjp = jax.vjp(functools.partial(constrain, ops), params)
    return _values(ops, theta, x1, x2, grid), (ops, theta, x1, x2, constrain_vjp)


def _gram_bwd(grid, residuals, cot):
    ops, theta, x1, x2, constrain_vjp = residuals
    grads = (gram_backward_grid(ops, theta, x1, cot) if grid
             else gram_backward(ops, theta, x1, x2, cot))
    (dparams,) = constrain_vjp(grads)
    return None, dparams, None, None


_gram.defvjp(_gram_fwd, _gram_bwd)


def gram(ops, params, x1, x2=None, *, regular_grid=False):
    """Covariance matrices ``K[p] = k_p(x1[p], x2[p])`` of a batch of packed trees.

    Args:
      ops: int32 ``[P, S]`` opcodes in heap order.
      params: float64 ``[P, S, MAX_PARAMS]`` unconstrained parameters.
      x1: float64 ``[N1]`` (shared) or ``[P, N1]`` (per particle) inputs.
      x2: likewise ``[N2]`` or ``[P, N2]``; defaults to ``x1``.
      regular_grid: promise that ``x2`` is ``None`` and every row of ``x1`` is sorted and evenly
        spaced (see :func:`is_regular_grid`); stationary atoms then cost O(N) transcendental
        evaluations instead of O(N^2). Masked padding must continue the grid.

    Returns:
      float64 ``[P, N1, N2]``. Differentiable with respect to ``params`` (custom VJP).
    """
    ops = jnp.asarray(ops)
    P = ops.shape[0]
    x1 = broadcast_x(x1, P)
    if regular_grid and x2 is not None:
        raise ValueError("regular_grid applies to square matrices K(x, x) only (x2=None)")
    x2 = x1 if x2 is None else broadcast_x(x2, P)
    return _gram(ops, params, x1, x2, bool(regular_grid))


def is_regular_grid(x, rtol: float = 1e-9) -> bool:
    """Whether every row of ``x`` (``[N]`` or ``[P, N]``, concrete) is sorted and evenly spaced."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if x.shape[1] < 2:
        return True
    d = np.diff(x, axis=1)
    step = d[:, :1]
    return bool(np.all(step > 0) and np.all(np.abs(d - step) <= rtol * np.abs(step)))


# --- pairs k(x1_i, x2_i): the diagonal and its neighbours -------------------------------------
# The same work-list walks as above, vmapped over the points with 1 x 1 matrices: the loops and
# switches stay unbatched (they depend on the trees only), so the work is O(N) per node instead
# of the O(N^2) of a full matrix. The sparse likelihood needs the diagonal of K(x, x).
def _pair_values(ops, theta, x1, x2):
    def one_pair(t1, t2):  # [P] each
        return gram_values(ops, theta, t1[:, None], t2[:, None])[:, 0, 0]

    return jax.vmap(one_pair, in_axes=(1, 1), out_axes=1)(x1, x2)


def _pair_backward(ops, theta, x1, x2, cot):
    def one_pair(t1, t2, c):  # [P] each
        return gram_backward(ops, theta, t1[:, None], t2[:, None], c[:, None, None])

    return jnp.sum(jax.vmap(one_pair, in_axes=(1, 1, 1))(x1, x2, cot), axis=0)


@jax.custom_vjp
def _gram_pairs(ops, params, x1, x2):
    return _pair_values(ops, constrain(ops, params), x1, x2)


def _gram_pairs_fwd(ops, params, x1, x2):
    theta, constrain_vjp = jax.vjp(functools.partial(constrain, ops), params)
    return _pair_values(ops, theta, x1, x2), (ops, theta, x1, x2, constrain_vjp)


def _gram_pairs_bwd(residuals, cot):
    ops, theta, x1, x2, constrain_vjp = residuals
    (dparams,) = constrain_vjp(_pair_backward(ops, theta, x1, x2, cot))
    return None, dparams, None, None


_gram_pairs.defvjp(_gram_pairs_fwd, _gram_pairs_bwd)


def gram_pairs(ops, params, x1, x2=None):
    """``k_p(x1[p, i], x2[p, i])`` ``[P, N]``: with ``x2 = None`` the diagonals of
    :func:`gram`'s square matrices, in O(N) per node. ``x1``, ``x2``: ``[N]`` or ``[P, N]``.
    Differentiable with respect to ``params``.

    The backward pass holds a ``[N, P, S, MAX_PARAMS]`` gradient buffer: call it on chunks of
    a few thousand points for long series.
    """
    ops = jnp.asarray(ops)
    x1 = broadcast_x(x1, ops.shape[0])
    x2 = x1 if x2 is None else broadcast_x(x2, ops.shape[0])
    return _gram_pairs(ops, params, x1, x2)


__all__ = ["constrain", "gram", "gram_pairs", "is_regular_grid"]
