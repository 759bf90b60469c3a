"""``--limit N``: a reproducible sample of a panel's series.

Benchmark panels carry a ``category`` column (M3's domain labels: MICRO, INDUSTRY, MACRO, ...);
a sample keeps their proportions so that a few dozen series stand in for the whole panel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autogp.data import TimeSeries
from autogp.data.header import read_frame

# The column a sample is stratified by, when the data file has it.
STRATUM_COLUMN = "category"


def read_strata(data_path: Path, id_col: str | None) -> dict[str, str] | None:
    """Each series' ``category`` in the file at ``data_path``; None without that column (or
    without an id column, for a single series)."""
    if id_col is None:
        return None
    head = read_frame(data_path, ",", nrows=0).columns
    if STRATUM_COLUMN not in head:
        return None
    frame = read_frame(data_path, ",", usecols=[id_col, STRATUM_COLUMN]).drop_duplicates(id_col)
    return dict(zip(frame[id_col].astype(str), frame[STRATUM_COLUMN].astype(str), strict=True))


def stratified_sample(
    series: list[TimeSeries], data_path: Path, id_col: str | None, limit: int, seed: int
) -> list[TimeSeries]:
    """``limit`` series drawn without replacement, stratified by the file's ``category`` column
    when it has one (proportional allocation, largest remainders), with a fixed seed; the
    chosen series keep the file's order."""
    if limit >= len(series):
        return series
    chosen = set(sample_ids([s.unique_id for s in series], read_strata(data_path, id_col),
                            limit, seed))
    return [s for s in series if s.unique_id in chosen]


def sample_ids(ids: list[str], category: dict[str, str] | None, limit: int, seed: int
               ) -> list[str]:
    """The ``limit`` of ``ids`` (distinct, in the file's order) that :func:`stratified_sample`
    keeps, in the same order, given each id's ``category`` (None: no strata)."""
    if limit >= len(ids):
        return list(ids)
    rng = np.random.default_rng(seed)
    if category is None:
        chosen = set(rng.choice(len(ids), size=limit, replace=False).tolist())
        return [uid for i, uid in enumerate(ids) if i in chosen]
    groups: dict[str, list[int]] = {}
    for i, uid in enumerate(ids):
        groups.setdefault(category.get(uid, "?"), []).append(i)
    names = sorted(groups)
    exact = np.array([limit * len(groups[g]) / len(ids) for g in names])
    take = np.floor(exact).astype(int)
    for j in np.argsort(-(exact - take))[: limit - take.sum()]:
        take[j] += 1
    chosen = set()
    for g, k in zip(names, take, strict=True):
        chosen.update(rng.choice(groups[g], size=min(k, len(groups[g])), replace=False).tolist())
    return [uid for i, uid in enumerate(ids) if i in chosen]


__all__ = ["STRATUM_COLUMN", "read_strata", "sample_ids", "stratified_sample"]
