"""statsforecast's model calls on autogp's own API: a series' values in, statsforecast's dicts out.

statsforecast hands a model the values of one series (``y``; covariates as the columns of
``X``) without ids or time stamps. autogp fits them as the frame :func:`training_frame` builds:

* ``ds`` = 1, 2, ..., n (integer steps), ``y`` the values (NaN where missing, as autogp reads
  missing values), one column per covariate, named by ``names`` (default ``x1``, ``x2``, ...,
  in ``X``'s column order);
* when the model has a calendar (``freq``, e.g. ``"MS"``: what one step is), a column ``freq``
  holding it, which ``data.freq_col = "freq"`` hands to autogp's reader: a numeric axis whose
  frequency is named gets that calendar's seasons (12 months, 5 and 252 trading days, ...;
  :mod:`autogp.data.seasons`), exactly as ``autogp run`` names them for numeric M3 stamps.

Forecasts are ``predict(h)`` on the next ``h`` steps (``ds`` = n + 1, ..., n + h; the covariates'
future values, ``X_future``, as ``X_df``: :func:`future_frame`); in-sample values are
``predict`` at the training steps themselves, the posterior predictive there given all the
training data (a smoothed fit, not one-step-ahead forecasts). Each function returns
statsforecast's dict: ``mean`` (the ``AutoGP`` column), ``lo-<L>`` (widest first) and
``hi-<L>`` (narrowest first), and ``fitted``, ``fitted-lo-<L>``, ``fitted-hi-<L>`` for the
in-sample values, where ``<L>`` is each level as statsforecast gave it.

These functions are what :class:`autogp.integrations.statsforecast.AutoGP` runs (through
:func:`autogp.integrations.forksafe.call`); they need only autogp.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autogp._x64 import with_x64
from autogp.config import Config
from autogp.data.seasons import mase_season
from autogp.data.timeaxis import TimeAxis
from autogp.forecast.columns import MODEL_NAME, interval_columns
from autogp.forecast.crossval import condition_on
from autogp.forecast.model import AutoGP
from autogp.forecast.reading import read_series

#: The column of :func:`training_frame` that names a calendar (read as ``data.freq_col``).
FREQ_COLUMN = "freq"
#: statsforecast's ``season_length`` -> the calendar whose seasonal lag it is (a numeric axis'
#: ``freq``); 1 (no season) names none.
CALENDARS: dict[int, str] = {4: "QS", 5: "B", 7: "D", 12: "MS", 24: "h", 48: "30min", 52: "W"}
#: Column names a covariate may not take (they are the frame's own).
RESERVED = ("ds", "y", "unique_id", FREQ_COLUMN)

Level = Sequence[float] | None


def calendar(season_length: int | None, freq: str | None) -> str | None:
    """The calendar of a model's numeric axis: ``freq`` when given, else the one whose
    seasonal lag is ``season_length`` (:data:`CALENDARS`; 1 or None: none). Raises
    ``ValueError`` for a season that names no calendar or that contradicts ``freq``."""
    if season_length is not None and (isinstance(season_length, bool) or not isinstance(
            season_length, int | np.integer) or season_length < 1):
        raise ValueError(f"season_length must be an integer >= 1, got {season_length!r}")
    if freq is not None:
        if not isinstance(freq, str) or not freq:
            raise ValueError(f"freq must be a pandas frequency alias such as 'MS', got {freq!r}")
        if season_length is not None:
            axis = TimeAxis("numeric", "units", 0.0, 1.0, True, freq)
            if mase_season(axis) != season_length:
                raise ValueError(f"season_length={season_length} contradicts freq={freq!r}, "
                                 f"whose seasonal lag is {mase_season(axis)}; give one of them")
        return freq
    if season_length is None or season_length == 1:
        return None
    if int(season_length) not in CALENDARS:
        known = ", ".join(f"{k} ({v})" for k, v in sorted(CALENDARS.items()))
        raise ValueError(
            f"season_length={season_length} is no calendar autogp knows ({known}); leave it "
            "unset (autogp also finds periods in the data, by its periodogram) or name the "
            "calendar with freq=")
    return CALENDARS[int(season_length)]


def covariate_names(names: Sequence[str] | None, count: int) -> list[str]:
    """The names of ``count`` covariate columns: ``names`` (checked) or ``x1`` ... ``xN``."""
    if names is None:
        return [f"x{j + 1}" for j in range(count)]
    names = [str(n) for n in names]
    if len(names) != count:
        raise ValueError(f"covariates names {len(names)} columns ({names}) but X has {count}")
    clash = [n for n in names if n in RESERVED]
    if clash or len(set(names)) != len(names):
        raise ValueError(f"covariates must be distinct names other than {list(RESERVED)}, got "
                         f"{names}")
    return names


def _columns(X: Any, rows: int, what: str) -> np.ndarray | None:
    if X is None:
        return None
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != rows:
        raise ValueError(f"{what} must have {rows} rows (one per step), got shape {X.shape}")
    return X if X.shape[1] else None


def training_frame(y: Any, X: Any = None, names: Sequence[str] | None = None,
                   freq: str | None = None) -> pd.DataFrame:
    """The frame autogp fits for statsforecast's ``y`` and ``X`` (see the module's
    description): ``ds`` = 1..n, ``y``, the covariates, and ``freq`` when a calendar is named."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y must be one series (1-D), got shape {y.shape}")
    frame = pd.DataFrame({"ds": np.arange(1, y.size + 1), "y": y})
    X = _columns(X, y.size, "X")
    if X is not None:
        for name, column in zip(covariate_names(names, X.shape[1]), X.T, strict=True):
            frame[name] = column
    if freq is not None:
        frame[FREQ_COLUMN] = freq
    return frame


def future_frame(train: pd.DataFrame, h: int, X_future: Any = None) -> pd.DataFrame | None:
    """``X_df`` for a forecast ``h`` steps after ``train`` (a :func:`training_frame`): ``ds`` =
    n + 1, ..., n + h and the covariates' future values ``X_future`` in ``train``'s covariate
    columns; None when ``train`` has no covariates."""
    names = covariates_of(train)
    if not names:
        return None
    X = _columns(X_future, h, "X_future (the covariates' future values, X_df)")
    if X is None:
        raise ValueError(f"the training data have covariates ({', '.join(names)}): their future "
                         "values are needed (statsforecast: X_df)")
    n = len(train)
    frame = pd.DataFrame({"ds": np.arange(n + 1, n + h + 1)})
    for name, column in zip(covariate_names(names, X.shape[1]), X.T, strict=True):
        frame[name] = column
    return frame


def covariates_of(frame: pd.DataFrame) -> list[str]:
    """The covariate columns of a :func:`training_frame`."""
    return [str(c) for c in frame.columns if c not in RESERVED]


def as_dict(fc: pd.DataFrame, level: Level, prefix: str = "") -> dict[str, np.ndarray]:
    """An autogp forecast frame as statsforecast's dict: ``<prefix>mean`` (``mean``, or
    ``fitted`` for in-sample values), ``<prefix>lo-<L>`` (widest first), ``<prefix>hi-<L>``."""
    first = "fitted" if prefix else "mean"
    out = {first: fc[MODEL_NAME].to_numpy(dtype=np.float64)}
    levels = sorted(level or [])
    for lv in reversed(levels):
        out[f"{prefix}lo-{lv}"] = fc[interval_columns(MODEL_NAME, lv)[0]].to_numpy(np.float64)
    for lv in levels:
        out[f"{prefix}hi-{lv}"] = fc[interval_columns(MODEL_NAME, lv)[1]].to_numpy(np.float64)
    return out


def fit(config: Config, train: pd.DataFrame, progress: bool | None = False) -> AutoGP:
    """autogp's fit of a :func:`training_frame`: ``AutoGP(config).fit(train)``."""
    return AutoGP(config, progress=progress).fit(train)


def predict(model: AutoGP, train: pd.DataFrame, h: int, X_future: Any = None,
            level: Level = None) -> dict[str, np.ndarray]:
    """The forecast ``h`` steps after ``train``: ``model.predict(h, level=level, X_df=...)``."""
    X_df = future_frame(train, h, X_future)
    return as_dict(model.predict(int(h), level=list(level or []), X_df=X_df), level)


def in_sample(model: AutoGP, train: pd.DataFrame, level: Level = None) -> dict[str, np.ndarray]:
    """The in-sample values: ``model.predict`` at the training steps 1..n (covariates from
    ``train``), as ``fitted``, ``fitted-lo-<L>``, ``fitted-hi-<L>``."""
    names = covariates_of(train)
    X_df = train[["ds", *names]] if names else None
    fc = model.predict(pd.Index(train["ds"]), level=list(level or []), X_df=X_df)
    return as_dict(fc, level, prefix="fitted-")


def forecast(config: Config, train: pd.DataFrame, h: int, X_future: Any = None,
             level: Level = None, fitted: bool = False, progress: bool | None = False
             ) -> dict[str, np.ndarray]:
    """Fit ``train`` and forecast ``h`` steps (and the in-sample values when ``fitted``)."""
    model = fit(config, train, progress)
    out = predict(model, train, h, X_future, level)
    if fitted:
        out.update(in_sample(model, train, level))
    return out


@with_x64
def conditioned(model: AutoGP, train: pd.DataFrame) -> AutoGP:
    """``model`` (fitted on the first rows of ``train``) conditioned on the rest of ``train``:
    the same particles reweighted by their predictive density of the added observations, as
    ``AutoGP.cross_validation(refit=False)`` conditions its first window's fit on each later
    cutoff (:func:`autogp.forecast.crossval.condition_on`). No SMC runs."""
    (fit_,) = model.fits.values()
    (series,) = read_series(train, model.config)
    now = condition_on(fit_, series, series.last_t, model.config)
    return AutoGP.from_fits([now], model.config, progress=model.progress)


def forward(model: AutoGP, train: pd.DataFrame, h: int, X_future: Any = None,
            level: Level = None, fitted: bool = False) -> dict[str, np.ndarray]:
    """The forecast ``h`` steps after ``train`` of ``model`` :func:`conditioned` on ``train``
    (and its in-sample values when ``fitted``)."""
    now = conditioned(model, train)
    out = predict(now, train, h, X_future, level)
    if fitted:
        out.update(in_sample(now, train, level))
    return out


__all__ = [
    "CALENDARS",
    "FREQ_COLUMN",
    "RESERVED",
    "as_dict",
    "calendar",
    "conditioned",
    "covariate_names",
    "covariates_of",
    "fit",
    "forecast",
    "forward",
    "future_frame",
    "in_sample",
    "predict",
    "training_frame",
]
