"""An independent, plain-numpy evaluator of kernel expressions: the reference for the JAX one.

Written directly from the formulas in the brief (and the atoms' docstrings), one branch per node
type, reading only the expression modules' fields; it shares no code with ``autogp`` beyond them.
Deliberately slow and obvious.
"""

from __future__ import annotations

import numpy as np

from autogp.kernels import (
    GE,
    RQ,
    SE,
    Brownian,
    ChangePoint,
    Const,
    DampedTrend,
    IntegratedBrownian,
    Kernel,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Matern72,
    Periodic,
    Product,
    Sum,
    WhiteNoise,
)


def gram_numpy(expr: Kernel, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """K[i, j] = k(x1[i], x2[j]) for 1-D time arrays ``x1`` [N], ``x2`` [M]; float64 [N, M]."""
    x1 = np.asarray(x1, dtype=np.float64).reshape(-1)
    x2 = np.asarray(x2, dtype=np.float64).reshape(-1)
    t, s = x1[:, None], x2[None, :]  # t on rows, t' on columns
    r = np.abs(t - s)

    if isinstance(expr, Const):
        return np.full(r.shape, expr.c)
    if isinstance(expr, Linear):
        return expr.bias + expr.amp * (t - expr.intercept) * (s - expr.intercept)
    if isinstance(expr, SE):
        return expr.amp * np.exp(-(r**2) / (2.0 * expr.l**2))
    if isinstance(expr, GE):
        return expr.amp * np.exp(-((r / expr.l) ** expr.gamma))
    if isinstance(expr, Periodic):
        return expr.amp * np.exp(-(2.0 / expr.l**2) * np.sin(np.pi * r / expr.period) ** 2)
    if isinstance(expr, WhiteNoise):
        return expr.v * (t == s).astype(np.float64)
    if isinstance(expr, Matern12):
        return expr.amp * np.exp(-r / expr.l)
    if isinstance(expr, Matern32):
        z = np.sqrt(3.0) * r / expr.l
        return expr.amp * (1.0 + z) * np.exp(-z)
    if isinstance(expr, Matern52):
        z = np.sqrt(5.0) * r / expr.l
        return expr.amp * (1.0 + z + 5.0 * r**2 / (3.0 * expr.l**2)) * np.exp(-z)
    if isinstance(expr, Matern72):
        z = np.sqrt(7.0) * r / expr.l
        return expr.amp * (1.0 + z + 2.0 * z**2 / 5.0 + z**3 / 15.0) * np.exp(-z)
    if isinstance(expr, RQ):
        return expr.amp * (1.0 + r**2 / (2.0 * expr.alpha * expr.l**2)) ** (-expr.alpha)
    if isinstance(expr, Brownian):
        # A random walk that starts at `origin`: Cov(W(t), W(t')) = amp * (min(t, t') - origin)+.
        return expr.amp * np.clip(np.minimum(t, s) - expr.origin, 0.0, None)
    if isinstance(expr, IntegratedBrownian):
        # Its integral: with s = min - origin, u = max - origin, amp * s^2 (3u - s) / 6 for s > 0.
        lo = np.clip(np.minimum(t, s) - expr.origin, 0.0, None)
        hi = np.where(lo > 0, np.maximum(t, s) - expr.origin, 0.0)
        return expr.amp * lo**2 * (3.0 * hi - lo) / 6.0
    if isinstance(expr, DampedTrend):
        # The integral of a stationary OU slope (correlation time l) from `origin`:
        # amp * int_0^s int_0^u exp(-|a - b| / l) db da, written out.
        lo = np.clip(np.minimum(t, s) - expr.origin, 0.0, None)
        hi = np.where(lo > 0, np.maximum(t, s) - expr.origin, 0.0)
        l = expr.l
        inner = 1.0 - np.exp(-lo / l) + np.exp(-(hi - lo) / l) - np.exp(-hi / l)
        return expr.amp * np.where(lo > 0, 2.0 * l * lo - l**2 * inner, 0.0)
    if isinstance(expr, Sum):
        return gram_numpy(expr.left, x1, x2) + gram_numpy(expr.right, x1, x2)
    if isinstance(expr, Product):
        return gram_numpy(expr.left, x1, x2) * gram_numpy(expr.right, x1, x2)
    if isinstance(expr, ChangePoint):
        s1 = 0.5 * (1.0 + np.tanh((expr.location - x1) / expr.scale))[:, None]
        s2 = 0.5 * (1.0 + np.tanh((expr.location - x2) / expr.scale))[None, :]
        k_left = gram_numpy(expr.left, x1, x2)
        k_right = gram_numpy(expr.right, x1, x2)
        return s1 * k_left * s2 + (1.0 - s1) * k_right * (1.0 - s2)
    raise TypeError(f"gram_numpy: unknown kernel node {type(expr).__name__}")
