"""Padded data of a panel and the columns each SMC round computes on.

Shapes change little during a fit: the data are padded to a multiple of :data:`PAD_MULTIPLE`
points and each round moves a mask over a prefix of them (the smallest quarter of the padded
length that holds its points, see :func:`round_size`), so at most four compiled rounds serve a
whole fit, and later fits of similar lengths.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import is_regular_grid
from autogp.inference import periods
from autogp.inference.settings import SMCSettings
from autogp.inference.smc_round import Data

PAD_MULTIPLE = 32


def padded_length(n: int) -> int:
    """Data are padded to a multiple of ``PAD_MULTIPLE`` points, so series of similar length
    (a panel, an online update, the next fit) reuse one compiled round."""
    return int(math.ceil(n / PAD_MULTIPLE) * PAD_MULTIPLE)


ROUND_SIZE_STEPS = 4


def round_size(count: int, padded: int, sizes: str = "grow") -> int:
    """Columns of the padded data that a round with at most ``count`` points needs.

    ``"full"``: always all ``padded`` columns. ``"grow"``: the smallest of
    ``ceil(padded * k / ROUND_SIZE_STEPS)`` (k = 1..4), rounded up to ``PAD_MULTIPLE``, that
    holds ``count``: the early rounds of the data annealing then pay for the data they have, not
    for all of it (a fit costs about half as much), at the price of at most four compiled rounds
    per padded length. The sizes are multiples of ``PAD_MULTIPLE`` shared between lengths
    (128 -> 32, 64, 96, 128; 96 -> 32, 64, 96), so a panel of lengths needs few programs.
    """
    if sizes == "full":
        return padded
    if sizes != "grow":
        raise ValueError(f"unknown round_sizes {sizes!r} (expected 'grow' or 'full')")
    for k in range(1, ROUND_SIZE_STEPS + 1):
        size = min(padded, padded_length(math.ceil(padded * k / ROUND_SIZE_STEPS)))
        if size >= count:
            return size
    return padded


def data_prefix(data: Data, size: int) -> Data:
    """The first ``size`` columns of padded data whose points enter in column order (no
    shuffle): a round whose counts are at most ``size`` sees exactly the same masked-in points,
    and masked-out columns add nothing to a likelihood."""
    if size == data.x.shape[1]:
        return data
    data = eqx.tree_at(lambda d: (d.x, d.y, d.rank),
                       data, (data.x[:, :size], data.y[:, :size], data.rank[:, :size]))
    if data.known_var is None:
        return data
    return eqx.tree_at(lambda d: d.known_var, data, data.known_var[:, :size])


def make_data(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], *, pad_to: int | None = None,
              shuffle: bool = False, key: jax.Array | None = None,
              period_peaks: int = SMCSettings.period_peaks,
              seasonal_periods: Sequence[float | Sequence[float] | None] | None = None,
              power: Sequence[float] | None = None,
              known_vars: Sequence[np.ndarray | None] | None = None) -> Data:
    """Pad a list of series to a common length (padding is masked out forever) and find each
    series' periodogram peaks for the period proposal. ``power``: each series' learning rate
    (default 1, the Bayesian posterior; :meth:`SMCSettings.power_for` gives the rule's).
    ``known_vars``: each series' known observation variances (None: none; zeros where some
    series of the panel have them and others not)."""
    G = len(xs)
    power = np.ones(G) if power is None else np.asarray(power, dtype=float)
    if power.shape != (G,) or not np.all((power > 0) & (power <= 1)):
        raise ValueError(f"power must hold one learning rate in (0, 1] per series, got {power}")
    N = padded_length(max(len(x) for x in xs)) if pad_to is None else pad_to
    # Inputs [n] (time) or [n, 1 + C] (time, then C covariates: all series alike).
    width = {np.shape(v)[1:] for v in xs}
    if len(width) != 1:
        raise ValueError(f"every series needs the same number of covariates, got {width}")
    x = np.zeros((G, N) + width.pop())
    y = np.zeros((G, N))
    rank = np.full((G, N), np.iinfo(np.int32).max, dtype=np.int32)
    rng = None
    if shuffle:
        if key is None:
            raise ValueError("shuffle needs a key")
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
    for g, (xg, yg) in enumerate(zip(xs, ys, strict=True)):
        n = len(xg)
        x[g, :n], y[g, :n] = xg, yg
        if n < N:  # padding continues the series' grid (it is masked out; no duplicate inputs)
            tg = xg if xg.ndim == 1 else xg[:, 0]
            step = (tg[-1] - tg[0]) / (n - 1) if n > 1 else 1.0
            pad = tg[-1] + step * (1 + np.arange(N - n))
            if xg.ndim == 1:
                x[g, n:] = pad
            else:  # covariates of padding are 0 (masked out)
                x[g, n:, 0] = pad
        rank[g, :n] = rng.permutation(n) if rng is not None else np.arange(n)
    times = [np.asarray(v) if np.ndim(v) == 1 else np.asarray(v)[:, 0] for v in xs]
    centers, log_weights = periods.proposal_arrays(
        times, [np.asarray(v) for v in ys], num=period_peaks,
        seasonal_periods=list(seasonal_periods) if seasonal_periods is not None else None,
    )
    known = None
    if known_vars is not None and any(v is not None for v in known_vars):
        known = np.zeros((G, N))
        for g, v in enumerate(known_vars):
            if v is not None:
                known[g, : len(v)] = v
        known = jnp.asarray(known)
    return Data(jnp.asarray(x), jnp.asarray(y), jnp.asarray(rank),
                jnp.asarray([len(v) for v in xs], dtype=jnp.int32),
                jnp.asarray(centers), jnp.asarray(log_weights), jnp.asarray(power),
                x.ndim == 2 and is_regular_grid(x), known)



def round_sizes(settings: SMCSettings, counts: np.ndarray, padded: int) -> list[int]:
    """The data columns each round of ``counts`` ``[R, G]`` computes on (see :func:`round_size`;
    shuffled data enter in random column order, so then every round needs every column)."""
    sizes = "full" if settings.shuffle else settings.round_sizes
    return [round_size(int(np.max(c)), padded, sizes) for c in np.asarray(counts)]



__all__ = [
    "PAD_MULTIPLE",
    "ROUND_SIZE_STEPS",
    "data_prefix",
    "make_data",
    "padded_length",
    "round_size",
    "round_sizes",
]
