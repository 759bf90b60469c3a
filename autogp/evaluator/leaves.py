"""Leaf-kernel formulas and their analytic vector-Jacobian products.

Each atom has a ``value(theta, t1, t2) -> [N1, N2]`` and a
``vjp(theta, t1, t2, cot) -> [MAX_PARAMS]`` returning sum(cot * dK/dtheta_k) for each natural
(constrained) parameter theta_k. Writing the derivatives by hand (instead of letting reverse mode
trace the formulas) means the backward pass stores nothing per matrix entry: it recomputes the
kernel in one fused pass and reduces straight to a few scalars. It also lets us pick the value of
derivatives at kinks (r = 0 for GE's exponent) instead of getting NaN from 0 * log(0).

``theta`` is always a length-``MAX_PARAMS`` vector; unused entries are ignored.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from autogp.kernels import spec

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


def _dist(t1, t2):
    return jnp.abs(t1[:, None] - t2[None, :])


def _sums(*terms):
    """``[sum(term) for term in terms]`` as matrix-vector products.

    XLA's CPU reductions run an unvectorised scalar loop and re-evaluate their fused producers
    once per reduction; row sums through ``dot`` (BLAS) share one evaluation and run ~2x faster.
    """
    ones_cols = jnp.ones((terms[0].shape[1],), terms[0].dtype)
    ones_rows = jnp.ones((terms[0].shape[0],), terms[0].dtype)
    return jnp.stack([term @ ones_cols for term in terms]) @ ones_rows


def _pack(*values):
    """Gradient vector of length MAX_PARAMS from the given leading entries."""
    out = list(values) + [jnp.zeros((), values[0].dtype)] * (spec.MAX_PARAMS - len(values))
    return jnp.stack(out)


# --- CONST: c ---------------------------------------------------------------------------------
def const_value(theta, t1, t2):
    return jnp.full((t1.shape[0], t2.shape[0]), theta[0], dtype=t1.dtype)


def const_vjp(theta, t1, t2, cot):
    return _pack(_sums(cot)[0])


# --- LIN: bias + amp (t - intercept)(t' - intercept) -------------------------------------------
def lin_value(theta, t1, t2):
    c, bias, amp = theta[0], theta[1], theta[2]
    return bias + amp * (t1 - c)[:, None] * (t2 - c)[None, :]


def lin_vjp(theta, t1, t2, cot):
    c, amp = theta[0], theta[2]
    d1, d2 = t1 - c, t2 - c
    cot_d2 = cot @ d2  # [N1]
    cot_1 = cot @ jnp.ones_like(d2)  # [N1]
    d_amp = jnp.dot(d1, cot_d2)
    d_c = -amp * (jnp.sum(cot_d2) + jnp.dot(d1, cot_1))
    return _pack(d_c, jnp.sum(cot_1), d_amp)


# --- BM: amp * max(min(t, t') - origin, 0) ------------------------------------------------------
# Brownian motion (a random walk) started at ``origin``: the GP form of the local-level model,
# whose forecasts stay at the last level instead of reverting to the mean.
def bm_value(theta, t1, t2):
    origin, amp = theta[0], theta[1]
    return amp * jnp.maximum(jnp.minimum(t1[:, None], t2[None, :]) - origin, 0.0)


def bm_vjp(theta, t1, t2, cot):
    origin, amp = theta[0], theta[1]
    elapsed = jnp.minimum(t1[:, None], t2[None, :]) - origin
    walking = jnp.where(elapsed > 0, cot, 0.0)
    sum_walking, sum_elapsed = _sums(walking, walking * elapsed)
    return _pack(-amp * sum_walking, sum_elapsed)


# --- SE: amp exp(-r^2 / (2 l^2)) ----------------------------------------------------------------
def se_value(theta, t1, t2):
    l, amp = theta[0], theta[1]
    r = _dist(t1, t2)
    return amp * jnp.exp(-0.5 * (r / l) ** 2)


def se_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    r2 = (_dist(t1, t2) / l) ** 2
    ce = cot * jnp.exp(-0.5 * r2)
    d = _sums(ce * r2, ce)
    return _pack(amp * d[0] / l, d[1])


# --- GE: amp exp(-(r/l)^gamma) ------------------------------------------------------------------
def _ge_parts(theta, t1, t2):
    l, gamma = theta[0], theta[1]
    r = _dist(t1, t2)
    positive = r > 0
    log_ratio = jnp.log(jnp.where(positive, r, 1.0) / l)
    z = jnp.where(positive, jnp.exp(gamma * log_ratio), 0.0)  # (r/l)^gamma, 0 at r = 0
    return z, jnp.where(positive, log_ratio, 0.0)


def ge_value(theta, t1, t2):
    z, _ = _ge_parts(theta, t1, t2)
    return theta[2] * jnp.exp(-z)


def ge_vjp(theta, t1, t2, cot):
    l, gamma, amp = theta[0], theta[1], theta[2]
    z, log_ratio = _ge_parts(theta, t1, t2)
    ce = cot * jnp.exp(-z)
    cez = ce * z
    # d/dl: amp e^{-z} gamma z / l;  d/dgamma: -amp e^{-z} z log(r/l) (z log(r/l) -> 0 at r = 0)
    d = _sums(cez, cez * log_ratio, ce)
    return _pack(amp * gamma * d[0] / l, -amp * d[1], d[2])


# --- PER: amp exp(-(2/l^2) sin^2(pi r / period)) ------------------------------------------------
def per_value(theta, t1, t2):
    l, period, amp = theta[0], theta[1], theta[2]
    s = jnp.sin(jnp.pi * _dist(t1, t2) / period)
    return amp * jnp.exp(-2.0 * (s / l) ** 2)


def per_vjp(theta, t1, t2, cot):
    l, period, amp = theta[0], theta[1], theta[2]
    r = _dist(t1, t2)
    phase = jnp.pi * r / period
    s2 = jnp.sin(phase) ** 2
    ce = cot * jnp.exp(-2.0 * s2 / l**2)
    # d sin^2(pi r/p)/dp = -sin(2 pi r / p) pi r / p^2
    d = _sums(ce * s2, ce * r * jnp.sin(2.0 * phase), ce)
    d_l = amp * 4.0 * d[0] / l**3
    d_p = amp * 2.0 * jnp.pi * d[1] / (l**2 * period**2)
    return _pack(d_l, d_p, d[2])


# --- WN: v [t == t'] ---------------------------------------------------------------------------
def wn_value(theta, t1, t2):
    return theta[0] * (t1[:, None] == t2[None, :]).astype(t1.dtype)


def wn_vjp(theta, t1, t2, cot):
    return _pack(_sums(jnp.where(t1[:, None] == t2[None, :], cot, 0.0))[0])


# --- Matern family -----------------------------------------------------------------------------
def m12_value(theta, t1, t2):
    return theta[1] * jnp.exp(-_dist(t1, t2) / theta[0])


def m12_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _dist(t1, t2) / l
    ce = cot * jnp.exp(-q)
    d = _sums(ce * q, ce)
    return _pack(amp * d[0] / l, d[1])


def m32_value(theta, t1, t2):
    q = _SQRT3 * _dist(t1, t2) / theta[0]
    return theta[1] * (1.0 + q) * jnp.exp(-q)


def m32_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _SQRT3 * _dist(t1, t2) / l
    e = cot * jnp.exp(-q)
    d = _sums(e * q * q, e * (1.0 + q))
    return _pack(amp * d[0] / l, d[1])


def m52_value(theta, t1, t2):
    q = _SQRT5 * _dist(t1, t2) / theta[0]
    return theta[1] * (1.0 + q + q * q / 3.0) * jnp.exp(-q)


def m52_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _SQRT5 * _dist(t1, t2) / l
    e = cot * jnp.exp(-q)
    d = _sums(e * q * q * (1.0 + q), e * (1.0 + q + q * q / 3.0))
    return _pack(amp * d[0] / (3.0 * l), d[1])


# --- RQ: amp (1 + r^2 / (2 alpha l^2))^(-alpha) --------------------------------------------------
def rq_value(theta, t1, t2):
    l, alpha, amp = theta[0], theta[1], theta[2]
    w = 1.0 + _dist(t1, t2) ** 2 / (2.0 * alpha * l**2)
    return amp * jnp.exp(-alpha * jnp.log(w))


def rq_vjp(theta, t1, t2, cot):
    l, alpha, amp = theta[0], theta[1], theta[2]
    r2 = _dist(t1, t2) ** 2
    w = 1.0 + r2 / (2.0 * alpha * l**2)
    log_w = jnp.log(w)
    ce = cot * jnp.exp(-alpha * log_w)
    d = _sums(ce * r2 / w, ce * ((w - 1.0) / w - log_w), ce)
    return _pack(amp * d[0] / l**3, amp * d[1], d[2])


VALUE = {
    spec.CONST: const_value,
    spec.LIN: lin_value,
    spec.SE: se_value,
    spec.GE: ge_value,
    spec.PER: per_value,
    spec.WN: wn_value,
    spec.M12: m12_value,
    spec.M32: m32_value,
    spec.M52: m52_value,
    spec.RQ: rq_value,
    spec.BM: bm_value,
}
VJP = {
    spec.CONST: const_vjp,
    spec.LIN: lin_vjp,
    spec.SE: se_vjp,
    spec.GE: ge_vjp,
    spec.PER: per_vjp,
    spec.WN: wn_vjp,
    spec.M12: m12_vjp,
    spec.M32: m32_vjp,
    spec.M52: m52_vjp,
    spec.RQ: rq_vjp,
    spec.BM: bm_vjp,
}


# --- change-point sigmoid ------------------------------------------------------------------------
def cp_sigmoid(theta, t):
    """s(t) = (1 + tanh((location - t)/scale))/2 and its derivatives wrt location and scale."""
    location, scale = theta[0], theta[1]
    z = (location - t) / scale
    th = jnp.tanh(z)
    s = 0.5 * (1.0 + th)
    ds_dlocation = 0.5 * (1.0 - th * th) / scale
    ds_dscale = -ds_dlocation * z
    return s, ds_dlocation, ds_dscale
