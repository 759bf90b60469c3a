"""What :meth:`autogp.AutoGP.fit` accepts, turned into series: a DataFrame (pandas or Dask), a
``(t, y)`` pair of arrays, a CSV path or :class:`TimeSeries` objects, read under the config's
``[data]`` section; rows marked as test are left out, and numeric time axes get the calendar
that ``data.freq_col`` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from autogp.config import Config
from autogp.data import DataError, TimeSeries, from_arrays, from_frame, read_csv
from autogp.data.header import csv_columns, read_frame
from autogp.data.seasons import with_frequency
from autogp.forecast.covariates import attach_covariates
from autogp.parallel.inputs import dask_to_pandas, is_dask_frame, read_series_tolerant

#: Columns of a training frame that are never covariates.
NOT_COVARIATES = ("unique_id",)


def read_series(
    data: Any,
    config: Config,
    time_col: str | None = None,
    target_col: str | None = None,
    id_col: str | None = None,
    noise_col: str | None = None,
) -> list[TimeSeries]:
    """The training series in ``data`` (column names default to the config's ``[data]``);
    raises :class:`DataError` on the first problem."""
    d = config.data
    noise_col = noise_col or d.noise_col
    time_col = time_col or d.time_col
    target_col = target_col or d.target_col
    id_col = id_col if id_col is not None else d.id_col
    # The point cap protects the exact likelihood only: the sparse one scales, and a fitting
    # window no longer than the cap keeps every fit under it.
    capped = config.smc.likelihood == "exact" and not 0 < d.window <= d.max_points
    max_points = d.max_points if capped else None
    common = {
        "strict": d.strict,
        "aggregate": d.aggregate,
        "max_points": max_points,
    }
    if isinstance(data, TimeSeries):
        out = [data]
    elif (
        isinstance(data, list | tuple) and data and all(isinstance(s, TimeSeries) for s in data)
    ):
        out = list(data)
    elif isinstance(data, pd.DataFrame):
        if id_col is None and "unique_id" in data.columns:
            id_col = "unique_id"
        kwargs = dict(common, split_col=d.split_col, test_value=d.test_value,
                      noise_col=noise_col)
        if d.split_col is not None and d.split_col not in data.columns:
            kwargs["split_col"] = None
        res = from_frame(data, time_col, target_col, id_col, **kwargs)
        out = res if isinstance(res, list) else [res]
    elif isinstance(data, str | Path):
        kwargs = d.read_kwargs()
        kwargs.update(time_col=time_col, target_col=target_col, id_col=id_col,
                      max_points=max_points, noise_col=noise_col)
        res = read_csv(data, **kwargs)
        out = res if isinstance(res, list) else [res]
    elif isinstance(data, tuple) and len(data) == 2:
        t, y = data
        out = [from_arrays(t, y, **common)]
    else:
        raise DataError(
            "fit expects a DataFrame (ds, y[, unique_id]), a (t, y) pair of arrays, a CSV "
            f"path or TimeSeries objects; got {type(data).__name__}"
        )
    if isinstance(data, pd.DataFrame | str | Path):
        out = attach_covariates(out, data, time_col=time_col, id_col=id_col, sep=d.sep,
                                used=[target_col, d.split_col, noise_col, d.freq_col,
                                      *NOT_COVARIATES], lags=d.covariate_lags)
        out = named_calendars(out, data, config, id_col)
    seen: set[str] = set()
    for s in out:
        if s.unique_id in seen:
            raise DataError(f"series id {s.unique_id!r} appears twice")
        seen.add(s.unique_id)
    return [s.train() if s.is_test is not None and s.is_test.any() else s for s in out]


def named_calendars(series: list[TimeSeries], data: pd.DataFrame | str | Path, config: Config,
                    id_col: str | None) -> list[TimeSeries]:
    """``series`` with the calendar of their numeric time axes named by the column
    ``data.freq_col`` of ``data`` (a pandas alias, one per series: ``MS`` for monthly values
    numbered 1, 2, ...; :func:`autogp.data.seasons.with_frequency`), which gives them their
    seasons; unchanged when the key is unset. Date axes know their calendar and keep it."""
    column = config.data.freq_col
    if column is None:
        return series
    if isinstance(data, str | Path):
        if column not in csv_columns(data, config.data.sep):
            raise DataError(f"{data}: no column {column!r} (data.freq_col)", column=column)
        wanted = [column] + ([id_col] if id_col else [])
        data = read_frame(data, config.data.sep, usecols=wanted, comment="#")
    if column not in data.columns:
        raise DataError(f"no column {column!r} (data.freq_col) in the data (columns: "
                        f"{[str(c) for c in data.columns]})", column=column)
    groups = (data.groupby(data[id_col].astype(str), sort=False)[column]
              if id_col is not None and id_col in data.columns else None)
    out = []
    for s in series:
        values = (groups.get_group(s.unique_id) if groups is not None
                  and s.unique_id in groups.groups else data[column])
        names = values.dropna().astype(str).unique()
        if len(names) > 1:
            raise DataError(f"series {s.unique_id!r}: column {column!r} (data.freq_col) names "
                            f"several frequencies: {list(names)[:5]}", column=column)
        out.append(with_frequency(s, names[0] if len(names) else None))
    return out


def read_panel(
    data: Any,
    config: Config,
    time_col: str | None = None,
    target_col: str | None = None,
    id_col: str | None = None,
    noise_col: str | None = None,
) -> tuple[list[TimeSeries], dict[str, str]]:
    """The series in ``data`` that read, and an error message per series of a panel that
    does not (:func:`autogp.parallel.read_series_tolerant`). A Dask DataFrame is brought over
    as pandas first, only the columns needed."""
    d = config.data
    id_name = id_col if id_col is not None else d.id_col
    if is_dask_frame(data):
        id_name = id_name or ("unique_id" if "unique_id" in data.columns else None)
        wanted = [time_col or d.time_col, target_col or d.target_col, id_name, d.split_col,
                  noise_col or d.noise_col, d.freq_col]
        # The numeric columns come too: they are the covariates.
        numeric = [c for c, dtype in data.dtypes.items()
                   if pd.api.types.is_numeric_dtype(dtype) and c not in wanted]
        data = dask_to_pandas(data, [c for c in wanted if c is not None] + numeric)
    if id_name is None and isinstance(data, pd.DataFrame) and "unique_id" in data.columns:
        id_name = "unique_id"
    if id_name is None and isinstance(data, str | Path) and "unique_id" in csv_columns(data,
                                                                                     d.sep):
        id_name = "unique_id"
    return read_series_tolerant(
        lambda part: read_series(part, config, time_col, target_col, id_name, noise_col), data,
        id_name,
        sep=d.sep,
    )


__all__ = ["named_calendars", "read_panel", "read_series"]
