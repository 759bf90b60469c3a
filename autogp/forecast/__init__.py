"""Forecasting with fitted particle posteriors: the :class:`AutoGP` model, mixture predictions,
structure explanations, decompositions, model files and metrics."""

from autogp.forecast.mixture import (
    AutoGPPredictionWarning,
    PredictionError,
    mixture_logpdf,
    mixture_quantiles,
)
from autogp.forecast.model import MODEL_NAME, AutoGP, SeriesFit, level_columns, load
from autogp.forecast.saveload import FORMAT_VERSION, ModelFileError

__all__ = [
    "FORMAT_VERSION",
    "MODEL_NAME",
    "AutoGP",
    "AutoGPPredictionWarning",
    "ModelFileError",
    "PredictionError",
    "SeriesFit",
    "level_columns",
    "load",
    "mixture_logpdf",
    "mixture_quantiles",
]
