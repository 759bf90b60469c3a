"""Reading kernel expressions: additive terms, their kind, and a plain-English description.

The expression handed to :func:`describe` should already be in data units
(``Kernel.in_data_units``), so that length scales and periods are in the time axis' unit and
locations are numeric times on it: a period of 12.0 on a monthly axis reads "yearly
seasonality (period 12 months)", a change point at 137.0 reads "change point at 1960-06-01".

Term kinds (:func:`classify_term`), used by ``AutoGP.decompose``:

* ``"seasonal"``: anything containing ``PER``;
* ``"changepoint"``: a ``CP`` at the root of the term;
* ``"noise"``: white noise (``WN``, possibly scaled by ``CONST``);
* ``"trend"``: ``LIN``, ``CONST``, ``BM`` (a random-walk level) and products with such a factor
  (no ``PER``);
* ``"smooth"``: smooth variation, ``GE``/``SE``/``M12``/``M32``/``M52``/``RQ`` and their
  products (no ``PER``, no ``LIN``).
"""

from __future__ import annotations

import math

import pandas as pd

from autogp.data import TimeAxis
from autogp.kernels import Kernel, leaves, spec

COMPONENTS = ("trend", "seasonal", "smooth", "changepoint", "noise")
SMOOTH_OPS = frozenset({spec.SE, spec.GE, spec.M12, spec.M32, spec.M52, spec.RQ})


# ---- additive structure ----------------------------------------------------------------------
def additive_terms(expr: Kernel) -> list[Kernel]:
    """The terms of ``expr`` split at its top-level ``+`` nodes, left to right."""
    if expr.opcode == spec.PLUS:
        return [t for child in expr.children for t in additive_terms(child)]
    return [expr]


def product_factors(expr: Kernel) -> list[Kernel]:
    """The factors of ``expr`` split at its top-level ``*`` nodes, left to right."""
    if expr.opcode == spec.TIMES:
        return [f for child in expr.children for f in product_factors(child)]
    return [expr]


def classify_term(term: Kernel) -> str:
    """The component a term belongs to: one of :data:`COMPONENTS` (see the module docstring)."""
    ops = {leaf.opcode for leaf in leaves(term)}
    if spec.PER in ops:
        return "seasonal"
    if term.opcode == spec.CP:
        return "changepoint"
    if spec.WN in ops and ops <= {spec.WN, spec.CONST}:
        return "noise"
    if ops & {spec.LIN, spec.CONST, spec.BM}:
        return "trend"
    return "smooth"


# ---- plain English ---------------------------------------------------------------------------
# Named seasonalities: (name, period in each unit). Matched within _PERIOD_TOLERANCE.
_NAMED_PERIODS: tuple[tuple[str, dict[str, float]], ...] = (
    (
        "yearly",
        {
            "years": 1.0,
            "quarters": 4.0,
            "months": 12.0,
            "weeks": 365.25 / 7,
            "days": 365.25,
            "hours": 365.25 * 24,
        },
    ),
    ("quarterly", {"quarters": 1.0, "months": 3.0, "weeks": 13.0, "days": 91.3}),
    ("weekly", {"weeks": 1.0, "days": 7.0, "hours": 168.0, "minutes": 7 * 1440.0}),
    ("daily", {"days": 1.0, "hours": 24.0, "minutes": 1440.0, "seconds": 86400.0}),
    ("hourly", {"hours": 1.0, "minutes": 60.0, "seconds": 3600.0}),
)
_PERIOD_TOLERANCE = 0.06  # relative


def season_name(period: float, axis: TimeAxis) -> str | None:
    """``"yearly"``, ``"weekly"``, ... when ``period`` (in axis units) is close to a named one."""
    for name, by_unit in _NAMED_PERIODS:
        target = by_unit.get(axis.unit)
        if target is not None and abs(period - target) <= _PERIOD_TOLERANCE * target:
            return name
    return None


def format_time(t: float, axis: TimeAxis) -> str:
    """A numeric time on ``axis`` as a date (or a number for numeric axes)."""
    if not math.isfinite(t):
        return f"{t}"
    if axis.kind == "numeric":
        return f"{float(axis.to_ds([t])[0]):.6g}"
    try:
        stamp = pd.Timestamp(axis.to_ds([t])[0])
    except (ValueError, OverflowError):  # far outside the representable dates
        return f"{t:.6g} {axis.unit} from {axis.origin}"
    if stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    return stamp.strftime("%Y-%m-%d %H:%M")


def _length(x: float, axis: TimeAxis) -> str:
    return axis.format_length(float(x))


def _periodic(expr: Kernel, axis: TimeAxis) -> str:
    period = float(expr.param_dict["period"])
    name = season_name(period, axis)
    if name is not None:
        return f"{name} seasonality (period {_length(period, axis)})"
    text = f"periodic component with period {_length(period, axis)}"
    # A small whole multiple of a yearly/weekly/daily period repeats that pattern too.
    for k in (2, 3, 4):
        multiple = season_name(period / k, axis)
        if multiple in ("yearly", "weekly", "daily"):
            return f"{text} ({k} x {multiple})"
    return text


def _smooth(expr: Kernel, axis: TimeAxis) -> str:
    length = float(expr.param_dict["l"])
    rough = expr.opcode in (spec.M12,) or (
        expr.opcode == spec.GE and float(expr.param_dict["gamma"]) < 1.0
    )
    kind = "rough" if rough else "smooth"
    return f"{kind} variation over ~{_length(length, axis)}"


_POLY = {1: "linear", 2: "quadratic", 3: "cubic"}


def _grows(n_lin: int) -> str:
    return {1: "linearly", 2: "quadratically", 3: "cubically"}.get(n_lin, f"as t^{n_lin}")


def _product(factors: list[Kernel], axis: TimeAxis) -> str:
    per = [f for f in factors if f.opcode == spec.PER]
    n_lin = sum(f.opcode == spec.LIN for f in factors)
    smooth = [f for f in factors if f.opcode in SMOOTH_OPS]
    noise = [f for f in factors if f.opcode == spec.WN]
    other = [
        f
        for f in factors
        if f.opcode not in (spec.PER, spec.LIN, spec.CONST, spec.WN) and f.opcode not in SMOOTH_OPS
    ]
    modifiers: list[str] = []
    if per:
        base = _periodic(per[0], axis)
        modifiers += [f"modulated by a {_periodic(p, axis)}" for p in per[1:]]
        if n_lin:
            modifiers.append(f"whose amplitude grows {_grows(n_lin)}")
        if smooth:
            shortest = min(float(s.param_dict["l"]) for s in smooth)
            modifiers.append(f"whose shape drifts over ~{_length(shortest, axis)}")
    elif noise:
        base = "noise"
        if n_lin:
            modifiers.append(f"whose size grows {_grows(n_lin)}")
        if smooth:
            modifiers.append("whose size varies smoothly")
    elif smooth:
        base = _smooth(min(smooth, key=lambda s: float(s.param_dict["l"])), axis)
        if n_lin:
            modifiers.append(f"whose amplitude grows {_grows(n_lin)}")
    elif n_lin:
        base = f"{_POLY.get(n_lin, f'degree-{n_lin} polynomial')} trend"
    else:
        base = "constant offset"
    text = " ".join([base, " and ".join(modifiers)]) if modifiers else base
    if other:
        text = " x ".join([text, *(f"({describe(o, axis)})" for o in other)])
    return text


def describe(expr: Kernel, axis: TimeAxis) -> str:
    """A one-line plain-English reading of a kernel expression in data units.

    >>> from autogp.data import TimeAxis
    >>> import pandas as pd
    >>> axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    >>> from autogp.kernels import parse
    >>> describe(parse("LIN + PER(l=1.0, period=12.0; amp=1.0) * LIN"), axis)
    'linear trend + yearly seasonality (period 12 months) whose amplitude grows linearly'
    """
    op = expr.opcode
    if op == spec.PLUS:
        return " + ".join(describe(t, axis) for t in additive_terms(expr))
    if op == spec.TIMES:
        return _product(product_factors(expr), axis)
    if op == spec.CP:
        p = expr.param_dict
        where = format_time(float(p["location"]), axis)
        before, after = (describe(c, axis) for c in expr.children)
        return f"change point at {where}: before, {before}; after, {after}"
    if op == spec.LIN:
        return "linear trend"
    if op == spec.CONST:
        return "constant offset"
    if op == spec.BM:
        return "random-walk level"
    if op == spec.WN:
        return "noise"
    if op == spec.PER:
        return _periodic(expr, axis)
    if op in SMOOTH_OPS:
        return _smooth(expr, axis)
    return spec.NAMES[op]  # pragma: no cover - every opcode is handled above


__all__ = [
    "COMPONENTS",
    "additive_terms",
    "classify_term",
    "describe",
    "format_time",
    "product_factors",
    "season_name",
]
