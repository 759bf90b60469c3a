"""Plots of fitted models (matplotlib, no pyplot state).

Figures are built as ``matplotlib.figure.Figure`` objects with the Agg canvas, so nothing here
depends on (or changes) the user's interactive backend; they display in notebooks and are written
with :func:`save_figure` (atomically)::

    from autogp import plots
    fig = plots.plot_forecast(model, model.predict(18))
    plots.save_figure(fig, "forecast.png")
    plots.plot_components(model.decompose())
    plots.plot_structures(model.kernels())

Date axes use matplotlib's concise date formatter, so a panel's narrow plots keep readable
labels. A fit that saw only its recent window (``data.window``) is marked: the window is
shaded, and the observations before it are drawn in grey when the full series is given
(``observed``; a saved model keeps only its window).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd
from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pandas.api.types import is_datetime64_any_dtype as is_datetime

from autogp.data import TimeSeries
from autogp.forecast.columns import MODEL_NAME, interval_pairs
from autogp.forecast.explain import COMPONENTS
from autogp.forecast.tables import window_reading
from autogp.pipeline.atomic import atomic_path

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_COLOR = "C0"
_MAX_PANELS = 6


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


class FittedModel(Protocol):
    """What the forecast plot needs of a model (:class:`autogp.AutoGP` is one; a model with
    ``fits``, its posteriors by id, also gets its fitting windows marked)."""

    @property
    def unique_ids(self) -> list[str]: ...

    def series(self, unique_id: str | None = None) -> TimeSeries: ...


def _time_axis(ax: Axes, ds: Any) -> None:
    """Concise date labels (``2016``, ``Feb``, ``Mar``, ...) on a date axis."""
    if isinstance(ds, pd.DatetimeIndex):
        locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _fitting_window(model: FittedModel, unique_id: str) -> tuple[Any, str] | None:
    """The first time stamp the fit saw and a reading of its window, when it left some out."""
    fit = getattr(model, "fits", {}).get(unique_id)
    reading = window_reading(fit) if fit is not None else None
    if reading is None:
        return None
    return fit.series.ds[0], reading.split(" (")[0]


def _forecast_panel(
    ax: Axes,
    model: FittedModel,
    forecast: pd.DataFrame,
    unique_id: str,
    history: int | None,
    observed: TimeSeries | None,
) -> None:
    series = observed if observed is not None else model.series(unique_id)
    ds, y = series.ds, series.y
    if history is not None and history < len(y):
        ds, y = ds[-history:], y[-history:]
    window = _fitting_window(model, unique_id)
    if window is None:
        ax.plot(ds, y, ".", color="black", markersize=3, label="observed")
    else:
        start, reading = window
        before = np.asarray(ds < start)
        if before.any():
            ax.plot(ds[before], y[before], ".", color="0.6", markersize=3,
                    label="observed, before the fitted window")
        ax.plot(ds[~before], y[~before], ".", color="black", markersize=3, label="observed")
        shown = "" if before.any() or observed is not None else " (earlier ones not kept)"
        ax.axvspan(start, ds[-1], color="0.5", alpha=0.12, linewidth=0,
                   label=f"fitted on {reading}{shown}")
        ax.axvline(start, color="0.4", linestyle="--", linewidth=0.8)
    fc = forecast
    if "unique_id" in forecast.columns:
        fc = forecast[forecast["unique_id"].astype(str) == str(unique_id)]
    levels = interval_pairs(fc.columns, MODEL_NAME)
    alphas = np.linspace(0.15, 0.35, max(len(levels), 1))
    for a, (lv, lo, hi) in zip(alphas, levels, strict=False):
        ax.fill_between(
            fc["ds"],
            fc[lo],
            fc[hi],
            color=_COLOR,
            alpha=float(a),
            linewidth=0,
            label=f"{lv}% interval",
        )
    if MODEL_NAME in fc.columns:
        ax.plot(fc["ds"], fc[MODEL_NAME], color=_COLOR, linewidth=1.5, label="forecast mean")
    if "y" in fc.columns:  # held-out observations (autogp run)
        ax.plot(fc["ds"], fc["y"], "x", color="C3", markersize=4, label="held out")
    ax.set_title(str(unique_id), fontsize=10)
    ax.grid(alpha=0.3)
    _time_axis(ax, ds)


def _value_name(model: FittedModel) -> str:
    config = getattr(model, "config", None)
    return getattr(getattr(config, "data", None), "target_col", None) or "y"


def plot_forecast(
    model: FittedModel,
    forecast: pd.DataFrame,
    *,
    unique_id: str | None = None,
    history: int | None = None,
    title: str | None = None,
    observed: Sequence[TimeSeries] | None = None,
    value_name: str | None = None,
) -> Figure:
    """Observed points, the forecast mean and one shaded band per interval level.

    For a panel without ``unique_id`` the first six series get a panel each. ``history``
    limits the observed points shown to the last ``history``. ``observed``: the full series
    (by ``unique_id``) to draw instead of the points each fit saw, so that a fit on a recent
    window shows the earlier observations too. ``value_name`` labels the value axis (default:
    the model's ``data.target_col``).
    """
    ids = [unique_id] if unique_id is not None else model.unique_ids[:_MAX_PANELS]
    full = {s.unique_id: s for s in observed or ()}
    n = len(ids)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    fig = _figure(9 if cols == 1 else 11, 4 if rows == 1 else 3 * rows)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, uid in zip(axes.flat, ids, strict=False):
        _forecast_panel(ax, model, forecast, uid, history, full.get(str(uid)))
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(loc="upper left", fontsize=8)
    value_name = value_name or _value_name(model)
    if n == 1:
        axes.flat[0].set_xlabel("time")
        axes.flat[0].set_ylabel(value_name)
    else:
        fig.supxlabel("time")
        fig.supylabel(value_name)
    if title is not None:
        fig.suptitle(title)
    elif n == 1:
        axes.flat[0].set_title(f"{ids[0]}: {MODEL_NAME} forecast", fontsize=11)
    return fig


def plot_components(decomposition: pd.DataFrame, *, title: str | None = None) -> Figure:
    """One panel for the data and the fitted mean, then one per non-zero component
    (from ``AutoGP.decompose()``, one series)."""
    df = decomposition
    if "unique_id" in df.columns and df["unique_id"].nunique() > 1:
        first = df["unique_id"].iloc[0]
        df = df[df["unique_id"] == first]
    present = [c for c in COMPONENTS if c in df.columns and np.any(np.abs(df[c]) > 0)]
    fig = _figure(9, 2.2 * (1 + len(present)))
    axes = fig.subplots(1 + len(present), 1, sharex=True, squeeze=False)[:, 0]
    ax = axes[0]
    ax.plot(df["ds"], df["y"], ".", color="black", markersize=3, label="observed")
    ax.plot(df["ds"], df["fitted"], color=_COLOR, label="posterior mean")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_ylabel({"log": "log y", "boxcox": "Box-Cox y"}.get(df.attrs.get("units"), "y"))
    for ax, name in zip(axes[1:], present, strict=True):
        ax.plot(df["ds"], df[name], color=_COLOR)
        ax.set_ylabel(name)
    for ax in axes:
        ax.grid(alpha=0.3)
    _time_axis(axes[-1], pd.DatetimeIndex(df["ds"]) if is_datetime(df["ds"]) else df["ds"])
    axes[-1].set_xlabel("time")
    uid = df["unique_id"].iloc[0] if "unique_id" in df.columns and len(df) else ""
    fig.suptitle(title or f"{uid}: components (posterior means)")
    return fig


def plot_structures(kernels: pd.DataFrame, *, top: int = 10, title: str | None = None) -> Figure:
    """Horizontal bars of the posterior weight of the ``top`` structures (from
    ``AutoGP.kernels()``, one series)."""
    df = kernels
    if "unique_id" in df.columns and df["unique_id"].nunique() > 1:
        df = df[df["unique_id"] == df["unique_id"].iloc[0]]
    df = df.sort_values("weight", ascending=False).head(top).iloc[::-1]
    fig = _figure(9, 1 + 0.45 * max(len(df), 1))
    ax = fig.subplots()
    ax.barh(np.arange(len(df)), df["weight"], color=_COLOR)
    ax.set_yticks(np.arange(len(df)), labels=list(df["structure"]), fontsize=8)
    ax.set_xlabel("posterior weight")
    ax.set_xlim(0, 1)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or "posterior over kernel structures")
    return fig


def save_figure(fig: Figure, path: str | Path, **kwargs: Any) -> Path:
    """Write ``fig`` to ``path`` atomically; the format follows the suffix (png, pdf, svg)."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower() or "png"
    kwargs.setdefault("dpi", 120)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=fmt, **kwargs)
    return target


__all__ = ["plot_components", "plot_forecast", "plot_structures", "save_figure"]
