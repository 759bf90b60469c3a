"""Published results quoted beside an experiment's own (``experiment.reference``): a CSV with
``experiment``, ``model``, ``metric``, ``value``, ``source``; the rows of one experiment name.
They are other people's numbers on the same test split, never recomputed here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from autogp.data import DataError

REFERENCE_COLUMNS = ("experiment", "model", "metric", "value", "source")


def read_reference(path: Path, experiment: str) -> list[dict[str, Any]]:
    """The rows of ``experiment`` in the reference file at ``path`` (``model``, ``metric``,
    ``value``, ``source``), in file order; an empty list when it has none."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)  # values as written
    except (OSError, ValueError) as exc:
        raise DataError(f"experiment.reference: cannot read {path}: {exc}") from None
    lost = [c for c in REFERENCE_COLUMNS if c not in frame.columns]
    if lost:
        raise DataError(f"experiment.reference {path}: no column {lost[0]!r} (needs "
                        f"{list(REFERENCE_COLUMNS)}, has {list(frame.columns)})")
    values = pd.to_numeric(frame["value"], errors="coerce")
    bad = frame.index[values.isna()]
    if len(bad):
        row = int(bad[0])
        raise DataError(f"experiment.reference {path}: row {row + 2}: value "
                        f"{frame['value'].iloc[row]!r} is not a number")
    rows = frame.assign(value=values)[frame["experiment"] == experiment]
    return [
        {"model": r.model, "metric": r.metric, "value": float(r.value), "source": r.source}
        for r in rows.itertuples()
    ]


__all__ = ["REFERENCE_COLUMNS", "read_reference"]
