"""The Kalman filter's log likelihood of a batch of packed trees: one compiled program.

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
_LOG_2PI = math.log(2.0 * math.pi)


class Options(NamedTuple):
    """Static choices of the state-space form (hashable: they select the compiled program)."""

    dim: int  # the state dimension every tree is laid out in (a cap)
    tolerance: float = PER_TOLERANCE
    harmonics: int = MAX_HARMONICS
    max_factors: int = MAX_FACTORS


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
                         max_factors=options.max_factors)
    per_q2 = compose.covariance_weights(ops, theta, options.harmonics)
    return Model(ops, theta, lay, per_q2, jnp.exp(noise))


def transition(mod: Model, dt, harmonics: int):
    """``A(dt)`` ``[D, D]``."""
    return compose.gather(compose.transition_table(mod.ops, mod.theta, dt, harmonics),
                          mod.layout.idx_a)


def marginal(mod: Model, t):
    """The prior state covariance ``P(t)`` ``[D, D]``."""
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


def kalman_scan(mod: Model, x, y, ok, options: Options, regular_grid: bool):
    """Run the filter: ``(log likelihood, per-step outputs)``. Per step the outputs are the
    predicted mean and covariance (``m^-``, ``P^-``), ``H``, the innovation variance and the
    innovation, which the smoother reuses."""
    D = options.dim
    fixed_a = transition(mod, x[1] - x[0], options.harmonics) if regular_grid else None

    def step(carry, inp):
        m, E, ll = carry
        t, dt, yt, okt = inp
        A = fixed_a if regular_grid else transition(mod, dt, options.harmonics)
        H, r = observation(mod, t)
        m = A @ m
        AE = A @ E @ A.T
        Pm = AE + marginal(mod, t)
        PH = Pm @ H
        S = H @ PH + r
        v = yt - H @ m
        m_new = jnp.where(okt, m + PH * (v / S), m)
        E_new = jnp.where(okt, AE - jnp.outer(PH, PH) / S, AE)
        E_new = 0.5 * (E_new + E_new.T)
        ll = ll + jnp.where(okt, -0.5 * (_LOG_2PI + jnp.log(S) + v * v / S), 0.0)
        return (m_new, E_new, ll), (m, Pm, H, S, v)

    dtype = mod.theta.dtype
    init = (jnp.zeros(D, dtype), jnp.zeros((D, D), dtype), jnp.zeros((), dtype))
    (_, _, ll), outs = jax.lax.scan(step, init, (x, steps(x), y, ok))
    return ll, outs


def _one(ops, params, noise, x, y, mask, options, regular_grid):
    mod = model(ops, params, noise, options)
    fine = mod.layout.reason == 0
    yv, ok = observed(y, mask)
    # An unsupported tree observes nothing (finite, zero gradient) and scores -inf.
    ll, _ = kalman_scan(mod, x, yv, ok & fine, options, regular_grid)
    return jnp.where(fine, ll, -jnp.inf)


@functools.partial(jax.jit, static_argnames=("options", "regular_grid"))
def _batch(ops, params, noise, x, y, mask, options, regular_grid):
    return jax.vmap(_one, in_axes=(0, 0, 0, 0, 0, 0, None, None))(
        ops, params, noise, x, y, mask, options, regular_grid)


@functools.partial(jax.jit, static_argnames=("options",))
def _support(ops, params, options):
    def one(o, p):
        return compose.support(o, constrain(o, p), options.dim, tolerance=options.tolerance,
                               harmonics=options.harmonics, max_factors=options.max_factors)

    return jax.vmap(one)(ops, params)


def support(ops, params, *, dim: int, tolerance: float = PER_TOLERANCE,
            harmonics: int = MAX_HARMONICS, max_factors: int = MAX_FACTORS):
    """Which trees have a state-space form in dimension ``dim``: ``(reason [P], n [P])``,
    numpy; ``reason`` is a key of ``compose.REASONS`` (0: supported) and ``n`` each tree's
    state dimension (capped at ``dim + 1``), from which a caller picks the bucket ``dim``."""
    options = Options(dim, tolerance, harmonics, max_factors)
    reason, n = _support(jnp.asarray(ops), jnp.asarray(params), options)
    return np.asarray(reason), np.asarray(n)


def broadcast_data(P, x, y, mask):
    x = jnp.broadcast_to(jnp.asarray(x), (P, jnp.shape(x)[-1]))
    y = jnp.broadcast_to(jnp.asarray(y, x.dtype), x.shape)
    mask = jnp.ones(x.shape, bool) if mask is None else jnp.broadcast_to(mask, x.shape)
    return x, y, mask


def state_space_log_likelihood(ops, params, noise, x, y, mask=None, *, dim: int,
                               regular_grid: bool = False, tolerance: float = PER_TOLERANCE,
                               harmonics: int = MAX_HARMONICS, max_factors: int = MAX_FACTORS):
    """log p(y[mask] | tree, params, noise) per tree ``[P]`` by the Kalman filter.

    The same arguments as the dense ``evaluator.log_marginal_likelihood`` (packed ``ops [P, S]``,
    unconstrained ``params [P, S, MAX_PARAMS]`` and ``noise [P]``; ``x``, ``y``, ``mask`` ``[N]``
    or ``[P, N]``, ``x`` sorted increasing, NaN targets count as missing) plus the static state
    dimension ``dim`` every tree is laid out in. ``regular_grid``: the steps are all equal (one
    transition matrix). Trees without a state-space form here score ``-inf``: ask
    :func:`autogp.statespace.support` first and send them to the dense likelihood.
    Differentiable in ``params`` and ``noise`` (reverse mode through the scan).
    """
    ops = jnp.asarray(ops)
    x, y, mask = broadcast_data(ops.shape[0], x, y, mask)
    options = Options(dim, tolerance, harmonics, max_factors)
    return _batch(ops, params, noise, x, y, mask, options, bool(regular_grid))


__all__ = ["MAX_FACTORS", "Model", "Options", "broadcast_data", "kalman_scan", "marginal",
           "model", "observation", "observed", "state_space_log_likelihood", "steps", "support",
           "transition"]
