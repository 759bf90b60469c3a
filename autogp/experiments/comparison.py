"""AutoGP against the statsforecast baselines on the same split: the ``comparison`` table of an
experiment's ``summary.json``."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from autogp.experiments.baselines import statsforecast_by_season
from autogp.experiments.scoring import score_forecasts, summary_table
from autogp.forecast.columns import MODEL_NAME, interval_columns, point_columns


def _align_steps(fc: pd.DataFrame, scored: pd.DataFrame) -> pd.DataFrame:
    """``fc``'s rows on the held-out stamps of ``scored``, step by step within each series
    (series with fewer test points use the first steps)."""
    fc = fc.copy()
    fc["step"] = fc.groupby("unique_id").cumcount()
    truth = scored[["unique_id", "ds", "y"]].copy()
    truth["step"] = truth.groupby("unique_id").cumcount()
    merged = truth.merge(fc.drop(columns=["ds"]), on=["unique_id", "step"], how="left")
    return merged.drop(columns=["step"])


def baselines_on_split(
    train_frame: pd.DataFrame,
    scored: pd.DataFrame,
    levels: Sequence[float],
    seasons: Mapping[object, int],
) -> tuple[pd.DataFrame, dict[str, float]]:
    """statsforecast's forecasts of the series in ``train_frame`` (each with its season from
    ``seasons``), aligned with the held-out rows of ``scored`` (``unique_id``, ``ds``, ``y``);
    and each model's seconds.

    A series with fewer held-out points than the longest gets the first steps of the forecast.
    """
    h = int(scored.groupby("unique_id").size().max())
    # statsforecast forks its workers; forking a process whose JAX runtime is running can
    # deadlock, so the baselines run in a fresh spawned process.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        fc, seconds = pool.submit(statsforecast_by_season, train_frame, h, levels,
                                  dict(seasons)).result()
    return _align_steps(fc, scored), seconds


def baselines_from_file(
    path: Path, scored: pd.DataFrame, levels: Sequence[float]
) -> pd.DataFrame:
    """Baseline forecasts read from a CSV in statsforecast's layout (``unique_id``, ``ds``,
    ``{model}``, ``{model}-lo-{L}``, ``{model}-hi-{L}``), aligned step by step with the
    held-out rows of ``scored``; only the series of ``scored`` are kept.

    Raises:
        ValueError: a series of ``scored`` or an interval level is missing from the file.
    """
    fc = pd.read_csv(path)
    for col in ("unique_id", "ds"):
        if col not in fc.columns:
            raise ValueError(f"{path}: no column {col!r} (columns: {list(fc.columns)})")
    fc["unique_id"] = fc["unique_id"].astype(str)
    wanted = set(scored["unique_id"].astype(str))
    missing = sorted(wanted - set(fc["unique_id"]))
    if missing:
        raise ValueError(f"{path}: no forecasts for {len(missing)} series, e.g. {missing[:5]}")
    models = point_columns(fc.columns)
    if not models:
        raise ValueError(f"{path}: no model columns (columns: {list(fc.columns)})")
    columns = []
    for model in models:
        columns.append(model)
        for level in levels:
            lost = [c for c in interval_columns(model, level) if c not in fc.columns]
            if lost:
                raise ValueError(f"{path}: no column {lost[0]!r} for the {level:g}% interval")
            columns += list(interval_columns(model, level))
    fc = fc[fc["unique_id"].isin(wanted)][["unique_id", "ds", *columns]]
    truth = scored.assign(unique_id=scored["unique_id"].astype(str))
    return _align_steps(fc, truth)


def model_scores(
    scored: pd.DataFrame,
    baseline_fc: pd.DataFrame | None,
    train_frame: pd.DataFrame,
    levels: Sequence[float],
    seasons: Mapping[object, int],
) -> pd.DataFrame:
    """The scores of AutoGP's held-out forecasts ``scored`` and, when given, of the baselines,
    one row a series and model (:func:`~autogp.experiments.scoring.score_forecasts`)."""
    frame = scored
    models = [MODEL_NAME]
    if baseline_fc is not None:
        frame = scored.merge(baseline_fc.drop(columns=["y"]), on=["unique_id", "ds"], how="left",
                             suffixes=("", "_baseline"))
        models += point_columns(baseline_fc.columns)
    return score_forecasts(frame, train_frame, models, levels, seasons)


def comparison_table(scores: pd.DataFrame, levels: Sequence[float]
                     ) -> dict[str, dict[str, float]]:
    """Per-model means of :func:`model_scores` (the ``comparison`` of ``summary.json``)."""
    table = summary_table(scores, levels)
    return {str(m): {k: float(v) for k, v in row.items()} for m, row in table.iterrows()}


__all__ = ["baselines_from_file", "baselines_on_split", "comparison_table", "model_scores"]
