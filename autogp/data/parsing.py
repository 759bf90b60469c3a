"""Cells -> values and time stamps.

:func:`parse_values` reads a value column as float64 (NaN where missing); :func:`parse_time`
reads a time column as dates (int64 microseconds) or numbers (float64). Both take text (CSV
cells), Python objects or typed arrays (frames, arrays), and every error names the row.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pandas as pd

from autogp.data.csvtext import NA_TOKENS
from autogp.data.errors import DataError
from autogp.data.rawtable import RawTable, plural, quote_value
from autogp.data.timeaxis import to_microseconds


# ---- cells -----------------------------------------------------------------------------------
def all_strings(values: np.ndarray) -> bool:
    return pd.api.types.infer_dtype(values, skipna=False) == "string"


def strip_cells(values: np.ndarray) -> np.ndarray:
    if all_strings(values):  # the CSV case: vectorised
        return pd.Series(values, dtype=object).str.strip().to_numpy(dtype=object)
    return np.array([v.strip() if isinstance(v, str) else v for v in values], dtype=object)


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip().lower() in NA_TOKENS
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def missing_mask(obj: np.ndarray) -> np.ndarray:
    """Which cells are missing (empty, an NA marker, None, NaN)."""
    if all_strings(obj):
        low = pd.Series(obj, dtype=object).str.strip().str.lower()
        return low.isin(NA_TOKENS).to_numpy(dtype=bool)
    return np.array([_is_missing(v) for v in obj], dtype=bool)


def _strings_to_float(obj: np.ndarray) -> np.ndarray:
    """Object cells -> float64 (NaN where not a number). Text goes through Python's ``float``,
    which rounds correctly: pandas' fast parser can be one ulp off, and a time stamp read back
    must equal the one written."""
    out = np.full(obj.size, np.nan)
    rest = np.ones(obj.size, dtype=bool)
    for i, v in enumerate(obj):
        if isinstance(v, str):
            try:
                out[i] = float(v)
                rest[i] = False
            except ValueError:
                pass
    if rest.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[rest] = pd.to_numeric(pd.Series(obj[rest], dtype=object), errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan, copy=True
            )
    return out


# ---- values ----------------------------------------------------------------------------------
def parse_values(raw: RawTable, col: str) -> np.ndarray:
    """Column -> float64, NaN for missing; errors on anything that is not a number."""
    vals = raw.cells[col]
    arr = np.asarray(vals)
    if arr.dtype.kind == "b":
        raise DataError(
            f"{raw.where(col)}: values are booleans, not numbers", source=raw.source, column=col
        )
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float64)
    obj = strip_cells(np.asarray(vals, dtype=object))
    missing = missing_mask(obj)
    conv = np.full(obj.size, np.nan)
    ok = ~missing
    if ok.any():
        sub = obj[ok]
        is_bool = np.array([isinstance(v, bool | np.bool_) for v in sub], dtype=bool)
        num = _strings_to_float(sub)
        num[is_bool] = np.nan
        conv[ok] = num
    bad = np.flatnonzero(ok & np.isnan(conv))
    if bad.size:
        i = int(bad[0])
        v = obj[i]
        hint = ""
        if isinstance(v, str) and re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", v):
            hint = (
                " (thousands separators and decimal commas are not supported; write e.g. "
                "1234 or 1.234)"
            )
        elif isinstance(v, str) and re.fullmatch(r"[-+]?\d*,\d+", v):
            hint = " (a decimal comma? use '.' as the decimal point)"
        others = f"; {plural(bad.size - 1, 'more row')} not numbers either" if bad.size > 1 else ""
        raise DataError(
            f"{raw.where(col)}, {raw.at(i)}: value {quote_value(v)} is not a number{hint}{others}",
            source=raw.source,
            column=col,
            row=raw.rows[i],
            value=v,
        )
    return conv


# ---- time stamps -----------------------------------------------------------------------------
def _time_error(raw: RawTable, col: str, i: int, v: Any, what: str) -> DataError:
    return DataError(
        f"{raw.where(col)}, {raw.at(i)}: time value {quote_value(v)} {what}",
        source=raw.source,
        column=col,
        row=raw.rows[i],
        value=v,
    )


def _parse_dates(obj: np.ndarray) -> np.ndarray:
    """Object array -> int64 microseconds with NaT (min int64) where unparseable."""
    nat = np.iinfo(np.int64).min
    out = np.full(obj.size, nat, dtype=np.int64)
    if all_strings(obj):
        cand = pd.Series(obj, dtype=object).str.contains(r"\d", regex=True).to_numpy(dtype=bool)
    else:
        cand = np.array([not isinstance(v, str) or bool(re.search(r"\d", v)) for v in obj])
    # (strings without digits, such as "Jan" or "abc", are never dates)

    def parse(values: np.ndarray, fmt: str | None) -> np.ndarray:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idx = pd.DatetimeIndex(
                    pd.to_datetime(values, errors="coerce", utc=True, format=fmt)
                )
                idx = idx.tz_localize(None).as_unit("us")
            res = idx.asi8.copy()
            res[idx.isna()] = nat
            return res
        except Exception:  # noqa: BLE001 - parser failures (overflow etc.) mean "not a date"
            return np.full(values.size, nat, dtype=np.int64)

    pos = np.flatnonzero(cand)
    if pos.size:
        out[pos] = parse(obj[pos], None)
        # Values the inferred format missed: try each one on its own format.
        retry = pos[out[pos] == nat]
        if retry.size:
            out[retry] = parse(obj[retry], "mixed")
    return out


def parse_time(raw: RawTable, col: str) -> tuple[str, np.ndarray]:
    """Column -> ("datetime", int64 us) or ("numeric", float64); errors name the row."""
    vals = raw.cells[col]
    arr = np.asarray(vals)
    if isinstance(vals, pd.Series | pd.Index) and (
        vals.dtype.kind == "M" or isinstance(vals.dtype, pd.DatetimeTZDtype)
    ):
        idx = pd.DatetimeIndex(vals)
        if idx.hasnans:
            i = int(np.flatnonzero(idx.isna())[0])
            raise _time_error(raw, col, i, "NaT", "is missing; every row needs a time")
        return "datetime", to_microseconds(idx)
    if arr.dtype.kind == "M":
        if np.isnat(arr).any():
            i = int(np.flatnonzero(np.isnat(arr))[0])
            raise _time_error(raw, col, i, "NaT", "is missing; every row needs a time")
        return "datetime", to_microseconds(arr)
    if arr.dtype.kind == "b":
        raise DataError(
            f"{raw.where(col)}: time values are booleans", source=raw.source, column=col
        )
    if arr.dtype.kind in "iuf":
        x = arr.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            i = int(bad[0])
            raise _time_error(raw, col, i, arr[i], "is not a finite number")
        return "numeric", x
    obj = strip_cells(np.asarray(vals, dtype=object))
    missing = missing_mask(obj)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise _time_error(raw, col, i, obj[i], "is missing; every row needs a time")
    num = _strings_to_float(obj)
    is_bool = np.array([isinstance(v, bool | np.bool_) for v in obj], dtype=bool)
    num[is_bool] = np.nan
    numeric_ok = ~np.isnan(num)
    if numeric_ok.all():
        bad = np.flatnonzero(~np.isfinite(num))
        if bad.size:
            i = int(bad[0])
            raise _time_error(raw, col, i, obj[i], "is not a finite number")
        return "numeric", num
    us = _parse_dates(obj)
    nat = np.iinfo(np.int64).min
    date_ok = us != nat
    if date_ok.all():
        return "datetime", us
    # Mixed: report against the majority reading of the column.
    if numeric_ok.sum() > date_ok.sum():
        i = int(np.flatnonzero(~numeric_ok)[0])
        raise _time_error(raw, col, i, obj[i], "is not a number (the column holds numbers)")
    i = int(np.flatnonzero(~date_ok)[0])
    what = "is not a date" + (" (the column holds dates)" if date_ok.any() else " or a number")
    raise _time_error(raw, col, i, obj[i], what)


__all__ = ["all_strings", "missing_mask", "parse_time", "parse_values", "strip_cells"]
