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


def _check_frames(cv: pd.DataFrame, train: pd.DataFrame) -> None:
    for col in CV_COLUMNS:
        if col not in cv.columns:
            raise ValueError(f"the cross-validation frame has no column {col!r} "
                             f"(columns: {list(cv.columns)})")
    for col in ("unique_id", "ds", "y"):
        if col not in train.columns:
            raise ValueError(f"the training frame has no column {col!r} "
                             f"(columns: {list(train.columns)})")


def cross_validation_window_scores(
    cv: pd.DataFrame,
    train: pd.DataFrame,
    *,
    season_length: int | Mapping[str, int] | None = None,
    models: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The scores of each window of ``cv`` (arguments as :func:`cross_validation_metrics`):
    one row a model, window (``unique_id``, ``cutoff``) and ``step`` (``"all"``: the window's
    points with a ``y``; ``k``: its ``k``-th point alone), with ``mase``, ``smape``,
    ``scaled_crps`` and ``coverage_<L>``. :func:`cross_validation_metrics` averages them."""
    _check_frames(cv, train)
    models = list(models) if models is not None else point_columns(cv.columns,
                                                                   exclude=CV_COLUMNS)
    train = train.assign(unique_id=train["unique_id"].astype(str))
    history = {uid: g.sort_values("ds", kind="stable") for uid, g in train.groupby("unique_id")}
    cv = cv.assign(unique_id=cv["unique_id"].astype(str)).sort_values(
        ["unique_id", "cutoff", "ds"], kind="stable")
    rows: list[dict[str, object]] = []
    for model in models:
        levels = _levels_of(cv, model)
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
            window = {"model": model, "unique_id": uid, "cutoff": cutoff}
            if finite.any():
                rows.append({**window, "step": "all",
                             **_window_scores(part[finite], model, levels, y_train, season)})
            for k in np.flatnonzero(finite):
                rows.append({**window, "step": int(k) + 1,
                             **_window_scores(part.iloc[[k]], model, levels, y_train, season)})
    return pd.DataFrame(rows, columns=None if rows else ["model", "unique_id", "cutoff",
                                                          "step"])


def window_scores_summary(scores: pd.DataFrame, models: Sequence[str] | None = None
                          ) -> pd.DataFrame:
    """:func:`cross_validation_metrics` from the scores of
    :func:`cross_validation_window_scores`: per model (``models``, default those of
    ``scores``) and step, the number of ``windows`` and the mean of each score over the
    windows that have a value."""
    models = list(models) if models is not None else list(pd.unique(scores["model"]))
    names = [c for c in scores.columns if c not in ("model", "unique_id", "cutoff", "step")]
    rows: list[dict[str, object]] = []
    for model in models:
        mine = scores[scores["model"] == model]
        steps = [k for k in pd.unique(mine["step"]) if k != "all"]
        for step in ["all", *sorted(steps)]:
            table = mine[mine["step"] == step]
            row: dict[str, object] = {"model": model, "step": step, "windows": len(table)}
            for name in names:
                values = table[name].to_numpy(dtype=np.float64)
                row[name] = float(np.nanmean(values)) if np.isfinite(values).any() else np.nan
            rows.append(row)
    out = pd.DataFrame(rows)
    first = ["model", "step", "windows", "mase", "smape", "scaled_crps"]
    return out[[c for c in first if c in out.columns]
               + sorted(c for c in out.columns if c not in first)]


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
    _check_frames(cv, train)
    models = list(models) if models is not None else point_columns(cv.columns,
                                                                   exclude=CV_COLUMNS)
    scores = cross_validation_window_scores(cv, train, season_length=season_length,
                                            models=models)
    return window_scores_summary(scores, models)


__all__ = ["CV_COLUMNS", "cross_validation_metrics", "cross_validation_window_scores",
           "window_scores_summary"]
