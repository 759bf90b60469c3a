"""Padding array lengths to a few bucket sizes, so compiled functions are reused.

Every distinct input shape costs a JAX compilation (seconds); predictions for horizons 12, 18
and 24, or training sets of 132 and 133 points, would each compile anew. Lengths are rounded up
to ``2**k * {1, 1.25, 1.5, 1.75}`` (at least 16), which wastes at most a quarter of the work.
"""

from __future__ import annotations

import numpy as np


def bucket(n: int, minimum: int = 16) -> int:
    """The smallest bucket size >= ``n``."""
    n = max(int(n), 1)
    if n <= minimum:
        return minimum
    k = (n - 1).bit_length() - 1  # 2**k < n <= 2**(k+1)
    base = 1 << k
    for quarter in (5, 6, 7, 8):
        size = base * quarter // 4
        if size >= n:
            return size
    return base * 2  # pragma: no cover - the loop always returns


CHUNK = 512  # prediction points per compiled call


def bucket_points(m: int) -> int:
    """Padded length of a batch of prediction points: a power of two in [32, CHUNK]."""
    return min(CHUNK, max(32, 1 << max(0, int(m) - 1).bit_length()))


def chunks(m: int) -> list[slice]:
    """Slices of at most ``CHUNK`` points covering ``range(m)``."""
    return [slice(i, min(i + CHUNK, m)) for i in range(0, m, CHUNK)]


def pad_repeat(x: np.ndarray, size: int, axis: int = -1) -> np.ndarray:
    """``x`` padded along ``axis`` to ``size`` by repeating its last entry (zeros if empty)."""
    x = np.asarray(x)
    n = x.shape[axis]
    if n == size:
        return x
    if n == 0:
        shape = list(x.shape)
        shape[axis] = size
        return np.zeros(shape, dtype=x.dtype)
    last = np.take(x, [n - 1], axis=axis)
    reps = [1] * x.ndim
    reps[axis] = size - n
    return np.concatenate([x, np.tile(last, reps)], axis=axis)


def pad_grid(x: np.ndarray, size: int) -> np.ndarray:
    """Sorted 1-D ``x`` continued past its end in its own (median) step, up to ``size``."""
    x = np.asarray(x, dtype=np.float64)
    extra = size - x.size
    if extra <= 0:
        return x
    step = float(np.median(np.diff(x))) if x.size > 1 else 1.0
    if not step > 0:
        step = 1.0
    return np.concatenate([x, x[-1] + step * np.arange(1, extra + 1)])


__all__ = ["CHUNK", "bucket", "bucket_points", "chunks", "pad_grid", "pad_repeat"]
