"""Distributed lags of covariates: copies of each covariate column shifted back ``k`` steps of
the series' grid (``data.covariate_lags``), so that y can respond to this and earlier periods'
covariate values (quotes to this and last month's advertising).

The copy of covariate ``x`` lagged ``k`` steps is named ``x_lag<k>`` (``x`` itself for k = 0);
its value at time t is ``x`` at t - k steps. Those values come from the covariate's own
history: the training rows (also those whose y is missing), and the future values (``X_df``)
where a forecast's lag reaches past the training data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from autogp.data.errors import DataError
from autogp.data.timeaxis import TimeAxis

#: The lag of a lagged copy's name: ``temp_lag2`` is ``temp`` two steps back.
_LAGGED = re.compile(r"(?P<base>.+)_lag(?P<k>[0-9]+)")
#: Covariate history: base column -> (sorted numeric times, values; NaN where unknown).
History = dict[str, tuple[np.ndarray, np.ndarray]]


def lag_name(name: str, k: int) -> str:
    """The name of covariate ``name`` lagged ``k`` steps."""
    return name if k == 0 else f"{name}_lag{k}"


def is_lagged(lags: Sequence[int]) -> bool:
    """Whether ``lags`` asks for anything besides the covariates themselves."""
    return tuple(lags) != (0,)


def lagged_names(names: Sequence[str], lags: Sequence[int]) -> list[str]:
    """The model's covariate columns: each of ``names`` at each of ``lags``, covariate-major."""
    return [lag_name(n, k) for n in names for k in lags]


def refuse_ambiguous(names: Sequence[str], lags: Sequence[int]) -> None:
    """DataError naming a covariate column whose name reads as a lagged copy's (``x_lag1``
    with a lag of 1 set): the lagged columns could not be told from it."""
    for name in names:
        m = _LAGGED.fullmatch(name)
        if m and int(m["k"]) in lags and int(m["k"]) > 0:
            raise DataError(
                f"covariate column {name!r} is named like a lagged copy of {m['base']!r} "
                f"(data.covariate_lags = {list(lags)} adds <column>_lag<k> columns); rename it",
                column=name)


def lag_sources(names: Sequence[str], lags: Sequence[int]) -> tuple[tuple[str, int], ...]:
    """``(covariate, lag)`` of each model column in ``names`` (made by :func:`lagged_names`
    and checked by :func:`refuse_ambiguous` under the same ``lags``)."""
    out = []
    for name in names:
        m = _LAGGED.fullmatch(name)
        k = int(m["k"]) if m else 0
        out.append((m["base"], k) if m and k > 0 and k in lags else (name, 0))
    return tuple(out)


def prior_shares(sources: Sequence[tuple[str, int]]) -> tuple[float, ...]:
    """Each model column's share of its covariate's prior weight, given each column's
    ``(covariate, lag)``: a covariate's lagged copies split one covariate's weight evenly, so
    that offering lags spreads the prior over them instead of multiplying the prior mass of
    covariate terms by the number of lags."""
    bases = [base for base, _ in sources]
    return tuple(1.0 / bases.count(base) for base in bases)


def lag_times(axis: TimeAxis, t: np.ndarray, k: int) -> np.ndarray:
    """Numeric times ``k`` grid steps before ``t`` (business days skip weekends)."""
    t = np.asarray(t, dtype=np.float64)
    if k == 0:
        return t
    if axis.kind == "datetime" and axis.freq == "B":
        return axis.to_numeric(axis.to_ds(t) - pd.offsets.BDay(k))
    return t - k * axis.step


def _tolerance(t: np.ndarray) -> np.ndarray:
    return 1e-9 * np.maximum(1.0, np.abs(t))


def look_up(known_t: np.ndarray, known_v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Values ``known_v`` at times ``t`` (``known_t`` sorted); NaN where no time matches."""
    t = np.asarray(t, dtype=np.float64)
    out = np.full(t.shape, np.nan)
    if not len(known_t):
        return out
    pos = np.clip(np.searchsorted(known_t, t), 0, len(known_t) - 1)
    for shift in (0, -1):  # the nearest time at or above t, or just below it
        p = np.clip(pos + shift, 0, len(known_t) - 1)
        hit = np.isnan(out) & (np.abs(known_t[p] - t) <= _tolerance(t))
        out[hit] = known_v[p[hit]]
    return out


def history_of(t: np.ndarray, values: Mapping[str, np.ndarray]) -> History:
    """The history of covariates ``values`` (name -> values at times ``t``), sorted by time;
    a time given twice keeps its first value."""
    t = np.asarray(t, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    first = np.ones(len(t), bool)
    first[1:] = np.diff(t[order]) > 0
    keep = order[first]
    return {name: (t[keep], np.asarray(v, dtype=np.float64)[keep]) for name, v in values.items()}


def rebuilt_history(sources: Sequence[tuple[str, int]], values: np.ndarray, t: np.ndarray,
                    axis: TimeAxis) -> History:
    """The covariates' history that model columns ``values`` ``[n, C]`` at times ``t`` hold:
    column ``(x, k)`` at t is ``x`` at ``k`` steps before t."""
    times: dict[str, list[np.ndarray]] = {}
    found: dict[str, list[np.ndarray]] = {}
    for c, (base, k) in enumerate(sources):
        times.setdefault(base, []).append(lag_times(axis, t, k))
        found.setdefault(base, []).append(np.asarray(values[:, c], dtype=np.float64))
    out: History = {}
    for base in times:
        out.update(history_of(np.concatenate(times[base]), {base: np.concatenate(found[base])}))
    return out


def merged(first: History, then: History) -> History:
    """``first``'s history, with ``then``'s values where ``first`` has none (or NaN)."""
    out: History = {}
    for base in {**first, **then}:
        parts = [h[base] for h in (first, then) if base in h]
        t = np.concatenate([p[0] for p in parts])
        v = np.concatenate([p[1] for p in parts])
        # Finite values first (``first``'s before ``then``'s): a time keeps its first value.
        order = np.argsort(~np.isfinite(v), kind="stable")
        out.update(history_of(t[order], {base: v[order]}))
    return out


def lagged_values(sources: Sequence[tuple[str, int]], history: History, t: np.ndarray,
                  axis: TimeAxis) -> np.ndarray:
    """``[M, C]`` values of the model columns ``sources`` at times ``t`` from ``history``;
    NaN where the history lacks the value a lag needs."""
    out = np.full((len(t), len(sources)), np.nan)
    for c, (base, k) in enumerate(sources):
        if base in history:
            out[:, c] = look_up(*history[base], lag_times(axis, t, k))
    return out


def stamp_of(axis: TimeAxis, t: float) -> str:
    """The time stamp at numeric time ``t`` as messages show it (a date alone at midnight)."""
    stamp = axis.to_ds([t])[0]
    if isinstance(stamp, pd.Timestamp) and stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    return f"{stamp:g}" if isinstance(stamp, float) else str(stamp)


def training_lags(names: Sequence[str], lags: Sequence[int], history: History, t: np.ndarray,
                  axis: TimeAxis, what: str) -> tuple[np.ndarray, int]:
    """The model columns (:func:`lagged_names`) at the training times ``t`` from the
    covariates' ``history`` (every row of the training data), and how many of the first rows
    are left out because a lag reaches before the history's first row.

    Raises DataError naming the covariate and the date where a lag needs a value the history
    lacks (a gap in the rows, or a value that is not a number), and when no row is left."""
    sources = [(n, k) for n in names for k in lags]
    start = min(float(h[0][0]) for h in history.values() if len(h[0]))
    reach = lag_times(axis, t, max(lags))
    dropped = int(np.sum(reach < start - _tolerance(reach)))
    if dropped >= len(t):
        raise DataError(
            f"{what}: every one of its {len(t)} rows has a covariate lag (data.covariate_lags = "
            f"{list(lags)}) that reaches before the covariates' first row "
            f"({stamp_of(axis, start)}); use smaller lags or more data", column=names[0])
    t = np.asarray(t, dtype=np.float64)[dropped:]
    values = lagged_values(sources, history, t, axis)
    bad = np.argwhere(np.isnan(values))
    if len(bad):
        i, c = bad[0]
        base, k = sources[c]
        raise DataError(
            f"{what}: covariate {base!r} has no value at "
            f"{stamp_of(axis, lag_times(axis, t[i:i + 1], k)[0])} in the training data, which "
            f"column {lag_name(base, k)!r} at {stamp_of(axis, t[i])} needs "
            f"(data.covariate_lags = {list(lags)})", column=base)
    return values, dropped


__all__ = ["History", "history_of", "is_lagged", "lag_name", "lag_sources", "lag_times",
           "lagged_names", "lagged_values", "look_up", "merged", "prior_shares", "rebuilt_history",
           "refuse_ambiguous", "stamp_of", "training_lags"]
