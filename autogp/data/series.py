"""The :class:`TimeSeries` container: clean, sorted float64 arrays plus their time axis."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from autogp.data.errors import DataError
from autogp.data.scaling import Scaler
from autogp.data.timeaxis import TimeAxis


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _checked_covariates(series: TimeSeries) -> pd.DataFrame:
    """``series.covariates`` as a float64 frame indexed 0..n-1, or a DataError naming the
    column and the time of a value that is missing or not a number."""
    cov = series.covariates
    if not isinstance(cov, pd.DataFrame) or len(cov) != series.t.size:
        raise DataError(f"series {series.unique_id!r}: covariates must be a DataFrame with one "
                        f"row per observation ({series.t.size})")
    out = {}
    for name in cov.columns:
        values = pd.to_numeric(cov[name], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            at = series.ds[bad[0]]
            at = at.strftime("%Y-%m-%d") if isinstance(at, pd.Timestamp) and at == at.normalize() \
                else at
            raise DataError(f"series {series.unique_id!r}: covariate {name!r} has no finite "
                            f"number at {at} ({cov[name].iloc[bad[0]]!r})", column=str(name))
        out[str(name)] = values
    return pd.DataFrame(out, index=range(series.t.size), columns=[str(c) for c in cov.columns])


@dataclass(frozen=True, eq=False)
class TimeSeries:
    """One univariate series, validated and sorted by time.

    Attributes:
        t: float64 numeric times in the axis' unit (strictly increasing, finite).
        y: float64 values (finite), same length as ``t``.
        unique_id: the series' name (the id column's value for panels).
        axis: how time stamps map to ``t`` (see :class:`TimeAxis`); a numeric axis when omitted.
        is_test: optional bool mask marking held-out observations (from a split column).
        stamps: the original time stamps, kept so :attr:`ds` is exact (float64 ``t`` cannot
            hold microseconds over centuries); ``None``: :attr:`ds` is ``axis.to_ds(t)``.
        end_t: the numeric time of the source's last time stamp when rows after the last
            observation had missing values (forecasts start after it, not after ``t[-1]``);
            ``None``: the last observation is the last stamp.
        key_id: the name a panel fit derives the series' random key from (default
            :attr:`unique_id`); cross-validation windows carry their series' id here, so a
            window's fit is the fit of the truncated series.
        noise_sd: optional known measurement-error standard deviations of the observations
            (data units, finite, >= 0), same length as ``t``; ``None``: none known.
        covariates: optional float64 DataFrame, one row per observation (in the order of
            ``t``) and one named column per covariate (exogenous regressor), all finite.

    The arrays are read-only copies. Use :meth:`train`/:meth:`test` for the split parts.
    """

    t: np.ndarray
    y: np.ndarray
    unique_id: str = "series"
    axis: TimeAxis = field(default=None)  # type: ignore[assignment]
    is_test: np.ndarray | None = None
    stamps: pd.Index | None = field(default=None, repr=False)
    end_t: float | None = field(default=None, repr=False)
    key_id: str | None = field(default=None, repr=False)
    noise_sd: np.ndarray | None = field(default=None, repr=False)
    covariates: pd.DataFrame | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        if t.ndim != 1 or y.ndim != 1 or t.shape != y.shape:
            raise DataError(
                f"series {self.unique_id!r}: t and y must be 1-D of equal length, "
                f"got shapes {t.shape} and {y.shape}"
            )
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(y))):
            raise DataError(f"series {self.unique_id!r}: t and y must be finite")
        if t.size > 1 and not np.all(np.diff(t) > 0):
            raise DataError(f"series {self.unique_id!r}: t must be strictly increasing")
        object.__setattr__(self, "t", _frozen(t))
        object.__setattr__(self, "y", _frozen(y))
        object.__setattr__(self, "unique_id", str(self.unique_id))
        if self.axis is None:
            object.__setattr__(self, "axis", TimeAxis.infer(t))
        if self.is_test is not None:
            m = np.asarray(self.is_test, dtype=bool)
            if m.shape != t.shape:
                raise DataError(f"series {self.unique_id!r}: is_test must match t's shape")
            object.__setattr__(self, "is_test", _frozen(m))
        if self.stamps is not None:
            if len(self.stamps) != t.size:
                raise DataError(f"series {self.unique_id!r}: stamps must match t's length")
            object.__setattr__(self, "stamps", pd.Index(self.stamps))
        if self.noise_sd is not None:
            sd = np.asarray(self.noise_sd, dtype=np.float64)
            if sd.shape != t.shape or not np.all(np.isfinite(sd) & (sd >= 0)):
                raise DataError(f"series {self.unique_id!r}: noise_sd must hold one finite, "
                                "non-negative standard deviation per observation")
            object.__setattr__(self, "noise_sd", _frozen(sd))
        if self.end_t is not None:
            end = float(self.end_t)
            if not np.isfinite(end) or (t.size and end < t[-1]):
                raise DataError(f"series {self.unique_id!r}: end_t must be finite and not "
                                f"before the last observation, got {self.end_t!r}")
            object.__setattr__(self, "end_t", None if t.size and end == t[-1] else end)
        if self.covariates is not None:
            object.__setattr__(self, "covariates", _checked_covariates(self))

    # ---- basics ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def n(self) -> int:
        """Number of observations."""
        return int(self.t.size)

    @property
    def ds(self) -> pd.Index:
        """The time stamps (dates or numbers) of the observations."""
        return self.stamps if self.stamps is not None else self.axis.to_ds(self.t)

    def __repr__(self) -> str:
        return (
            f"TimeSeries(unique_id={self.unique_id!r}, n={self.n}, axis={self.axis.describe()!r})"
        )

    @property
    def last_t(self) -> float:
        """The numeric time of the last time stamp: :attr:`end_t` when the source's last rows
        had missing values, else the last observation's."""
        return float(self.t[-1]) if self.end_t is None else float(self.end_t)

    # ---- forecasting helpers ---------------------------------------------------------------
    def future_t(self, horizon: int) -> np.ndarray:
        """Numeric times of the next ``horizon`` grid points after the last time stamp (which
        is after the last observation when the last values were missing)."""
        return self.axis.future_numeric(self.last_t, horizon)

    def future_ds(self, horizon: int) -> pd.Index:
        """Time stamps of the next ``horizon`` grid points after the last time stamp (dates
        continue the input's grid)."""
        return self.axis.future_ds(self.last_t, horizon)

    def scaler(self, *, log: bool = False) -> Scaler:
        """A :class:`Scaler` fitted to this series."""
        return Scaler.fit(self.t, self.y, log=log)

    # ---- subsets ---------------------------------------------------------------------------
    def _subset(self, mask: np.ndarray) -> TimeSeries:
        sub_test = None if self.is_test is None else self.is_test[mask]
        sub_stamps = None if self.stamps is None else self.stamps[mask]
        sub_sd = None if self.noise_sd is None else self.noise_sd[mask]
        # The missing stamps after the last observation belong to a subset that keeps it.
        end = self.end_t if mask.size and mask[-1] else None
        sub_cov = None if self.covariates is None else self.covariates[mask]
        return replace(self, t=self.t[mask], y=self.y[mask], is_test=sub_test, stamps=sub_stamps,
                       end_t=end, noise_sd=sub_sd, covariates=sub_cov)

    def last(self, n: int) -> TimeSeries:
        """The ``n`` most recent observations (all of them when ``n`` is at least :attr:`n`)."""
        if n < 1:
            raise ValueError(f"last(n) needs n >= 1, got {n}")
        if n >= self.n:
            return self
        return self._subset(np.arange(self.n) >= self.n - n)

    def every(self, stride: int) -> TimeSeries:
        """Every ``stride``-th observation, counted back from the most recent (which is kept)."""
        if stride < 1:
            raise ValueError(f"every(stride) needs stride >= 1, got {stride}")
        if stride == 1:
            return self
        return self._subset((self.n - 1 - np.arange(self.n)) % stride == 0)

    def train(self) -> TimeSeries:
        """The observations not marked as test (all of them without a split)."""
        if self.is_test is None:
            return self
        return self._subset(~self.is_test)

    def test(self) -> TimeSeries:
        """The observations marked as test (raises when there is no split)."""
        if self.is_test is None or not self.is_test.any():
            raise DataError(f"series {self.unique_id!r} has no test observations")
        return self._subset(self.is_test)

    def split(self, n_test: int) -> tuple[TimeSeries, TimeSeries]:
        """The series without its last ``n_test`` points, and those points."""
        if not 0 < n_test < self.n:
            raise DataError(
                f"series {self.unique_id!r}: n_test must be in 1..{self.n - 1}, got {n_test}"
            )
        cut = np.arange(self.n) < self.n - n_test
        return self._subset(cut), self._subset(~cut)

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame with columns ``unique_id``, ``ds``, ``y`` (and ``split`` if any)."""
        df = pd.DataFrame(
            {"unique_id": self.unique_id, "ds": self.ds, "y": self.y}, index=range(self.n)
        )
        if self.is_test is not None:
            df["split"] = np.where(self.is_test, "test", "train")
        return df

    def with_values(self, y: Any) -> TimeSeries:
        """The same times and axis with new values (e.g. a transformed series)."""
        return replace(self, y=np.asarray(y, dtype=np.float64))
