"""Normalisation of time and values before fitting, and its inverse for reporting.

Models are fitted on time mapped to [0, 1] over the training span and values mapped to zero mean
and unit variance, so that one set of default priors suits series of any scale. A :class:`Scaler`
records the affine maps; ``(time_scale, time_offset, value_scale, value_offset)`` are what is
needed to convert fitted parameters back to data units (a length scale ``l`` in normalised time
is ``l * time_scale`` time units; an amplitude ``a`` in normalised values is
``a * value_scale**2`` in squared data units). Before the affine map values may pass through a
Box-Cox transform (``boxcox_lambda``: 0 is log, None is none; see :mod:`autogp.data.transform`);
parameters and noise are then in transformed units.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from autogp.data.errors import DataError
from autogp.data.transform import boxcox, boxcox_log_jacobian, inv_boxcox


def _finite_1d(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise DataError(f"{name}: expected a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise DataError(f"{name}: contains {int(np.sum(~np.isfinite(a)))} non-finite values")
    return a


def _robust_mean_std(y: np.ndarray) -> tuple[float, float]:
    """Mean and population std without overflow for huge values (divide by max |y| first)."""
    big = float(np.max(np.abs(y)))
    if big == 0.0:
        return 0.0, 0.0
    z = y / big
    m = float(np.mean(z))
    s = float(np.sqrt(np.mean((z - m) ** 2)))
    return m * big, s * big


#: Value scale of a constant series, relative to its magnitude.
CONSTANT_SCALE = 1e-6


@dataclass(frozen=True)
class Scaler:
    """Affine normalisation ``t -> (t - time_offset) / time_scale``, ``y -> (boxcox(y) -
    value_offset) / value_scale``, where ``boxcox`` is the Box-Cox transform with
    ``boxcox_lambda`` (``log`` at 0, the identity when None).

    Build one with :meth:`fit`. ``time_offset`` is the first training time and ``time_scale``
    the training span, so training times map onto [0, 1]. ``value_offset``/``value_scale`` are
    the mean and standard deviation of the (transformed) training values. ``transform_reason``
    says in words why the transform was chosen (for ``explain()``).
    """

    time_offset: float = 0.0
    time_scale: float = 1.0
    value_offset: float = 0.0
    value_scale: float = 1.0
    boxcox_lambda: float | None = None
    transform_reason: str = ""

    @property
    def log(self) -> bool:
        """Whether values are fitted in log units (Box-Cox lambda 0)."""
        return self.boxcox_lambda == 0.0

    @property
    def transformed(self) -> bool:
        """Whether values pass through a Box-Cox transform (log included)."""
        return self.boxcox_lambda is not None

    @property
    def units(self) -> str:
        """``"data"``, ``"log"`` or ``"boxcox"``: the units the model is fitted in."""
        return "data" if not self.transformed else "log" if self.log else "boxcox"

    @classmethod
    def fit(
        cls,
        t: Any,
        y: Any,
        *,
        log: bool = False,
        boxcox_lambda: float | None = None,
        transform_reason: str = "",
        center_last: int | None = None,
    ) -> Scaler:
        """Fit the normalisation to training times ``t`` and values ``y``.

        ``boxcox_lambda`` transforms values first (0: log; ``log=True`` is the same as 0).
        ``center_last = k`` centres values at the mean of the last ``k`` (transformed) values
        instead of all of them (the scale is still the whole series' standard deviation). The
        model's prior mean is this offset, and a stationary component's forecast reverts to it:
        to the series' recent level rather than its long-run mean.

        Guards: a single time point gives ``time_scale = 1``; a constant series (std zero, or
        below 1e-12 of its magnitude, i.e. rounding noise) gives ``value_scale = 1e-6 |mean|``
        (1e-6 for an all-zero series) so nothing divides by zero. A transform needs positive
        values.
        """
        t = _finite_1d(t, "t")
        y = _finite_1d(y, "y")
        lo, hi = float(np.min(t)), float(np.max(t))
        span = hi - lo
        if not np.isfinite(span):
            raise DataError("t: time span is too wide to represent in float64")
        time_scale = span if span > 0 else 1.0
        if log:
            if boxcox_lambda not in (None, 0.0):
                raise ValueError(f"log=True contradicts boxcox_lambda={boxcox_lambda}")
            boxcox_lambda = 0.0
        if boxcox_lambda is not None:
            boxcox_lambda = float(boxcox_lambda)
            if np.any(y <= 0):
                bad = y[y <= 0]
                what = "log transform" if boxcox_lambda == 0.0 else "Box-Cox transform"
                raise DataError(
                    f"y: the {what} needs positive values, but {bad.size} are <= 0 "
                    f"(e.g. {bad[0]!r}); use transform = 'none' or shift the series"
                )
            y = boxcox(y, boxcox_lambda)
        mean, std = _robust_mean_std(y)
        if center_last is not None:
            if center_last < 1:
                raise ValueError(f"center_last must be >= 1, got {center_last}")
            mean = _robust_mean_std(y[-center_last:])[0]
        if not (std > 1e-12 * abs(mean)) or std == 0.0:
            # A constant series: any scale avoids dividing by zero, and a tiny one makes the
            # model's unit-scale noise prior a tiny noise in data units, so the forecast is the
            # constant with a correspondingly small interval.
            std = CONSTANT_SCALE * (abs(mean) if mean != 0.0 else 1.0)
        return cls(lo, time_scale, mean, std, boxcox_lambda, transform_reason)

    # ---- time ------------------------------------------------------------------------------
    def forward_t(self, t: Any) -> np.ndarray:
        """Numeric time -> normalised time (training span -> [0, 1])."""
        return (np.asarray(t, dtype=np.float64) - self.time_offset) / self.time_scale

    def inverse_t(self, u: Any) -> np.ndarray:
        """Normalised time -> numeric time."""
        return np.asarray(u, dtype=np.float64) * self.time_scale + self.time_offset

    # ---- values ----------------------------------------------------------------------------
    def transform_y(self, y: Any) -> np.ndarray:
        """Data values -> transformed units (Box-Cox, before the affine map)."""
        return boxcox(np.asarray(y, dtype=np.float64), self.boxcox_lambda)

    def forward_y(self, y: Any) -> np.ndarray:
        """Data values -> normalised values."""
        return (self.transform_y(y) - self.value_offset) / self.value_scale

    def forward_y_log_jacobian(self, y: Any) -> np.ndarray:
        """``log |d forward_y / dy|`` at each value of ``y`` (the transform's and the
        z-scoring's): a density of the normalised values plus this is a density of ``y``."""
        y = np.asarray(y, dtype=np.float64)
        return boxcox_log_jacobian(y, self.boxcox_lambda) - np.log(self.value_scale)

    def forward_var(self, y: Any, sd: Any) -> np.ndarray:
        """Known standard deviations ``sd`` of the values ``y`` (data units) -> variances in
        normalised units: ``(sd * |d forward_y / dy|)^2``, exact without a transform and the
        delta method's first-order variance under one (log: ``(sd / y)^2 / value_scale^2``)."""
        sd = np.asarray(sd, dtype=np.float64)
        return (sd * np.exp(self.forward_y_log_jacobian(y))) ** 2

    def to_transformed(self, z: Any) -> np.ndarray:
        """Normalised values -> transformed units (the affine map only)."""
        return np.asarray(z, dtype=np.float64) * self.value_scale + self.value_offset

    def inverse_y(self, z: Any) -> np.ndarray:
        """Normalised values -> data values (also right for quantiles; the maps are monotone)."""
        return inv_boxcox(self.to_transformed(z), self.boxcox_lambda)

    def inverse_y_std(self, s: Any) -> np.ndarray:
        """A standard deviation in normalised units -> data units (transformed units when a
        transform is used)."""
        return np.asarray(s, dtype=np.float64) * self.value_scale

    # ---- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["log"] = self.log  # read by older versions
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scaler:
        """Inverse of :meth:`to_dict`; also reads old files that have only ``log``."""
        if "boxcox_lambda" in d:
            lam = None if d["boxcox_lambda"] is None else float(d["boxcox_lambda"])
        else:
            lam = 0.0 if bool(d.get("log", False)) else None
        return cls(
            float(d["time_offset"]),
            float(d["time_scale"]),
            float(d["value_offset"]),
            float(d["value_scale"]),
            lam,
            str(d.get("transform_reason", "")),
        )
