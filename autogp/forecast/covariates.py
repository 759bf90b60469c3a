"""Covariates in the forecaster's frames: the extra columns of the training data, and their
values where a forecast or a decomposition needs them (statsforecast's ``X_df``).

Training: every column of a training frame besides the id, time, target and split columns is a
covariate (numbers; 0/1 indicators for holidays and events), attached to each series at its
observations' times. Forecasting: the covariates' values at the forecast times come from the
series' own covariates where it has them (past times, cross-validation windows) and else from
``X_df`` (a frame with ``ds``, the covariate columns and, for panels, ``unique_id``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autogp.data import AutoGPDataWarning, DataError, TimeSeries
from autogp.data.covariates import covariate_columns, future_values
from autogp.data.header import csv_columns, read_frame
from autogp.data.lags import (
    history_of,
    is_lagged,
    lag_name,
    lag_times,
    lagged_names,
    lagged_values,
    merged,
    rebuilt_history,
    refuse_ambiguous,
    stamp_of,
    training_lags,
)
from autogp.data.timeaxis import to_microseconds
from autogp.forecast.explain import additive_terms, product_factors
from autogp.inference.posterior import Posterior
from autogp.kernels import Kernel, spec
from autogp.kernels import covariates as covariate_atoms


def as_stamps(series: TimeSeries, ds: Any) -> tuple[np.ndarray, pd.Index]:
    """Numeric times and output stamps for user-given future ``ds`` of one series."""
    values = ds if isinstance(ds, pd.Index | pd.Series | np.ndarray | list | tuple) else [ds]
    values = pd.Index(values) if not isinstance(values, pd.Index) else values
    if series.axis.kind == "numeric":
        t = series.axis.to_numeric(np.asarray(values, dtype=np.float64))
        return t, pd.Index(np.asarray(values, dtype=np.float64))
    us = to_microseconds(values, source="ds")
    return series.axis.us_to_numeric(us), pd.DatetimeIndex(us.astype("datetime64[us]"))


def _rows_of(frame: pd.DataFrame, id_col: str | None, unique_id: str) -> pd.DataFrame:
    if id_col is None or id_col not in frame.columns:
        return frame
    return frame[frame[id_col].astype(str) == unique_id]


def _numbers(column: pd.Series) -> np.ndarray:
    """A covariate column as float64 (booleans as 0/1; NaN for what is not a number)."""
    if pd.api.types.is_bool_dtype(column):
        return column.astype(np.float64).to_numpy()
    return pd.to_numeric(column, errors="coerce").to_numpy(np.float64)


def _with_lags(s: TimeSeries, names: list[str], rows: pd.DataFrame, t_rows: np.ndarray,
               lags: tuple[int, ...]) -> tuple[TimeSeries, np.ndarray, list[str]]:
    """``s`` without the first rows whose lags reach before the covariates' first row (with
    a warning saying so), the model columns' values on its rows and their names."""
    refuse_ambiguous(names, lags)
    what = f"series {s.unique_id!r}"
    history = history_of(t_rows, {n: _numbers(rows[n]) for n in names})
    values, dropped = training_lags(names, lags, history, s.t, s.axis, what)
    if dropped:
        first, last = stamp_of(s.axis, s.t[0]), stamp_of(s.axis, s.t[dropped - 1])
        rows_text = (f"its first row ({first}) is" if dropped == 1 else
                     f"its first {dropped} rows ({first} to {last}) are")
        warnings.warn(
            f"{what}: {rows_text} left out of the fit: their covariate lags "
            f"(data.covariate_lags = {list(lags)}) reach before the covariates' first row",
            AutoGPDataWarning, stacklevel=2)
        s = s.last(s.n - dropped)
    return s, values, lagged_names(names, lags)


def attach_covariates(series: Sequence[TimeSeries], data: Any, *, time_col: str,
                      used: Sequence[str | None], id_col: str | None,
                      sep: str | None = ",", lags: Sequence[int] = (0,)) -> list[TimeSeries]:
    """``series`` with the covariate columns of the training ``data`` (a DataFrame or a CSV
    path) attached at their observations' times; unchanged when it has none. ``used``: the
    columns that are not covariates (id, time, target, split ...). ``lags``: the steps back
    at which each covariate enters (``data.covariate_lags``, :mod:`autogp.data.lags`)."""
    if isinstance(data, str | Path):
        if time_col not in csv_columns(data, sep):  # headerless: ds, y (and an id) only
            return list(series)
        # The main reader has read this file: it warned if it is not UTF-8 (or refused it
        # under data.strict); a second warning would say nothing more.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AutoGPDataWarning)
            data = read_frame(data, sep, comment="#")
    if not isinstance(data, pd.DataFrame):
        return list(series)
    frame = data.reset_index() if time_col not in data.columns and data.index.name == time_col \
        else data
    names = covariate_columns(frame, [*used, time_col, id_col], id_col)
    if not names:
        return list(series)
    out = []
    for s in series:
        rows = _rows_of(frame, id_col, s.unique_id)
        rows = rows[rows[time_col].notna()]
        t_rows, _ = as_stamps(s, rows[time_col])
        columns = names
        if is_lagged(lags):
            s, values, columns = _with_lags(s, names, rows, t_rows, tuple(lags))
        else:
            values = future_values(names, rows.rename(columns={time_col: "ds"}), s.ds, s.t,
                                   t_rows, f"series {s.unique_id!r}",
                                   source="the training data")
        # A covariate constant over the training data says nothing the level does not (its
        # standardised values are all 0): it is left out, and its future is not needed.
        varies = np.ptp(values, axis=0) > 0 if len(values) else np.zeros(len(columns), bool)
        if varies.any():
            kept = [n for n, v in zip(columns, varies, strict=True) if v]
            s = dataclasses.replace(s, covariates=pd.DataFrame(values[:, varies], columns=kept))
        out.append(s)
    return out


def covariates_at(post: Posterior, t_new: np.ndarray, stamps: pd.Index,
                  X_df: pd.DataFrame | None) -> np.ndarray | None:
    """``[M, C]`` values of the fit's covariates at ``t_new`` (None without covariates): the
    series' own values at its observed times, ``X_df``'s elsewhere (DataError naming the
    column and the date where neither has them)."""
    names = list(post.covariates)
    if not names:
        return None
    series = post.series
    own = series.covariates.to_numpy() if series.covariates is not None else np.zeros((0, 0))
    out = np.full((len(t_new), len(names)), np.nan)
    pos = np.searchsorted(series.t, t_new)
    known = np.zeros(len(t_new), bool)
    for m, t in enumerate(t_new):
        p = pos[m]
        if p < series.n and series.t[p] == t and own.shape[0]:
            out[m] = own[p]
            known[m] = True
    if known.all():
        return out
    frame = None
    t_given = None
    if X_df is not None:
        if "ds" not in X_df.columns:
            raise DataError("X_df needs a 'ds' column (the future time stamps)", column="ds")
        frame = _rows_of(X_df, "unique_id", series.unique_id)
        t_given, _ = as_stamps(series, frame["ds"])
    rest = ~known
    if post.covariate_scaling.lagged:
        out[rest] = _lagged_future(post, np.asarray(t_new)[rest], stamps[rest], frame, t_given)
        return out
    out[rest] = future_values(names, frame, stamps[rest], np.asarray(t_new)[rest], t_given,
                              f"series {series.unique_id!r}")
    return out


def _lagged_future(post: Posterior, t: np.ndarray, stamps: pd.Index, frame: pd.DataFrame | None,
                   t_given: np.ndarray | None) -> np.ndarray:
    """``[M, C]`` lagged model columns at times ``t``: each covariate's value ``k`` steps
    earlier, from the training rows (the fit's own columns hold that history) and else from
    ``frame`` (``X_df``'s rows of the series, at times ``t_given``)."""
    series, sources = post.series, post.covariate_scaling.sources
    axis = series.axis
    history = rebuilt_history(sources, series.covariates.to_numpy(), series.t, axis)
    bases = list(dict.fromkeys(base for base, _ in sources))
    if frame is not None:
        given = {b: _numbers(frame[b]) for b in bases if b in frame.columns}
        history = merged(history, history_of(t_given, given))
    values = lagged_values(sources, history, t, axis)
    bad = np.argwhere(np.isnan(values))
    if len(bad):
        m, c = bad[0]
        base, k = sources[c]
        lags = list(post.covariate_scaling.lags)
        why = ("no X_df was given" if frame is None else f"X_df has no column {base!r}"
               if base not in frame.columns else "X_df has no row or no number for that date")
        needs = (f", which column {lag_name(base, k)!r} needs at {stamp_of(axis, t[m])},"
                 if k else "")
        raise DataError(
            f"series {series.unique_id!r}: covariate {base!r} at "
            f"{stamp_of(axis, lag_times(axis, t[m:m + 1], k)[0])}{needs} is in neither the "
            f"training data nor X_df ({why}); X_df must give the covariates' values at every "
            f"forecast date (data.covariate_lags = {lags})", column=base)
    return values


def linear_terms(expr: Kernel, names: Sequence[str]) -> list[tuple[Kernel, str]]:
    """The additive terms of ``expr`` that are a linear effect of one covariate (``LIN[k]``,
    possibly scaled by constants), each labelled with its covariate's name."""
    out = []
    for term in additive_terms(expr):
        factors = product_factors(term)
        linear = [f for f in factors if f.opcode in covariate_atoms.LINEAR_OPCODES]
        if len(linear) == 1 and all(f is linear[0] or f.opcode == spec.CONST for f in factors):
            out.append((term, names[int(spec.INPUT[linear[0].opcode]) - 1]))
    return out


def covariate_effects(post: Posterior, target: str = "y") -> list[str]:
    """Plain-English lines on the covariates' linear effects, in data units: the posterior
    mean of the slope of the additive linear terms (0 in particles without one), e.g. ``y rises
    2.1 per unit of temp``, and the posterior weight of the structures that have such a term.

    A linear term's posterior mean at inputs z* is amp z* (z^T alpha): one evaluation with the
    covariate one standard deviation above its mean gives its slope."""
    names = list(post.covariates)
    if not names:
        return []
    scaling = post.covariate_scaling
    values = np.asarray(scaling.mean) + np.diag(scaling.scale)  # row j: covariate j up one sd
    t = np.full(len(names), post.series.t[-1])

    def split(expr: Kernel) -> list[tuple[Kernel, str]]:
        return linear_terms(expr, names)

    means = post.component_means(t, split, names, covariates=values)
    w = post.weights()
    labels = [{label for _, label in split(e)} for e in post.expressions()]
    units = f" (in {post.scaler.units} units)" if post.scaler.transformed else ""
    lines = []
    for j, name in enumerate(names):
        share = float(sum(w[p] for p, found in enumerate(labels) if name in found))
        if share == 0:
            lines.append(f"{name}: no linear effect in the posterior")
            continue
        slope = post.scaler.value_scale * means[name][j] / scaling.scale[j]
        verb = "rises" if slope >= 0 else "falls"
        lines.append(f"{name}: {target} {verb} {abs(slope):.3g} per unit of {name}{units} "
                     f"(posterior mean; a linear term in {100 * share:.0f}% of the posterior)")
    return lines


__all__ = ["as_stamps", "attach_covariates", "covariate_effects", "covariates_at",
           "linear_terms"]
