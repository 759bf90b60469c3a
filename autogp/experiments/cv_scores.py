"""Scores of a cross-validation frame, per model and per step of the horizon.

A cross-validation frame (:meth:`autogp.AutoGP.cross_validation`, or statsforecast's) has
``unique_id, ds, cutoff, y`` and each model's point and ``-lo-<L>``/``-hi-<L>`` columns. Every
window (a series and a cutoff) is scored on its own, with the package's metrics
(:mod:`autogp.forecast.metrics`; scaled CRPS from the quantiles, :func:`scaled_crps`): on all
its steps (``step = "all"``) and on each step ``k`` alone (the ``k``-th stamp after the cutoff).
A row of the summary is the mean over the windows that have a value. MASE scales by the
seasonal-naive error of the window's own training data (the series' values up to its cutoff);
points whose ``y`` is missing are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from autogp.data import TimeAxis
from autogp.experiments.scoring import quantiles_from_frame, scaled_crps
from autogp.forecast.columns import interval_pairs, level_label, point_columns
from autogp.forecast.metrics import coverage, mase, seasonality, smape

CV_COLUMNS = ("unique_id", "ds", "cutoff", "y")


def _levels_of(cv: pd.DataFrame, model: str) -> list[float]:
    return sorted(float(label) for label, _, _ in interval_pairs(cv.columns, model))


def _window_scores(part: pd.DataFrame, model: str, levels: Sequence[float],
                   y_train: np.ndarray, season: int) -> dict[str, float]:
    y = part["y"].to_numpy(dtype=np.float64)
    f = part[model].to_numpy(dtype=np.float64)
    row = {"mase": mase(y, f, y_train, season), "smape": smape(y, f)}
    row["scaled_crps"] = (scaled_crps(y, quantiles_from_frame(part, model, levels))
                          if levels else float("nan"))
    for level in levels:
        lo, hi = part[f"{model}-lo-{level_label(level)}"], part[f"{model}-hi-{level_label(level)}"]
        row[f"coverage_{level_label(level)}"] = coverage(y, lo.to_numpy(), hi.to_numpy())
    return row


def cross_validation_metrics(
    cv: pd.DataFrame,
    train: pd.DataFrame,
    *,
    season_length: int | Mapping[str, int] | None = None,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """MASE, sMAPE, scaled CRPS and interval coverage of ``cv`` per model and step.

    Args:
        cv: a cross-validation frame (``unique_id, ds, cutoff, y``, model columns).
        train: the data the windows were cut from (``unique_id, ds, y``); a window's training
            values are its series' finite values up to its cutoff.
        season_length: MASE's seasonal period (one for all, or per series); default: the
            usual period of each series' time axis (12 for monthly data, ...).
        models: the models to score (default: every point column of ``cv``).

    Returns a frame with ``model``, ``step`` (``"all"``, then ``1`` ... ``h``), ``windows``
    (how many windows were scored), ``mase``, ``smape``, ``scaled_crps`` and
    ``coverage_<L>`` per interval level of the model (NaN where a model has no intervals).
    """
    for col in CV_COLUMNS:
        if col not in cv.columns:
            raise ValueError(f"the cross-validation frame has no column {col!r} "
                             f"(columns: {list(cv.columns)})")
    for col in ("unique_id", "ds", "y"):
        if col not in train.columns:
            raise ValueError(f"the training frame has no column {col!r} "
                             f"(columns: {list(train.columns)})")
    models = list(models) if models is not None else point_columns(cv.columns,
                                                                   exclude=CV_COLUMNS)
    train = train.assign(unique_id=train["unique_id"].astype(str))
    history = {uid: g.sort_values("ds", kind="stable") for uid, g in train.groupby("unique_id")}
    cv = cv.assign(unique_id=cv["unique_id"].astype(str)).sort_values(
        ["unique_id", "cutoff", "ds"], kind="stable")
    rows: list[dict[str, object]] = []
    for model in models:
        levels = _levels_of(cv, model)
        scored: dict[object, list[dict[str, float]]] = {"all": []}
        for (uid, cutoff), part in cv.groupby(["unique_id", "cutoff"], sort=False):
            if uid not in history:
                raise ValueError(f"series {uid!r} of the cross-validation frame is not in the "
                                 "training frame")
            past = history[uid]
            y_train = past.loc[past["ds"] <= cutoff, "y"].to_numpy(dtype=np.float64)
            y_train = y_train[np.isfinite(y_train)]
            if isinstance(season_length, Mapping):
                season = int(season_length[uid])
            elif season_length is not None:
                season = int(season_length)
            else:
                season = seasonality(TimeAxis.infer(past["ds"]))
            part = part.reset_index(drop=True)
            finite = np.isfinite(part["y"].to_numpy(dtype=np.float64))
            if finite.any():
                scored["all"].append(_window_scores(part[finite], model, levels, y_train, season))
            for k in np.flatnonzero(finite):
                scored.setdefault(int(k) + 1, []).append(
                    _window_scores(part.iloc[[k]], model, levels, y_train, season))
        for step in ["all", *sorted(k for k in scored if k != "all")]:
            table = pd.DataFrame(scored[step])
            row: dict[str, object] = {"model": model, "step": step, "windows": len(table)}
            for name in table.columns:
                values = table[name].to_numpy(dtype=np.float64)
                row[name] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
            rows.append(row)
    out = pd.DataFrame(rows)
    first = ["model", "step", "windows", "mase", "smape", "scaled_crps"]
    return out[[c for c in first if c in out.columns]
               + sorted(c for c in out.columns if c not in first)]


__all__ = ["CV_COLUMNS", "cross_validation_metrics"]
