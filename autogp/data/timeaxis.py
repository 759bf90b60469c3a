"""How a series' time stamps (``ds``) map to the numbers a Gaussian process sees.

A :class:`TimeAxis` measures time in a *unit* detected from the data, so fitted length scales and
periods can be reported in words a user recognises: for monthly data one unit is one calendar
month (a yearly period prints as 12 months), for weekly data one week, for daily data one day, and
so on. Numeric ``ds`` columns are used as they are (unit ``"units"``).

Calendar units (months, quarters, years) are not a fixed number of days. Their numeric axis puts
the observation grid's dates (the *anchor* dates: month starts, month ends or a fixed day of the
month) exactly on integers and interpolates linearly between consecutive anchor dates, so
``to_numeric`` and ``to_ds`` are exact inverses on the grid and monotone everywhere. Fixed units
(weeks, days, hours, minutes, seconds) are plain durations from the origin, the first time stamp.

Dates are handled internally as integer microseconds (pandas' resolution for parsed strings), so
any date pandas can parse, from year 1 to 9999, works. Time-zone-aware input is converted to UTC
and made tz-naive first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from autogp.data.errors import DataError

# Microseconds per fixed-duration unit, largest first (detection prefers the largest that fits).
US_PER_UNIT: dict[str, int] = {
    "weeks": 7 * 86_400 * 10**6,
    "days": 86_400 * 10**6,
    "hours": 3_600 * 10**6,
    "minutes": 60 * 10**6,
    "seconds": 10**6,
}
# Calendar units: months per unit.
MONTHS_PER_UNIT: dict[str, int] = {"months": 1, "quarters": 3, "years": 12}
_DAY = US_PER_UNIT["days"]
_FIXED_ALIAS = {"weeks": "W", "days": "D", "hours": "h", "minutes": "min", "seconds": "s"}
_WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
_ADJECTIVE = {
    "years": "yearly",
    "quarters": "quarterly",
    "months": "monthly",
    "weeks": "weekly",
    "days": "daily",
    "hours": "hourly",
    "minutes": "minutely",
    "seconds": "secondly",
}


def to_microseconds(values: Any, *, source: str = "ds") -> np.ndarray:
    """Parse date-like values to int64 microseconds since 1970-01-01 (tz-aware -> UTC, naive).

    Accepts a scalar or a sequence of strings, ``datetime``s, ``Timestamp``s or ``datetime64``
    values. Raises :class:`DataError` when a value is not a date (bare numbers are refused:
    pandas would silently read them as nanoseconds since 1970).
    """
    if isinstance(values, str | pd.Timestamp | np.datetime64) or not isinstance(values, Iterable):
        values = [values]
    idx: pd.DatetimeIndex | None = None
    if isinstance(values, pd.DatetimeIndex):
        idx = values
    elif isinstance(values, pd.Series | pd.Index | np.ndarray) and (
        values.dtype.kind == "M" or isinstance(values.dtype, pd.DatetimeTZDtype)
    ):
        idx = pd.DatetimeIndex(values)
    else:
        arr = np.asarray(list(values), dtype=object)
        if any(isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in arr):
            raise DataError(f"{source}: expected dates, got numbers")
        try:
            idx = pd.DatetimeIndex(arr)
        except (ValueError, TypeError, OverflowError):
            try:
                # Mixed UTC offsets (e.g. across a DST change) only parse as UTC.
                idx = pd.DatetimeIndex(pd.to_datetime(arr, utc=True, format="mixed"))
            except (ValueError, TypeError, OverflowError) as exc:
                raise DataError(f"{source}: cannot interpret values as dates ({exc})") from None
    if idx.tz is not None:
        idx = idx.tz_convert("UTC").tz_localize(None)
    if idx.hasnans:
        bad = int(np.flatnonzero(idx.isna())[0])
        raise DataError(f"{source}: value at position {bad} is not a date")
    try:
        return idx.as_unit("us").asi8.astype(np.int64)
    except (ValueError, OverflowError) as exc:  # out of the representable range
        raise DataError(f"{source}: dates out of range ({exc})") from None


def _ts(us: Any) -> pd.Timestamp:
    """A microsecond-resolution Timestamp (works from year 1 to 9999, unlike nanoseconds)."""
    return pd.Timestamp(np.datetime64(int(us), "us"))


def _fmt_origin(origin: pd.Timestamp | float) -> str:
    if isinstance(origin, pd.Timestamp):
        return origin.strftime("%Y-%m-%d") if origin == origin.normalize() else origin.isoformat()
    return f"{origin:g}"


def _months_since_epoch(us: np.ndarray) -> np.ndarray:
    return us.astype("datetime64[us]").astype("datetime64[M]").astype(np.int64)


@dataclass(frozen=True)
class TimeAxis:
    """The map between time stamps and numeric time for one series.

    Attributes:
        kind: ``"datetime"`` for dates, ``"numeric"`` for a numeric ``ds`` column.
        unit: what one numeric step of 1.0 is: ``"years"``, ``"quarters"``, ``"months"``,
            ``"weeks"``, ``"days"``, ``"hours"``, ``"minutes"``, ``"seconds"`` or ``"units"``.
        origin: the time stamp at numeric time 0 (the first observation), a ``pd.Timestamp``
            for dates or a float for numeric axes (0.0: numeric ``ds`` are used unchanged).
        step: spacing of the observation grid in units (1.0 for monthly data in months); for
            irregular data the median spacing. ``future_*`` continue in steps of this size.
        regular: whether the data sit on a grid of ``step`` (gaps allowed, but at least half of
            the spacings equal ``step``).
        freq: the pandas offset alias of the grid (``"MS"``, ``"ME"``, ``"W-SUN"``, ``"D"``,
            ``"B"``, ``"h"``, ...) or ``None`` when there is no standard one.
        anchor: for calendar units, the day of the month of the grid (1..28), or -1 for month
            ends; ``None`` otherwise.
    """

    kind: Literal["datetime", "numeric"]
    unit: str
    origin: pd.Timestamp | float
    step: float = 1.0
    regular: bool = True
    freq: str | None = None
    anchor: int | None = None

    # ---- construction ----------------------------------------------------------------------
    @classmethod
    def infer(cls, ds: Any) -> TimeAxis:
        """Detect the axis of time stamps (dates or numbers; sorted and de-duplicated here)."""
        dtype = getattr(ds, "dtype", None)
        if dtype is None:
            ds = np.asarray(ds)
            dtype = ds.dtype if ds.dtype != object else None
        if dtype is None or dtype.kind not in "iuf":  # dates, date strings, tz-aware stamps
            return infer_datetime_axis(np.unique(to_microseconds(ds)))
        x = np.asarray(ds, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise DataError("ds: numeric time values must be finite")
        return infer_numeric_axis(np.unique(x))

    # ---- properties ------------------------------------------------------------------------
    @property
    def is_calendar(self) -> bool:
        """Whether one unit is a calendar period (months, quarters, years)."""
        return self.unit in MONTHS_PER_UNIT

    @property
    def _origin_us(self) -> int:
        assert isinstance(self.origin, pd.Timestamp)
        return int(self.origin.as_unit("us").asm8.astype(np.int64))

    @property
    def _m0(self) -> int:
        assert isinstance(self.origin, pd.Timestamp)
        return (self.origin.year - 1970) * 12 + self.origin.month - 1

    def _anchor_us(self, j: np.ndarray) -> np.ndarray:
        """Microseconds of the j-th anchor date (calendar units)."""
        k = MONTHS_PER_UNIT[self.unit]
        months = (self._m0 + j * k).astype("datetime64[M]")
        if self.anchor == -1:
            days = (months + 1).astype("datetime64[D]") - np.timedelta64(1, "D")
        else:
            days = months.astype("datetime64[D]") + np.timedelta64(int(self.anchor or 1) - 1, "D")
        return days.astype("datetime64[us]").astype(np.int64)

    # ---- maps ------------------------------------------------------------------------------
    def to_numeric(self, ds: Any) -> np.ndarray:
        """Numeric time (float64 array) of time stamps: dates, date strings or numbers."""
        if self.kind == "numeric":
            try:
                x = np.atleast_1d(np.asarray(ds, dtype=np.float64))
            except (TypeError, ValueError) as exc:
                raise DataError(f"ds: cannot interpret values as numbers ({exc})") from None
            return x - float(self.origin)
        return self.us_to_numeric(to_microseconds(ds))

    def us_to_numeric(self, us: np.ndarray) -> np.ndarray:
        """Numeric time of int64 microseconds since 1970 (datetime axes)."""
        us = np.asarray(us, dtype=np.int64)
        if not self.is_calendar:
            return (us - self._origin_us) / US_PER_UNIT[self.unit]
        k = MONTHS_PER_UNIT[self.unit]
        j = np.floor_divide(_months_since_epoch(us) - self._m0, k)
        # The date's own month block may start after or end before its anchor date; move j so
        # that anchor(j) <= date < anchor(j + 1).
        j = np.where(us < self._anchor_us(j), j - 1, j)
        j = np.where(us >= self._anchor_us(j + 1), j + 1, j)
        a, b = self._anchor_us(j), self._anchor_us(j + 1)
        return j + (us - a) / (b - a)

    def to_ds(self, x: Any) -> pd.Index:
        """Time stamps (a ``pd.DatetimeIndex``, or a float ``pd.Index``) of numeric times."""
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        if self.kind == "numeric":
            return pd.Index(x + float(self.origin), dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise DataError("cannot convert non-finite numeric times to dates")
        # Rounding to whole microseconds absorbs float noise (e.g. 11.999999999999998 months
        # lands on the grid date), no snapping needed.
        if not self.is_calendar:
            us = self._origin_us + np.rint(x * US_PER_UNIT[self.unit]).astype(np.int64)
        else:
            j = np.floor(x).astype(np.int64)
            a, b = self._anchor_us(j), self._anchor_us(j + 1)
            us = a + np.rint((x - j) * (b - a)).astype(np.int64)
        return pd.DatetimeIndex(us.astype("datetime64[us]"))

    def future_numeric(self, last: float, horizon: int) -> np.ndarray:
        """Numeric times of the next ``horizon`` grid points after numeric time ``last``."""
        if horizon < 0:
            raise ValueError(f"horizon must be >= 0, got {horizon}")
        if self.freq == "B" and self.kind == "datetime":
            return self.to_numeric(self.future_ds(last, horizon))
        return last + self.step * np.arange(1, horizon + 1, dtype=np.float64)

    def future_ds(self, last: float, horizon: int) -> pd.Index:
        """Time stamps of the next ``horizon`` grid points after numeric time ``last``.

        Monthly data continue with month starts/ends as in the input, weekly data keep the
        weekday, business-day data skip weekends; irregular data step by the median spacing.
        """
        if self.freq == "B" and self.kind == "datetime":
            start = self.to_ds([last])[0]
            return pd.bdate_range(start=start, periods=horizon + 1)[1:].as_unit("us")
        return self.to_ds(self.future_numeric(last, horizon))

    # ---- reporting -------------------------------------------------------------------------
    def format_length(self, x: float, digits: int = 3) -> str:
        """A duration in units as words, e.g. ``format_length(12.0) == "12 months"``."""
        unit = self.unit[:-1] if abs(x) == 1 and self.unit.endswith("s") else self.unit
        return f"{x:.{digits}g} {unit}"

    def describe(self) -> str:
        """One line for reports, e.g. ``"monthly (1 unit = 1 month, month starts, MS) ..."``."""
        if self.kind == "numeric":
            what = "regular" if self.regular else "irregular"
            return f"numeric time ({what}, step {self.step:.6g} units)"
        single = self.unit[:-1]
        if self.regular:
            label = _ADJECTIVE.get(self.unit, self.unit)
            if self.step != 1:
                label = f"every {self.format_length(self.step)}"
            if self.freq == "B":
                label = "business-daily"
        else:
            label = f"irregular, median spacing {self.format_length(self.step)},"
        extra = []
        if self.anchor == -1:
            extra.append("month ends")
        elif self.anchor == 1:
            extra.append("month starts")
        elif self.anchor is not None:
            extra.append(f"day {self.anchor} of the month")
        if self.freq:
            extra.append(self.freq)
        tail = ", ".join([f"1 unit = 1 {single}", *extra])
        return f"{label} ({tail}), origin {_fmt_origin(self.origin)}"

    # ---- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (origin as ISO string for dates)."""
        origin = self.origin.isoformat() if isinstance(self.origin, pd.Timestamp) else self.origin
        return {
            "kind": self.kind,
            "unit": self.unit,
            "origin": origin,
            "step": self.step,
            "regular": self.regular,
            "freq": self.freq,
            "anchor": self.anchor,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TimeAxis:
        """Inverse of :meth:`to_dict`."""
        origin = (
            pd.Timestamp(d["origin"]).as_unit("us")
            if d["kind"] == "datetime"
            else float(d["origin"])
        )
        return cls(
            kind=d["kind"],
            unit=d["unit"],
            origin=origin,
            step=float(d["step"]),
            regular=bool(d["regular"]),
            freq=d.get("freq"),
            anchor=d.get("anchor"),
        )


# ---- detection ------------------------------------------------------------------------------
def infer_numeric_axis(x: np.ndarray) -> TimeAxis:
    """The axis of sorted, unique numeric times ``x``: regular with the smallest step when at
    least half the steps equal it, else irregular with the median step."""
    if x.size < 2:
        return TimeAxis("numeric", "units", 0.0, 1.0, True)
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.diff(x)
        span = x[-1] - x[0]
    if not np.all(np.isfinite(d)) or not np.isfinite(span):
        raise DataError("ds: numeric time values span too wide a range to represent")
    g = float(d.min())
    close = np.isclose(d, g, rtol=1e-9, atol=1e-12 * float(np.max(np.abs(x))))
    if np.mean(close) >= 0.5:
        return TimeAxis("numeric", "units", 0.0, g, True)
    return TimeAxis("numeric", "units", 0.0, float(np.median(d)), False)


def _calendar_axis(us: np.ndarray) -> TimeAxis | None:
    """A months/quarters/years axis if all dates share a day of month (or are month ends)."""
    days = us.astype("datetime64[us]").astype("datetime64[D]")
    months = days.astype("datetime64[M]")
    dom = (days - months.astype("datetime64[D]")).astype(np.int64) + 1
    month_end = (days + np.timedelta64(1, "D")).astype("datetime64[M]") != months
    if np.all(month_end):
        anchor = -1
    elif np.all(dom == dom[0]) and dom[0] <= 28:
        anchor = int(dom[0])
    else:
        return None
    md = np.diff(months.astype(np.int64))
    if np.any(md <= 0):
        return None
    g = int(np.gcd.reduce(md))
    unit = "years" if g % 12 == 0 else "quarters" if g % 3 == 0 else "months"
    k = MONTHS_PER_UNIT[unit]
    step = g // k
    regular = bool(np.mean(md == g) >= 0.5)
    freq = None
    if anchor in (1, -1):
        base = {"months": "M", "quarters": "Q", "years": "Y"}[unit]
        freq = ("" if step == 1 else str(step)) + base + ("S" if anchor == 1 else "E")
        if unit != "months":
            month_name = _ts(us[0]).strftime("%b").upper()
            freq += f"-{month_name}"
    origin = _ts(us[0])
    if not regular:
        step_f = float(np.median(md)) / k
        return TimeAxis("datetime", unit, origin, step_f, False, None, anchor)
    return TimeAxis("datetime", unit, origin, float(step), True, freq, anchor)


def infer_datetime_axis(us: np.ndarray) -> TimeAxis:
    """The axis of sorted, unique time stamps ``us`` (microseconds since 1970): its calendar
    unit and step when regular."""
    origin = _ts(us[0])
    if us.size < 2:
        return TimeAxis("datetime", "days", origin, 1.0, True, "D")
    diffs = np.diff(us)
    normalized = bool(np.all(us % _DAY == 0))
    if normalized:
        cal = _calendar_axis(us)
        if cal is not None:
            return cal
        # Business days: weekdays only, mostly one day apart, weekends skipped.
        weekday = (us // _DAY + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
        ddays = diffs // _DAY
        if (
            np.all(weekday < 5)
            and np.any(ddays == 3)
            and np.mean(ddays == 1) >= 0.5
            and np.all(weekday[1:][ddays == 3] == 0)
        ):
            return TimeAxis("datetime", "days", origin, 1.0, True, "B")
    g = int(np.gcd.reduce(diffs))
    if np.mean(diffs == g) >= 0.5:
        unit = next((u for u, n in US_PER_UNIT.items() if g % n == 0), "seconds")
        step = g / US_PER_UNIT[unit]
        freq: str | None = None
        if float(step).is_integer():
            prefix = "" if step == 1 else str(int(step))
            freq = prefix + _FIXED_ALIAS[unit]
            if unit == "weeks":
                freq += "-" + _WEEKDAYS[int((us[0] // _DAY + 3) % 7)]
        return TimeAxis("datetime", unit, origin, float(step), True, freq)
    # Irregular: days unless the typical spacing is below a day.
    med = float(np.median(diffs))
    unit = next((u for u in ("days", "hours", "minutes") if med >= US_PER_UNIT[u]), "seconds")
    return TimeAxis("datetime", unit, origin, med / US_PER_UNIT[unit], False, None)


__all__ = [
    "MONTHS_PER_UNIT",
    "US_PER_UNIT",
    "TimeAxis",
    "infer_datetime_axis",
    "infer_numeric_axis",
    "to_microseconds",
]
