"""A CSV file's header for the readers besides :func:`autogp.data.read_csv`: its column names
from its first lines, without reading the whole file (how a caller decides which columns to ask
for: a ``unique_id`` column makes a panel), and the file as a pandas frame (covariates,
``--future`` files, a config's extra columns), both decoded as ``read_csv`` decodes it."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
from pathlib import Path
from typing import Any

import pandas as pd

from autogp.data.csvtext import ENCODING, detect_separator, read_text

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_SAMPLE_LINES = 20


def csv_columns(path: str | Path, sep: str | None = None) -> list[str]:
    """The names in the first row of ``path`` that is neither blank nor a ``#`` comment (the
    header, or the first data row of a headerless file), decoded as ``read_csv`` decodes them
    (Latin-1 when the first lines are not UTF-8; the warning is the reader's). ``[]`` when the
    file cannot be read: the full reader then reports why."""
    path = Path(path)
    try:
        try:
            lines = _first_lines(path, ENCODING)
        except UnicodeDecodeError:
            lines = _first_lines(path, "latin-1")
    except (OSError, EOFError, lzma.LZMAError):
        return []
    if not lines:
        return []
    try:
        header = next(csv.reader(lines[:1], delimiter=sep or detect_separator(lines)))
    except csv.Error:
        return []
    return [c.strip() for c in header]


def _first_lines(path: Path, encoding: str) -> list[str]:
    """The first lines of ``path`` that are neither blank nor ``#`` comments."""
    opener = _OPENERS.get(path.suffix.lower(), open)
    lines: list[str] = []
    with opener(path, "rt", encoding=encoding, newline="") as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                lines.append(line.rstrip("\r\n"))
                if len(lines) == _SAMPLE_LINES:
                    break
    return lines


def read_frame(path: str | Path, sep: str | None = None, *, strict: bool = False,
               **kwargs: Any) -> pd.DataFrame:
    """``pd.read_csv(path, **kwargs)`` with the separator detected when ``sep`` is None, and
    without a UTF-8 byte-order mark in the first column's name: pandas keeps the mark when it
    detects the separator, so ``ds`` of an Excel "CSV UTF-8" file would read as ``\\ufeffds``.
    A file that is not UTF-8 is read as :func:`autogp.data.read_csv` reads it: as Latin-1 with
    an :class:`AutoGPDataWarning`, or, under ``strict``, not at all (:class:`DataError` naming
    the file). Raises what ``pd.read_csv`` raises (``OSError``, ``ValueError``)."""
    options = {"sep": sep, "engine": "python" if sep is None else None, **kwargs}
    try:
        return pd.read_csv(path, encoding=ENCODING, **options)
    except UnicodeDecodeError:
        pass
    text = read_text(Path(path), strict)  # read_csv's warning, or its error under strict
    return pd.read_csv(io.StringIO(text), **options)


__all__ = ["csv_columns", "read_frame"]
