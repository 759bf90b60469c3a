"""Readers: CSV files, DataFrames and arrays -> validated :class:`TimeSeries`.

All three readers share one validation pipeline, so a problem gets the same answer whatever the
input; every problem raises :class:`DataError` naming the source, column, row and value.

Rules (also the documentation of what is accepted):

* CSV separator: ``,``, ``;``, tab or ``|``, detected from the first lines (or pass ``sep``).
  Encoding UTF-8 (a BOM is fine); other bytes fall back to Latin-1 with a warning.
  ``.gz``/``.bz2``/``.xz`` files are decompressed. Blank lines and lines starting with ``#`` are
  skipped.
* Header: required, unless the file has exactly two columns (``ds, y``; or three ``id, ds, y``
  when ``id_col`` is given) and the first row already looks like data.
* Row numbers in messages are line numbers in the file, the header being row 1.
* ``ds``: dates (any format pandas parses; time-zone-aware stamps are converted to UTC and then
  made tz-naive) or numbers (used as they are, unit ``"units"``; integer years such as 1949 are
  numbers too). Every row needs one.
* ``y``: numbers. Empty cells and NA markers (``NA``, ``NaN``, ``null``, ...) and infinities are
  dropped with an :class:`AutoGPDataWarning` that counts them (``strict=True``: an error).
  Anything else that is not a number is an error.
* Rows are sorted by time. Duplicate time stamps are an error unless ``aggregate`` says how to
  combine them (``"mean"``, ``"sum"``, ``"last"``, ``"first"``, ``"median"``).
* At least :data:`MIN_POINTS` observations per series, at most ``max_points`` (default
  :data:`DEFAULT_MAX_POINTS`; exact GP inference costs O(n^3)).
"""

from __future__ import annotations

import bz2
import csv
import difflib
import gzip
import io
import lzma
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from autogp.data.errors import AutoGPDataWarning, DataError
from autogp.data.series import TimeSeries
from autogp.data.timeaxis import TimeAxis, infer_datetime_axis, infer_numeric_axis, to_microseconds

MIN_POINTS = 3
DEFAULT_MAX_POINTS = 5000
AGGREGATES = ("mean", "sum", "last", "first", "median")
Aggregate = Literal["mean", "sum", "last", "first", "median"]

# Cells read as "missing" (compared case-insensitively after stripping); pandas' default list.
NA_TOKENS = frozenset(
    s.lower()
    for s in (
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
        "NaT",
    )
)
_TIME_NAMES = ("date", "ds", "time", "timestamp", "datetime", "period", "month", "week", "day")
_VALUE_NAMES = ("y", "value", "values", "target", "count", "amount", "sales", "demand")
_SEPARATORS = (",", ";", "\t", "|")
_MAX_LISTED = 5  # rows/values quoted in one message


# ---- the raw table shared by all readers -----------------------------------------------------
@dataclass
class _Raw:
    source: str  # file path, "DataFrame" or "arrays"
    columns: list[str]
    cells: dict[str, Any]  # column -> 1-D array (object for CSV text)
    rows: np.ndarray  # row label of each entry (file line number, index label, position)
    row_word: str  # "row", "index" or "position"

    def at(self, i: int) -> str:
        return f"{self.row_word} {self.rows[i]}"


def _where(raw: _Raw, column: str | None = None) -> str:
    return raw.source + (f", column {column!r}" if column else "")


def _listing(raw: _Raw, idx: np.ndarray, values: Any = None) -> str:
    """'rows 4, 9 and 3 more' (with the values when given)."""
    shown = idx[:_MAX_LISTED]
    values = None if values is None else np.asarray(values, dtype=object)
    parts = []
    for i in shown:
        part = str(raw.rows[i])
        if values is not None:
            part += f" ({_show(values[i])})"
        parts.append(part)
    more = f" and {idx.size - shown.size} more" if idx.size > shown.size else ""
    word = raw.row_word + ("s" if idx.size > 1 else "")
    return f"{word} {', '.join(parts)}{more}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _show(v: Any) -> str:
    """A value quoted for a message, shortened if long."""
    s = repr(v)
    return s if len(s) <= 60 else s[:56] + "...'"


# ---- column lookup ---------------------------------------------------------------------------
def _suggest(name: str, columns: Sequence[str], role: str) -> str | None:
    cols = [c for c in columns if isinstance(c, str)]
    lower = {c.lower(): c for c in cols}
    if name.lower() in lower:
        return lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
    if close:
        return lower[close[0]]
    usual = _TIME_NAMES if role == "time_col" else _VALUE_NAMES if role == "target_col" else ()
    for u in usual:
        for c in cols:
            if c.lower() == u or c.lower().startswith(u):
                return c
    return None


def _missing_column(raw_source: str, name: str, role: str, columns: Sequence[str]) -> DataError:
    msg = f"{raw_source}: no column {name!r} ({role}); the columns are {list(columns)!r}."
    guess = _suggest(name, columns, role)
    if guess is not None:
        msg += f" Did you mean {guess!r}? Pass {role}={guess!r}."
    return DataError(msg, source=raw_source, column=name)


# ---- CSV text -> _Raw ------------------------------------------------------------------------
def _read_text(path: Path, strict: bool) -> str:
    src = str(path)
    if not path.exists():
        raise DataError(f"{src}: file not found", source=src)
    if path.is_dir():
        raise DataError(f"{src}: is a directory, not a CSV file", source=src)
    try:
        data = path.read_bytes()
        suffix = path.suffix.lower()
        if suffix == ".gz":
            data = gzip.decompress(data)
        elif suffix == ".bz2":
            data = bz2.decompress(data)
        elif suffix == ".xz":
            data = lzma.decompress(data)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise DataError(f"{src}: cannot read the file ({exc})", source=src) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{src}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        if strict:
            raise DataError(msg + "; re-save the file as UTF-8", source=src) from None
        warnings.warn(msg + "; reading it as Latin-1", AutoGPDataWarning, stacklevel=3)
        return data.decode("latin-1")


def _detect_sep(lines: list[str]) -> str:
    """The separator that splits the first lines into the same number (> 1) of fields."""
    best, best_fields = ",", 1
    for sep in _SEPARATORS:
        try:
            counts = [len(r) for r in csv.reader(lines, delimiter=sep)]
        except csv.Error:
            continue
        if counts and min(counts) > 1 and len(set(counts)) == 1 and counts[0] > best_fields:
            best, best_fields = sep, counts[0]
    if best_fields == 1:  # no separator is consistent; take the most frequent one on line 1
        first = lines[0] if lines else ""
        freq = {s: first.count(s) for s in _SEPARATORS}
        top = max(freq, key=lambda s: freq[s])
        best = top if freq[top] > 0 else ","
    return best


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _is_date(s: str) -> bool:
    if not re.search(r"\d", s):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return not pd.isna(pd.to_datetime(s, errors="coerce", utc=True))
    except Exception:  # noqa: BLE001 - any parser failure just means "not a date"
        return False


def _looks_like_data(row: list[str], id_first: bool) -> bool:
    cells = [c.strip() for c in row]
    if id_first:
        cells = cells[1:]
    if len(cells) != 2:
        return False
    ds, y = cells
    y_ok = _is_number(y) or y.lower() in NA_TOKENS
    return y_ok and ds != "" and (_is_number(ds) or _is_date(ds))


def _csv_to_raw(
    text: str,
    src: str,
    sep: str | None,
    time_col: str,
    target_col: str,
    id_col: str | None,
    extra_cols: Sequence[str],
) -> _Raw:
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n'):
        raise DataError(
            f"{src}: sep must be one character such as ',' or ';', got {sep!r}", source=src
        )
    if not text.strip():
        raise DataError(f"{src}: the file is empty", source=src)
    sample = [ln for ln in text.splitlines()[:50] if ln.strip() and not ln.startswith("#")][:20]
    if sep is None:
        sep = _detect_sep(sample)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header: list[str] | None = None
    header_line = 0
    records: list[list[str]] = []
    lines: list[int] = []
    try:
        for row in reader:
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if header is None:
                header, header_line = [c.strip() for c in row], reader.line_num
                continue
            records.append(row)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise DataError(
            f"{src}, row {reader.line_num}: malformed CSV ({exc})", source=src, row=reader.line_num
        ) from None
    if header is None:
        raise DataError(f"{src}: the file is empty", source=src)

    wanted = [c for c in (id_col, time_col, target_col) if c is not None]
    if not all(c in header for c in wanted) and _looks_like_data(header, id_col is not None):
        # Headerless: the first row is data; name the columns ourselves.
        records.insert(0, header)
        lines.insert(0, header_line)
        header = wanted
    else:
        for col, role in ((time_col, "time_col"), (target_col, "target_col"), (id_col, "id_col")):
            if col is not None and col not in header:
                err = _missing_column(src, col, role, header)
                if any(_is_number(c) or _is_date(c) for c in header if c):
                    err = DataError(
                        f"{err} The first row looks like data: a header row naming the "
                        f"columns is needed unless the file has exactly two columns (time, "
                        f"value; or id, time, value with id_col).",
                        source=src,
                        column=col,
                    )
                raise err
        for col in extra_cols:
            if col not in header:
                raise _missing_column(src, col, "split_col", header)
    if not records:
        raise DataError(
            f"{src}: the file has a header ({sep.join(header)!r}) but no data rows; at least "
            f"{MIN_POINTS} observations are needed",
            source=src,
        )
    for col in set(wanted) | set(extra_cols):
        if header.count(col) > 1:
            raise DataError(
                f"{src}: column {col!r} appears more than once in the header",
                source=src,
                column=col,
            )
    width = len(header)
    cells: dict[str, Any] = {}
    for col in dict.fromkeys([*wanted, *extra_cols]):
        j = header.index(col)
        cells[col] = np.array([r[j] if j < len(r) else "" for r in records], dtype=object)
    for r, ln in zip(records, lines, strict=True):
        if len(r) > width and any(c.strip() for c in r[width:]):
            raise DataError(
                f"{src}, row {ln}: {len(r)} fields but the header has {width} "
                f"(separator {sep!r}); is a value quoted wrongly or a separator missing?",
                source=src,
                row=ln,
            )
    return _Raw(src, header, cells, np.asarray(lines, dtype=np.int64), "row")


# ---- column parsing --------------------------------------------------------------------------
def _all_str(values: np.ndarray) -> bool:
    return pd.api.types.infer_dtype(values, skipna=False) == "string"


def _strip(values: np.ndarray) -> np.ndarray:
    if _all_str(values):  # the CSV case: vectorised
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


def _missing_mask(obj: np.ndarray) -> np.ndarray:
    """Which cells are missing (empty, an NA marker, None, NaN)."""
    if _all_str(obj):
        low = pd.Series(obj, dtype=object).str.strip().str.lower()
        return low.isin(NA_TOKENS).to_numpy(dtype=bool)
    return np.array([_is_missing(v) for v in obj], dtype=bool)


def _parse_values(raw: _Raw, col: str) -> np.ndarray:
    """Column -> float64, NaN for missing; errors on anything that is not a number."""
    vals = raw.cells[col]
    arr = np.asarray(vals)
    if arr.dtype.kind == "b":
        raise DataError(
            f"{_where(raw, col)}: values are booleans, not numbers", source=raw.source, column=col
        )
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float64)
    obj = _strip(np.asarray(vals, dtype=object))
    missing = _missing_mask(obj)
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
        others = f"; {_plural(bad.size - 1, 'more row')} not numbers either" if bad.size > 1 else ""
        raise DataError(
            f"{_where(raw, col)}, {raw.at(i)}: value {_show(v)} is not a number{hint}{others}",
            source=raw.source,
            column=col,
            row=raw.rows[i],
            value=v,
        )
    return conv


def _time_error(raw: _Raw, col: str, i: int, v: Any, what: str) -> DataError:
    return DataError(
        f"{_where(raw, col)}, {raw.at(i)}: time value {_show(v)} {what}",
        source=raw.source,
        column=col,
        row=raw.rows[i],
        value=v,
    )


def _parse_dates_obj(obj: np.ndarray) -> np.ndarray:
    """Object array -> int64 microseconds with NaT (min int64) where unparseable."""
    nat = np.iinfo(np.int64).min
    out = np.full(obj.size, nat, dtype=np.int64)
    if _all_str(obj):
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


def _subset(raw: _Raw, rows: np.ndarray, col: str) -> _Raw:
    """The rows ``rows`` of one column of ``raw`` (row labels kept, for messages)."""
    vals = raw.cells[col]
    part = vals.iloc[rows] if isinstance(vals, pd.Series) else np.asarray(vals)[rows]
    return _Raw(raw.source, [col], {col: part}, raw.rows[rows], raw.row_word)


def _parse_time(raw: _Raw, col: str) -> tuple[str, np.ndarray]:
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
            f"{_where(raw, col)}: time values are booleans", source=raw.source, column=col
        )
    if arr.dtype.kind in "iuf":
        x = arr.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            i = int(bad[0])
            raise _time_error(raw, col, i, arr[i], "is not a finite number")
        return "numeric", x
    obj = _strip(np.asarray(vals, dtype=object))
    missing = _missing_mask(obj)
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
    us = _parse_dates_obj(obj)
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


# ---- the shared pipeline ---------------------------------------------------------------------
def _format_time(kind: str, key: Any) -> str:
    if kind == "datetime":
        ts = pd.Timestamp(np.datetime64(int(key), "us"))
        return ts.isoformat() if ts != ts.normalize() else ts.strftime("%Y-%m-%d")
    return f"{float(key):g}"


def _combine(keys: np.ndarray, y: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """Combine values at equal keys (keys sorted, stable); returns unique keys, values, groups."""
    uniq, start = np.unique(keys, return_index=True)
    counts = np.diff(np.append(start, keys.size))
    if how == "sum":
        out = np.add.reduceat(y, start)
    elif how == "mean":
        out = np.add.reduceat(y, start) / counts
    elif how == "first":
        out = y[start]
    elif how == "last":
        out = y[start + counts - 1]
    else:  # median
        out = np.array([np.median(y[s : s + c]) for s, c in zip(start, counts, strict=True)])
    return uniq, out, (start, counts)


def _build(
    raw: _Raw,
    time_col: str,
    target_col: str,
    id_col: str | None,
    strict: bool,
    aggregate: str | None,
    max_points: int | None,
    split_col: str | None = None,
    test_value: str = "test",
    default_id: str = "series",
) -> list[TimeSeries]:
    if aggregate is not None and aggregate not in AGGREGATES:
        raise DataError(
            f"{raw.source}: aggregate must be one of {list(AGGREGATES)} or None, got {aggregate!r}",
            source=raw.source,
            value=aggregate,
        )
    names = [c for c in (time_col, target_col, id_col, split_col) if c is not None]
    if len(set(names)) != len(names):
        raise DataError(
            f"{raw.source}: time_col, target_col, id_col and split_col must be "
            f"different columns, got {names!r}",
            source=raw.source,
        )
    y_all = _parse_values(raw, target_col)
    try:
        kind, key_all = _parse_time(raw, time_col)
        mixed_time = False
    except DataError:
        # A panel may mix series with dates and series with numbers (trading-day indices):
        # then each series' time column is read on its own below.
        if id_col is None:
            raise
        mixed_time = True

    # Missing / non-finite values: drop with one warning per source, or fail under strict.
    bad = np.flatnonzero(~np.isfinite(y_all))
    if bad.size:
        raw_y = raw.cells[target_col]
        n_missing = int(np.isnan(y_all[bad]).sum())
        what = (
            f"{_plural(bad.size, 'row')} with missing or non-finite {target_col!r} "
            f"({n_missing} missing, {bad.size - n_missing} infinite): {_listing(raw, bad, raw_y)}"
        )
        if strict:
            i = int(bad[0])
            raise DataError(
                f"{_where(raw, target_col)}: {what} (strict=True; drop or fill them first)",
                source=raw.source,
                column=target_col,
                row=raw.rows[i],
                value=raw_y[i],
            )
        warnings.warn(f"{_where(raw, target_col)}: dropped {what}", AutoGPDataWarning, stacklevel=3)
    keep = np.isfinite(y_all)

    if id_col is not None:
        id_obj = np.asarray(raw.cells[id_col], dtype=object)
        ids = np.where(_missing_mask(id_obj), "", _strip(id_obj)).astype(object)
        ids = np.array([v if isinstance(v, str) else str(v) for v in ids], dtype=object)
        empty = np.flatnonzero(ids == "")
        if empty.size:
            i = int(empty[0])
            raise DataError(
                f"{_where(raw, id_col)}, {raw.at(i)}: the series id is missing",
                source=raw.source,
                column=id_col,
                row=raw.rows[i],
            )
    else:
        ids = np.full(y_all.size, default_id, dtype=object)
    test_all = None
    if split_col is not None:
        test_all = np.array(
            [
                isinstance(v, str) and v.strip() == test_value or v == test_value
                for v in raw.cells[split_col]
            ],
            dtype=bool,
        )

    codes, uniques = pd.factorize(pd.Series(ids, dtype=object), sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    out: list[TimeSeries] = []
    for g, uid in enumerate(uniques):
        rows = order[bounds[g] : bounds[g + 1]]
        if mixed_time:
            kind, keys_g = _parse_time(_subset(raw, rows, time_col), time_col)
            key_all = np.zeros(y_all.size, dtype=keys_g.dtype)
            key_all[rows] = keys_g
        dropped = int((~keep[rows]).sum())
        rows = rows[keep[rows]]
        label = f"{raw.source}" + (f", series {uid!r}" if id_col is not None else "")
        if rows.size < MIN_POINTS:
            after = f" after dropping {dropped} missing" if dropped else ""
            raise DataError(
                f"{label}: only {rows.size} observations{after}; at least {MIN_POINTS} are "
                f"needed to fit a model",
                source=raw.source,
            )
        srt = rows[np.argsort(key_all[rows], kind="stable")]  # unsorted input is fine
        keys, y = key_all[srt], y_all[srt]
        test = None if test_all is None else test_all[srt]
        dup = np.flatnonzero(keys[1:] == keys[:-1])
        if dup.size:
            if aggregate is None:
                stamps = np.unique(keys[dup])
                parts = []
                for k in stamps[:_MAX_LISTED]:
                    where = srt[keys == k]
                    parts.append(
                        f"{_format_time(kind, k)} ({raw.row_word}s "
                        f"{', '.join(str(raw.rows[i]) for i in np.sort(where))})"
                    )
                more = f" and {stamps.size - _MAX_LISTED} more" if stamps.size > _MAX_LISTED else ""
                hint = ""
                if id_col is None:
                    panel = [c for c in raw.columns if c.lower() in ("unique_id", "id", "series")]
                    if panel:
                        hint = f" If the file holds several series, pass id_col={panel[0]!r}."
                raise DataError(
                    f"{_where(raw, time_col)}{label[len(raw.source) :]}: duplicate time stamps "
                    f"{'; '.join(parts)}{more}. Pass aggregate='mean', 'sum' or 'last' to "
                    f"combine them.{hint}",
                    source=raw.source,
                    column=time_col,
                    row=raw.rows[srt[dup[0] + 1]],
                    value=_format_time(kind, keys[dup[0]]),
                )
            keys, y, (start, counts) = _combine(keys, y, aggregate)
            if test is not None:
                test = np.logical_or.reduceat(test, start)
            if keys.size < MIN_POINTS:
                raise DataError(
                    f"{label}: only {keys.size} distinct time stamps after aggregating; at "
                    f"least {MIN_POINTS} are needed",
                    source=raw.source,
                )
        if max_points is not None and keys.size > max_points:
            raise DataError(
                f"{label}: {keys.size} observations is above the exact-GP limit of "
                f"{max_points} (cost grows as n^3, memory as n^2). Subsample, aggregate to a "
                f"coarser frequency or fit a recent window; or raise the limit "
                f"(max_points=..., [data] max_points in the config) if you have the memory "
                f"and time.",
                source=raw.source,
            )
        if kind == "datetime":
            axis = infer_datetime_axis(keys)
            t = axis.us_to_numeric(keys)
            stamps = pd.DatetimeIndex(keys.astype("datetime64[us]"))
        else:
            axis = infer_numeric_axis(keys)
            t = axis.to_numeric(keys)
            stamps = pd.Index(keys, dtype=np.float64)
        try:
            out.append(TimeSeries(t, y, str(uid), axis, test, stamps))
        except DataError as exc:  # e.g. dates so close they collide in float64
            raise DataError(f"{label}: {exc}", source=raw.source) from None
    return out


# ---- public readers --------------------------------------------------------------------------
@overload
def read_csv(
    path: str | Path,
    time_col: str = ...,
    target_col: str = ...,
    id_col: None = ...,
    strict: bool = ...,
    aggregate: Aggregate | None = ...,
    *,
    sep: str | None = ...,
    max_points: int | None = ...,
    split_col: str | None = ...,
    test_value: str = ...,
) -> TimeSeries: ...
@overload
def read_csv(
    path: str | Path,
    time_col: str = ...,
    target_col: str = ...,
    id_col: str = ...,
    strict: bool = ...,
    aggregate: Aggregate | None = ...,
    *,
    sep: str | None = ...,
    max_points: int | None = ...,
    split_col: str | None = ...,
    test_value: str = ...,
) -> list[TimeSeries]: ...
def read_csv(
    path: str | Path,
    time_col: str = "ds",
    target_col: str = "y",
    id_col: str | None = None,
    strict: bool = False,
    aggregate: Aggregate | None = None,
    *,
    sep: str | None = None,
    max_points: int | None = DEFAULT_MAX_POINTS,
    split_col: str | None = None,
    test_value: str = "test",
) -> TimeSeries | list[TimeSeries]:
    """Read a CSV file into one :class:`TimeSeries`, or a list of them when ``id_col`` is given.

    Args:
        path: the file (``.gz``, ``.bz2``, ``.xz`` are decompressed).
        time_col, target_col: the time-stamp and value columns.
        id_col: the series-id column of a panel (long format); the result is then a list in
            order of first appearance.
        strict: missing/non-finite values (and non-UTF-8 bytes) are errors instead of being
            dropped with an :class:`AutoGPDataWarning`.
        aggregate: how to combine rows with the same time stamp (``"mean"``, ``"sum"``,
            ``"last"``, ``"first"``, ``"median"``); ``None`` makes duplicates an error.
        sep: the separator; detected among ``, ; \\t |`` when ``None``.
        max_points: the largest series accepted (exact GP cost is O(n^3)); ``None``: no limit.
        split_col, test_value: a column whose value ``test_value`` marks held-out rows
            (``TimeSeries.is_test``; see ``train()``/``test()``).

    Raises:
        DataError: on any problem, naming the file, column, row (line number, header = 1)
            and value. See the module docstring for the rules.
    """
    p = Path(path)
    text = _read_text(p, strict)
    extra = [split_col] if split_col is not None else []
    raw = _csv_to_raw(text, str(path), sep, time_col, target_col, id_col, extra)
    series = _build(
        raw,
        time_col,
        target_col,
        id_col,
        strict,
        aggregate,
        max_points,
        split_col,
        test_value,
        default_id=p.name.split(".")[0] or "series",
    )
    return series if id_col is not None else series[0]


def from_frame(
    df: pd.DataFrame,
    time_col: str = "ds",
    target_col: str = "y",
    id_col: str | None = None,
    strict: bool = False,
    aggregate: Aggregate | None = None,
    *,
    max_points: int | None = DEFAULT_MAX_POINTS,
    split_col: str | None = None,
    test_value: str = "test",
    unique_id: str = "series",
) -> TimeSeries | list[TimeSeries]:
    """Like :func:`read_csv` for a DataFrame (rows are named by their index label).

    ``time_col`` may also be the name of the index. ``unique_id`` names a single series.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"from_frame expects a pandas DataFrame, got {type(df).__name__}")
    src = "DataFrame"
    frame = df
    if time_col not in df.columns and df.index.name == time_col:
        frame = df.reset_index()
    columns = [str(c) for c in frame.columns]
    for col, role in (
        (time_col, "time_col"),
        (target_col, "target_col"),
        (id_col, "id_col"),
        (split_col, "split_col"),
    ):
        if col is not None and col not in frame.columns:
            raise _missing_column(src, col, role, columns)
    if len(frame) == 0:
        raise DataError(
            f"{src}: no rows; at least {MIN_POINTS} observations are needed", source=src
        )
    wanted = [c for c in (time_col, target_col, id_col, split_col) if c is not None]
    for col in wanted:
        if isinstance(frame[col], pd.DataFrame):
            raise DataError(f"{src}: column {col!r} appears more than once", source=src)
    cells = {
        c: frame[c]
        if frame[c].dtype.kind == "M" or isinstance(frame[c].dtype, pd.DatetimeTZDtype)
        else frame[c].to_numpy()
        for c in wanted
    }
    raw = _Raw(src, columns, cells, np.asarray(df.index, dtype=object), "index")
    series = _build(
        raw,
        time_col,
        target_col,
        id_col,
        strict,
        aggregate,
        max_points,
        split_col,
        test_value,
        default_id=unique_id,
    )
    return series if id_col is not None else series[0]


def from_arrays(
    t: Any,
    y: Any,
    unique_id: str = "series",
    *,
    strict: bool = False,
    aggregate: Aggregate | None = None,
    max_points: int | None = DEFAULT_MAX_POINTS,
) -> TimeSeries:
    """A :class:`TimeSeries` from time stamps ``t`` (numbers or dates) and values ``y``.

    Same validation as :func:`read_csv`; rows are named by position (0-based).
    """
    try:
        t_arr = t if isinstance(t, pd.Index | pd.Series) else np.asarray(t)
        y_arr = np.asarray(y)
    except Exception as exc:  # noqa: BLE001 - ragged nested input etc.
        raise DataError(f"arrays: cannot convert input to arrays ({exc})") from None
    if np.ndim(t_arr) != 1 or y_arr.ndim != 1 or len(t_arr) != y_arr.size:
        raise DataError(
            f"arrays: t and y must be 1-D of equal length, got shapes {np.shape(t_arr)} and "
            f"{y_arr.shape}",
            source="arrays",
        )
    if y_arr.size == 0:
        raise DataError(
            f"arrays: no observations; at least {MIN_POINTS} are needed", source="arrays"
        )
    raw = _Raw("arrays", ["t", "y"], {"t": t_arr, "y": y_arr}, np.arange(y_arr.size), "position")
    return _build(raw, "t", "y", None, strict, aggregate, max_points, default_id=unique_id)[0]


__all__ = [
    "AGGREGATES",
    "DEFAULT_MAX_POINTS",
    "MIN_POINTS",
    "NA_TOKENS",
    "TimeAxis",
    "from_arrays",
    "from_frame",
    "read_csv",
]
