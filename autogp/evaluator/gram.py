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

    Padding each row by one entry skews the matrix: in the padded flat array laid out as
    ``n x (n + 1)``, column c holds the upper diagonal c (rows i < n - c) above the lower
    diagonal n + 1 - c (the rows below). So one skewed copy and two column sums, one masked to
    the upper part, give both halves (A need not be symmetric).
    """
    n = A.shape[0]
    skewed = jnp.concatenate([A.reshape(-1), jnp.zeros((n,), A.dtype)]).reshape(n, n + 1)
    upper_part = (jnp.arange(n)[:, None] + jnp.arange(n + 1)[None, :]) < n
    upper = jnp.sum(jnp.where(upper_part, skewed, 0.0), axis=0)  # upper[c]: diagonal c, c < n
    lower_reversed = jnp.sum(skewed, axis=0) - upper  # [c]: lower diagonal n + 1 - c, c >= 2
    lower = jnp.concatenate([jnp.zeros((1,), A.dtype), lower_reversed[2:][::-1]])
    return upper[:n] + lower


def _leaf_branches(theta, t1, t2, lags=None):
    """``lax.switch`` branches by opcode for nodes that read no children: every atom's formula,
    and with ``lags`` the expansion of a lag vector to its Toeplitz matrix (``_EXPAND``)."""
    branches = [lambda: jnp.zeros((t1.shape[0], t2.shape[0]), t1.dtype)] * spec.NUM_OPS
    for op_ in spec.ATOMS:
        branches[op_] = functools.partial(leaves.VALUE[op_], theta, t1, t2)
    if lags is not None:
        branches.append(lambda: _toeplitz(lags))
    return branches


def _operator_branches(theta, t1, t2, kids):
    """Branches for ``+``, ``*`` and change points (consecutive opcodes from ``spec.PLUS``) given
    the children's values ``kids`` ``[2, N1, N2]``."""

    def cp():
        s1, _, _ = leaves.cp_sigmoid(theta, t1)
        s2, _, _ = leaves.cp_sigmoid(theta, t2)
        left = s1[:, None] * s2[None, :] * kids[0]
        return left + (1 - s1)[:, None] * (1 - s2)[None, :] * kids[1]

    return [lambda: kids[0] + kids[1], lambda: kids[0] * kids[1], cp]


def _children(buf, slot):
    """Slots 2 slot + 1 and 2 slot + 2 of ``buf`` (matrices or lag vectors), sliced out
    *before* any branching: handing the whole scratch buffer to ``lax.switch`` makes XLA copy
    it into the conditional on every node (measured ~3x slower)."""
    return jax.lax.dynamic_slice_in_dim(buf, jnp.minimum(2 * slot + 1, buf.shape[0] - 2), 2)


def _node_value(op, theta, t1, t2, buf, slot, lags=None):
    """Value of node ``slot`` given its children's values in ``buf`` (one formula runs).

    ``lags`` (regular grids only): the node's value as a lag vector, which ``op = NUM_OPS``
    expands to its Toeplitz matrix (a stationary node whose parent needs the full matrix).
    """
    branches = _leaf_branches(theta, t1, t2, lags)
    operators = _operator_branches(theta, t1, t2, _children(buf, slot))
    branches[spec.PLUS : spec.PLUS + len(operators)] = operators
    return jax.lax.switch(op, branches)


def _walk_values(ops, theta, x1, x2, leaf_list, operator_list, leaf_value):
    """Node values, particle by particle: first its nodes that read no children (any order;
    ``leaf_value(p, slot)`` gives the matrix), then its operators, children first. Rows 1..S-1
    of the scratch buffer hold non-root nodes by slot (reused by the next particle); row S + p
    holds particle p's root, and those rows are the output.

    Two loops, not one over every node: a leaf then neither slices its children out of the
    buffer nor passes through a switch that has operator branches (at N = 512 the slicing is a
    copy of two N x N matrices per node, as much as a leaf's formula)."""

    P, S = ops.shape

    def particle(p, buf):
        def write(slot, value, buf):
            row = jnp.where(slot == 0, S + p, slot)
            return jax.lax.dynamic_update_index_in_dim(buf, value, row, 0)

        def leaf(slot, buf):
            return write(slot, leaf_value(p, slot), buf)

        def operator(slot, buf):
            branches = _operator_branches(theta[p, slot], x1[p], x2[p], _children(buf, slot))
            return write(slot, jax.lax.switch(ops[p, slot] - spec.PLUS, branches), buf)

        return _loop(operator_list, p, operator, _loop(leaf_list, p, leaf, buf))

    shape = (S + P, x1.shape[1], x2.shape[1])
    return jax.lax.fori_loop(0, P, particle, jnp.zeros(shape, x1.dtype))[S:]


def _gram_values(ops, theta, x1, x2):
    occupied = ops != spec.EMPTY
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops]

    def leaf_value(p, slot):
        return jax.lax.switch(ops[p, slot], _leaf_branches(theta[p, slot], x1[p], x2[p]))

    return _walk_values(
        ops, theta, x1, x2,
        _per_particle_worklist(occupied & ~is_operator, descending=False),
        _per_particle_worklist(is_operator, descending=True),
        leaf_value,
    )


# --- regular grids: stationary subtrees as lag vectors -----------------------------------------
# On a sorted, evenly spaced x a stationary kernel's matrix is Toeplitz, K[i, j] = f[|i - j|],
# and sums and products of Toeplitz matrices (entry by entry) are Toeplitz again. So a node whose
# whole subtree is stationary is carried as its N lags, at O(N) per node, and expanded to a
# matrix only where a non-stationary parent (or the root) needs one. Backwards, the adjoint of
# such a node is reduced to lag sums once, at that boundary, and pushed down its subtree in lag
# space. A tree such as ``GE + PER`` then costs one O(N^2) expansion forwards and one lag
# reduction backwards, where every node cost O(N^2) before.
_STATIONARY_ATOM = np.zeros(spec.NUM_OPS, dtype=bool)
_STATIONARY_ATOM[list(spec.STATIONARY)] = True
#: ``_node_value``'s extra branch: expand a lag vector to its Toeplitz matrix.
_EXPAND = spec.NUM_OPS


def _stationary_nodes(ops):
    """stationary[p, s]: node s's value depends on t - t' only (a stationary atom, or a sum or
    product of two such nodes); False at empty slots."""
    P, S = ops.shape
    stationary = jnp.asarray(_STATIONARY_ATOM)[ops]
    joins = (ops == spec.PLUS) | (ops == spec.TIMES)
    first = (S - 1) // 2  # the deepest level has no operators
    while first > 0:
        first = (first - 1) // 2
        level = np.arange(first, 2 * first + 1)
        both = stationary[:, 2 * level + 1] & stationary[:, 2 * level + 2]
        stationary = stationary.at[:, level].set(stationary[:, level] | (joins[:, level] & both))
    return stationary


def _matrix_nodes(ops, stationary):
    """Occupied nodes whose full matrix is formed: non-stationary nodes, and stationary ones that
    are roots or children of a non-stationary node."""
    P, S = ops.shape
    parent_stationary = jnp.concatenate(
        [jnp.zeros((P, 1), bool), stationary[:, (np.arange(1, S) - 1) // 2]], axis=1
    )
    return (ops != spec.EMPTY) & ~(stationary & parent_stationary)


def _node_lags(op, theta, lags, lagbuf, slot):
    """Lag vector of stationary node ``slot`` from its children's lag vectors in ``lagbuf``."""
    kids = _children(lagbuf, slot)
    zero = jnp.zeros((1,), lags.dtype)
    branches = [lambda: jnp.zeros_like(lags)] * spec.NUM_OPS
    for op_ in spec.STATIONARY:
        branches[op_] = lambda op_=op_: leaves.VALUE[op_](theta, lags, zero)[:, 0]
    branches[spec.PLUS] = lambda: kids[0] + kids[1]
    branches[spec.TIMES] = lambda: kids[0] * kids[1]
    return jax.lax.switch(op, branches)


def _all_lags(ops, theta, lags, stationary):
    """``[P, S, N]``: every stationary node's lag vector (other rows zero), children first."""
    P, S = ops.shape
    wanted = stationary[:, ::-1].reshape(-1)
    (flat,) = jnp.nonzero(wanted, size=P * S, fill_value=0)

    def body(j, lagbuf):
        p = flat[j] // S
        slot = S - 1 - flat[j] % S
        value = _node_lags(ops[p, slot], theta[p, slot], lags[p], lagbuf[p], slot)
        return lagbuf.at[p, slot].set(value)

    lagbuf = jnp.zeros((P, S, lags.shape[1]), lags.dtype)
    return jax.lax.fori_loop(0, jnp.sum(wanted), body, lagbuf)


def _gram_values_grid(ops, theta, x):
    stationary = _stationary_nodes(ops)
    lagbuf = _all_lags(ops, theta, x - x[:, :1], stationary)
    matrix = _matrix_nodes(ops, stationary)
    # Stationary nodes with a matrix are expanded from their lags: they read no children.
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops] & ~stationary

    def leaf_value(p, slot):
        op = jnp.where(stationary[p, slot], _EXPAND, ops[p, slot])
        return jax.lax.switch(op, _leaf_branches(theta[p, slot], x[p], x[p], lagbuf[p, slot]))

    return _walk_values(
        ops, theta, x, x,
        _per_particle_worklist(matrix & ~is_operator, descending=False),
        _per_particle_worklist(matrix & is_operator, descending=True),
        leaf_value,
    )


# --- backward: adjoints ------------------------------------------------------------------------
def _operator_adjoints(op, theta, t1, t2, kids, adj):
    """Adjoints of an operator's two children and the gradient of its own natural parameters.

    ``adj`` is the node's adjoint; ``kids`` ``[2, N1, N2]`` the recomputed children's values
    (only read by products and change points). Lag vectors work too for sums and products.
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
    ]
    if adj.ndim == 2:
        branches.append(cp)
    return jax.lax.switch(op - spec.PLUS, branches)


def _leaf_vjp(op, theta, t1, t2, adj):
    # One branch per opcode (as in ``_node_value``): atoms need not have consecutive opcodes.
    no_grad = lambda: jnp.zeros((spec.MAX_PARAMS,), adj.dtype)
    branches = [no_grad] * spec.NUM_OPS
    for op_ in spec.ATOMS:
        branches[op_] = functools.partial(leaves.VJP[op_], theta, t1, t2, adj)
    return jax.lax.switch(op, branches)


def _leaf_vjp_lags(op, theta, lags, a):
    """A stationary leaf's gradient from its adjoint's lag sums ``a``: sum_ij A_ij dk(r_ij) is
    sum_l a_l dk(lag_l)."""
    zero = jnp.zeros((1,), lags.dtype)
    no_grad = lambda: jnp.zeros((spec.MAX_PARAMS,), a.dtype)
    branches = [no_grad] * spec.NUM_OPS
    for op_ in spec.STATIONARY:
        branches[op_] = functools.partial(leaves.VJP[op_], theta, lags, zero, a[:, None])
    return jax.lax.switch(op, branches)


def _per_particle_worklist(select, descending):
    """Per particle, the selected slots packed to the front ([P, S]) and their counts ([P])."""
    P, S = select.shape
    slots = jnp.arange(S)
    # Sort keys put the wanted order first and unselected slots last (key S).
    order = jnp.sort(jnp.where(select, (S - 1 - slots) if descending else slots, S), axis=1)
    packed = jnp.clip((S - 1 - order) if descending else order, 0, S - 1)
    return packed, jnp.sum(select, axis=1)


def _loop(worklist, p, body, carry):
    """``body(slot, carry)`` over particle ``p``'s slots in ``worklist`` (from
    :func:`_per_particle_worklist`)."""
    slots, count = worklist
    return jax.lax.fori_loop(0, count[p], lambda j, c: body(slots[p, j], c), carry)


def _gram_backward(ops, theta, x1, x2, cot):
    """Gradient of sum(cot * K) with respect to the natural parameters ``theta``.

    Particle by particle, three loops over that particle's work lists (:func:`_matrix_pass`),
    each with one kind of output so that every iteration writes exactly what it produces. The
    scratch buffers (one matrix per heap slot) are allocated once and reused: every entry is
    written before it is read within a particle, so they are never cleared.
    """
    P, S = ops.shape
    N1, N2 = x1.shape[1], x2.shape[1]
    dtype = x1.dtype
    occupied = ops != spec.EMPTY
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops]
    recompute = _per_particle_worklist(occupied & _product_ancestors(ops), descending=True)
    operators = _per_particle_worklist(is_operator, descending=False)
    leaf_list = _per_particle_worklist(occupied & ~is_operator, descending=False)

    def particle(p, carry):
        ops_p, theta_p, t1, t2 = ops[p], theta[p], x1[p], x2[p]

        def node_value(slot, vals):
            return _node_value(ops_p[slot], theta_p[slot], t1, t2, vals, slot)

        return _matrix_pass(p, ops_p, theta_p, t1, t2, cot[p], (recompute, operators, leaf_list),
                            node_value, carry)

    vals = jnp.zeros((S, N1, N2), dtype)
    adjs = jnp.zeros((S, N1, N2), dtype)
    grads = jnp.zeros((P, S, spec.MAX_PARAMS), dtype)
    _, _, grads = jax.lax.fori_loop(0, P, particle, (vals, adjs, grads))
    return grads


def _matrix_pass(p, ops_p, theta_p, t1, t2, cot_p, worklists, node_value, carry):
    """The backward pass of particle ``p`` on full matrices: (1) recompute, bottom-up, the
    values that products and change points need (``node_value(slot, vals)``); (2) push adjoints
    top-down through the operators, from ``cot_p`` at the root; (3) reduce every leaf's adjoint
    to its parameter gradients. ``worklists``: the three slot lists, in that order."""
    recompute, operators, leaf_list = worklists
    vals, adjs, grads = carry

    def recompute_one(slot, vals):
        return jax.lax.dynamic_update_index_in_dim(vals, node_value(slot, vals), slot, 0)

    vals = _loop(recompute, p, recompute_one, vals)
    adjs = jax.lax.dynamic_update_index_in_dim(adjs, cot_p, 0, 0)
    adjs, grads = _loop(operators, p, _push(p, ops_p, theta_p, t1, t2, vals), (adjs, grads))

    def reduce_leaf(slot, grads):
        adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
        return grads.at[p, slot].set(_leaf_vjp(ops_p[slot], theta_p[slot], t1, t2, adj))

    return vals, adjs, _loop(leaf_list, p, reduce_leaf, grads)


def _push(p, ops_p, theta_p, t1, t2, vals):
    """One top-down step through operator ``slot``: its children's adjoints (matrices or lag
    vectors, as ``vals`` and the adjoints are) and its own parameters' gradient."""

    def step(slot, carry):
        adjs, grads = carry
        adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
        kids = _children(vals, slot)
        left, right, dtheta = _operator_adjoints(ops_p[slot], theta_p[slot], t1, t2, kids, adj)
        adjs = jax.lax.dynamic_update_index_in_dim(adjs, left, 2 * slot + 1, 0)
        adjs = jax.lax.dynamic_update_index_in_dim(adjs, right, 2 * slot + 2, 0)
        return adjs, grads.at[p, slot].set(dtheta)

    return step


def _gram_backward_grid(ops, theta, x, cot):
    """:func:`_gram_backward` on regular grids, with stationary subtrees in lag space.

    Per particle: (1) every stationary node's lag vector and the matrices that non-stationary
    products and change points need; (2) adjoints pushed through the non-stationary operators;
    (3) at each stationary node with a matrix (the boundary) its adjoint's lag sums; (4) lag
    adjoints pushed through the stationary operators; (5) leaf gradients, from matrices or lag
    sums.
    """
    P, S = ops.shape
    N = x.shape[1]
    dtype = x.dtype
    occupied = ops != spec.EMPTY
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops]
    stationary = _stationary_nodes(ops)
    matrix = _matrix_nodes(ops, stationary)
    lags = x - x[:, :1]
    lagbuf = _all_lags(ops, theta, lags, stationary)
    recompute = _per_particle_worklist(matrix & _product_ancestors(ops), descending=True)
    operators = _per_particle_worklist(is_operator & ~stationary, descending=False)
    boundary = _per_particle_worklist(matrix & stationary, descending=False)
    lag_operators = _per_particle_worklist(is_operator & stationary, descending=False)
    leaf = occupied & ~is_operator
    leaf_list = _per_particle_worklist(leaf & ~stationary, descending=False)
    lag_leaf_list = _per_particle_worklist(leaf & stationary, descending=False)

    def particle(p, carry):
        vals, adjs, lag_adjs, grads = carry
        ops_p, theta_p, t, lags_p, lag_p = ops[p], theta[p], x[p], lags[p], lagbuf[p]

        def node_value(slot, vals):
            op = jnp.where(stationary[p, slot], _EXPAND, ops_p[slot])
            return _node_value(op, theta_p[slot], t, t, vals, slot, lag_p[slot])

        vals, adjs, grads = _matrix_pass(p, ops_p, theta_p, t, t, cot[p],
                                         (recompute, operators, leaf_list), node_value,
                                         (vals, adjs, grads))

        def to_lags(slot, lag_adjs):
            adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
            return lag_adjs.at[slot].set(_lag_sums(adj))

        lag_adjs = _loop(boundary, p, to_lags, lag_adjs)
        lag_adjs, grads = _loop(
            lag_operators, p, _push(p, ops_p, theta_p, lags_p, lags_p, lag_p), (lag_adjs, grads)
        )

        def reduce_lag_leaf(slot, grads):
            return grads.at[p, slot].set(_leaf_vjp_lags(ops_p[slot], theta_p[slot], lags_p,
                                                        lag_adjs[slot]))

        grads = _loop(lag_leaf_list, p, reduce_lag_leaf, grads)
        return vals, adjs, lag_adjs, grads

    carry = (
        jnp.zeros((S, N, N), dtype),
        jnp.zeros((S, N, N), dtype),
        jnp.zeros((S, N), dtype),
        jnp.zeros((P, S, spec.MAX_PARAMS), dtype),
    )
    return jax.lax.fori_loop(0, P, particle, carry)[-1]


# --- public ------------------------------------------------------------------------------------
def _values(ops, theta, x1, x2, grid):
    return _gram_values_grid(ops, theta, x1) if grid else _gram_values(ops, theta, x1, x2)


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
    grads = (_gram_backward_grid(ops, theta, x1, cot) if grid
             else _gram_backward(ops, theta, x1, x2, cot))
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
