"""A packed tree's state-space model at a fixed state dimension: sums, products, change points.

Sums stack the children's states (block-diagonal ``A`` and ``P``, ``H`` concatenated); products
take Kronecker products (``A1 kron A2``, ``P1(t) kron P2(t)``, ``H1 kron H2``: exact for the
product of independent processes, stationary or not); a change point stacks both sides' states
and observes ``[s(t) H1, (1 - s(t)) H2]``.

Every tree of a batch is laid out in the same fixed dimension ``D`` (a cap) by traced index
maps, so one compiled program serves every structure. Each root state ``i`` is a product of
*factors*, one state of each atom on its Kronecker chain (and, for ``H``, one sigmoid per change
point above it). A root entry ``(i, j)`` is non-zero only where ``i`` and ``j`` have the same
chain of atoms, and is then the product of the atoms' entries: so each root matrix is a gather
from small per-atom tables followed by a product over at most ``max_factors`` factors. States
``>= n`` (the tree's own dimension) are inactive: ``A = P = H = 0`` there.

A tree is *supported* when every atom has a state-space form (``models.SUPPORTED``), white noise
sits under sums and change points only (it is observation noise), PER needs at most
``harmonics`` harmonics, no product has more than ``max_factors`` atoms, and its dimension is at
most ``D``. :data:`REASONS` names the first failure per tree.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels import atom_table as at
from autogp.kernels import spec
from autogp.statespace import models
from autogp.statespace.models import SMALL

#: Why a tree has no state-space model here (0: it has one).
REASONS: Final = {
    0: "supported",
    1: "an atom with no state-space form (SE, GE, RQ, IOU)",
    2: "white noise inside a product",
    3: "a PER length scale too short for the harmonics cap",
    4: "a product of more atoms than max_factors",
    5: "state dimension over the cap",
    6: "a Kronecker block of the transition larger than the block size",
}


#: Atoms whose marginal state covariance ``P(t)`` changes with ``t``.
MOVING: Final = (at.LIN, at.BM, at.IBM)


class Layout(NamedTuple):
    """One tree's index maps into its per-step tables (time-invariant; ints)."""

    idx_a: jax.Array  # [K, D, D] into the transition table
    idx_p: jax.Array  # [K, D, D] into the marginal-covariance table
    idx_h: jax.Array  # [K + C, D] into the observation table
    wn_weight: jax.Array  # [S, C] change-point sigmoid codes of each WN slot (into the H table)
    is_wn: jax.Array  # [S] bool: reachable white noise
    leaf: jax.Array  # [D] the atom slot of each root state's first factor (-1: inactive)
    moving: jax.Array  # [D] bool: a LIN, BM or IBM on the state's chain (its P(t) moves in t)
    factors: jax.Array  # [D] the number of atoms on each state's chain
    reach: jax.Array  # [S] bool: slots reachable from the root
    n: jax.Array  # the tree's state dimension (capped at D + 1)
    used: jax.Array  # the states it occupies in the blocked layout (alignment included)
    biggest: jax.Array  # its largest transition block
    reason: jax.Array  # int, a key of REASONS


def _heap(slots: int):
    """Static heap facts: reachable-from-root needs ops; parents and sides are fixed."""
    depth = int(np.log2(slots + 1)) - 1
    ancestors = np.full((slots, depth), -1, np.int32)  # change-point ancestors, nearest first
    left = np.zeros((slots, depth), bool)
    for s in range(slots):
        child, k = s, 0
        while child > 0:
            parent = (child - 1) // 2
            ancestors[s, k], left[s, k] = parent, child % 2 == 1
            child, k = parent, k + 1
    return depth, ancestors, left


def table_sizes(slots: int, harmonics: int):
    """Offsets of the per-step tables (see :func:`transition_table` and friends)."""
    small = slots * SMALL * SMALL
    wave = slots * (harmonics + 1)
    return small, wave


def layout(ops, theta, dim: int, *, tolerance: float, harmonics: int, max_factors: int,
           block: int) -> Layout:
    """The index maps of one tree ``ops [S]``, natural ``theta [S, MAX_PARAMS]`` in dimension
    ``dim`` (a multiple of ``block``). Traced: every argument but the static sizes may be a
    tracer."""
    S = ops.shape[0]
    K, D = max_factors, dim
    depth, anc, is_left = _heap(S)
    C = max(depth, 1)
    n_leaf = models.leaf_dims(ops, theta, tolerance, harmonics)
    is_atom = jnp.asarray(spec.IS_ATOM)[ops]
    is_op = jnp.asarray(spec.IS_OPERATOR)[ops]
    # reachable slots: the root, and children of reachable operators
    reach = [None] * S
    for s in range(S):
        reach[s] = jnp.asarray(True) if s == 0 else reach[(s - 1) // 2] & is_op[(s - 1) // 2]
    reach = jnp.stack(reach)
    supported_atom = jnp.isin(ops, jnp.asarray(models.SUPPORTED))
    per_order = models.per_order(jnp.where(ops == at.PER, theta[:, 0], 1.0), tolerance, harmonics)
    times_above = jnp.zeros((S,), bool)
    for k in range(depth):
        a = jnp.asarray(anc[:, k])
        times_above = times_above | ((a >= 0) & (ops[jnp.maximum(a, 0)] == spec.TIMES))
    is_wn = reach & (ops == at.WN)

    i = jnp.arange(D)
    kk = jnp.arange(K)[:, None]
    nodes: list = [None] * S
    too_many = jnp.asarray(False)
    for s in range(S - 1, -1, -1):
        n_a = n_leaf[s]
        on = i < n_a
        atom = (jnp.where((kk == 0) & on, s, -1).astype(jnp.int32),
                jnp.where((kk == 0) & on, i, -1).astype(jnp.int32),
                on.astype(jnp.int32), jnp.full((C, D), -1, jnp.int32), jnp.zeros(D, jnp.int32),
                n_a)
        if 2 * s + 2 >= S:
            nodes[s] = atom
            continue
        (fl, rl, cl, gl, ncl, nl), (fr, rr, cr, gr, ncr, nr) = nodes[2 * s + 1], nodes[2 * s + 2]
        # sum and change point: the left's states, then the right's
        from_left = i < nl
        j = jnp.clip(jnp.where(from_left, i, i - nl), 0, D - 1)
        n_sum = jnp.minimum(nl + nr, D + 1)
        on_sum = i < n_sum

        def pick(a, b, from_left=from_left, j=j, on=on_sum, fill=-1):
            return jnp.where(on, jnp.where(from_left, a[..., j], b[..., j]), fill)

        f_sum, r_sum = pick(fl, fr), pick(rl, rr)
        c_sum, g_sum, nc_sum = pick(cl, cr, fill=0), pick(gl, gr), pick(ncl, ncr, fill=0)
        code = jnp.where(from_left, s * 2, s * 2 + 1)
        cp_g = jnp.where((jnp.arange(C)[:, None] == nc_sum) & on_sum, code, g_sum)
        cp_nc = jnp.where(on_sum, nc_sum + 1, 0)
        # product: state i is (i // n_r, i % n_r)
        nr1 = jnp.maximum(nr, 1)
        il, ir = jnp.clip(i // nr1, 0, D - 1), i % nr1
        n_prod = jnp.minimum(nl * nr, D + 1)
        on_prod = i < n_prod
        cnt_l = cl[il]
        shifted = jnp.clip(kk - cnt_l, 0, K - 1)

        def chain(a, b, il=il, ir=ir, cnt_l=cnt_l, shifted=shifted, on=on_prod):
            left_part = a[:, il]
            right_part = jnp.take_along_axis(b[:, ir], shifted, axis=0)
            return jnp.where(on, jnp.where(kk < cnt_l, left_part, right_part), -1)

        f_prod, r_prod = chain(fl, fr), chain(rl, rr)
        c_prod = jnp.where(on_prod, cnt_l + cr[ir], 0)
        ncl_i = ncl[il]
        shifted_c = jnp.clip(jnp.arange(C)[:, None] - ncl_i, 0, C - 1)
        g_prod = jnp.where(on_prod, jnp.where(jnp.arange(C)[:, None] < ncl_i, gl[:, il],
                                              jnp.take_along_axis(gr[:, ir], shifted_c, 0)), -1)
        nc_prod = jnp.where(on_prod, ncl_i + ncr[ir], 0)
        op = ops[s]
        too_many = too_many | (reach[s] & (op == spec.TIMES) & jnp.any(c_prod > K))
        cases = {
            spec.PLUS: (f_sum, r_sum, c_sum, g_sum, nc_sum, n_sum),
            spec.CP: (f_sum, r_sum, c_sum, cp_g, cp_nc, n_sum),
            spec.TIMES: (f_prod, r_prod, c_prod, g_prod, nc_prod, n_prod),
        }
        node = atom
        for code_op, case in cases.items():
            node = tuple(jnp.where(op == code_op, c, a) for c, a in zip(case, node, strict=True))
        nodes[s] = node
    F, R, _, G, _, n = nodes[0]
    n = jnp.asarray(n, jnp.int32)
    F, R, G, used, biggest = _blocked(ops, F, R, G, n, block)

    reason = jnp.asarray(0, jnp.int32)
    per_short = jnp.any(reach & (ops == at.PER) & (per_order > harmonics))
    unsupported = jnp.any(reach & is_atom & ~supported_atom)
    checks = ((6, biggest > block), (5, (n > D) | (used > D)), (4, too_many), (3, per_short),
              (2, jnp.any(is_wn & times_above)), (1, unsupported))
    for code, bad in checks:
        reason = jnp.where(bad, code, reason)

    small, wave = table_sizes(S, harmonics)
    idx_a, idx_p = _matrix_indices(ops, F, R, small, wave, harmonics)
    idx_h = _row_indices(ops, F, R, G, S)
    idx_a, idx_p = _diagonal_blocks(idx_a, block), _diagonal_blocks(idx_p, block)
    # white noise under change points: its variance times the squared sigmoids above it
    codes = []
    for k in range(depth):
        a = anc[:, k]
        code = np.where(is_left[:, k], 2 * a, 2 * a + 1)
        codes.append(jnp.where(jnp.asarray(a >= 0) & (ops[np.maximum(a, 0)] == spec.CP),
                               _cp_offset(S) + jnp.asarray(code), _one_h(S)))
    wn_weight = (jnp.stack(codes, -1) if codes else jnp.full((S, 1), _one_h(S))).astype(jnp.int32)
    moving = jnp.any((F >= 0) & jnp.isin(ops[jnp.maximum(F, 0)], jnp.asarray(MOVING)), axis=0)
    return Layout(idx_a, idx_p, idx_h, wn_weight, is_wn, F[0], moving, jnp.sum(F >= 0, axis=0),
                  reach, n, used, biggest, reason)


def _blocked(ops, F, R, G, n, block: int):
    """Reorder the root states so that the transition is block-diagonal with blocks of
    ``block`` states: states with the same atoms and, for PER, the same harmonics on their
    chain form one Kronecker block; blocks go in order, each starting at the next multiple of
    ``block`` when it would straddle one. Returns the reordered maps (-1 on unused states),
    the states used and the largest block."""
    D = F.shape[1]
    i = jnp.arange(D)
    valid = i < n
    harmonic = jnp.where(ops[jnp.maximum(F, 0)] == at.PER, (R + 1) // 2, 0)
    chain = (F[:, :, None] == F[:, None, :]) & (harmonic[:, :, None] == harmonic[:, None, :])
    same = valid[:, None] & valid[None, :] & jnp.all(chain, 0)
    first = jnp.argmax(same, axis=1)
    opens = valid & (first == i)
    block_of = (jnp.cumsum(opens) - 1)[first]
    position = jnp.sum(same & (i[None, :] < i[:, None]), axis=1)
    sizes = jnp.zeros(D, jnp.int32).at[jnp.where(valid, block_of, D)].add(1, mode="drop")

    def place(offset, size):
        start = jnp.where(offset % block + size > block, -(-offset // block) * block, offset)
        return start + size, start

    used, starts = jax.lax.scan(place, jnp.asarray(0, jnp.int32), sizes)
    target = jnp.where(valid, starts[block_of] + position, D)
    source = jnp.full(D, -1, jnp.int32).at[target].set(i.astype(jnp.int32), mode="drop")
    on = source >= 0
    src = jnp.maximum(source, 0)
    move = lambda a: jnp.where(on, a[:, src], -1)  # noqa: E731
    return move(F), move(R), move(G), used, jnp.max(sizes)


def _diagonal_blocks(idx, block: int):
    """``[K, D, D]`` -> its diagonal blocks ``[K, D / block, block, block]``."""
    K, D = idx.shape[0], idx.shape[1]
    nb = D // block
    r = idx.reshape(K, nb, block, nb, block)
    ar = jnp.arange(nb)
    return jnp.moveaxis(r[:, ar, :, ar, :], 0, 1)


def support(ops, theta, dim: int, *, tolerance: float, harmonics: int, max_factors: int,
            block: int):
    """``(reason, n, used, biggest)`` of one tree: a key of :data:`REASONS`, its state
    dimension (capped at ``dim + 1``), the states its blocked layout occupies and its largest
    transition block."""
    lay = layout(ops, theta, dim, tolerance=tolerance, harmonics=harmonics,
                 max_factors=max_factors, block=block)
    return lay.reason, lay.n, lay.used, lay.biggest


# --- flat tables ---------------------------------------------------------------------------------
# The transition table: [small A (S*16) | cos (S*W) | sin (S*W) | -sin (S*W) | 0 | 1],
# the covariance table: [small P (S*16) | q^2 (S*W) | 0 | 1], W = harmonics + 1;
# the observation table: [small H (S*4) | s(t), 1 - s(t) per slot (2 S) | 0 | 1].
def _matrix_indices(ops, F, R, small, wave, harmonics):
    W = harmonics + 1
    zero_a, one_a = small + 3 * wave, small + 3 * wave + 1
    zero_p, one_p = small + wave, small + wave + 1
    l = jnp.maximum(F, 0)[:, :, None]  # [K, D, 1]
    present = (F >= 0)[:, :, None]
    ri, rj = R[:, :, None], R[:, None, :]
    is_per = (ops[l] == at.PER)
    h = (ri + 1) // 2
    base_small = l * SMALL * SMALL + jnp.clip(ri, 0, SMALL - 1) * SMALL + jnp.clip(rj, 0, SMALL - 1)
    wave_at = l * W + h
    diag = ri == rj
    up = (ri % 2 == 1) & (rj == ri + 1)  # cos row, sin column: -sin
    down = (ri > 0) & (ri % 2 == 0) & (rj == ri - 1)  # sin row, cos column: +sin
    cos_at, sin_at, neg_sin_at = small + wave_at, small + wave + wave_at, small + 2 * wave + wave_at
    per_a = jnp.where(diag, cos_at, jnp.where(up, neg_sin_at, jnp.where(down, sin_at, zero_a)))
    per_p = jnp.where(diag, small + wave_at, zero_p)
    idx_a = jnp.where(present, jnp.where(is_per, per_a, base_small), one_a)
    idx_p = jnp.where(present, jnp.where(is_per, per_p, base_small), one_p)
    on = F[0] >= 0
    active = on[:, None] & on[None, :] & jnp.all(F[:, :, None] == F[:, None, :], axis=0)
    idx_a = idx_a.at[0].set(jnp.where(active, idx_a[0], zero_a))
    idx_p = idx_p.at[0].set(jnp.where(active, idx_p[0], zero_p))
    return idx_a.astype(jnp.int32), idx_p.astype(jnp.int32)


def _cp_offset(S):
    return S * SMALL


def _one_h(S):
    return S * SMALL + 2 * S + 1


def _row_indices(ops, F, R, G, S):
    zero_h, one_h = _one_h(S) - 1, _one_h(S)
    l = jnp.maximum(F, 0)
    is_per = ops[l] == at.PER
    per_h = jnp.where((R == 0) | (R % 2 == 1), one_h, zero_h)
    idx = jnp.where(F >= 0, jnp.where(is_per, per_h, l * SMALL + jnp.clip(R, 0, SMALL - 1)), one_h)
    cp = jnp.where(G >= 0, _cp_offset(S) + G, one_h)
    idx = jnp.concatenate([idx, cp], axis=0)
    return jnp.where(F[0] >= 0, idx, zero_h).astype(jnp.int32)


# --- the per-step tables ---------------------------------------------------------------------
def transition_table(ops, theta, dt, harmonics: int):
    """Flat transition table of one tree over a step ``dt`` (see the layout above)."""
    omega = 2.0 * jnp.pi / jnp.where(ops == at.PER, theta[:, 1], 1.0)
    phase = omega[:, None] * jnp.arange(harmonics + 1) * dt
    cos, sin = jnp.cos(phase).ravel(), jnp.sin(phase).ravel()
    small = models.small_transition(ops, theta, dt).ravel()
    return jnp.concatenate([small, cos, sin, -sin, jnp.array([0.0, 1.0], theta.dtype)])


def covariance_weights(ops, theta, harmonics: int):
    """PER's ``amp q_j^2`` ``[S, harmonics + 1]`` (time-invariant; 0 in other slots)."""
    l = jnp.where(ops == at.PER, theta[:, 0], 1.0)
    q, _ = models.per_weights(l, harmonics)
    return jnp.where((ops == at.PER)[:, None], theta[:, 2:3] * q, 0.0)


def covariance_table(ops, theta, t, per_q2):
    """Flat marginal-covariance table of one tree at time ``t``."""
    small = models.small_marginal(ops, theta, t).ravel()
    return jnp.concatenate([small, per_q2.ravel(), jnp.array([0.0, 1.0], theta.dtype)])


def observation_table(ops, theta, t):
    """Flat observation table at time ``t``: atoms observe their first state; change points'
    sigmoids ``s(t)`` (left) and ``1 - s(t)`` (right)."""
    S = ops.shape[0]
    small = jnp.zeros((S, SMALL), theta.dtype).at[:, 0].set(1.0).ravel()
    cp = ops == spec.CP
    z = (jnp.where(cp, theta[:, 0], 0.0) - t) / jnp.where(cp, theta[:, 1], 1.0)
    s = 0.5 * (1.0 + jnp.tanh(z))
    sides = jnp.stack([s, 1.0 - s], axis=-1).ravel()
    return jnp.concatenate([small, sides, jnp.array([0.0, 1.0], theta.dtype)])


def gather(table, idx):
    """A root matrix, its diagonal blocks or a row: the product over factors of
    ``table[idx]``."""
    return jnp.prod(table[idx], axis=0)


# --- block-diagonal algebra ------------------------------------------------------------------
def block_matvec(B, v):
    """``blockdiag(B) @ v`` for blocks ``B [nb, b, b]``, ``v [nb * b]``."""
    nb, b = B.shape[0], B.shape[1]
    return jnp.einsum("nxy,ny->nx", B, v.reshape(nb, b)).reshape(-1)


def block_rmatvec(B, v):
    """``blockdiag(B)^T @ v``."""
    nb, b = B.shape[0], B.shape[1]
    return jnp.einsum("nyx,ny->nx", B, v.reshape(nb, b)).reshape(-1)


def block_sandwich(B, M, transpose: bool = False):
    """``A M A^T`` (``A^T M A`` with ``transpose``) for ``A = blockdiag(B)``: ``2 D^2 b``
    flops instead of ``2 D^3``."""
    nb, b = B.shape[0], B.shape[1]
    M4 = M.reshape(nb, b, nb, b)
    spec_left, spec_right = ("iyx,iyjz->ixjz", "ixjz,jzw->ixjw") if transpose else (
        "ixy,iyjz->ixjz", "ixjz,jwz->ixjw")
    return jnp.einsum(spec_right, jnp.einsum(spec_left, B, M4), B).reshape(M.shape)


def block_left(B, M):
    """``blockdiag(B) @ M``."""
    nb, b = B.shape[0], B.shape[1]
    return jnp.einsum("ixy,iyj->ixj", B, M.reshape(nb, b, -1)).reshape(M.shape)


def add_blocks(M, B):
    """``M + blockdiag(B)``."""
    nb, b = B.shape[0], B.shape[1]
    ar = jnp.arange(nb)
    return M.reshape(nb, b, nb, b).at[ar, :, ar, :].add(B).reshape(M.shape)


def dense(B):
    """``blockdiag(B)`` as a ``[D, D]`` matrix."""
    return add_blocks(jnp.zeros((B.shape[0] * B.shape[1],) * 2, B.dtype), B)


def observation_noise(lay: Layout, theta, h_table):
    """White noise's variance at ``t``: each reachable WN's ``v`` times its change points'
    squared sigmoids."""
    w = jnp.prod(h_table[lay.wn_weight], axis=-1)
    return jnp.sum(jnp.where(lay.is_wn, theta[:, 0] * w * w, 0.0))


__all__ = [
    "MOVING", "REASONS", "Layout", "add_blocks", "block_left", "block_matvec", "block_rmatvec",
    "block_sandwich", "covariance_table", "covariance_weights", "dense", "gather", "layout",
    "observation_noise", "observation_table", "support", "transition_table",
]  # fmt: skip
