"""Panel input for distributed fits: Dask DataFrames, and panels with some bad series.

A panel read in one go fails on its first bad series (too short, all missing, duplicate stamps
...). :func:`read_series_tolerant` then reads it series by series, so each bad series gets its
own error message and every other series is still fitted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pandas as pd

from autogp.data import DataError, TimeSeries
from autogp.data.header import read_frame
from autogp.parallel.work import error_message


def is_dask_frame(data: Any) -> bool:
    """Whether ``data`` is a Dask DataFrame (without importing dask)."""
    return type(data).__module__.split(".")[0] == "dask" and hasattr(data, "partitions")


def dask_to_pandas(data: Any, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of a Dask DataFrame as one pandas frame, partition by partition in order
    (so series keep their order of first appearance); only ``columns`` are brought over."""
    if columns is not None:
        data = data[[c for c in columns if c in data.columns]]
    parts = [data.get_partition(i).compute() for i in range(data.npartitions)]
    return pd.concat(parts) if parts else data._meta


def read_series_tolerant(
    read: Callable[[Any], list[TimeSeries]],
    data: Any,
    id_col: str | None,
    *,
    sep: str | None = None,
    ids: Collection[str] | None = None,
) -> tuple[list[TimeSeries], dict[str, str]]:
    """``read(data)``; if that fails on a panel (a DataFrame or CSV path with ``id_col``),
    ``read`` of each series' rows alone: the series that read, and an error message per
    series that does not. When no series reads at all, the first error is raised. ``ids``:
    the series ``read`` reads (None: all); the series read one by one are those too."""
    try:
        return read(data), {}
    except DataError as whole:
        frame = _as_frame(data, id_col, sep)
        if frame is not None and ids is not None:
            wanted = {str(i) for i in ids}
            frame = frame[frame[id_col].astype(str).str.strip().isin(wanted)]
        if frame is None or frame[id_col].nunique(dropna=False) < 2:
            raise
        series: list[TimeSeries] = []
        errors: dict[str, str] = {}
        for uid, rows in frame.groupby(id_col, sort=False, dropna=False):
            try:
                series.extend(read(rows))
            except DataError as exc:
                errors[str(uid)] = error_message(exc)
        if not series:
            raise whole from None
        return series, errors


def _as_frame(data: Any, id_col: str | None, sep: str | None) -> pd.DataFrame | None:
    if id_col is None:
        return None
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, str | Path):
        try:
            frame = read_frame(data, sep)
        except Exception:  # noqa: BLE001 - the original error says what is wrong
            return None
    else:
        return None
    return frame if id_col in frame.columns else None


__all__ = ["dask_to_pandas", "is_dask_frame", "read_series_tolerant"]
