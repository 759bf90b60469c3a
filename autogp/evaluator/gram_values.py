"""The forward pass of :func:`autogp.evaluator.gram.gram`: the covariance matrices of a batch of
packed kernel trees, walked per particle over work lists, and on regular grids with stationary
subtrees carried as lag vectors (the design is in :mod:`autogp.evaluator.gram`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import leaves
from autogp.kernels import spec


def per_particle_worklist(select, descending):
    """Per particle, the selected slots packed to the front ([P, S]) and their counts ([P])."""
    P, S = select.shape
    slots = jnp.arange(S)
    # Sort keys put the wanted order first and unselected slots last (key S).
    order = jnp.sort(jnp.where(select, (S - 1 - slots) if descending else slots, S), axis=1)
    packed = jnp.clip((S - 1 - order) if descending else order, 0, S - 1)
    return packed, jnp.sum(select, axis=1)


def worklist_loop(worklist, p, body, carry):
    """``body(slot, carry)`` over particle ``p``'s slots in ``worklist`` (from
    :func:`per_particle_worklist`)."""
    slots, count = worklist
    return jax.lax.fori_loop(0, count[p], lambda j, c: body(slots[p, j], c), carry)



def product_ancestors(ops):
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


def broadcast_x(x, P):
    x = jnp.asarray(x)
    return jnp.broadcast_to(x, (P, x.shape[-1])) if x.ndim == 1 else x


# --- forward: values -----------------------------------------------------------------------------


def toeplitz(f):
    """``K[i, j] = f[|i - j|]``: a stationary kernel's matrix on a regular grid from its N lags."""
    # Row i is the window g[n-1-i : 2n-1-i] of g = (f reversed, f[1:]); windows are read by
    # laying copies of g end to end and re-slicing with a stride of 2n - 1 (a copy, no gather:
    # XLA's CPU gather is about twice as slow).
    n = f.shape[0]
    g = jnp.concatenate([f[::-1], f[1:], jnp.zeros((1,), f.dtype)])
    flat = jnp.broadcast_to(g, (n, 2 * n)).reshape(-1)
    return flat[n - 1 : n - 1 + n * (2 * n - 1)].reshape(n, 2 * n - 1)[:, :n]


def lag_sums(A):
    """``a[l] = sum of A[i, j] over |i - j| = l``: the adjoint of :func:`toeplitz`.

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


def _leaf_branches(theta, t1, t2, lags=None, op=0):
    """``lax.switch`` branches (indexed by ``leaves.BRANCH[op]``) for nodes that read no
    children: every atom's formula on its input, and with ``lags`` the expansion of a lag
    vector to its Toeplitz matrix (``EXPAND``)."""
    time1, time2 = leaves.time_column(t1), leaves.time_column(t2)
    z1, z2 = leaves.input_column(t1, op), leaves.input_column(t2, op)
    zeros = lambda: jnp.zeros((t1.shape[0], t2.shape[0]), t1.dtype)  # noqa: E731
    branches = [zeros] * leaves.NUM_BRANCHES
    for op_ in spec.ATOMS:
        if leaves.BRANCH[op_] == op_:
            branches[op_] = functools.partial(leaves.VALUE[op_], theta, time1, time2)
    for branch, op_ in leaves.COVARIATE_BRANCHES.items():
        branches[branch] = functools.partial(leaves.VALUE[op_], theta, z1, z2)
    if lags is not None:
        branches[-1] = lambda: toeplitz(lags)
    else:
        branches = branches[:-1]
    return branches


def _operator_branches(theta, t1, t2, kids):
    """Branches for ``+``, ``*`` and change points (consecutive opcodes from ``spec.PLUS``) given
    the children's values ``kids`` ``[2, N1, N2]``."""

    def cp():
        s1, _, _ = leaves.cp_sigmoid(theta, leaves.time_column(t1))
        s2, _, _ = leaves.cp_sigmoid(theta, leaves.time_column(t2))
        left = s1[:, None] * s2[None, :] * kids[0]
        return left + (1 - s1)[:, None] * (1 - s2)[None, :] * kids[1]

    return [lambda: kids[0] + kids[1], lambda: kids[0] * kids[1], cp]


def children(buf, slot):
    """Slots 2 slot + 1 and 2 slot + 2 of ``buf`` (matrices or lag vectors), sliced out
    *before* any branching: handing the whole scratch buffer to ``lax.switch`` makes XLA copy
    it into the conditional on every node (measured ~3x slower)."""
    return jax.lax.dynamic_slice_in_dim(buf, jnp.minimum(2 * slot + 1, buf.shape[0] - 2), 2)


def node_value(op, theta, t1, t2, buf, slot, lags=None):
    """Value of node ``slot`` given its children's values in ``buf`` (one formula runs).

    ``lags`` (regular grids only): the node's value as a lag vector, which ``op = NUM_OPS``
    expands to its Toeplitz matrix (a stationary node whose parent needs the full matrix).
    """
    branches = _leaf_branches(theta, t1, t2, lags, op)
    operators = _operator_branches(theta, t1, t2, children(buf, slot))
    branches[spec.PLUS : spec.PLUS + len(operators)] = operators
    return jax.lax.switch(jnp.asarray(leaves.BRANCH)[op], branches)


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
            branches = _operator_branches(theta[p, slot], x1[p], x2[p], children(buf, slot))
            return write(slot, jax.lax.switch(ops[p, slot] - spec.PLUS, branches), buf)

        return worklist_loop(operator_list, p, operator, worklist_loop(leaf_list, p, leaf, buf))

    shape = (S + P, x1.shape[1], x2.shape[1])
    return jax.lax.fori_loop(0, P, particle, jnp.zeros(shape, x1.dtype))[S:]


def gram_values(ops, theta, x1, x2):
    occupied = ops != spec.EMPTY
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops]

    def leaf_value(p, slot):
        op = ops[p, slot]
        return jax.lax.switch(jnp.asarray(leaves.BRANCH)[op],
                              _leaf_branches(theta[p, slot], x1[p], x2[p], op=op))

    return _walk_values(
        ops, theta, x1, x2,
        per_particle_worklist(occupied & ~is_operator, descending=False),
        per_particle_worklist(is_operator, descending=True),
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
#: ``node_value``'s extra branch: expand a lag vector to its Toeplitz matrix.
EXPAND = spec.NUM_OPS


def stationary_nodes(ops):
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


def matrix_nodes(ops, stationary):
    """Occupied nodes whose full matrix is formed: non-stationary nodes, and stationary ones that
    are roots or children of a non-stationary node."""
    P, S = ops.shape
    parent_stationary = jnp.concatenate(
        [jnp.zeros((P, 1), bool), stationary[:, (np.arange(1, S) - 1) // 2]], axis=1
    )
    return (ops != spec.EMPTY) & ~(stationary & parent_stationary)


def _node_lags(op, theta, lags, lagbuf, slot):
    """Lag vector of stationary node ``slot`` from its children's lag vectors in ``lagbuf``."""
    kids = children(lagbuf, slot)
    zero = jnp.zeros((1,), lags.dtype)
    branches = [lambda: jnp.zeros_like(lags)] * spec.NUM_OPS
    for op_ in spec.STATIONARY:
        branches[op_] = lambda op_=op_: leaves.VALUE[op_](theta, lags, zero)[:, 0]
    branches[spec.PLUS] = lambda: kids[0] + kids[1]
    branches[spec.TIMES] = lambda: kids[0] * kids[1]
    return jax.lax.switch(op, branches)


def all_lags(ops, theta, lags, stationary):
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


def gram_values_grid(ops, theta, x):
    stationary = stationary_nodes(ops)
    lagbuf = all_lags(ops, theta, x - x[:, :1], stationary)
    matrix = matrix_nodes(ops, stationary)
    # Stationary nodes with a matrix are expanded from their lags: they read no children.
    is_operator = jnp.asarray(spec.IS_OPERATOR)[ops] & ~stationary

    def leaf_value(p, slot):
        op = jnp.where(stationary[p, slot], EXPAND, ops[p, slot])
        return jax.lax.switch(jnp.asarray(leaves.BRANCH)[op],
                              _leaf_branches(theta[p, slot], x[p], x[p], lagbuf[p, slot], op))

    return _walk_values(
        ops, theta, x, x,
        per_particle_worklist(matrix & ~is_operator, descending=False),
        per_particle_worklist(matrix & is_operator, descending=True),
        leaf_value,
    )



__all__ = [
    "EXPAND",
    "all_lags",
    "broadcast_x",
    "children",
    "gram_values",
    "gram_values_grid",
    "lag_sums",
    "matrix_nodes",
    "node_value",
    "per_particle_worklist",
    "product_ancestors",
    "stationary_nodes",
    "toeplitz",
    "worklist_loop",
]
