"""The table every reader produces before validation: the columns it needs, as read, and a label
for each row (a file's line number, a frame's index label, an array position) so that every
message names the row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

MAX_LISTED = 5  # rows/values quoted in one message


@dataclass
class RawTable:
    """The cells of the columns a reader needs, with each row's label for messages."""

    source: str  # file path, "DataFrame" or "arrays"
    columns: list[str]
    cells: dict[str, Any]  # column -> 1-D array (object for CSV text)
    rows: np.ndarray  # row label of each entry (file line number, index label, position)
    row_word: str  # "row", "index" or "position"

    def at(self, i: int) -> str:
        """How messages name entry ``i``: ``row 12``, ``index '2020-01'``, ``position 3``."""
        return f"{self.row_word} {self.rows[i]}"

    def where(self, column: str | None = None) -> str:
        """How messages name the source (and the column): ``data.csv, column 'y'``."""
        return self.source + (f", column {column!r}" if column else "")

    def listing(self, idx: np.ndarray, values: Any = None) -> str:
        """'rows 4, 9 and 3 more' (with the values when given)."""
        shown = idx[:MAX_LISTED]
        values = None if values is None else np.asarray(values, dtype=object)
        parts = []
        for i in shown:
            part = str(self.rows[i])
            if values is not None:
                part += f" ({quote_value(values[i])})"
            parts.append(part)
        more = f" and {idx.size - shown.size} more" if idx.size > shown.size else ""
        word = self.row_word + ("s" if idx.size > 1 else "")
        return f"{word} {', '.join(parts)}{more}"

    def take(self, rows: np.ndarray) -> RawTable:
        """The rows ``rows`` of every column read (row labels kept, for messages)."""
        return RawTable(self.source, list(self.columns),
                        {c: _rows_of(v, rows) for c, v in self.cells.items()},
                        self.rows[rows], self.row_word)

    def subset(self, rows: np.ndarray, col: str) -> RawTable:
        """The rows ``rows`` of one column of ``self`` (row labels kept, for messages)."""
        return RawTable(self.source, [col], {col: _rows_of(self.cells[col], rows)},
                        self.rows[rows], self.row_word)


def _rows_of(vals: Any, rows: np.ndarray) -> Any:
    """Entries ``rows`` of one column's cells (a Series stays a Series)."""
    return vals.iloc[rows] if isinstance(vals, pd.Series) else np.asarray(vals)[rows]


def plural(n: int, word: str) -> str:
    """``1 row``, ``3 rows``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def quote_value(v: Any) -> str:
    """A value quoted for a message, shortened if long."""
    s = repr(v)
    return s if len(s) <= 60 else s[:56] + "...'"


__all__ = ["MAX_LISTED", "RawTable", "plural", "quote_value"]
