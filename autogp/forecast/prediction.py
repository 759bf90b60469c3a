"""Forecast frames: where to predict (future time stamps) and the posterior's forecasts there in
the statsforecast layout of :mod:`autogp.forecast.columns`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autogp.config import Config
from autogp.data import DataError, TimeSeries
from autogp.forecast.columns import (
    MODEL_NAME,
    check_levels,
    check_quantiles,
    prediction_columns,
)
from autogp.forecast.covariates import as_stamps, covariates_at
from autogp.inference.posterior import Posterior
from autogp.kernels import structure

# ---- where -----------------------------------------------------------------------------------

def forecast_targets(
    series: TimeSeries, horizon: Any, panel_frame: pd.DataFrame | None, default_horizon: int
) -> tuple[np.ndarray, pd.Index]:
    """Numeric times and stamps to forecast a series at: its rows of ``panel_frame`` (``ds``
    and, for panels, ``unique_id``), else ``horizon`` steps (``default_horizon`` when None) on
    its grid, else the stamps ``horizon`` itself."""
    if panel_frame is not None:
        rows = panel_frame
        if "unique_id" in panel_frame.columns:
            rows = panel_frame[panel_frame["unique_id"].astype(str) == series.unique_id]
        return as_stamps(series, rows["ds"])
    if horizon is None:
        horizon = default_horizon
    if isinstance(horizon, int | np.integer) and not isinstance(horizon, bool):
        if horizon < 0:
            raise ValueError(f"horizon must be >= 0, got {horizon}")
        return series.future_t(int(horizon)), series.future_ds(int(horizon))
    return as_stamps(series, horizon)


# ---- what ------------------------------------------------------------------------------------
def mixture_frame(
    post: Posterior,
    t_new: np.ndarray,
    ds_new: pd.Index,
    levels: list[float],
    qs: list[float],
    include_noise: bool,
    point: str = "mean",
    covariates: np.ndarray | None = None,
) -> pd.DataFrame:
    """The mixture forecast of one series: point, interval and quantile columns
    (``covariates``: ``[M, C]`` values at ``t_new`` for a fit with covariates)."""
    df = pd.DataFrame({"unique_id": post.unique_id, "ds": ds_new}, index=range(len(ds_new)))
    names, probs = prediction_columns(levels, qs)
    if len(t_new) == 0:
        for c in [MODEL_NAME, *names]:
            df[c] = np.zeros(0)
        return df
    point_values, q = post.quantiles(t_new, probs, include_noise, point, covariates)
    df[MODEL_NAME] = point_values
    for name, row in zip(names, q, strict=True):
        df[name] = row
    return df


def particle_frame(
    post: Posterior,
    t_new: np.ndarray,
    ds_new: pd.Index,
    levels: list[float],
    qs: list[float],
    include_noise: bool,
    point: str = "mean",
    covariates: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per (time, particle): the particle's weight, structure, point forecast and its
    own Gaussian intervals and quantiles."""
    names, probs = prediction_columns(levels, qs)
    points, bounds = post.particle_quantiles(t_new, probs, include_noise, point, covariates)
    w = post.weights()
    structures = [structure(e, post.covariates) for e in post.expressions()]
    P, M = points.shape
    rows = {
        "unique_id": np.full(P * M, post.unique_id, dtype=object),
        "ds": np.tile(np.asarray(ds_new), P),
        "particle": np.repeat(np.arange(P), M),
        "weight": np.repeat(w, M),
        "structure": np.repeat(np.asarray(structures, dtype=object), M),
        MODEL_NAME: points.reshape(-1),
    }
    for name, values in zip(names, bounds, strict=True):
        rows[name] = values.reshape(-1)
    df = pd.DataFrame(rows)
    if isinstance(ds_new, pd.DatetimeIndex):
        df["ds"] = pd.DatetimeIndex(df["ds"])
    return df


def predict_frame(
    posteriors: Sequence[Posterior],
    config: Config,
    horizon: int | Any = None,
    *,
    level: Sequence[float] | None = None,
    quantiles: Sequence[float] | None = None,
    include_noise: bool | None = None,
    point: str | None = None,
    per_particle: bool = False,
    X_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The forecast frame of ``posteriors`` (see :meth:`autogp.AutoGP.predict`); unset
    arguments come from ``config.forecast``; ``X_df``: the covariates' future values."""
    fc = config.forecast
    if level is None:
        level = fc.levels if quantiles is None else ()
    levels = check_levels(level)
    qs = check_quantiles(quantiles) if quantiles is not None else []
    if include_noise is None:
        include_noise = fc.observation_noise
    if point is None:
        point = fc.point
    if point not in ("mean", "median"):
        raise ValueError(f"predict: point must be 'mean' or 'median', got {point!r}")
    frame = horizon if isinstance(horizon, pd.DataFrame) else None
    if frame is not None and "ds" not in frame.columns:
        raise DataError("predict: a frame of future times needs a 'ds' column")
    make = particle_frame if per_particle else mixture_frame
    parts = []
    for post in posteriors:
        t_new, ds_new = forecast_targets(post.series, horizon, frame, fc.horizon)
        covariates = covariates_at(post, t_new, ds_new, X_df)
        parts.append(make(post, t_new, ds_new, levels, qs, include_noise, point, covariates))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


__all__ = [
    "as_stamps",
    "forecast_targets",
    "mixture_frame",
    "particle_frame",
    "predict_frame",
]
