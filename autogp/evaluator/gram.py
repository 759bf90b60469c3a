"""Covariance matrices of a batch of packed kernel trees: one compiled program for every structure.

Design (see README, "The evaluator"):

* The occupied slots of all P trees form a *work list* (``jnp.nonzero`` with a static size), in an
  order where children come before parents. A single ``lax.while_loop`` walks only the occupied
  entries, so the work is proportional to the number of nodes actually present, not to the
  ``P * (2**(D+1) - 1)`` padded slots. Inside the loop ``lax.switch`` on the node's opcode runs
  exactly one formula: the loop is *not* vmapped, so the switch stays a real branch instead of
  becoming a ``select`` over every formula.
* Node values live in a small scratch buffer indexed by heap slot, reused from one particle to the
  next; roots are written to their own rows, which become the output.
* The derivative is a ``jax.custom_vjp``: the backward pass walks the same work list, first
  recomputing (bottom-up) only the node values that a product or change point needs, then pushing
  adjoints top-down and reducing each leaf's cotangent to its few parameter gradients with the
  analytic formulas of the atom table (``kernels/atom_table.py``). Nothing is stored per matrix
  entry between the passes, and the loop never has to be differentiated by JAX.

Parameters arrive unconstrained (``spec`` transforms); gradients are returned for them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import leaves
from autogp.kernels import spec
from autogp.kernels.transforms import constrain  # re-exported: ``gram.constrain`` stays importable


def _product_ancestors(ops):
    """needs_value[p, s]: some ancestor of slot s is a product or change point.

    Only such nodes' values enter the adjoints of their siblings, so only they are recomputed in
    the backward pass.
    """
    P, S = ops.shape
    multiplies = (ops == spec.TIMES) | (ops == spec.CP)
    needs = jnp.zeros((P, S), dtype=bool)
    slot = 1
    while slot < S:
        level = np.arange(slot, 2 * slot + 1)
        parent = (level - 1) // 2
        needs = needs.at[:, level].set(needs[:, parent] | multiplies[:, parent])
        slot = 2 * slot + 1
    return needs


def _broadcast_x(x, P):
    x = jnp.asarray(x)
    return jnp.broadcast_to(x, (P, x.shape[-1])) if x.ndim == 1 else x


# --- forward: values -----------------------------------------------------------------------------


def _toeplitz(f):
    """``K[i, j] = f[|i - j|]``: a stationary kernel's matrix on a regular grid from its N lags."""
    # Row i is the window g[n-1-i : 2n-1-i] of g = (f reversed, f[1:]); windows are read by
    # laying copies of g end to end and re-slicing with a stride of 2n - 1 (a copy, no gather:
    # XLA's CPU gather is about twice as slow).
    n = f.shape[0]
    g = jnp.concatenate([f[::-1], f[1:], jnp.zeros((1,), f.dtype)])
    flat = jnp.broadcast_to(g, (n, 2 * n)).reshape(-1)
    return flat[n - 1 : n - 1 + n * (2 * n - 1)].reshape(n, 2 * n - 1)[:, :n]


def _lag_sums(A):
    """``a[l] = sum of A[i, j] over |i - j| = l``: the adjoint of :func:`_toeplitz`.

    Diagonals become columns after padding each row by one entry (row i of the padded flat
    array starts at A[i, i]); a static mask keeps the upper part, the transpose gives the lower.
    """
    n = A.shape[0]
    keep = (jnp.arange(n)[:, None] + jnp.arange(n + 1)[None, :]) < n
    ones = jnp.ones((n,), A.dtype)

    def upper(M):
        skewed = jnp.concatenate([M.reshape(-1), jnp.zeros((n,), M.dtype)]).reshape(n, n + 1)
        return ones @ jnp.where(keep, skewed, 0.0)

    sums = (upper(A) + upper(A.T))[:n]
    return sums.at[0].add(-jnp.trace(A))


def _node_value(op, theta, t1, t2, buf, slot, grid=False):
    """Value of node ``slot`` given its children's values in ``buf`` (one formula runs).

    With ``grid`` (``t1 == t2``, sorted and evenly spaced) stationary atoms evaluate their
    formula on the N lags only and expand it to the Toeplitz matrix: O(N) transcendental
    functions instead of O(N^2).
    """

    # Slice the two children out *before* branching: handing the whole scratch buffer to
    # ``lax.switch`` makes XLA copy it into the conditional on every node (measured ~3x slower).
    rows = buf.shape[0]
    kids = jax.lax.dynamic_slice_in_dim(buf, jnp.minimum(2 * slot + 1, rows - 2), 2)

    def child(k):
        return kids[k - 1]

    def atom(op_):
        if grid and op_ in spec.STATIONARY:
            lags = t1 - t1[0]
            zero = jnp.zeros((1,), t1.dtype)
            return lambda: _toeplitz(leaves.VALUE[op_](theta, lags, zero)[:, 0])
        return lambda: leaves.VALUE[op_](theta, t1, t2)

    def cp():
        s1, _, _ = leaves.cp_sigmoid(theta, t1)
        s2, _, _ = leaves.cp_sigmoid(theta, t2)
        left = s1[:, None] * s2[None, :] * child(1)
        return left + (1 - s1)[:, None] * (1 - s2)[None, :] * child(2)

    branches = [lambda: jnp.zeros((t1.shape[0], t2.shape[0]), t1.dtype)] * spec.NUM_OPS
    for op_ in spec.ATOMS:
        branches[op_] = atom(op_)
    branches[spec.PLUS] = lambda: child(1) + child(2)
    branches[spec.TIMES] = lambda: child(1) * child(2)
    branches[spec.CP] = cp
    return jax.lax.switch(op, branches)


def _gram_values(ops, theta, x1, x2, grid=False):
    P, S = ops.shape
    N1, N2 = x1.shape[1], x2.shape[1]
    occupied = (ops != spec.EMPTY)[:, ::-1].reshape(-1)  # per particle, slots in descending order
    (flat,) = jnp.nonzero(occupied, size=P * S, fill_value=0)
    count = jnp.sum(occupied)
    # Rows 1..S-1 hold non-root nodes by slot; row S + p holds particle p's root.
    buf = jnp.zeros((S + P, N1, N2), x1.dtype)

    def body(j, buf):
        p = flat[j] // S
        slot = S - 1 - flat[j] % S
        value = _node_value(ops[p, slot], theta[p, slot], x1[p], x2[p], buf, slot, grid)
        row = jnp.where(slot == 0, S + p, slot)
        return jax.lax.dynamic_update_index_in_dim(buf, value, row, 0)

    buf = jax.lax.fori_loop(0, count, body, buf)
    return buf[S:]


# --- backward: adjoints ------------------------------------------------------------------------
def _operator_adjoints(op, theta, t1, t2, kids, adj):
    """Adjoints of an operator's two children and the gradient of its own natural parameters.

    ``adj`` is the node's adjoint; ``kids`` ``[2, N1, N2]`` the recomputed children's values
    (only read by products and change points).
    """
    no_grad = jnp.zeros((spec.MAX_PARAMS,), adj.dtype)

    def cp():
        s1, g1, h1 = leaves.cp_sigmoid(theta, t1)
        s2, g2, h2 = leaves.cp_sigmoid(theta, t2)
        b_left = adj * kids[0]
        b_right = adj * kids[1]

        def d(e1, e2):  # d/dparam of s s'^T K_l + (1-s)(1-s')^T K_r, reduced against adj
            return (
                e1 @ b_left @ s2
                + s1 @ b_left @ e2
                - e1 @ b_right @ (1 - s2)
                - (1 - s1) @ b_right @ e2
            )

        padding = [jnp.zeros((), adj.dtype)] * (spec.MAX_PARAMS - 2)
        grad = jnp.stack([d(g1, g2), d(h1, h2)] + padding)
        return (
            adj * s1[:, None] * s2[None, :],
            adj * (1 - s1)[:, None] * (1 - s2)[None, :],
            grad,
        )

    branches = [
        lambda: (adj, adj, no_grad),
        lambda: (adj * kids[1], adj * kids[0], no_grad),
        cp,
    ]
    return jax.lax.switch(op - spec.PLUS, branches)


def _leaf_vjp(op, theta, t1, t2, adj, grid=False):
    def branch(op_):
        if grid and op_ in spec.STATIONARY:
            # sum_ij A_ij dk(r_ij) = sum_l a_l dk(lag_l) with a_l the lag sums of A.
            lags = t1 - t1[0]
            zero = jnp.zeros((1,), t1.dtype)
            return lambda: leaves.VJP[op_](theta, lags, zero, _lag_sums(adj)[:, None])
        return lambda: leaves.VJP[op_](theta, t1, t2, adj)

    # One branch per opcode (as in ``_node_value``): atoms need not have consecutive opcodes.
    no_grad = lambda: jnp.zeros((spec.MAX_PARAMS,), adj.dtype)
    branches = [no_grad] * spec.NUM_OPS
    for op_ in spec.ATOMS:
        branches[op_] = branch(op_)
    return jax.lax.switch(op, branches)


def _per_particle_worklist(select, descending):
    """Per particle, the selected slots packed to the front ([P, S]) and their counts ([P])."""
    P, S = select.shape
    slots = jnp.arange(S)
    # Sort keys put the wanted order first and unselected slots last (key S).
    order = jnp.sort(jnp.where(select, (S - 1 - slots) if descending else slots, S), axis=1)
    packed = jnp.clip((S - 1 - order) if descending else order, 0, S - 1)
    return packed, jnp.sum(select, axis=1)


def _gram_backward(ops, theta, x1, x2, cot, grid=False):
    """Gradient of sum(cot * K) with respect to the natural parameters ``theta``.

    Particle by particle, three loops over that particle's work lists, each with one kind of
    output so that every iteration writes exactly what it produces: (1) recompute, bottom-up, the
    values that products and change points need; (2) push adjoints top-down through the
    operators; (3) reduce every leaf's adjoint to its parameter gradients. The scratch buffers
    (one matrix per heap slot) are allocated once and reused: every entry is written before it
    is read within a particle, so they are never cleared.
    """
    P, S = ops.shape
    N1, N2 = x1.shape[1], x2.shape[1]
    dtype = x1.dtype
    occupied = ops != spec.EMPTY
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops]
    rec_slots, rec_count = _per_particle_worklist(
        occupied & _product_ancestors(ops), descending=True
    )
    op_slots, op_count = _per_particle_worklist(is_operator, descending=False)
    leaf_slots, leaf_count = _per_particle_worklist(occupied & ~is_operator, descending=False)

    def particle(p, carry):
        vals, adjs, grads = carry
        ops_p, theta_p, t1, t2 = ops[p], theta[p], x1[p], x2[p]

        def recompute(j, vals):
            slot = rec_slots[p, j]
            v = _node_value(ops_p[slot], theta_p[slot], t1, t2, vals, slot, grid)
            return jax.lax.dynamic_update_index_in_dim(vals, v, slot, 0)

        vals = jax.lax.fori_loop(0, rec_count[p], recompute, vals)
        adjs = jax.lax.dynamic_update_index_in_dim(adjs, cot[p], 0, 0)

        def push(j, carry):
            adjs, grads = carry
            slot = op_slots[p, j]
            adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
            kids = jax.lax.dynamic_slice_in_dim(vals, 2 * slot + 1, 2)
            left, right, dtheta = _operator_adjoints(ops_p[slot], theta_p[slot], t1, t2, kids, adj)
            adjs = jax.lax.dynamic_update_index_in_dim(adjs, left, 2 * slot + 1, 0)
            adjs = jax.lax.dynamic_update_index_in_dim(adjs, right, 2 * slot + 2, 0)
            return adjs, grads.at[p, slot].set(dtheta)

        adjs, grads = jax.lax.fori_loop(0, op_count[p], push, (adjs, grads))

        def reduce_leaf(j, grads):
            slot = leaf_slots[p, j]
            adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
            dtheta = _leaf_vjp(ops_p[slot], theta_p[slot], t1, t2, adj, grid)
            return grads.at[p, slot].set(dtheta)

        grads = jax.lax.fori_loop(0, leaf_count[p], reduce_leaf, grads)
        return vals, adjs, grads

    vals = jnp.zeros((S, N1, N2), dtype)
    adjs = jnp.zeros((S, N1, N2), dtype)
    grads = jnp.zeros((P, S, spec.MAX_PARAMS), dtype)
    _, _, grads = jax.lax.fori_loop(0, P, particle, (vals, adjs, grads))
    return grads


# --- public ------------------------------------------------------------------------------------
@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _gram(ops, params, x1, x2, grid):
    return _gram_values(ops, constrain(ops, params), x1, x2, grid)


def _gram_fwd(ops, params, x1, x2, grid):
    # The transform is elementwise on [P, S, MAX_PARAMS]: its VJP is cheap and keeps the chain rule
    # for the transforms in one place (``kernels.transforms``).
    theta, constrain_vjp = jax.vjp(functools.partial(constrain, ops), params)
    return _gram_values(ops, theta, x1, x2, grid), (ops, theta, x1, x2, constrain_vjp)


def _gram_bwd(grid, residuals, cot):
    ops, theta, x1, x2, constrain_vjp = residuals
    (dparams,) = constrain_vjp(_gram_backward(ops, theta, x1, x2, cot, grid))
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
    x1 = _broadcast_x(x1, P)
    if regular_grid and x2 is not None:
        raise ValueError("regular_grid applies to square matrices K(x, x) only (x2=None)")
    x2 = x1 if x2 is None else _broadcast_x(x2, P)
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
        return _gram_values(ops, theta, t1[:, None], t2[:, None])[:, 0, 0]

    return jax.vmap(one_pair, in_axes=(1, 1), out_axes=1)(x1, x2)


def _pair_backward(ops, theta, x1, x2, cot):
    def one_pair(t1, t2, c):  # [P] each
        return _gram_backward(ops, theta, t1[:, None], t2[:, None], c[:, None, None])

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
    x1 = _broadcast_x(x1, ops.shape[0])
    x2 = x1 if x2 is None else _broadcast_x(x2, ops.shape[0])
    return _gram_pairs(ops, params, x1, x2)
