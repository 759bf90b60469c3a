"""The Kalman filter's log of a packed tree, laid out for one compiled program.

Per tree, :func:`compose.layout` lays the model out in a fixed state dimension ``dim``; a
``lax.scan`` over the (sorted) time points then predicts and updates, vmapped over the trees.
The covariance is carried as ``E = P_filtered - P(t)``, its deviation from the prior marginal:
the prediction over a step is then ``A E A^T + P(t_next)``, which is the textbook
``A P A^T + Q`` with ``Q = P(t_next) - A P(t) A^T`` for one product fewer, and which needs no
separate process noise for non-stationary atoms.

Masked or NaN targets are skipped (the prediction still moves on), so the value is the marginal
likelihood of the observed points, as the dense evaluator's with the same mask.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels.transforms import constrain
from autogp.statespace import compose
from autogp.statespace.models import MAX_HARMONICS, PER_TOLERANCE

#: Default most atoms on one Kronecker chain.
MAX_FACTORS = 4
#: Default size of the transition's diagonal blocks (LIN, PER's harmonics times a Matern 3/2).
BLOCK = 4
#: Default rank of the Chandrasekhar recursions' covariance increments (moving states plus one).
RANK = 4
_LOG_2PI = math.log(2.0 * math.pi)


class Options(NamedTuple):
    """Static choices of the state-space form (hashable: they select the compiled program)."""

    dim: int  # the state dimension every tree is laid out in (a cap; a multiple of block)
    tolerance: float = PER_TOLERANCE
    harmonics: int = MAX_HARMONICS
    max_factors: int = MAX_FACTORS
    block: int = BLOCK
    rank: int = RANK


class Model(NamedTuple):
    """One tree's time-invariant parts: natural parameters, index maps, PER's weights."""

    ops: jax.Array
    theta: jax.Array
    layout: compose.Layout
    per_q2: jax.Array
    noise_var: jax.Array


def model(ops, params, noise, options: Options) -> Model:
    theta = constrain(ops, params)
    lay = compose.layout(ops, jax.lax.stop_gradient(theta), options.dim,
                         tolerance=options.tolerance, harmonics=options.harmonics,
                         max_factors=options.max_factors, block=options.block)
    per_q2 = compose.covariance_weights(ops, theta, options.harmonics)
    return Model(ops, theta, lay, per_q2, jnp.exp(noise))


def transition(mod: Model, dt, harmonics: int):
    """The diagonal blocks of ``A(dt)``: ``[D / block, block, block]``."""
    return compose.gather(compose.transition_table(mod.ops, mod.theta, dt, harmonics),
                          mod.layout.idx_a)


def marginal(mod: Model, t):
    """The diagonal blocks of the prior state covariance ``P(t)``."""
    return compose.gather(compose.covariance_table(mod.ops, mod.theta, t, mod.per_q2),
                          mod.layout.idx_p)


def observation(mod: Model, t):
    """``H(t)`` ``[D]`` and the observation-noise variance at ``t`` (noise plus white noise)."""
    table = compose.observation_table(mod.ops, mod.theta, t)
    H = compose.gather(table, mod.layout.idx_h)
    return H, mod.noise_var + compose.observation_noise(mod.layout, mod.theta, table)


def steps(x):
    """Each point's step from the one before (0 for the first)."""
    return jnp.diff(x, prepend=x[:1])


def observed(y, mask):
    ok = jnp.isfinite(y) if mask is None else mask & jnp.isfinite(y)
    return jnp.where(ok, y, 0.0), ok


def kalman_scan(mod: Model, x, y, ok, options: Options, regular_grid: bool, keep: str = "none"):
    """Run the filter: ``(log likelihood, per-step outputs)``. ``keep``: ``"smoother"`` keeps
    per step the predicted mean and covariance (``m^-``, ``P^-``), ``H``, the innovation
    variance and the innovation; ``"adjoint"`` the filtered mean and ``E`` before the step
    (what the adjoint gradient recomputes the rest from); ``"none"`` nothing."""
    D = options.dim
    fixed_a = transition(mod, x[1] - x[0], options.harmonics) if regular_grid else None

    def step(carry, inp):
        m, E, ll = carry
        t, dt, yt, okt = inp
        A = fixed_a if regular_grid else transition(mod, dt, options.harmonics)
        H, r = observation(mod, t)
        m = compose.block_matvec(A, m)
        AE = compose.block_sandwich(A, E)
        Pm = compose.add_blocks(AE, marginal(mod, t))
        PH = Pm @ H
        S = H @ PH + r
        v = yt - H @ m
        m_new = jnp.where(okt, m + PH * (v / S), m)
        E_new = jnp.where(okt, AE - jnp.outer(PH, PH) / S, AE)
        E_new = 0.5 * (E_new + E_new.T)
        ll = ll + jnp.where(okt, -0.5 * (_LOG_2PI + jnp.log(S) + v * v / S), 0.0)
        kept = {"smoother": (m, Pm, H, S, v), "adjoint": carry[:2], "none": None}[keep]
        return (m_new, E_new, ll), kept

    dtype = mod.theta.dtype
    init = (jnp.zeros(D, dtype), jnp.zeros((D, D), dtype), jnp.zeros((), dtype))
    (_, _, ll), outs = jax.lax.scan(step, init, (x, steps(x), y, ok))
    return ll, outs


@functools.partial(jax.jit, static_argnames=("options",))
def _support(ops, params, options):
    def one(o, p):
        return compose.support(o, constrain(o, p), options.dim, tolerance=options.tolerance,
                               harmonics=options.harmonics, max_factors=options.max_factors,
                               block=options.block)

    return jax.vmap(one)(ops, params)


def support(ops, params, *, dim: int, tolerance: float = PER_TOLERANCE,
            harmonics: int = MAX_HARMONICS, max_factors: int = MAX_FACTORS, block: int = BLOCK):
    """Which trees have a state-space form in dimension ``dim``: a :class:`Support` of numpy
    arrays ``[P]``: ``reason`` a key of ``compose.REASONS`` (0: supported), ``n`` each tree's
    state dimension (capped at ``dim + 1``), ``used`` the states of its blocked layout and
    ``biggest`` its largest transition block, from which a caller picks the buckets ``dim``
    and ``block``."""
    options = Options(round_up(dim, block), tolerance, harmonics, max_factors, block)
    out = _support(jnp.asarray(ops), jnp.asarray(params), options)
    return Support(*(np.asarray(a) for a in out))


class Support(NamedTuple):
    reason: np.ndarray
    n: np.ndarray
    used: np.ndarray
    biggest: np.ndarray


def round_up(dim: int, block: int) -> int:
    return -(-int(dim) // block) * block


def broadcast_data(P, x, y, mask):
    x = jnp.broadcast_to(jnp.asarray(x), (P, jnp.shape(x)[-1]))
    y = jnp.broadcast_to(jnp.asarray(y, x.dtype), x.shape)
    mask = jnp.ones(x.shape, bool) if mask is None else jnp.broadcast_to(mask, x.shape)
    return x, y, mask


__all__ = [
    "BLOCK", "MAX_FACTORS", "RANK", "Model", "Options", "Support", "broadcast_data", "kalman_scan",
    "marginal", "model", "observation", "observed", "round_up", "steps", "support", "transition",
]  # fmt: skip
