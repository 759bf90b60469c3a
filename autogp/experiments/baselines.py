"""Statistical baselines from statsforecast (AutoETS, AutoARIMA, AutoTheta, SeasonalNaive, ...).

statsforecast is an optional dependency (``pip install -e ".[bench]"``) and is imported only when
:func:`statsforecast_forecasts` runs. The forecast frame it returns follows the layout that
:mod:`autogp.experiments.scoring` reads: ``unique_id``, ``ds``, then per model ``{model}``,
``{model}-lo-{L}`` (widest interval first) and ``{model}-hi-{L}`` (narrowest first), with ``L``
written as ``f"{L:g}"``. statsforecast itself labels a level the way it was passed (``80.0`` gives
``AutoETS-lo-80.0``); the labels are normalised here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from autogp.experiments.scoring import training_values
from autogp.forecast.columns import interval_columns, level_columns, parse_interval_column

DEFAULT_MODELS = ("AutoETS", "AutoARIMA", "AutoTheta", "SeasonalNaive")

# Models built with a season_length argument; Naive and HistoricAverage take none.
_SEASONAL_MODELS = ("AutoETS", "AutoARIMA", "AutoTheta", "AutoCES", "SeasonalNaive")
_PLAIN_MODELS = ("Naive", "HistoricAverage")


def _import_statsforecast() -> Any:
    try:
        import statsforecast
        import statsforecast.models
    except ImportError as err:
        raise ImportError(
            "the statsforecast baselines need the optional dependency statsforecast: "
            'pip install -e ".[bench]"'
        ) from err
    return statsforecast


def _make_model(statsforecast: Any, name: str, season_length: int) -> Any:
    """An unfitted statsforecast model called ``name``."""
    if name in _SEASONAL_MODELS:
        return getattr(statsforecast.models, name)(season_length=season_length)
    if name in _PLAIN_MODELS:
        return getattr(statsforecast.models, name)()
    raise ValueError(
        f"unknown baseline model {name!r}; choose from {list(_SEASONAL_MODELS + _PLAIN_MODELS)}"
    )


def _statsforecast_level(level: float) -> int | float:
    """A level as statsforecast should get it (ints where whole, so labels read ``95``)."""
    level = float(level)
    if not 0.0 < level < 100.0:
        raise ValueError(f"interval levels must lie strictly between 0 and 100, got {level:g}")
    return int(level) if level.is_integer() else level


def _normalise_level_labels(fc: pd.DataFrame, model: str) -> pd.DataFrame:
    """Rename ``{model}-lo-80.0`` style columns to ``{model}-lo-80``."""
    renames = {}
    for col in fc.columns:
        parsed = parse_interval_column(col, model)
        if parsed is not None:
            lower, upper = interval_columns(model, parsed.level)
            renames[col] = lower if parsed.side == "lo" else upper
    return fc.rename(columns=renames)


def _model_columns(model: str, levels: Sequence[float]) -> list[str]:
    """``model``'s columns in statsforecast order: point, lo widest first, hi narrowest first."""
    return [model, *level_columns(levels, model)]


def _check_train(train: pd.DataFrame) -> pd.DataFrame:
    for col in ("unique_id", "ds", "y"):
        if col not in train.columns:
            raise ValueError(f"the training frame has no column {col!r}")
    train = train[["unique_id", "ds", "y"]].copy()
    if not pd.api.types.is_datetime64_any_dtype(train["ds"]):
        train["ds"] = pd.to_datetime(train["ds"])
    train["y"] = train["y"].astype(np.float64)
    return train


def statsforecast_forecasts(
    train: pd.DataFrame,
    h: int,
    levels: Sequence[float],
    *,
    season_length: int = 12,
    freq: str = "MS",
    n_jobs: int = 2,
    models: Sequence[str] = DEFAULT_MODELS,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Fit statsforecast models on ``train`` and forecast ``h`` steps with intervals.

    Each model is fitted and forecast on its own so that its wall-clock time can be reported
    (with ``n_jobs`` worker processes across the series).

    Args:
        train: training rows ``unique_id``, ``ds`` (dates; parsed if given as strings), ``y``.
        h: forecast horizon in steps.
        levels: central interval levels in percent (e.g. ``[50, 80, 90, 95]``).
        season_length: seasonal period handed to the seasonal models.
        freq: pandas frequency of ``ds`` (``"MS"``: month starts, as in M3).
        n_jobs: worker processes statsforecast uses.
        models: statsforecast model class names.

    Returns:
        ``(forecasts, seconds)``: the forecast frame (``unique_id``, ``ds``, and per model the
        point and interval columns) and the seconds each model took to fit and forecast.
    """
    statsforecast = _import_statsforecast()
    if int(h) < 1:
        raise ValueError(f"h must be at least 1, got {h}")
    if not models:
        raise ValueError("no baseline models requested")
    train = _check_train(train)
    sf_levels = [_statsforecast_level(level) for level in levels]

    frames: list[pd.DataFrame] = []
    seconds: dict[str, float] = {}
    for name in models:
        model = _make_model(statsforecast, name, season_length)
        start = time.perf_counter()
        engine = statsforecast.StatsForecast(models=[model], freq=freq, n_jobs=n_jobs)
        fc = engine.forecast(df=train, h=int(h), level=sf_levels or None)
        seconds[name] = time.perf_counter() - start
        # statsforecast 2.x returns unique_id as a column; older versions put it in the index.
        fc = fc.reset_index(drop="unique_id" in fc.columns)
        fc = _normalise_level_labels(fc, name)
        frames.append(fc[["unique_id", "ds", *_model_columns(name, levels)]])

    merged = frames[0]
    for fc in frames[1:]:
        merged = merged.merge(fc, on=["unique_id", "ds"], how="left", validate="one_to_one")
    return merged.reset_index(drop=True), seconds


def statsforecast_by_season(
    train: pd.DataFrame,
    h: int,
    levels: Sequence[float],
    seasons: Mapping[object, int],
    *,
    n_jobs: int = 2,
    models: Sequence[str] = DEFAULT_MODELS,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """:func:`statsforecast_forecasts` with each series' own season: one call per season.

    A panel mixes frequencies (yearly, quarterly, monthly, trading days), so the seasonal
    models get ``seasons[uid]`` (series missing from ``seasons`` get 1, as in
    :func:`~autogp.experiments.scoring.score_forecasts`). The stamps handed to statsforecast
    are placeholders (consecutive days, from 1970, for each series' values in time order: a
    day per value keeps tens of thousands of values inside pandas' date range): its
    models see only the values' order and the season, and a panel's stamps may mix dates and
    numbers. The ``ds`` of the result are therefore placeholders too; align the forecasts by
    step. Seconds are summed over the calls.
    """
    values = training_values(train)
    by_season: dict[int, list[object]] = {}
    for uid in values:
        by_season.setdefault(int(seasons.get(uid, 1)), []).append(uid)
    frames: list[pd.DataFrame] = []
    seconds = dict.fromkeys(models, 0.0)
    for season, uids in sorted(by_season.items()):
        group = pd.concat(
            [pd.DataFrame({"unique_id": uid,
                           "ds": pd.date_range("1970-01-01", periods=values[uid].size, freq="D"),
                           "y": values[uid]})
             for uid in uids],
            ignore_index=True,
        )
        fc, took = statsforecast_forecasts(group, h, levels, season_length=season, freq="D",
                                           n_jobs=n_jobs, models=models)
        frames.append(fc)
        for name in models:
            seconds[name] += took[name]
    return pd.concat(frames, ignore_index=True), seconds


__all__ = ["DEFAULT_MODELS", "statsforecast_by_season", "statsforecast_forecasts"]
