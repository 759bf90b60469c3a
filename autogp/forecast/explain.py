"""Reading kernel expressions: additive terms, their kind, and a plain-English description.

The expression handed to :func:`describe` should already be in data units
(``Kernel.in_data_units``), so that length scales and periods are in the time axis' unit and
locations are numeric times on it: a period of 12.0 on a monthly axis reads "yearly
seasonality (period 12 months)", a change point at 137.0 reads "change point at 1960-06-01".

Term kinds (:func:`classify_term`), used by ``AutoGP.decompose``, from the roles of the term's
atoms (``AtomRow.role`` in ``autogp.kernels.atom_table``):

* ``"seasonal"``: anything containing a seasonal atom (``PER``);
* ``"changepoint"``: a ``CP`` at the root of the term;
* ``"noise"``: white noise (``WN``, possibly scaled by ``CONST``);
* ``"trend"``: polynomial, constant and level atoms (``LIN``, ``CONST``, ``BM``: a random-walk
  level) and products with such a factor (no seasonal atom);
* ``"smooth"``: smooth variation, ``GE``/``SE``/``M12``/``M32``/``M52``/``RQ`` and their
  products (no seasonal or trend atom);
* ``"covariates"``: any term with a covariate atom (``LIN[temp]``, ``SE[temp]``): its part of
  the series moves with the covariates (only fits with covariates have this component).

Each atom's own reading (``AtomRow.reading``) comes from the table too; this module combines them.
"""

from __future__ import annotations

import math

import pandas as pd

from autogp.data import TimeAxis
from autogp.data.covariates import CovariateScaling
from autogp.kernels import Kernel, leaves, spec

COMPONENTS = ("trend", "seasonal", "smooth", "changepoint", "noise")
#: The component of the terms with a covariate atom (in a decomposition of a fit with covariates).
COVARIATE_COMPONENT = "covariates"
TREND_ROLES = frozenset({"polynomial", "constant", "level"})


def role(expr: Kernel) -> str | None:
    """The atom's role in a reading (``AtomRow.role``), ``None`` for an operator."""
    row = spec.ROW_OF_OPCODE.get(expr.opcode)
    return None if row is None else row.role


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
    roles = {role(leaf) for leaf in leaves(term)}
    if "covariate" in roles:
        return COVARIATE_COMPONENT
    if "seasonal" in roles:
        return "seasonal"
    if term.opcode == spec.CP:
        return "changepoint"
    if "noise" in roles and roles <= {"noise", "constant"}:
        return "noise"
    if roles & TREND_ROLES:
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


def period_seen_on_grid(period: float, step: float) -> float:
    """The period that a periodic kernel of ``period`` shows at points ``step`` apart.

    ``sin^2(pi r / period)`` at ``r = k step`` does not change when the frequency ``1 / period``
    moves by a whole multiple of ``1 / step``, so on the grid a period under two steps is the
    same function as its alias, the frequency folded into ``[0, 1 / (2 step)]``: a period of
    0.967 years on yearly data is a cycle of 29.3 years. ``inf``: constant on the grid (a whole
    number of steps)."""
    f = 1.0 / period
    folded = abs(f - round(f * step) / step)
    return math.inf if folded * step < 1e-9 else 1.0 / folded


def periodic_phrase(period: float, axis: TimeAxis) -> str:
    """A periodic pattern of ``period`` (axis units) in words, named when it is a known season.
    On a regular grid a period under two steps is read as the period the data see
    (:func:`period_seen_on_grid`): a "yearly seasonality" of yearly data is nothing of the kind."""
    if axis.regular and axis.step > 0 and period < 2.0 * axis.step:
        seen = period_seen_on_grid(period, axis.step)
        fitted = (f"fitted period {_length(period, axis)}, under two steps of "
                  f"{_length(axis.step, axis)}")
        if not math.isfinite(seen):
            return f"constant at the observed steps ({fitted})"
        return f"{periodic_phrase(seen, axis)} ({fitted}: the same at every step)"
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


class AxisWords:
    """The ``atom_row.Words`` an atom's reading uses, on one time axis (and the covariates'
    names and scales, for the covariate atoms)."""

    def __init__(self, axis: TimeAxis, covariates: CovariateScaling | None = None) -> None:
        self.axis = axis
        self.covariates = covariates

    def covariate(self, op: int, params: dict[str, float]) -> str:
        """A covariate atom in words, its length scale in the covariate's units."""
        k = int(spec.INPUT[op])
        cov = self.covariates
        name = cov.names[k - 1] if cov is not None and k <= len(cov.names) else f"covariate {k}"
        if "l" not in params:
            return f"linear effect of {name}"
        scale = cov.scale[k - 1] if cov is not None and k <= len(cov.scale) else 1.0
        return f"smooth effect of {name} (varying over ~{params['l'] * scale:.3g} of {name})"

    def length(self, duration: float) -> str:
        return _length(duration, self.axis)

    def period(self, period: float) -> str:
        return periodic_phrase(period, self.axis)


def _atom(expr: Kernel, axis: TimeAxis, covariates: CovariateScaling | None = None) -> str:
    """An atom on its own, read by its row of the atom table."""
    params = {name: float(value) for name, value in expr.param_dict.items()}
    words = AxisWords(axis, covariates)
    if role(expr) == "covariate":
        return words.covariate(expr.opcode, params)
    return spec.ROW_OF_OPCODE[expr.opcode].reading(params, words)


_POLY = {1: "linear", 2: "quadratic", 3: "cubic"}


def _grows(n_lin: int) -> str:
    return {1: "linearly", 2: "quadratically", 3: "cubically"}.get(n_lin, f"as t^{n_lin}")


def _product(factors: list[Kernel], axis: TimeAxis,
             covariates: CovariateScaling | None = None) -> str:
    per = [f for f in factors if role(f) == "seasonal"]
    n_lin = sum(role(f) == "polynomial" for f in factors)
    smooth = [f for f in factors if role(f) == "smooth"]
    noise = [f for f in factors if role(f) == "noise"]
    # Constants only scale a product; levels and sub-expressions are read on their own.
    other = [f for f in factors if role(f) in ("level", "covariate", None)]
    modifiers: list[str] = []
    if per:
        base = _atom(per[0], axis)
        modifiers += [f"modulated by a {_atom(p, axis)}" for p in per[1:]]
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
        base = _atom(min(smooth, key=lambda s: float(s.param_dict["l"])), axis)
        if n_lin:
            modifiers.append(f"whose amplitude grows {_grows(n_lin)}")
    elif n_lin:
        base = f"{_POLY.get(n_lin, f'degree-{n_lin} polynomial')} trend"
    elif other:  # constants only scale what the other factors say
        return " x ".join(describe(o, axis, covariates) for o in other)
    else:
        base = "constant offset"
    text = " ".join([base, " and ".join(modifiers)]) if modifiers else base
    if other:
        text = " x ".join([text, *(f"({describe(o, axis, covariates)})" for o in other)])
    return text


def describe(expr: Kernel, axis: TimeAxis, covariates: CovariateScaling | None = None) -> str:
    """A one-line plain-English reading of a kernel expression in data units.

    >>> from autogp.data import TimeAxis
    >>> import pandas as pd
    >>> axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    >>> from autogp.kernels import parse
    >>> describe(parse("LIN + PER(l=1.0, period=12.0; amp=1.0) * LIN"), axis)
    'linear trend + yearly seasonality (period 12 months) whose amplitude grows linearly'

    ``covariates``: the fit's covariate scaling, to name covariate atoms and put their length
    scales in the covariates' units.
    """
    op = expr.opcode
    if op == spec.PLUS:
        return " + ".join(describe(t, axis, covariates) for t in additive_terms(expr))
    if op == spec.TIMES:
        return _product(product_factors(expr), axis, covariates)
    if op == spec.CP:
        p = expr.param_dict
        where = format_time(float(p["location"]), axis)
        before, after = (describe(c, axis, covariates) for c in expr.children)
        return f"change point at {where}: before, {before}; after, {after}"
    return _atom(expr, axis, covariates)


__all__ = [
    "COVARIATE_COMPONENT",
    "COMPONENTS",
    "TREND_ROLES",
    "AxisWords",
    "additive_terms",
    "classify_term",
    "describe",
    "format_time",
    "period_seen_on_grid",
    "periodic_phrase",
    "product_factors",
    "role",
    "season_name",
]
