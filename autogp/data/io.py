"""Readers: CSV files, DataFrames and arrays -> validated :class:`TimeSeries`.

All three readers share one validation pipeline, so a problem gets the same answer whatever the
input; every problem raises :class:`DataError` naming the source, column, row and value.
The stages: :mod:`autogp.data.csvtext` lexes CSV text into a
:class:`~autogp.data.rawtable.RawTable` (``from_frame``/``from_arrays`` build one directly),
:mod:`autogp.data.parsing` reads its cells as values and time stamps, and this module builds
the :class:`TimeSeries`.

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

import warnings
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from autogp.data.csvtext import NA_TOKENS, csv_to_table, missing_column_error, read_text
from autogp.data.errors import AutoGPDataWarning, DataError
from autogp.data.limits import DEFAULT_MAX_POINTS, MIN_POINTS
from autogp.data.parsing import missing_mask, parse_time, parse_values, strip_cells
from autogp.data.rawtable import MAX_LISTED, RawTable, plural
from autogp.data.series import TimeSeries
from autogp.data.spelling import option
from autogp.data.timeaxis import TimeAxis, infer_datetime_axis, infer_numeric_axis

AGGREGATES = ("mean", "sum", "last", "first", "median")
Aggregate = Literal["mean", "sum", "last", "first", "median"]


# ---- building series -------------------------------------------------------------------------
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


def _series_ids(raw: RawTable, id_col: str) -> np.ndarray:
    """Each row's series id as text, stripped ("" where it is missing)."""
    id_obj = np.asarray(raw.cells[id_col], dtype=object)
    ids = np.where(missing_mask(id_obj), "", strip_cells(id_obj)).astype(object)
    return np.array([v if isinstance(v, str) else str(v) for v in ids], dtype=object)


def _only_series(raw: RawTable, id_col: str | None, wanted: Collection[str]) -> RawTable:
    """The rows of ``raw`` whose series id is in ``wanted`` (and the rows without an id, so
    that they are reported as in a whole read); every wanted id must be in the table."""
    if id_col is None:
        raise DataError(f"{raw.source}: ids picks series of a panel; give id_col too",
                        source=raw.source)
    ids = _series_ids(raw, id_col)
    wanted = {str(w) for w in wanted}
    absent = sorted(wanted - set(ids))
    if absent:
        more = f" and {len(absent) - MAX_LISTED} more" if len(absent) > MAX_LISTED else ""
        raise DataError(f"{raw.where(id_col)}: no rows for the series "
                        f"{', '.join(map(repr, absent[:MAX_LISTED]))}{more}",
                        source=raw.source, column=id_col)
    return raw.take(np.flatnonzero([i in wanted or i == "" for i in ids]))


def _build_series(
    raw: RawTable,
    time_col: str,
    target_col: str,
    id_col: str | None,
    strict: bool,
    aggregate: str | None,
    max_points: int | None,
    split_col: str | None = None,
    test_value: str = "test",
    default_id: str = "series",
    noise_col: str | None = None,
) -> list[TimeSeries]:
    """The pipeline every reader shares: ``raw``'s columns parsed and validated, rows grouped
    by ``id_col`` (one ``default_id`` series without it), sorted by time, duplicates combined
    by ``aggregate``, and one :class:`TimeSeries` per id in order of first appearance.
    ``noise_col``: the observations' known measurement-error standard deviations."""
    if aggregate is not None and aggregate not in AGGREGATES:
        raise DataError(
            f"{raw.source}: aggregate must be one of {list(AGGREGATES)} or None, got {aggregate!r}",
            source=raw.source,
            value=aggregate,
        )
    names = [c for c in (time_col, target_col, id_col, split_col, noise_col) if c is not None]
    if len(set(names)) != len(names):
        raise DataError(
            f"{raw.source}: time_col, target_col, id_col, split_col and noise_col must be "
            f"different columns, got {names!r}",
            source=raw.source,
        )
    y_all = parse_values(raw, target_col)
    sd_all = None if noise_col is None else _noise_values(raw, noise_col, np.isfinite(y_all))
    if sd_all is not None and aggregate is not None:
        raise DataError(f"{raw.where(noise_col)}: known noise cannot be aggregated over "
                        "duplicate time stamps; combine the rows first", source=raw.source)
    try:
        kind, key_all = parse_time(raw, time_col)
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
            f"{plural(bad.size, 'row')} with missing or non-finite {target_col!r} "
            f"({n_missing} missing, {bad.size - n_missing} infinite): {raw.listing(bad, raw_y)}"
        )
        if strict:
            i = int(bad[0])
            raise DataError(
                f"{raw.where(target_col)}: {what} ({option('strict', True)}; drop or fill them "
                f"first)",
                source=raw.source,
                column=target_col,
                row=raw.rows[i],
                value=raw_y[i],
            )
        warnings.warn(f"{raw.where(target_col)}: dropped {what}", AutoGPDataWarning, stacklevel=3)
    keep = np.isfinite(y_all)

    if id_col is not None:
        ids = _series_ids(raw, id_col)
        empty = np.flatnonzero(ids == "")
        if empty.size:
            i = int(empty[0])
            raise DataError(
                f"{raw.where(id_col)}, {raw.at(i)}: the series id is missing",
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
            kind, keys_g = parse_time(raw.subset(rows, time_col), time_col)
            key_all = np.zeros(y_all.size, dtype=keys_g.dtype)
            key_all[rows] = keys_g
        dropped = int((~keep[rows]).sum())
        # Forecasts start after the last stamp, even where its value is missing.
        last_key = key_all[rows].max() if rows.size else None
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
        sd = None if sd_all is None else sd_all[srt]
        test = None if test_all is None else test_all[srt]
        dup = np.flatnonzero(keys[1:] == keys[:-1])
        if dup.size:
            if aggregate is None:
                stamps = np.unique(keys[dup])
                parts = []
                for k in stamps[:MAX_LISTED]:
                    where = srt[keys == k]
                    parts.append(
                        f"{_format_time(kind, k)} ({raw.row_word}s "
                        f"{', '.join(str(raw.rows[i]) for i in np.sort(where))})"
                    )
                more = f" and {stamps.size - MAX_LISTED} more" if stamps.size > MAX_LISTED else ""
                hint = ""
                if id_col is None:
                    panel = [c for c in raw.columns if c.lower() in ("unique_id", "id", "series")]
                    if panel:
                        hint = (f" If the file holds several series, pass "
                                f"{option('id_col', panel[0])}.")
                raise DataError(
                    f"{raw.where(time_col)}{label[len(raw.source) :]}: duplicate time stamps "
                    f"{'; '.join(parts)}{more}. Pass {option('aggregate', 'mean')} (or sum, "
                    f"last, first, median) to combine them.{hint}",
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
                f"({option('max_points', keys.size)}, or data.max_points in a config) if you "
                f"have the memory and time.",
                source=raw.source,
            )
        if kind == "datetime":
            axis = infer_datetime_axis(keys)
            t = axis.us_to_numeric(keys)
            stamps = pd.DatetimeIndex(keys.astype("datetime64[us]"))
            end_t = float(axis.us_to_numeric(np.asarray([last_key]))[0])
        else:
            axis = infer_numeric_axis(keys)
            t = axis.to_numeric(keys)
            stamps = pd.Index(keys, dtype=np.float64)
            end_t = float(axis.to_numeric(np.asarray([last_key], dtype=np.float64))[0])
        end_t = end_t if end_t > t[-1] else None
        try:
            out.append(TimeSeries(t, y, str(uid), axis, test, stamps, end_t, noise_sd=sd))
        except DataError as exc:  # e.g. dates so close they collide in float64
            raise DataError(f"{label}: {exc}", source=raw.source) from None
    return out


def _noise_values(raw: RawTable, col: str, used: np.ndarray) -> np.ndarray:
    """The known standard deviations of column ``col``: numbers, finite and >= 0 on every
    row whose value is used (a clear error naming the first other row)."""
    sd = parse_values(raw, col)
    bad = np.flatnonzero(used & ~(np.isfinite(sd) & (sd >= 0)))
    if bad.size:
        i = int(bad[0])
        what = "missing" if np.isnan(sd[i]) else "negative" if sd[i] < 0 else "infinite"
        raise DataError(
            f"{raw.where(col)}, {raw.at(i)}: the known noise standard deviation is {what} "
            f"({sd[i]:g}); it must be a finite number >= 0",
            source=raw.source, column=col, row=raw.rows[i], value=raw.cells[col][i])
    return np.where(used, sd, 0.0)


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
    noise_col: str | None = ...,
    ids: Collection[str] | None = ...,
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
    noise_col: str | None = ...,
    ids: Collection[str] | None = ...,
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
    noise_col: str | None = None,
    ids: Collection[str] | None = None,
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
        noise_col: a column of known measurement-error standard deviations (data units,
            finite and >= 0 on every row with a value; ``TimeSeries.noise_sd``).
        ids: only these series of a panel (in the file's order; the other rows are not
            parsed): a sample of a large panel reads in a fraction of the time.

    Raises:
        DataError: on any problem, naming the file, column, row (line number, header = 1)
            and value. See the module docstring for the rules.
    """
    p = Path(path)
    text = read_text(p, strict)
    extra = [c for c in (split_col, noise_col) if c is not None]
    raw = csv_to_table(text, str(path), sep, time_col, target_col, id_col, extra)
    if ids is not None:
        raw = _only_series(raw, id_col, ids)
    series = _build_series(
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
        noise_col=noise_col,
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
    noise_col: str | None = None,
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
        (noise_col, "noise_col"),
    ):
        if col is not None and col not in frame.columns:
            raise missing_column_error(src, col, role, columns)
    if len(frame) == 0:
        raise DataError(
            f"{src}: no rows; at least {MIN_POINTS} observations are needed", source=src
        )
    wanted = [c for c in (time_col, target_col, id_col, split_col, noise_col) if c is not None]
    for col in wanted:
        if isinstance(frame[col], pd.DataFrame):
            raise DataError(f"{src}: column {col!r} appears more than once", source=src)
    cells = {
        c: frame[c]
        if frame[c].dtype.kind == "M" or isinstance(frame[c].dtype, pd.DatetimeTZDtype)
        else frame[c].to_numpy()
        for c in wanted
    }
    raw = RawTable(src, columns, cells, np.asarray(df.index, dtype=object), "index")
    series = _build_series(
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
        noise_col=noise_col,
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
    raw = RawTable(
        "arrays", ["t", "y"], {"t": t_arr, "y": y_arr}, np.arange(y_arr.size), "position"
    )
    series = _build_series(raw, "t", "y", None, strict, aggregate, max_points,
                           default_id=unique_id)
    return series[0]


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
