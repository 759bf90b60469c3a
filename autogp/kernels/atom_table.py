"""The atom table: one row per atom, everything about it in one place.

Each :class:`~autogp.kernels.atom_row.AtomRow` gives an atom's opcode, names, parameters (with
their transforms, default priors and units), covariance formula and its analytic VJP,
stationarity, English reading and default grammar weight; ``atom_row`` documents the fields.
``spec``, the kernel classes (``autogp.kernels.atoms``), the evaluator, the text form,
``autogp.forecast.explain`` and the grammar's and config's defaults all derive from :data:`ROWS`,
so adding an atom is adding a row here (with the next free opcode).

Throughout, r = |t - t'| and ``theta`` holds the natural parameters in the row's order. Writing
the derivatives by hand (instead of letting reverse mode trace the formulas) means the backward
pass stores nothing per matrix entry: it recomputes the kernel in one fused pass and reduces
straight to a few scalars. It also lets us pick the value of derivatives at kinks (r = 0 for GE's
exponent) instead of getting NaN from 0 * log(0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

import jax.numpy as jnp

from autogp.kernels.atom_row import AtomRow, Param, Words, distance, gradient, sums

# --- parameters shared by several atoms -------------------------------------------------------
# Positive parameters get log-normal priors with median exp(-1.5) in normalised units (AutoGP.jl).
POSITIVE_PRIOR: Final = (-1.5, 1.0)

AMP: Final = Param(
    "amp", "log", POSITIVE_PRIOR, units=(0, 2),
    doc="amplitude of SE/GE/PER/Matern/RQ/LIN/BM kernels (log scale)",
)  # fmt: skip
LENGTH: Final = Param(
    "l", "log", POSITIVE_PRIOR, units=(1, 0), doc="length scale in normalised time (log scale)"
)


def _variation(kind: str, p: Mapping[str, float], words: Words) -> str:
    return f"{kind} variation over ~{words.length(p['l'])}"


def _smooth(p: Mapping[str, float], words: Words) -> str:
    return _variation("smooth", p, words)


# --- CONST: c -------------------------------------------------------------------------------------
CONST: Final = 1


def const_value(theta, t1, t2):
    return jnp.full((t1.shape[0], t2.shape[0]), theta[0], dtype=t1.dtype)


def const_vjp(theta, t1, t2, cot):
    return gradient(sums(cot)[0])


CONST_ROW = AtomRow(
    opcode=CONST, name="CONST", class_name="Const", title="constant",
    formula="Constant: k(t, t') = c.",
    params=(Param("c", "log", POSITIVE_PRIOR, units=(0, 2), doc="CONST value (log scale)"),),
    split=1, value=const_value, vjp=const_vjp, stationary=True, role="constant",
    reading=lambda p, words: "constant offset",
)  # fmt: skip


# --- LIN: bias + amp (t - intercept)(t' - intercept) ---------------------------------------------
LIN: Final = 2


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
    return gradient(d_c, jnp.sum(cot_1), d_amp)


LIN_ROW = AtomRow(
    opcode=LIN, name="LIN", class_name="Linear", title="linear",
    formula="Linear: k(t, t') = bias + amp * (t - intercept) * (t' - intercept).",
    params=(
        Param("intercept", "identity", (0.5, 1.0), units=(1, 0), time_location=True,
              doc="LIN intercept: location on the normalised time axis (identity)"),
        Param("bias", "log", POSITIVE_PRIOR, units=(0, 2), doc="LIN bias (log scale)"),
        # amp multiplies (t - intercept)(t' - intercept): it carries time^-2.
        AMP.with_units(-2, 2),
    ),
    split=1, value=lin_value, vjp=lin_vjp, stationary=False, role="polynomial",
    reading=lambda p, words: "linear trend", weight=6.0,
)  # fmt: skip


# --- SE: amp exp(-r^2 / (2 l^2)) ----------------------------------------------------------------
SE: Final = 3


def se_value(theta, t1, t2):
    l, amp = theta[0], theta[1]
    r = distance(t1, t2)
    return amp * jnp.exp(-0.5 * (r / l) ** 2)


def se_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    r2 = (distance(t1, t2) / l) ** 2
    ce = cot * jnp.exp(-0.5 * r2)
    d = sums(ce * r2, ce)
    return gradient(amp * d[0] / l, d[1])


SE_ROW = AtomRow(
    opcode=SE, name="SE", class_name="SE", title="squared exponential",
    formula="Squared exponential: k(t, t') = amp * exp(-r^2 / (2 l^2)).",
    params=(LENGTH, AMP), split=1, value=se_value, vjp=se_vjp, stationary=True, role="smooth",
    reading=_smooth,
)  # fmt: skip


# --- GE: amp exp(-(r/l)^gamma) ------------------------------------------------------------------
GE: Final = 4


def _ge_parts(theta, t1, t2):
    l, gamma = theta[0], theta[1]
    r = distance(t1, t2)
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
    d = sums(cez, cez * log_ratio, ce)
    return gradient(amp * gamma * d[0] / l, -amp * d[1], d[2])


GE_ROW = AtomRow(
    opcode=GE, name="GE", class_name="GE", title="gamma-exponential",
    formula="Gamma exponential: k(t, t') = amp * exp(-(r / l)^gamma), 0 < gamma <= 2.",
    params=(
        LENGTH,
        Param("gamma", "gamma", (0.0, 1.0), units=(0, 0),
              doc="GE exponent in (0, 2) (logit scale: gamma = 2 sigmoid(u))"),
        AMP,
    ),
    split=2, value=ge_value, vjp=ge_vjp, stationary=True, role="smooth",
    reading=lambda p, words: _variation("rough" if p["gamma"] < 1.0 else "smooth", p, words),
    weight=6.0,
)  # fmt: skip


# --- PER: amp exp(-(2/l^2) sin^2(pi r / period)) ------------------------------------------------
PER: Final = 5


def per_value(theta, t1, t2):
    l, period, amp = theta[0], theta[1], theta[2]
    s = jnp.sin(jnp.pi * distance(t1, t2) / period)
    return amp * jnp.exp(-2.0 * (s / l) ** 2)


def per_vjp(theta, t1, t2, cot):
    l, period, amp = theta[0], theta[1], theta[2]
    r = distance(t1, t2)
    phase = jnp.pi * r / period
    s2 = jnp.sin(phase) ** 2
    ce = cot * jnp.exp(-2.0 * s2 / l**2)
    # d sin^2(pi r/p)/dp = -sin(2 pi r / p) pi r / p^2
    d = sums(ce * s2, ce * r * jnp.sin(2.0 * phase), ce)
    d_l = amp * 4.0 * d[0] / l**3
    d_p = amp * 2.0 * jnp.pi * d[1] / (l**2 * period**2)
    return gradient(d_l, d_p, d[2])


PER_ROW = AtomRow(
    opcode=PER, name="PER", class_name="Periodic", title="periodic",
    formula=(
        "Periodic: k(t, t') = amp * exp(-(2 / l^2) * sin^2(pi r / period)).\n\n"
        "Here l is dimensionless (it divides a sine), unlike the length scales of the other atoms."
    ),
    params=(
        LENGTH.with_units(0, 0),  # l divides a squared sine: it does not scale with time
        Param("period", "log", POSITIVE_PRIOR, units=(1, 0),
              doc="PER period in normalised time (log scale)"),
        AMP,
    ),
    split=2, value=per_value, vjp=per_vjp, stationary=True, role="seasonal",
    reading=lambda p, words: words.period(p["period"]), weight=6.0,
)  # fmt: skip


# --- WN: v [t == t'] ---------------------------------------------------------------------------
WN: Final = 6


def wn_value(theta, t1, t2):
    return theta[0] * (t1[:, None] == t2[None, :]).astype(t1.dtype)


def wn_vjp(theta, t1, t2, cot):
    return gradient(sums(jnp.where(t1[:, None] == t2[None, :], cot, 0.0))[0])


WN_ROW = AtomRow(
    opcode=WN, name="WN", class_name="WhiteNoise", title="white noise",
    formula="White noise: k(t, t') = v * [t == t'] (exact equality of the time points).",
    params=(Param("v", "log", POSITIVE_PRIOR, units=(0, 2), doc="WN variance (log scale)"),),
    split=1, value=wn_value, vjp=wn_vjp, stationary=True, role="noise",
    reading=lambda p, words: "noise",
)  # fmt: skip


# --- Matern family: amp f(q) exp(-q), q = sqrt(2 nu) r / l --------------------------------------
M12: Final = 7
M32: Final = 8
M52: Final = 9
_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


def m12_value(theta, t1, t2):
    return theta[1] * jnp.exp(-distance(t1, t2) / theta[0])


def m12_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = distance(t1, t2) / l
    ce = cot * jnp.exp(-q)
    d = sums(ce * q, ce)
    return gradient(amp * d[0] / l, d[1])


def m32_value(theta, t1, t2):
    q = _SQRT3 * distance(t1, t2) / theta[0]
    return theta[1] * (1.0 + q) * jnp.exp(-q)


def m32_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _SQRT3 * distance(t1, t2) / l
    e = cot * jnp.exp(-q)
    d = sums(e * q * q, e * (1.0 + q))
    return gradient(amp * d[0] / l, d[1])


def m52_value(theta, t1, t2):
    q = _SQRT5 * distance(t1, t2) / theta[0]
    return theta[1] * (1.0 + q + q * q / 3.0) * jnp.exp(-q)


def m52_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _SQRT5 * distance(t1, t2) / l
    e = cot * jnp.exp(-q)
    d = sums(e * q * q * (1.0 + q), e * (1.0 + q + q * q / 3.0))
    return gradient(amp * d[0] / (3.0 * l), d[1])


M12_ROW = AtomRow(
    opcode=M12, name="M12", class_name="Matern12", title="Matern 1/2",
    formula="Matern 1/2: k(t, t') = amp * exp(-r / l).",
    params=(LENGTH, AMP), split=1, value=m12_value, vjp=m12_vjp, stationary=True, role="smooth",
    reading=lambda p, words: _variation("rough", p, words),
)  # fmt: skip
M32_ROW = AtomRow(
    opcode=M32, name="M32", class_name="Matern32", title="Matern 3/2",
    formula="Matern 3/2: k(t, t') = amp * (1 + sqrt(3) r / l) * exp(-sqrt(3) r / l).",
    params=(LENGTH, AMP), split=1, value=m32_value, vjp=m32_vjp, stationary=True, role="smooth",
    reading=_smooth,
)  # fmt: skip
M52_ROW = AtomRow(
    opcode=M52, name="M52", class_name="Matern52", title="Matern 5/2",
    formula=(
        "Matern 5/2: k(t, t') = amp * (1 + sqrt(5) r / l + 5 r^2 / (3 l^2)) * exp(-sqrt(5) r / l)."
    ),
    params=(LENGTH, AMP), split=1, value=m52_value, vjp=m52_vjp, stationary=True, role="smooth",
    reading=_smooth,
)  # fmt: skip


# --- RQ: amp (1 + r^2 / (2 alpha l^2))^(-alpha) --------------------------------------------------
RQ: Final = 10


def rq_value(theta, t1, t2):
    l, alpha, amp = theta[0], theta[1], theta[2]
    w = 1.0 + distance(t1, t2) ** 2 / (2.0 * alpha * l**2)
    return amp * jnp.exp(-alpha * jnp.log(w))


def rq_vjp(theta, t1, t2, cot):
    l, alpha, amp = theta[0], theta[1], theta[2]
    r2 = distance(t1, t2) ** 2
    w = 1.0 + r2 / (2.0 * alpha * l**2)
    log_w = jnp.log(w)
    ce = cot * jnp.exp(-alpha * log_w)
    d = sums(ce * r2 / w, ce * ((w - 1.0) / w - log_w), ce)
    return gradient(amp * d[0] / l**3, amp * d[1], d[2])


RQ_ROW = AtomRow(
    opcode=RQ, name="RQ", class_name="RQ", title="rational quadratic",
    formula="Rational quadratic: k(t, t') = amp * (1 + r^2 / (2 alpha l^2))^(-alpha).",
    params=(
        LENGTH,
        Param("alpha", "log", POSITIVE_PRIOR, units=(0, 0), doc="RQ shape (log scale)"),
        AMP,
    ),
    split=2, value=rq_value, vjp=rq_vjp, stationary=True, role="smooth", reading=_smooth,
)  # fmt: skip


# --- BM: amp * max(min(t, t') - origin, 0) ------------------------------------------------------
BM: Final = 11

ORIGIN: Final = Param(
    "origin", "identity", (-0.1, 0.1), units=(1, 0), time_location=True,
    doc="BM/IBM start of the random walk in normalised time (identity)",
)  # fmt: skip


def bm_value(theta, t1, t2):
    origin, amp = theta[0], theta[1]
    return amp * jnp.maximum(jnp.minimum(t1[:, None], t2[None, :]) - origin, 0.0)


def bm_vjp(theta, t1, t2, cot):
    origin, amp = theta[0], theta[1]
    elapsed = jnp.minimum(t1[:, None], t2[None, :]) - origin
    walking = jnp.where(elapsed > 0, cot, 0.0)
    sum_walking, sum_elapsed = sums(walking, walking * elapsed)
    return gradient(-amp * sum_walking, sum_elapsed)


BM_ROW = AtomRow(
    opcode=BM, name="BM", class_name="Brownian", title="Brownian motion: a random-walk level",
    formula=(
        "Brownian motion (a random walk) from ``origin``:\n"
        "k(t, t') = amp * max(min(t, t') - origin, 0).\n\n"
        "Non-stationary: its forecasts keep the last level (with growing uncertainty) instead of\n"
        "reverting to the mean; with white noise it is the local-level model of exponential\n"
        "smoothing."
    ),
    params=(
        # BM starts a little before the first observation (normalised time 0): its first value
        # then has some variance of its own (amp * -origin) instead of being pinned at zero.
        ORIGIN,
        AMP.with_units(-1, 2),  # a variance per unit time
    ),
    split=1, value=bm_value, vjp=bm_vjp, stationary=False, role="level",
    reading=lambda p, words: "random-walk level",
    # On by default: a random-walk level improved point forecasts and coverage on rolling-origin
    # training windows (docs/defaults.md).
    weight=6.0,
)  # fmt: skip


# --- M72: Matern 7/2, amp (1 + q + 2 q^2 / 5 + q^3 / 15) exp(-q), q = sqrt(7) r / l --------------
# Three times mean-square differentiable: between M52 and SE. Off by default (weight 0).
M72: Final = 15
_SQRT7 = math.sqrt(7.0)


def m72_value(theta, t1, t2):
    q = _SQRT7 * distance(t1, t2) / theta[0]
    return theta[1] * (1.0 + q + q * q * (0.4 + q / 15.0)) * jnp.exp(-q)


def m72_vjp(theta, t1, t2, cot):
    l, amp = theta[0], theta[1]
    q = _SQRT7 * distance(t1, t2) / l
    e = cot * jnp.exp(-q)
    # dk/dl = amp q^2 (3 + 3 q + q^2) exp(-q) / (15 l)
    d = sums(e * q * q * (3.0 + q * (3.0 + q)), e * (1.0 + q + q * q * (0.4 + q / 15.0)))
    return gradient(amp * d[0] / (15.0 * l), d[1])


M72_ROW = AtomRow(
    opcode=M72, name="M72", class_name="Matern72", title="Matern 7/2",
    formula=(
        "Matern 7/2: k(t, t') = amp * (1 + q + 2 q^2 / 5 + q^3 / 15) * exp(-q), q = sqrt(7) r / l."
    ),
    params=(LENGTH, AMP), split=1, value=m72_value, vjp=m72_vjp, stationary=True, role="smooth",
    reading=_smooth,
)  # fmt: skip


# --- IBM: integrated Brownian motion, amp * s^2 (3 u - s) / 6 -----------------------------------
# s = min(t, t') - origin, u = max(t, t') - origin (0 where s <= 0). The integral of a random
# walk: a trend whose slope wanders. Its forecasts carry the recent slope on, with a variance that
# grows like h^3, where BM's keeps the last level (variance ~ h) and LIN's keeps one slope fitted
# to all the data. On its own with white noise it is the cubic smoothing spline; it is the local
# linear trend of exponential smoothing (Holt) as a GP.
IBM: Final = 16


def _ibm_elapsed(theta, t1, t2):
    """``s = min - origin``, ``u = max - origin`` ``[N1, N2]``, and where the walk has begun."""
    a, b = t1[:, None] - theta[0], t2[None, :] - theta[0]
    s, u = jnp.minimum(a, b), jnp.maximum(a, b)
    begun = s > 0
    s = jnp.where(begun, s, 0.0)
    return s, jnp.where(begun, u, 0.0), begun


def ibm_value(theta, t1, t2):
    s, u, _ = _ibm_elapsed(theta, t1, t2)
    return theta[1] * s * s * (3.0 * u - s) / 6.0


def ibm_vjp(theta, t1, t2, cot):
    s, u, begun = _ibm_elapsed(theta, t1, t2)
    walking = jnp.where(begun, cot, 0.0)
    # dk/d origin = -(dk/ds + dk/du) = -amp s u; dk/d amp = s^2 (3 u - s) / 6.
    d = sums(walking * s * u, walking * s * s * (3.0 * u - s))
    return gradient(-theta[1] * d[0], d[1] / 6.0)


IBM_ROW = AtomRow(
    opcode=IBM, name="IBM", class_name="IntegratedBrownian",
    title="integrated Brownian motion: a trend whose slope wanders",
    formula=(
        "Integrated Brownian motion (an integrated random walk) from ``origin``: with\n"
        "s = min(t, t') - origin and u = max(t, t') - origin,\n"
        "k(t, t') = amp * s^2 * (3 u - s) / 6 where s > 0, else 0.\n\n"
        "Non-stationary: its forecasts carry the recent slope on, with uncertainty growing like\n"
        "h^3 in the horizon h; with white noise it is the cubic smoothing spline, and the local\n"
        "linear trend (Holt's method) of exponential smoothing."
    ),
    params=(
        ORIGIN,
        AMP.with_units(-3, 2),  # the slope's variance per unit time: value^2 / time^3
    ),
    split=1, value=ibm_value, vjp=ibm_vjp, stationary=False, role="level",
    reading=lambda p, words: "trend with a wandering slope",
)  # fmt: skip


# --- IOU: integrated Ornstein-Uhlenbeck, a damped trend ------------------------------------------
# The integral from ``origin`` of a stationary OU slope with correlation time l: with
# s = min(t, t') - origin, u = max(t, t') - origin (0 where s <= 0),
#   k = amp * (2 l s - l^2 (1 - e^{-s/l} + e^{-(u-s)/l} - e^{-u/l})).
# Its forecasts carry the recent slope on and let it fade over about l (the damped trend of
# exponential smoothing, Gardner and McKenzie): LIN from origin as l -> infinity (amp * s u), BM
# with rate 2 amp l as l -> 0.
IOU: Final = 17


def _iou_terms(theta, t1, t2):
    """``s``, ``u`` as for IBM, where the trend has begun, ``e^{-s/l}``, ``e^{-u/l}``,
    ``e^{-(u-s)/l}``, the bracket ``1 - e^{-s/l} + e^{-(u-s)/l} - e^{-u/l}`` and
    ``g = 2 l s - l^2 bracket`` (k / amp where the trend has begun)."""
    s, u, begun = _ibm_elapsed(theta, t1, t2)
    l = theta[1]
    es, eu, ed = jnp.exp(-s / l), jnp.exp(-u / l), jnp.exp(-(u - s) / l)
    # The bracket factors as (1 - e^{-s/l}) (1 + e^{-(u-s)/l}); expm1 keeps small s exact.
    bracket = -jnp.expm1(-s / l) * (1.0 + ed)
    return s, u, begun, es, eu, ed, bracket, 2.0 * l * s - l * l * bracket


def iou_value(theta, t1, t2):
    _, _, begun, *_, g = _iou_terms(theta, t1, t2)
    return theta[2] * jnp.where(begun, g, 0.0)


def iou_vjp(theta, t1, t2, cot):
    s, u, begun, es, eu, ed, bracket, g = _iou_terms(theta, t1, t2)
    l, amp = theta[1], theta[2]
    c = jnp.where(begun, cot, 0.0)
    # dg/d origin = -(dg/ds + dg/du) = -l (2 - e^{-s/l} - e^{-u/l});
    # dg/dl = 2 s - 2 l bracket + s e^{-s/l} - (u - s) e^{-(u-s)/l} + u e^{-u/l}.
    d_origin = -l * (2.0 - es - eu)
    d_l = 2.0 * s - 2.0 * l * bracket + s * es - (u - s) * ed + u * eu
    d = sums(c * d_origin, c * d_l, c * g)
    return gradient(amp * d[0], amp * d[1], d[2])


IOU_ROW = AtomRow(
    opcode=IOU, name="IOU", class_name="DampedTrend",
    title="integrated Ornstein-Uhlenbeck: a damped trend",
    formula=(
        "Integrated Ornstein-Uhlenbeck process from ``origin``: the integral of a stationary\n"
        "slope with correlation time l. With s = min(t, t') - origin and u = max(t, t') - origin,\n"
        "k(t, t') = amp * (2 l s - l^2 (1 - e^{-s/l} + e^{-(u-s)/l} - e^{-u/l})) where s > 0,\n"
        "else 0.\n\n"
        "Non-stationary: its forecasts carry the recent slope on and let it fade over about l,\n"
        "the damped trend of exponential smoothing. As l grows it becomes LIN from ``origin``\n"
        "(amp * s * u); as l shrinks, BM with variance 2 amp l per unit time."
    ),
    params=(
        ORIGIN,
        LENGTH,  # how long the slope persists
        AMP.with_units(-2, 2),  # the slope's variance: value^2 / time^2
    ),
    split=2, value=iou_value, vjp=iou_vjp, stationary=False, role="level",
    reading=lambda p, words: f"trend whose slope fades over ~{words.length(p['l'])}",
)  # fmt: skip


#: Every atom, in opcode order.
ROWS: Final = (
    CONST_ROW, LIN_ROW, SE_ROW, GE_ROW, PER_ROW, WN_ROW, M12_ROW, M32_ROW, M52_ROW, RQ_ROW, BM_ROW,
    M72_ROW, IBM_ROW, IOU_ROW,
)  # fmt: skip
