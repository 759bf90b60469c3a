"""One fitted series scored on its held-out points: the rows of an experiment's ``metrics.csv``.

These scores need the fitted model (its predictive density and particle mixture), unlike the
frame-based scores of :mod:`autogp.experiments.scoring` that every model of a comparison gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from autogp.config import Config
from autogp.data import TimeSeries
from autogp.experiments.scoring import boxcox_mixture_crps, mixture_crps
from autogp.forecast.columns import MODEL_NAME, interval_columns, level_label
from autogp.forecast.metrics import coverage, mase, seasonality, smape
from autogp.forecast.model import AutoGP
from autogp.inference.posterior import Posterior

SUPPORTED_METRICS = ("smape", "mase", "coverage", "lpd")


def score_series(
    metrics: tuple[str, ...],
    fc: pd.DataFrame,
    train: TimeSeries,
    test: TimeSeries,
    levels: list[float],
    model: AutoGP,
) -> dict[str, float]:
    """The ``metrics`` (see :data:`SUPPORTED_METRICS`) of forecast ``fc`` at ``test``'s points;
    ``coverage`` gives one ``coverage_{L}`` per level, ``lpd`` the log predictive density per
    point."""
    y, f = test.y, fc[MODEL_NAME].to_numpy()
    row: dict[str, float] = {}
    for name in metrics:
        if name == "smape":
            row["smape"] = smape(y, f)
        elif name == "mase":
            row["mase"] = mase(y, f, train.y, seasonality(train.axis))
        elif name == "coverage":
            for lv in levels:
                lo_col, hi_col = interval_columns(MODEL_NAME, lv)
                lo = fc[lo_col].to_numpy()
                hi = fc[hi_col].to_numpy()
                row[f"coverage_{level_label(lv)}"] = coverage(y, lo, hi)
        elif name == "lpd":
            if model.fits[train.unique_id].scaler.transformed and np.any(y <= 0):
                # A log-normal forecast gives no density to y <= 0 (M3's N2786 has one such
                # held-out value): -inf, reported as NaN so the panel mean stays readable.
                row["lpd_per_point"] = float("nan")
                row["note"] = "held-out y <= 0 under a log/Box-Cox transform: lpd not defined"
                continue
            lpd = model.log_predictive_density(test.ds, y, unique_id=train.unique_id)
            row["lpd_per_point"] = float(lpd) / len(y)
    return row


def scaled_mixture_crps(model: AutoGP, uid: str, test: TimeSeries) -> float:
    """CRPS of the particle mixture over mean |y|: closed form for the Gaussian mixture; under
    a log or Box-Cox transform (a log-normal or Box-Cox-normal mixture) the integral of
    (F(x) - 1{x >= y})^2, taken on a fine grid in log units (``boxcox_mixture_crps``)."""
    fit = model.fits[uid]
    mix = fit.mixture(fit.series.axis.to_numeric(test.ds), include_noise=True)
    s = fit.scaler
    y = np.asarray(test.y, float)
    if not s.transformed:
        y_norm = (y - s.value_offset) / s.value_scale
        crps = s.value_scale * mixture_crps(mix.weights, mix.means, mix.sds, y_norm)
        return float(np.mean(crps) / np.mean(np.abs(y)))
    mu = s.to_transformed(mix.means)  # [P, M] in transformed units
    crps = boxcox_mixture_crps(mix.weights, mu, s.value_scale * mix.sds, y, s.boxcox_lambda)
    return float(np.mean(crps) / np.mean(np.abs(y)))


def forecast_and_score(
    model: AutoGP, train: TimeSeries, test: TimeSeries | None
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """One fitted series' forecast (at ``test``'s stamps, with its ``y``; else
    ``forecast.horizon`` steps) and its ``metrics.csv`` row (None without a test part)."""
    levels = sorted(set(model.config.forecast.levels))
    uid = train.unique_id
    if test is None:
        return model.predict(model.config.forecast.horizon, level=levels, unique_id=uid), None
    fc = model.predict(test.ds, level=levels, unique_id=uid)
    fc["y"] = test.y
    row: dict[str, Any] = {"unique_id": uid, "n_train": train.n, "n_test": test.n}
    row.update(score_series(model.config.experiment.metrics, fc, train, test, levels, model))
    row["crps_mixture_scaled"] = scaled_mixture_crps(model, uid, test)
    return fc, row


def forecast_and_score_fit(
    fit: Posterior, config: Config, parts: tuple[TimeSeries, TimeSeries | None]
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """:func:`forecast_and_score` of one fit, done by the worker that made it right after
    fitting (an :class:`~autogp.parallel.work.AfterFit`; ``parts``: the training and held-out
    parts of its series)."""
    train, test = parts
    return forecast_and_score(AutoGP.from_fits([fit], config, progress=False), train, test)


def forecast_and_score_chunk(
    items: Sequence[tuple[Posterior, TimeSeries, TimeSeries | None]], config: Mapping[str, Any]
) -> list[tuple[pd.DataFrame, dict[str, Any] | None]]:
    """:func:`forecast_and_score` for a chunk of series (one task of a worker process), with
    one model holding the chunk's fits."""
    model = AutoGP.from_fits([fit for fit, _, _ in items], dict(config), progress=False)
    return [forecast_and_score(model, train, test) for _, train, test in items]


__all__ = [
    "SUPPORTED_METRICS",
    "forecast_and_score",
    "forecast_and_score_chunk",
    "forecast_and_score_fit",
    "scaled_mixture_crps",
    "score_series",
]
