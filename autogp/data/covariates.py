"""Covariates (exogenous regressors): their standardisation, and future values checked against
the training columns.

A fit standardises each covariate as it standardises y (zero mean, unit variance over the
training points) and keeps the scaling, so that forecasts standardise the future values the
same way and explanations read the fitted effects back in data units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autogp.data.errors import DataError
from autogp.data.lags import is_lagged, lag_sources


@dataclass(frozen=True)
class CovariateScaling:
    """``z = (value - mean) / scale`` per covariate, in the order of ``names``."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    #: ``(covariate, lag)`` of each column under ``data.covariate_lags`` (empty: every column
    #: is a covariate at the same time; see :mod:`autogp.data.lags`).
    sources: tuple[tuple[str, int], ...] = ()

    @classmethod
    def fit(cls, frame: pd.DataFrame, lags: Sequence[int] = (0,)) -> CovariateScaling:
        """The scaling of the training covariates ``frame`` (a constant column keeps scale 1:
        it cannot be told apart from the level, and stays finite); ``lags``: the
        ``data.covariate_lags`` its columns were made with."""
        values = frame.to_numpy(dtype=np.float64)
        mean = values.mean(axis=0) if len(values) else np.zeros(values.shape[1])
        sd = values.std(axis=0) if len(values) else np.ones(values.shape[1])
        scale = np.where(sd > 0, sd, 1.0)
        names = tuple(str(c) for c in frame.columns)
        sources = lag_sources(names, lags) if is_lagged(lags) else ()
        return cls(names, tuple(map(float, mean)), tuple(map(float, scale)), sources)

    @property
    def lagged(self) -> bool:
        """Whether some column is a covariate lagged (``data.covariate_lags``)."""
        return any(k for _, k in self.sources)

    @property
    def lags(self) -> tuple[int, ...]:
        """The lags its columns were made at, sorted (``(0,)`` without lagged copies)."""
        return tuple(sorted({k for _, k in self.column_sources()}))

    def column_sources(self) -> tuple[tuple[str, int], ...]:
        """``(covariate, lag)`` of each column (lag 0 throughout without lags)."""
        return self.sources or tuple((n, 0) for n in self.names)

    def forward(self, values: np.ndarray) -> np.ndarray:
        """Standardised ``[M, C]`` from data-unit ``values`` ``[M, C]`` (columns in order)."""
        return (np.asarray(values, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(
            self.scale)

    def to_dict(self) -> dict:
        out = {"names": list(self.names), "mean": list(self.mean), "scale": list(self.scale)}
        if self.sources:
            out["sources"] = [[base, k] for base, k in self.sources]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> CovariateScaling:
        sources = tuple((str(base), int(k)) for base, k in d.get("sources", ()))
        return cls(tuple(d["names"]), tuple(d["mean"]), tuple(d["scale"]), sources)


def covariate_columns(frame: pd.DataFrame, used: Sequence[str | None],
                      id_col: str | None = None) -> list[str]:
    """The covariate columns of a training frame: every numeric (or boolean) column besides
    ``used`` (id, time, target, split ...), statsforecast's convention. A column that is not
    numeric is skipped when it is constant within each series (labels such as a frequency or a
    category) and refused, naming it, when it varies (it looks like a covariate that is not a
    number)."""
    taken = {str(c) for c in used if c is not None}
    names = []
    for name in (str(c) for c in frame.columns if str(c) not in taken):
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            names.append(name)
            continue
        groups = frame.groupby(id_col, sort=False)[name] if id_col in frame.columns else None
        varies = (groups.nunique(dropna=False).max() if groups is not None
                  else column.nunique(dropna=False)) > 1
        if varies:
            raise DataError(
                f"column {name!r} is not numeric (e.g. {column.dropna().iloc[0]!r}): extra "
                "columns of the training data are covariates (exogenous regressors) and must "
                "be numbers (0/1 for holidays and events); drop the column or convert it",
                column=name)
    return names


def _when(stamp: object) -> str:
    """A time stamp as messages show it: a date alone at midnight."""
    if isinstance(stamp, pd.Timestamp) and stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    return str(stamp)


def future_values(names: Sequence[str], frame: pd.DataFrame | None, stamps: pd.Index,
                  t_wanted: np.ndarray, t_given: np.ndarray | None, what: str,
                  source: str = "the future values (X_df)") -> np.ndarray:
    """``[M, C]`` values of covariates ``names`` at times ``t_wanted`` (stamps ``stamps``),
    from ``frame`` (a ``ds`` column and the covariates) whose rows are at times ``t_given``;
    ``source`` names the frame in messages.

    Raises DataError naming the column and the date when the frame is missing, lacks a
    covariate (a covariate known only in the past cannot be forecast with), lacks a date,
    has a date twice, or holds a value that is not a finite number.
    """
    if not names:
        return np.zeros((len(t_wanted), 0))
    if frame is None:
        raise DataError(
            f"{what}: the model was fitted with covariates {list(names)}; forecasting needs "
            "their future values: pass X_df (unique_id, ds and those columns) to predict, or "
            "--future FILE on the command line", column=names[0])
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise DataError(
            f"{what}: covariate {missing[0]!r} is missing from the future values (X_df); it is "
            "known only in the past, but the forecast needs its future values: add the column "
            "to X_df, or fit without it", column=missing[0])
    t_given = np.asarray(t_given, dtype=np.float64)
    order = np.argsort(t_given, kind="stable")
    sorted_t = t_given[order]
    dup = np.flatnonzero(np.diff(sorted_t) == 0)
    if dup.size:
        row = order[dup[0]]
        raise DataError(f"{what}: {source} give the date {_when(frame['ds'].iloc[row])} twice",
                        column="ds")
    out = np.empty((len(t_wanted), len(names)))
    pos = np.searchsorted(sorted_t, t_wanted)
    for m, t in enumerate(np.asarray(t_wanted, dtype=np.float64)):
        p = pos[m]
        hit = p < len(sorted_t) and np.isclose(sorted_t[p], t, rtol=0, atol=1e-9 * max(1, abs(t)))
        if not hit:
            raise DataError(
                f"{what}: {source} have no row for {_when(stamps[m])} (covariate {names[0]!r}); "
                "they must cover every date where the model is evaluated", column=names[0])
        row = order[p]
        for c, name in enumerate(names):
            raw = frame[name].iloc[row]
            value = pd.to_numeric(pd.Series([raw]), errors="coerce").iloc[0]
            if isinstance(raw, bool | np.bool_):
                value = float(raw)
            if not np.isfinite(value):
                raise DataError(
                    f"{what}: covariate {name!r} at {_when(stamps[m])} is not a finite number "
                    f"({raw!r} in {source})" if isinstance(raw, str) else
                    f"{what}: covariate {name!r} at {_when(stamps[m])} is not a finite number "
                    f"({raw} in {source})", column=name, value=raw)
            out[m, c] = value
    return out


__all__ = ["CovariateScaling", "covariate_columns", "future_values"]
