"""What one fitted series contributes to a run's outputs: its forecast rows, its structure
posterior and its fit statistics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from autogp._x64 import x64
from autogp.config import Config, load_config
from autogp.forecast.prediction import predict_frame
from autogp.forecast.tables import structure_table
from autogp.inference.posterior import Posterior


@dataclass(frozen=True)
class SeriesOutputs:
    """What a finished series contributes to a run's outputs."""

    forecast: pd.DataFrame  # statsforecast layout: unique_id, ds, AutoGP, AutoGP-lo/hi-...
    structures: pd.DataFrame  # unique_id, structure, weight, ...
    statistics: dict[str, Any]  # n, particles, log marginal likelihood, ESS, ...


def series_outputs(
    fit: Posterior,
    config: Config | Mapping[str, Any],
    horizon: int | Any = None,
) -> SeriesOutputs:
    """The forecast rows (``horizon`` steps, default ``forecast.horizon``, or future stamps),
    structure posterior and fit statistics of one fitted series."""
    w = fit.weights()
    stats = {
        "unique_id": fit.unique_id,
        "n": fit.series.n,
        "particles": int(len(fit.log_weights)),
        "log_marginal_likelihood": float(fit.log_marginal_likelihood),
        "ess": float(1.0 / np.sum(w**2)),
    }
    cfg = config if isinstance(config, Config) else load_config(dict(config))
    with x64():
        forecast = predict_frame([fit], cfg, horizon)
    return SeriesOutputs(forecast, structure_table([fit]), stats)


__all__ = ["SeriesOutputs", "series_outputs"]
