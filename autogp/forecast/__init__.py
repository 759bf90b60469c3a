"""Forecasting with fitted particle posteriors: the :class:`AutoGP` model, mixture predictions,
structure explanations, decompositions, model files and metrics."""

from autogp.forecast.columns import MODEL_NAME, level_columns
from autogp.forecast.model import AutoGP, load
from autogp.inference.mixture import (
    AutoGPPredictionWarning,
    PredictionError,
    mixture_logpdf,
    mixture_quantiles,
)
from autogp.inference.posterior import Posterior
from autogp.pipeline.saveload import FORMAT_VERSION, ModelFileError

__all__ = [
    "FORMAT_VERSION",
    "MODEL_NAME",
    "AutoGP",
    "AutoGPPredictionWarning",
    "ModelFileError",
    "Posterior",
    "PredictionError",
    "level_columns",
    "load",
    "mixture_logpdf",
    "mixture_quantiles",
]
