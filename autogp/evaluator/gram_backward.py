"""The backward pass of :func:`autogp.evaluator.gram.gram`: the gradient of ``sum(cot * K)``
with respect to the natural parameters, per particle over work lists, recomputing only the
node values a product or change point needs and pushing adjoints top-down (the design is in
:mod:`autogp.evaluator.gram`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from autogp.evaluator import leaves
from autogp.evaluator.gram_values import (
    EXPAND,
    all_lags,
    children,
    lag_sums,
    matrix_nodes,
    node_value,
    per_particle_worklist,
    product_ancestors,
    stationary_nodes,
    worklist_loop,
)
from autogp.kernels import spec


# --- backward: adjoints ------------------------------------------------------------------------
def _operator_adjoints(op, theta, t1, t2, kids, adj):
    """Adjoints of an operator's two children and the gradient of its own natural parameters.

    ``adj`` is the node's adjoint; ``kids`` ``[2, N1, N2]`` the recomputed children's values
    (only read by products and change points). Lag vectors work too for sums and products.
    """
    no_grad = jnp.zeros((spec.MAX_PARAMS,), adj.dtype)

    def cp():
        s1, g1, h1 = leaves.cp_sigmoid(theta, leaves.time_column(t1))
        s2, g2, h2 = leaves.cp_sigmoid(theta, leaves.time_column(t2))
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
    # One branch per opcode (as in ``node_value``): atoms need not have consecutive opcodes;
    # the covariate atoms of a kind share one (``leaves.BRANCH``).
    no_grad = lambda: jnp.zeros((spec.MAX_PARAMS,), adj.dtype)
    branches = [no_grad] * (leaves.NUM_BRANCHES - 1)
    time1, time2 = leaves.time_column(t1), leaves.time_column(t2)
    for op_ in spec.ATOMS:
        if leaves.BRANCH[op_] == op_:
            branches[op_] = functools.partial(leaves.VJP[op_], theta, time1, time2, adj)
    z1, z2 = leaves.input_column(t1, op), leaves.input_column(t2, op)
    for branch, op_ in leaves.COVARIATE_BRANCHES.items():
        branches[branch] = functools.partial(leaves.VJP[op_], theta, z1, z2, adj)
    return jax.lax.switch(jnp.asarray(leaves.BRANCH)[op], branches)


def _leaf_vjp_lags(op, theta, lags, a):
    """A stationary leaf's gradient from its adjoint's lag sums ``a``: sum_ij A_ij dk(r_ij) is
    sum_l a_l dk(lag_l)."""
    zero = jnp.zeros((1,), lags.dtype)
    no_grad = lambda: jnp.zeros((spec.MAX_PARAMS,), a.dtype)
    branches = [no_grad] * spec.NUM_OPS
    for op_ in spec.STATIONARY:
        branches[op_] = functools.partial(leaves.VJP[op_], theta, lags, zero, a[:, None])
    return jax.lax.switch(op, branches)



def gram_backward(ops, theta, x1, x2, cot):
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
    recompute = per_particle_worklist(occupied & product_ancestors(ops), descending=True)
    operators = per_particle_worklist(is_operator, descending=False)
    leaf_list = per_particle_worklist(occupied & ~is_operator, descending=False)

    def particle(p, carry):
        ops_p, theta_p, t1, t2 = ops[p], theta[p], x1[p], x2[p]

        def recompute_node(slot, vals):
            return node_value(ops_p[slot], theta_p[slot], t1, t2, vals, slot)

        return _matrix_pass(p, ops_p, theta_p, t1, t2, cot[p], (recompute, operators, leaf_list),
                            recompute_node, carry)

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

    vals = worklist_loop(recompute, p, recompute_one, vals)
    adjs = jax.lax.dynamic_update_index_in_dim(adjs, cot_p, 0, 0)
    adjs, grads = worklist_loop(operators, p, _push(p, ops_p, theta_p, t1, t2, vals), (adjs, grads))

    def reduce_leaf(slot, grads):
        adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
        return grads.at[p, slot].set(_leaf_vjp(ops_p[slot], theta_p[slot], t1, t2, adj))

    return vals, adjs, worklist_loop(leaf_list, p, reduce_leaf, grads)


def _push(p, ops_p, theta_p, t1, t2, vals):
    """One top-down step through operator ``slot``: its children's adjoints (matrices or lag
    vectors, as ``vals`` and the adjoints are) and its own parameters' gradient."""

    def step(slot, carry):
        adjs, grads = carry
        adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
        kids = children(vals, slot)
        left, right, dtheta = _operator_adjoints(ops_p[slot], theta_p[slot], t1, t2, kids, adj)
        adjs = jax.lax.dynamic_update_index_in_dim(adjs, left, 2 * slot + 1, 0)
        adjs = jax.lax.dynamic_update_index_in_dim(adjs, right, 2 * slot + 2, 0)
        return adjs, grads.at[p, slot].set(dtheta)

    return step


def gram_backward_grid(ops, theta, x, cot):
    """:func:`gram_backward` on regular grids, with stationary subtrees in lag space.

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
    stationary = stationary_nodes(ops)
    matrix = matrix_nodes(ops, stationary)
    lags = x - x[:, :1]
    lagbuf = all_lags(ops, theta, lags, stationary)
    recompute = per_particle_worklist(matrix & product_ancestors(ops), descending=True)
    operators = per_particle_worklist(is_operator & ~stationary, descending=False)
    boundary = per_particle_worklist(matrix & stationary, descending=False)
    lag_operators = per_particle_worklist(is_operator & stationary, descending=False)
    leaf = occupied & ~is_operator
    leaf_list = per_particle_worklist(leaf & ~stationary, descending=False)
    lag_leaf_list = per_particle_worklist(leaf & stationary, descending=False)

    def particle(p, carry):
        vals, adjs, lag_adjs, grads = carry
        ops_p, theta_p, t, lags_p, lag_p = ops[p], theta[p], x[p], lags[p], lagbuf[p]

        def recompute_node(slot, vals):
            op = jnp.where(stationary[p, slot], EXPAND, ops_p[slot])
            return node_value(op, theta_p[slot], t, t, vals, slot, lag_p[slot])

        vals, adjs, grads = _matrix_pass(p, ops_p, theta_p, t, t, cot[p],
                                         (recompute, operators, leaf_list), recompute_node,
                                         (vals, adjs, grads))

        def to_lags(slot, lag_adjs):
            adj = jax.lax.dynamic_index_in_dim(adjs, slot, keepdims=False)
            return lag_adjs.at[slot].set(lag_sums(adj))

        lag_adjs = worklist_loop(boundary, p, to_lags, lag_adjs)
        lag_adjs, grads = worklist_loop(
            lag_operators, p, _push(p, ops_p, theta_p, lags_p, lags_p, lag_p), (lag_adjs, grads)
        )

        def reduce_lag_leaf(slot, grads):
            return grads.at[p, slot].set(_leaf_vjp_lags(ops_p[slot], theta_p[slot], lags_p,
                                                        lag_adjs[slot]))

        grads = worklist_loop(lag_leaf_list, p, reduce_lag_leaf, grads)
        return vals, adjs, lag_adjs, grads

    carry = (
        jnp.zeros((S, N, N), dtype),
        jnp.zeros((S, N, N), dtype),
        jnp.zeros((S, N), dtype),
        jnp.zeros((P, S, spec.MAX_PARAMS), dtype),
    )
    return jax.lax.fori_loop(0, P, particle, carry)[-1]



__all__ = ["gram_backward", "gram_backward_grid"]
