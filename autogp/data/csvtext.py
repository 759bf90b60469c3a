"""CSV text -> :class:`~autogp.data.rawtable.RawTable`: tolerant lexing.

Reading the bytes (compressed or not, UTF-8 or Latin-1), detecting the separator and whether
the first row is a header, the cells read as missing (:data:`NA_TOKENS`), and guessing which
column the user meant when a name is wrong. Cells stay text here; :mod:`autogp.data.parsing`
turns them into numbers and time stamps.
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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autogp.data.errors import AutoGPDataWarning, DataError
from autogp.data.limits import MIN_POINTS
from autogp.data.rawtable import RawTable
from autogp.data.spelling import option

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
# Usual names of the time and value columns, for suggestions.
TIME_NAMES = ("date", "ds", "time", "timestamp", "datetime", "period", "month", "week", "day")
VALUE_NAMES = ("y", "value", "values", "target", "count", "amount", "sales", "demand")
SEPARATORS = (",", ";", "\t", "|")
# How every reader decodes a CSV file: "-sig" drops the byte-order mark that Excel's "CSV UTF-8"
# writes, which would otherwise stay in the first column's name ("\ufeffds").
ENCODING = "utf-8-sig"


# ---- column lookup ---------------------------------------------------------------------------
def suggest_column(name: str, columns: Sequence[str], role: str) -> str | None:
    cols = [c for c in columns if isinstance(c, str)]
    lower = {c.lower(): c for c in cols}
    if name.lower() in lower:
        return lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
    if close:
        return lower[close[0]]
    usual = TIME_NAMES if role == "time_col" else VALUE_NAMES if role == "target_col" else ()
    for u in usual:
        for c in cols:
            if c.lower() == u or c.lower().startswith(u):
                return c
    return None


def missing_column_error(
    raw_source: str, name: str, role: str, columns: Sequence[str]
) -> DataError:
    msg = f"{raw_source}: no column {name!r} ({option(role)}); the columns are {list(columns)!r}."
    guess = suggest_column(name, columns, role)
    if guess is not None:
        msg += f" Did you mean {guess!r}? Pass {option(role, guess)}."
    return DataError(msg, source=raw_source, column=name)


# ---- text, separator, header -----------------------------------------------------------------
def read_text(path: Path, strict: bool) -> str:
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
        return data.decode(ENCODING)
    except UnicodeDecodeError as exc:
        msg = f"{src}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        if strict:
            raise DataError(msg + "; re-save the file as UTF-8", source=src) from None
        warnings.warn(msg + "; reading it as Latin-1", AutoGPDataWarning, stacklevel=3)
        return data.decode("latin-1")


def detect_separator(lines: list[str]) -> str:
    """The separator that splits the first lines into the same number (> 1) of fields."""
    best, best_fields = ",", 1
    for sep in SEPARATORS:
        try:
            counts = [len(r) for r in csv.reader(lines, delimiter=sep)]
        except csv.Error:
            continue
        if counts and min(counts) > 1 and len(set(counts)) == 1 and counts[0] > best_fields:
            best, best_fields = sep, counts[0]
    if best_fields == 1:  # no separator is consistent; take the most frequent one on line 1
        first = lines[0] if lines else ""
        freq = {s: first.count(s) for s in SEPARATORS}
        top = max(freq, key=lambda s: freq[s])
        best = top if freq[top] > 0 else ","
    return best


def is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def is_date(s: str) -> bool:
    if not re.search(r"\d", s):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return not pd.isna(pd.to_datetime(s, errors="coerce", utc=True))
    except Exception:  # noqa: BLE001 - any parser failure just means "not a date"
        return False


def looks_like_data(row: list[str], id_first: bool) -> bool:
    cells = [c.strip() for c in row]
    if id_first:
        cells = cells[1:]
    if len(cells) != 2:
        return False
    ds, y = cells
    y_ok = is_number(y) or y.lower() in NA_TOKENS
    return y_ok and ds != "" and (is_number(ds) or is_date(ds))


def csv_to_table(
    text: str,
    src: str,
    sep: str | None,
    time_col: str,
    target_col: str,
    id_col: str | None,
    extra_cols: Sequence[str],
) -> RawTable:
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n'):
        raise DataError(
            f"{src}: sep must be one character such as ',' or ';', got {sep!r}", source=src
        )
    if not text.strip():
        raise DataError(f"{src}: the file is empty", source=src)
    sample = [ln for ln in text.splitlines()[:50] if ln.strip() and not ln.startswith("#")][:20]
    if sep is None:
        sep = detect_separator(sample)
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
    if not all(c in header for c in wanted) and looks_like_data(header, id_col is not None):
        # Headerless: the first row is data; name the columns ourselves.
        records.insert(0, header)
        lines.insert(0, header_line)
        header = wanted
    else:
        for col, role in ((time_col, "time_col"), (target_col, "target_col"), (id_col, "id_col")):
            if col is not None and col not in header:
                err = missing_column_error(src, col, role, header)
                if any(is_number(c) or is_date(c) for c in header if c):
                    err = DataError(
                        f"{err} The first row looks like data: a header row naming the "
                        f"columns is needed unless the file has exactly two columns (time, "
                        f"value; or id, time, value with {option('id_col')}).",
                        source=src,
                        column=col,
                    )
                raise err
        for col in extra_cols:
            if col not in header:
                raise missing_column_error(src, col, "split_col", header)
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
    return RawTable(src, header, cells, np.asarray(lines, dtype=np.int64), "row")


__all__ = [
    "ENCODING",
    "NA_TOKENS",
    "SEPARATORS",
    "TIME_NAMES",
    "VALUE_NAMES",
    "csv_to_table",
    "detect_separator",
    "is_date",
    "is_number",
    "looks_like_data",
    "missing_column_error",
    "read_text",
    "suggest_column",
]
