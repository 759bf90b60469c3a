"""A CSV file's header for the readers besides :func:`autogp.data.read_csv`: its column names
from its first lines, without reading the whole file (how a caller decides which columns to ask
for: a ``unique_id`` column makes a panel), and the file as a pandas frame (covariates,
``--future`` files, a config's extra columns), both decoded as ``read_csv`` decodes it."""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
from pathlib import Path
from typing import Any

import pandas as pd

from autogp.data.csvtext import ENCODING, detect_separator

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_SAMPLE_LINES = 20


def csv_columns(path: str | Path, sep: str | None = None) -> list[str]:
    """The names in the first row of ``path`` that is neither blank nor a ``#`` comment (the
    header, or the first data row of a headerless file). ``[]`` when the file cannot be read:
    the full reader then reports why."""
    path = Path(path)
    opener = _OPENERS.get(path.suffix.lower(), open)
    lines: list[str] = []
    try:
        with opener(path, "rt", encoding=ENCODING, errors="replace", newline="") as fh:
            for line in fh:
                if line.strip() and not line.startswith("#"):
                    lines.append(line.rstrip("\r\n"))
                    if len(lines) == _SAMPLE_LINES:
                        break
    except (OSError, EOFError, lzma.LZMAError):
        return []
    if not lines:
        return []
    try:
        header = next(csv.reader(lines[:1], delimiter=sep or detect_separator(lines)))
    except csv.Error:
        return []
    return [c.strip() for c in header]


def read_frame(path: str | Path, sep: str | None = None, **kwargs: Any) -> pd.DataFrame:
    """``pd.read_csv(path, **kwargs)`` with the separator detected when ``sep`` is None, and
    without a UTF-8 byte-order mark in the first column's name: pandas keeps the mark when it
    detects the separator, so ``ds`` of an Excel "CSV UTF-8" file would read as ``\\ufeffds``.
    Raises what ``pd.read_csv`` raises (``OSError``, ``ValueError``)."""
    return pd.read_csv(path, sep=sep, engine="python" if sep is None else None,
                       encoding=ENCODING, **kwargs)


__all__ = ["csv_columns", "read_frame"]
