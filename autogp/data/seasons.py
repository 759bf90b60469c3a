"""Calendar seasons of a time axis: the MASE season and the candidate periods of the model.

Two different questions, kept apart:

* :func:`mase_season` is the number of *observations* per season that forecast accuracy
  conventions use for the seasonal-naive scale of MASE (12 for monthly data, 4 quarterly,
  52 weekly, 7 daily, 5 for trading days, 24 hourly, 48 half-hourly, 1 yearly);
* :func:`candidate_periods` are periods in the axis' *time units* that the period proposal
  offers beside the periodogram's peaks: every cycle that data of this frequency commonly
  have (hourly data: a day and a week), longest last. Periods are in time, not in observations,
  so gaps (weekends of business-day data) do not change them.

Numeric axes have no calendar, unless their ``freq`` names one: then one step is one period of
that frequency (trading-day indices are numeric with ``freq = "B"``: one step is one trading day,
a week is 5 steps; monthly values stamped in fractional years have a year of one unit).
"""

from __future__ import annotations

from dataclasses import replace

from autogp.data.series import TimeSeries
from autogp.data.timeaxis import TimeAxis

#: Days per year and weeks per year (365.25 / 7 = 52.18).
DAYS_PER_YEAR = 365.25
WEEKS_PER_YEAR = DAYS_PER_YEAR / 7.0
#: Trading days per week and per year (the usual 252).
TRADING_WEEK, TRADING_YEAR = 5.0, 252.0

# Candidate periods in time units per unit; MASE season per unit (for step 1).
_PERIODS: dict[str, tuple[float, ...]] = {
    "months": (12.0,),
    "quarters": (4.0,),
    "years": (),
    "weeks": (WEEKS_PER_YEAR,),
    "days": (7.0, DAYS_PER_YEAR),
    "hours": (24.0, 168.0),
    "minutes": (1440.0, 10080.0),
    "seconds": (3600.0, 86400.0),
}
_MASE: dict[str, float] = {
    "months": 12, "quarters": 4, "years": 1, "weeks": 52, "days": 7, "hours": 24,
    "minutes": 1440, "seconds": 3600,
}
# A numeric axis whose freq names its calendar: (candidate periods in units, MASE season).
_NUMERIC_FREQ: dict[str, tuple[tuple[float, ...], int]] = {
    "B": ((TRADING_WEEK, TRADING_YEAR), 5),
    "D": ((7.0, DAYS_PER_YEAR), 7),
    "W": ((WEEKS_PER_YEAR,), 52),
    "MS": ((12.0,), 12), "M": ((12.0,), 12), "ME": ((12.0,), 12),
    "QS": ((4.0,), 4), "Q": ((4.0,), 4), "QE": ((4.0,), 4),
    "YS": ((), 1), "Y": ((), 1), "YE": ((), 1), "A": ((), 1),
    "h": ((24.0, 168.0), 24), "H": ((24.0, 168.0), 24),
    "30min": ((48.0, 336.0), 48),
}


def _numeric_freq(axis: TimeAxis) -> tuple[tuple[float, ...], int] | None:
    if axis.freq is None:
        return None
    return _NUMERIC_FREQ.get(axis.freq) or _NUMERIC_FREQ.get(axis.freq.split("-")[0])


def candidate_periods(axis: TimeAxis) -> tuple[float, ...]:
    """Seasonal periods (in the axis' time units) that data on this axis commonly have, as
    candidates for the period proposal: 12 months, 4 quarters, 52.18 weeks, 7 and 365.25 days
    (5 and 252 for trading-day indices), 24 and 168 hours, one day and one week in minutes
    (288 steps of 5 minutes, 48 of 30), ... Empty for yearly and for numeric axes without a
    calendar ``freq``. Periods shorter than two steps are left out.

    On a numeric axis the ``freq`` names what one step is: monthly values stamped in
    fractional years (step 1/12) have a year of 12 steps, one time unit."""
    if axis.kind == "numeric":
        known = _numeric_freq(axis)
        periods = tuple(p * axis.step for p in known[0]) if known is not None else ()
    else:
        periods = _PERIODS.get(axis.unit, ())
    return tuple(p for p in periods if p >= 2.0 * axis.step)


def mase_season(axis: TimeAxis) -> int:
    """The seasonal lag in observations for MASE's scale on a regular axis (12 for monthly
    data, 5 for trading days, 48 for half-hourly data), else 1."""
    if not axis.regular:
        return 1
    if axis.kind == "numeric" or axis.freq == "B":
        if axis.freq == "B":
            return 5
        known = _numeric_freq(axis)
        return known[1] if known is not None and axis.step == 1.0 else 1
    per_unit = _MASE.get(axis.unit, 1)
    if axis.step == 1.0:
        return int(per_unit)
    steps = per_unit / axis.step
    # Sub-daily grids (30 minutes: 48 a day); only whole numbers of steps per season.
    return int(round(steps)) if axis.unit in ("minutes", "seconds") and steps.is_integer() else 1


def with_frequency(series: TimeSeries, freq: str | None) -> TimeSeries:
    """The series with a numeric axis' calendar named (``freq``: a pandas alias such as "B" for
    trading-day indices, "MS", "QS"); datetime axes know theirs and are returned unchanged."""
    if not freq or series.axis.kind != "numeric":
        return series
    return replace(series, axis=replace(series.axis, freq=str(freq)))


__all__ = [
    "DAYS_PER_YEAR",
    "WEEKS_PER_YEAR",
    "candidate_periods",
    "mase_season",
    "with_frequency",
]
