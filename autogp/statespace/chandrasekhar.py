"""The Kalman filter's likelihood of a time-invariant model by the Chandrasekhar recursions
(Morf, Sidhu and Kailath 1974): ``O(N D r b)`` work instead of ``O(N D^2 b)``.

On a regular grid with every point observed and no change point, the transition ``A``, the
observation ``H``, its noise ``R`` and the process noise ``Q = P(t + dt) - A P(t) A^T`` are the
same at every step where ``LIN``, ``BM`` and ``IBM`` sit under sums only (times another atom,
``Q`` grows with their ``P(t)``) and ``BM`` and ``IBM`` start at or before the first point.
The predicted covariances ``P_k`` then change by increments of a fixed rank: with
``S_k = H P_k H^T + R`` and ``G_k = A P_k H^T``, ``P_(k+1) - P_k = Y_k M_k Y_k^T`` and

* ``S_(k+1) = S_k + h^T M_k h``, ``h = Y_k^T H^T``;
* ``G_(k+1) = G_k + A Y_k M_k h``;
* ``M_(k+1) = M_k + M_k h h^T M_k / S_k``;
* ``Y_(k+1) = (A - G_(k+1) H / S_(k+1)) Y_k``;

so the filter carries ``Y [D, r]`` and ``M [r, r]`` instead of ``P [D, D]``. The first increment
is ``P(t_1) - P(t_0) - G_0 G_0^T / S_0``: the marginal's change is non-zero only on the states
whose Kronecker chain holds a ``LIN``, ``BM`` or ``IBM`` (``Layout.moving``), taken as
coordinate columns of ``Y`` with their block of the change as ``M``, and the update adds ``G_0``
with ``-1 / S_0``. A tree with more moving states than ``rank - 1`` is not time-invariant here.
The gradient is reverse mode through the scan, its steps recomputed (the carries are small).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from autogp.kernels import atom_table as at
from autogp.kernels import spec
from autogp.statespace import compose
from autogp.statespace.filter import RANK, Model, Options, marginal, observation, transition

#: Steps unrolled per loop iteration of the scan.
UNROLL = 4
_LOG_2PI = math.log(2.0 * math.pi)


def time_invariant(mod: Model, x, ok, rank: int = RANK):
    """Whether the Chandrasekhar recursions give this tree's exact likelihood on ``x`` (a
    regular grid the caller vouches for): supported, every point observed, no change point,
    ``LIN``, ``BM`` and ``IBM`` in no product, ``BM``/``IBM`` origins at or before the first
    point, at most ``rank - 1`` moving states."""
    lay = mod.layout
    ops = mod.ops
    walks = lay.reach & ((ops == at.BM) | (ops == at.IBM))
    late_origin = jnp.any(walks & (mod.theta[:, 0] > x[0]))
    change_point = jnp.any(lay.reach & (ops == spec.CP))
    in_product = jnp.any(lay.moving & (lay.factors > 1))
    return ((lay.reason == 0) & jnp.all(ok) & ~late_origin & ~change_point & ~in_product
            & (jnp.sum(lay.moving) <= rank - 1))


def _block_left(B, M):
    """``blockdiag(B) @ M`` by broadcasting: XLA:CPU fuses it, where it loops over small
    batched products."""
    nb, b = B.shape[0], B.shape[1]
    return jnp.sum(B[:, :, :, None] * M.reshape(nb, 1, b, -1), axis=2).reshape(M.shape)


def log_likelihood(mod: Model, x, y, options: Options, rank: int = RANK):
    """log p(y) of one time-invariant tree (see :func:`time_invariant`; otherwise the value is
    meaningless) on the regular grid ``x``, every ``y`` observed."""
    D = options.dim
    A = transition(mod, x[1] - x[0], options.harmonics)
    P0 = marginal(mod, x[0])
    change = compose.dense(marginal(mod, x[1]) - P0)
    H, r = observation(mod, x[0])
    H = jax.lax.stop_gradient(H)  # no change point: H holds only ones and zeros
    P0H = compose.block_matvec(P0, H)
    S0 = H @ P0H + r
    G0 = compose.block_matvec(A, P0H)
    which = jnp.nonzero(mod.layout.moving, size=rank - 1, fill_value=D)[0]
    pick = jax.nn.one_hot(which, D, dtype=P0.dtype).T  # [D, rank - 1]; a fill is a zero column
    Y = jnp.concatenate([pick, G0[:, None]], axis=1)
    M = jnp.zeros((rank, rank), P0.dtype).at[:-1, :-1].set(pick.T @ change @ pick)
    M = M.at[-1, -1].set(-1.0 / S0)

    @jax.checkpoint
    def step(carry, yk):
        m, G, S, Y, M, ll = carry
        v = yk - H @ m
        ll = ll - 0.5 * (_LOG_2PI + jnp.log(S) + v * v / S)
        m = _block_left(A, m[:, None])[:, 0] + G * (v / S)
        h = H @ Y
        Mh = M @ h
        AY = _block_left(A, Y)
        S_next = S + h @ Mh
        G_next = G + AY @ Mh
        M_next = M + jnp.outer(Mh, Mh) / S
        Y_next = AY - jnp.outer(G_next, h) / S_next
        return (m, G_next, S_next, Y_next, M_next, ll), None

    init = (jnp.zeros(D, P0.dtype), G0, S0, Y, M, jnp.zeros((), P0.dtype))
    (*_, ll), _ = jax.lax.scan(step, init, y, unroll=UNROLL)
    return ll


__all__ = ["RANK", "log_likelihood", "time_invariant"]
