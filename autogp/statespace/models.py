"""Each atom's state-space model: transition over a step, marginal state covariance, observation.

A node of the grammar is a linear-Gaussian state-space model ``(A(dt), P(t), H)``: the state
moves by ``x(t + dt) = A(dt) x(t) + noise``, has marginal covariance ``P(t)`` and is observed as
``f(t) = H x(t)``; the process noise of a step is ``P(t + dt) - A P(t) A^T``. Exact forms:

* ``CONST``: one state, ``A = 1``, ``P = c``;
* ``LIN``: state ``[f, slope]`` with ``f(t) = b + w (t - intercept)``: ``A = [[1, dt], [0, 1]]``,
  ``P(t) = [[bias + amp u^2, amp u], [amp u, amp]]``, ``u = t - intercept`` (no process noise);
* ``BM``: one state, ``A = 1``, ``P(t) = amp max(t - origin, 0)``;
* ``IBM``: state ``[f, f']``, ``A = [[1, dt], [0, 1]]``, ``P(t) = amp [[s^3/3, s^2/2],
  [s^2/2, s]]``, ``s = max(t - origin, 0)``;
* Matern ``nu = d - 1/2`` (``M12``, ``M32``, ``M52``, ``M72``): the companion form of
  ``(D + lam)^d f = white noise``, ``lam = sqrt(2 nu) / l``. Its drift ``F`` has the single
  eigenvalue ``-lam``, so ``F + lam I`` is nilpotent and ``A = exp(F dt)`` is a finite sum;
  ``P[i, j] = (-1)^j k^(i+j)(0)`` from the kernel's Taylor coefficients;
* ``PER``: the resonator expansion of Solin and Sarkka (2014), ``k(r) = amp sum_j q_j^2 cos(j w r)``
  with ``w = 2 pi / period``, ``q_0^2 = I_0(z) e^-z``, ``q_j^2 = 2 I_j(z) e^-z``, ``z = l^-2``:
  state ``[c_0, c_1, s_1, ..., c_J, s_J]`` (``2 J + 1``), rotations ``A``, ``P = diag(q^2)``. The
  order ``J`` is the smallest whose dropped tail ``sum_{j > J} q_j^2`` (the largest error of
  ``k / amp``, at ``r = 0``) is at most a tolerance: the one approximate atom.

``WN`` has no state (it is observation noise); ``SE``, ``GE``, ``RQ`` and ``IOU`` have no exact
finite form here and are left to the dense likelihood. Non-PER atoms use at most
:data:`SMALL` states; their tables are ``[S, SMALL, SMALL]`` for the ``S`` slots of a tree.
"""

from __future__ import annotations

import math
from typing import Final

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels import atom_table as at

#: States of the largest non-PER atom (Matern 7/2).
SMALL: Final = 4
#: Default PER truncation: the dropped share of the variance, at most this (relative to amp).
PER_TOLERANCE: Final = 1e-10
#: Default cap on PER's harmonics (2 J + 1 states).
MAX_HARMONICS: Final = 24

MATERN: Final = {at.M12: 1, at.M32: 2, at.M52: 3, at.M72: 4}  # opcode -> states
#: Atoms with an exact state-space form here, and their state dimension (PER: 2 J + 1).
EXACT_DIMS: Final = {at.CONST: 1, at.LIN: 2, at.BM: 1, at.IBM: 2, at.WN: 0, **MATERN}
SUPPORTED: Final = (*EXACT_DIMS, at.PER)
_TAYLOR = {  # Taylor coefficients c_m of k / amp in q = lam r, m = 0 .. 2 d - 2 (odd ones vanish)
    1: (1.0,),
    2: (1.0, 0.0, -1 / 2),
    3: (1.0, 0.0, -1 / 6, 0.0, 1 / 24),
    4: (1.0, 0.0, -1 / 10, 0.0, 1 / 120, 0.0, -1 / 720),
}


def _matern_stationary(d: int) -> np.ndarray:
    """``P / amp`` of Matern with d states as ``C[i, j] * lam^(i + j)``: C ``[d, d]``."""
    c = _TAYLOR[d]
    out = np.zeros((d, d))
    for i in range(d):
        for j in range(d):
            m = i + j
            out[i, j] = (-1) ** j * math.factorial(m) * c[m]
    return out


_MATERN_P = {d: _matern_stationary(d) for d in MATERN.values()}


def _embed(block):
    """``[..., d, d]`` zero-padded to ``[..., SMALL, SMALL]``."""
    d = block.shape[-1]
    pad = [(0, 0)] * (block.ndim - 2) + [(0, SMALL - d), (0, SMALL - d)]
    return jnp.pad(block, pad)


def _matern_transition(d: int, lam, dt):
    """``exp(F dt)`` ``[..., d, d]`` for the companion drift of ``(D + lam)^d``: with
    ``N = F + lam I`` nilpotent, ``exp(F dt) = e^(-lam dt) sum_{m < d} (N dt)^m / m!``."""
    lam = lam[..., None, None]
    eye = jnp.eye(d)
    coeffs = [math.comb(d, k) for k in range(d)]  # (s + lam)^d = s^d + sum_k C(d,k) lam^(d-k) s^k
    last = jnp.stack([-coeffs[k] * lam[..., 0, 0] ** (d - k) for k in range(d)], axis=-1)
    F = jnp.broadcast_to(jnp.eye(d, k=1), lam.shape[:-2] + (d, d))
    F = F.at[..., d - 1, :].set(last)
    N = F + lam * eye
    dt = jnp.asarray(dt)[..., None, None]
    term = jnp.broadcast_to(eye, N.shape)
    total = term
    for m in range(1, d):
        term = term @ N * (dt / m)
        total = total + term
    return jnp.exp(-lam * dt) * total


def _length(ops, theta, op):
    """The length scale where the slot holds ``op``, else 1: an unselected branch must stay
    finite, or its NaN gradient leaks through the selection."""
    return jnp.where(ops == op, theta[:, 0], 1.0)


def small_transition(ops, theta, dt):
    """``A(dt)`` ``[S, SMALL, SMALL]`` of every non-PER atom in the slots (0 elsewhere)."""
    one = jnp.ones_like(theta[:, 0])
    zero = jnp.zeros_like(one)
    out = jnp.zeros(ops.shape + (SMALL, SMALL), theta.dtype)
    unit = _embed(one[:, None, None])
    ramp = _embed(jnp.stack([jnp.stack([one, dt * one], -1), jnp.stack([zero, one], -1)], -2))
    for op in (at.CONST, at.BM):
        out = jnp.where((ops == op)[:, None, None], unit, out)
    for op in (at.LIN, at.IBM):
        out = jnp.where((ops == op)[:, None, None], ramp, out)
    for op, d in MATERN.items():
        lam = math.sqrt(2 * d - 1) / _length(ops, theta, op)
        out = jnp.where((ops == op)[:, None, None], _embed(_matern_transition(d, lam, dt)), out)
    return out


def small_marginal(ops, theta, t):
    """``P(t)`` ``[S, SMALL, SMALL]`` of every non-PER atom in the slots (0 elsewhere)."""
    out = jnp.zeros(ops.shape + (SMALL, SMALL), theta.dtype)
    a, b, c = theta[:, 0], theta[:, 1], theta[:, 2]
    const = _embed(a[:, None, None])
    u = t - a  # LIN: intercept, bias, amp
    lin = _embed(jnp.stack([jnp.stack([b + c * u * u, c * u], -1),
                            jnp.stack([c * u, c * jnp.ones_like(u)], -1)], -2))
    s = jnp.maximum(t - a, 0.0)  # BM, IBM: origin, amp
    bm = _embed((b * s)[:, None, None])
    ibm = _embed(b[:, None, None] * jnp.stack([jnp.stack([s**3 / 3, s**2 / 2], -1),
                                               jnp.stack([s**2 / 2, s], -1)], -2))
    for op, value in ((at.CONST, const), (at.LIN, lin), (at.BM, bm), (at.IBM, ibm)):
        out = jnp.where((ops == op)[:, None, None], value, out)
    for op, d in MATERN.items():
        lam = math.sqrt(2 * d - 1) / _length(ops, theta, op)
        powers = lam[:, None] ** jnp.arange(d)  # lam^i
        P = b[:, None, None] * _MATERN_P[d] * powers[:, :, None] * powers[:, None, :]
        out = jnp.where((ops == op)[:, None, None], _embed(P), out)
    return out


# --- PER -----------------------------------------------------------------------------------------
def per_weights(l, harmonics: int):
    """``q_j^2`` ``[..., harmonics + 1]`` of ``exp((cos(w r) - 1) / l^2) = sum_j q_j^2 cos(j w r)``
    and the dropped tails ``[..., harmonics + 1]``: entry ``J`` is ``sum_{j > J} q_j^2``, the
    largest error of ``k / amp`` at order ``J`` (at ``r = 0``), for length scales ``l [...]``.

    Ratios ``r_j = I_j / I_(j-1)`` by the backward continued fraction (no overflow at any l),
    normalised by ``e^-z (I_0 + 2 sum_j I_j) = 1``; the tails are summed, not subtracted.
    """
    z = 1.0 / (l * l)
    top = 2 * harmonics + 60

    def ratio(r, j):
        r = 1.0 / (2.0 * j / z + r)
        return r, r

    _, ratios = jax.lax.scan(ratio, jnp.zeros_like(z), jnp.arange(top, 0, -1, dtype=z.dtype))
    rho = jnp.cumprod(jnp.moveaxis(ratios[::-1], 0, -1), axis=-1)  # I_j / I_0, j = 1 .. top
    q0 = 1.0 / (1.0 + 2.0 * jnp.sum(rho, axis=-1))
    q = jnp.concatenate([q0[..., None], 2.0 * q0[..., None] * rho], axis=-1)  # j = 0 .. top
    tails = jnp.cumsum(q[..., ::-1], axis=-1)[..., ::-1]  # sum_{j >= J} q_j
    return q[..., : harmonics + 1], tails[..., 1 : harmonics + 2]


def per_order(l, tolerance: float, harmonics: int):
    """The smallest order ``J <= harmonics`` whose dropped tail is at most ``tolerance``
    (``harmonics + 1`` where none is), per length scale."""
    _, tails = per_weights(l, harmonics)
    meets = tails <= tolerance
    return jnp.where(jnp.any(meets, axis=-1), jnp.argmax(meets, axis=-1), harmonics + 1)


def per_truncation_error(l, tolerance: float = PER_TOLERANCE, harmonics: int = MAX_HARMONICS):
    """The largest error of PER's ``k / amp`` at the order :func:`per_order` picks (at most
    ``harmonics``): ``[...]``."""
    _, tails = per_weights(l, harmonics)
    order = jnp.minimum(per_order(l, tolerance, harmonics), harmonics)
    return jnp.take_along_axis(tails, order[..., None], axis=-1)[..., 0]


def leaf_dims(ops, theta, tolerance: float, harmonics: int):
    """State dimension of each slot's atom ``[S]`` (0 for operators, WN, unsupported atoms;
    PER's at most ``2 harmonics + 1``)."""
    dims = jnp.zeros(ops.shape, jnp.int32)
    for op, d in EXACT_DIMS.items():
        dims = jnp.where(ops == op, d, dims)
    order = per_order(jnp.where(ops == at.PER, theta[:, 0], 1.0), tolerance, harmonics)
    return jnp.where(ops == at.PER, 2 * jnp.minimum(order, harmonics) + 1, dims)


__all__ = [
    "EXACT_DIMS", "MATERN", "MAX_HARMONICS", "PER_TOLERANCE", "SMALL", "SUPPORTED", "leaf_dims",
    "per_order", "per_truncation_error", "per_weights", "small_marginal", "small_transition",
]  # fmt: skip
