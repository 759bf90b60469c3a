"""The column layout of forecast frames (statsforecast's), built and read in one place.

A forecast frame has ``unique_id``, ``ds``, then per model ``<model>`` (the point forecast),
``<model>-lo-<L>`` (widest interval first), ``<model>-hi-<L>`` (narrowest first) and, for explicit
quantiles, ``<model>-q-<percent>``. A level ``L`` is written as ``f"{L:g}"`` (``95``, ``97.5``), a
quantile ``q`` as ``f"{100 q:.10g}"`` (``10``, ``2.5``). autogp's model is called ``AutoGP``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

MODEL_NAME = "AutoGP"
KEY_COLUMNS = ("unique_id", "ds")

_INTERVAL = re.compile(r"(?P<model>.+)-(?P<side>lo|hi)-(?P<label>.+)")
_QUANTILE = re.compile(r"(?P<model>.+)-q-(?P<label>.+)")


# ---- building --------------------------------------------------------------------------------
def level_label(level: float) -> str:
    """The label of an interval level in column names: ``95`` for 95.0, ``97.5`` for 97.5."""
    return f"{float(level):g}"


def quantile_label(q: float) -> str:
    """The label of a quantile in column names, in percent: ``10`` for 0.1, ``2.5`` for 0.025."""
    return f"{100.0 * float(q):.10g}"


def interval_columns(model: str, level: float) -> tuple[str, str]:
    """The (lower, upper) column names of ``model``'s ``level``% interval."""
    label = level_label(level)
    return f"{model}-lo-{label}", f"{model}-hi-{label}"


def quantile_column(q: float, model: str = MODEL_NAME) -> str:
    """The column name of ``model``'s quantile ``q``."""
    return f"{model}-q-{quantile_label(q)}"


def level_columns(levels: Sequence[float], model: str = MODEL_NAME) -> list[str]:
    """Interval column names in statsforecast order (lo: widest first, hi: narrowest first)."""
    lv = sorted({float(v) for v in levels})
    return [interval_columns(model, v)[0] for v in reversed(lv)] + [
        interval_columns(model, v)[1] for v in lv
    ]


def _in_open_interval(values: Iterable[float], upper: float, what: str) -> list[float]:
    """``values`` as floats, checked to lie in (0, ``upper``), sorted and without repeats."""
    out = []
    for v in values:
        v = float(v)
        if not 0.0 < v < upper:
            raise ValueError(f"{what} must be in (0, {upper:g}), got {v:g}")
        out.append(v)
    return sorted(set(out))


def check_levels(levels: Iterable[float]) -> list[float]:
    """Interval levels in percent, checked to lie in (0, 100), sorted and without repeats."""
    return _in_open_interval(levels, 100.0, "prediction-interval levels")


def check_quantiles(quantiles: Iterable[float]) -> list[float]:
    """Quantile probabilities, checked to lie in (0, 1), sorted and without repeats."""
    return _in_open_interval(quantiles, 1.0, "quantiles")


def prediction_columns(
    levels: Sequence[float], quantiles: Sequence[float], model: str = MODEL_NAME
) -> tuple[list[str], np.ndarray]:
    """The interval and quantile column names of a forecast, in frame order, and the
    probability each one is the quantile of. ``levels`` and ``quantiles`` come sorted
    (:func:`check_levels`, :func:`check_quantiles`)."""
    names, probs = [], []
    for lv in reversed(levels):
        names.append(interval_columns(model, lv)[0])
        probs.append(0.5 - lv / 200.0)
    for lv in levels:
        names.append(interval_columns(model, lv)[1])
        probs.append(0.5 + lv / 200.0)
    for q in quantiles:
        names.append(quantile_column(q, model))
        probs.append(q)
    return names, np.asarray(probs, dtype=np.float64)


# ---- reading ---------------------------------------------------------------------------------
class IntervalColumn(NamedTuple):
    """A parsed ``<model>-<side>-<label>`` column; ``side`` is ``"lo"`` or ``"hi"``."""

    model: str
    side: str
    label: str

    @property
    def level(self) -> float:
        return float(self.label)


def parse_interval_column(column: object, model: str | None = None) -> IntervalColumn | None:
    """The parts of an interval column name (of ``model``, when given), or None when the name
    is not one (its label must read as a number)."""
    match = _INTERVAL.fullmatch(str(column))
    if match is None or (model is not None and match["model"] != model):
        return None
    try:
        float(match["label"])
    except ValueError:
        return None
    return IntervalColumn(match["model"], match["side"], match["label"])


def is_interval_column(column: object) -> bool:
    """Whether ``column`` names an interval bound (``<model>-lo-<L>`` or ``-hi-``)."""
    return parse_interval_column(column) is not None


def is_quantile_column(column: object) -> bool:
    """Whether ``column`` names a quantile (``<model>-q-<percent>``)."""
    match = _QUANTILE.fullmatch(str(column))
    if match is None:
        return False
    try:
        float(match["label"])
    except ValueError:
        return False
    return True


def point_columns(columns: Iterable[object], exclude: Iterable[str] = (*KEY_COLUMNS, "y")
                  ) -> list[str]:
    """The point-forecast (model) columns among ``columns``: neither a key, nor ``exclude``, nor
    an interval or quantile column."""
    skip = set(exclude)
    return [str(c) for c in columns
            if str(c) not in skip and not is_interval_column(c) and not is_quantile_column(c)]


def interval_pairs(columns: Iterable[object], model: str = MODEL_NAME
                   ) -> list[tuple[str, str, str]]:
    """``(label, lower column, upper column)`` of each of ``model``'s intervals whose two
    columns are both among ``columns``, widest first."""
    names = [str(c) for c in columns]
    found = []
    for name in names:
        parsed = parse_interval_column(name, model)
        upper = f"{model}-hi-{parsed.label}" if parsed is not None else ""
        if parsed is not None and parsed.side == "lo" and upper in names:
            found.append((parsed.label, name, upper))
    return sorted(found, key=lambda pair: float(pair[0]), reverse=True)


__all__ = [
    "KEY_COLUMNS",
    "MODEL_NAME",
    "IntervalColumn",
    "check_levels",
    "check_quantiles",
    "interval_columns",
    "interval_pairs",
    "is_interval_column",
    "is_quantile_column",
    "level_columns",
    "level_label",
    "parse_interval_column",
    "point_columns",
    "prediction_columns",
    "quantile_column",
    "quantile_label",
]
