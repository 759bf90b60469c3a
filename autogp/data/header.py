"""The column names of a CSV file from its first lines, without reading the whole file: how
a caller decides which columns to ask for (a ``unique_id`` column makes a panel)."""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
from pathlib import Path

from autogp.data.csvtext import detect_separator

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
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
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


__all__ = ["csv_columns"]
