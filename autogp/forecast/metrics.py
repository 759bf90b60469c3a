"""Forecast accuracy metrics (the conventions of the forecasting competitions).

* sMAPE = 200 * mean(|y - f| / (|y| + |f|)), in percent; a point with y = f = 0 counts 0.
* MASE = mean|y - f| / mean|y_t - y_{t-m}| over the training data (seasonal-naive scale with
  period m; m = 1 when the training data are too short for it).
* coverage(level) = share of held-out points inside the central ``level``% interval.
"""

from __future__ import annotations

import numpy as np

from autogp.data import TimeAxis
from autogp.data.seasons import mase_season


def seasonality(axis: TimeAxis) -> int:
    """The usual seasonal period in steps for a regular axis (12 for monthly data, 5 for
    trading days, 48 for half-hourly data), else 1 (:func:`autogp.data.seasons.mase_season`)."""
    return mase_season(axis)


def smape(y: np.ndarray, f: np.ndarray) -> float:
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    denom = np.abs(y) + np.abs(f)
    ratio = np.divide(np.abs(y - f), denom, out=np.zeros_like(denom), where=denom > 0)
    return float(200.0 * np.mean(ratio))


def mase(y: np.ndarray, f: np.ndarray, y_train: np.ndarray, m: int = 1) -> float:
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    y_train = np.asarray(y_train, dtype=np.float64)
    if y_train.size <= m:
        m = 1
    if y_train.size <= m:
        return float("nan")
    scale = np.mean(np.abs(y_train[m:] - y_train[:-m]))
    if not scale > 0:
        return float("nan")
    return float(np.mean(np.abs(y - f)) / scale)


def coverage(y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    y = np.asarray(y, dtype=np.float64)
    return float(np.mean((np.asarray(lo) <= y) & (y <= np.asarray(hi))))


__all__ = ["coverage", "mase", "seasonality", "smape"]
