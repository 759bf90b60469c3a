"""Variance-stabilising transforms: Box-Cox with lambda from the data (Guerrero's method).

A series whose seasonal swing or noise grows with its level cannot be described by a stationary
GP on the raw scale: the seasonal part of a sum of kernels has one amplitude. The Box-Cox
transform ``z = (y^lam - 1) / lam`` (``log y`` at ``lam = 0``) makes such a swing constant.

``lam`` is chosen by Guerrero's (1993) method, as in R's ``forecast::BoxCox.lambda``: cut the
last ``k * m`` training values into ``k`` blocks of one season ``m`` (2 for series without one),
and pick the ``lam`` in [-1, 2] that minimises the coefficient of variation of
``sd_b / mean_b^(1 - lam)`` over the blocks: the power of the level that the spread follows.
(``scipy.stats.boxcox_normmax`` is a different criterion, the most normal marginal distribution,
which for a trending series measures the trend's shape, not how the spread grows.)

``transform = "auto"`` then decides, for positive series leaning to the log:

* values not all positive, or fewer than three blocks: no transform;
* log when lam is near 0 (the criterion at 0 within ``LOG_RATIO`` of its minimum over [0, 1]),
  or below 0 (negative powers bound the transformed scale and make upper quantiles explode);
* otherwise no transform when lam = 1 explains the spread about as well as the best lam (the
  criterion at 1 within ``NONE_RATIO`` of the minimum): the data say the spread does not grow
  with the level; except for monthly and quarterly series (seasons in ``LOG_SEASONS``) of at
  most ``LOG_RULE_MAX_VALUES`` values, which take the log here too;
* otherwise Box-Cox with the estimated lam in (0, 1).

Why monthly and quarterly series are not left in data units once Guerrero's criterion can be
computed (three seasons or more): a wrong "none" costs more than a wrong "log". Where the level
moves little the log is nearly linear and changes little; where it moves a lot, the log's
intervals widen with the level and its trend compounds, as those of most business and economic
series do. Rolling-origin windows inside the training data confirmed it on short series.

Why only up to ``LOG_RULE_MAX_VALUES`` values: on a longer series the log rule lost to
Guerrero's verdict, so the rule stops a little above the longest windows it was checked on,
where it still covers every M3 monthly series; longer series keep Guerrero's verdict. Other
seasons (weeks, days, hours) keep it too.

Why lean to the log: on short series Guerrero's criterion is flat and its estimate noisy.

How these rules were chosen, with the figures: ``docs/defaults.md`` and
``benchmarks/choose_defaults/README.md``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize_scalar

#: Range of lambda searched by Guerrero's method (as R's forecast package).
LAMBDA_RANGE = (-1.0, 2.0)
#: "log" when the criterion at lam = 0 is within this factor of its minimum over [0, 1].
LOG_RATIO = 1.1
#: Otherwise "none" when the criterion at lam = 1 is within this factor of that minimum.
NONE_RATIO = 1.25
#: Seasons (in steps: quarterly, monthly data) whose positive series take the log where
#: Guerrero's criterion would leave them in data units (see the module docstring).
LOG_SEASONS = frozenset({4, 12})
#: ... but only on series of at most this many values (see the module docstring).
LOG_RULE_MAX_VALUES = 150
#: Smallest value of lam * z + 1 in the inverse (its domain ends at 0 for lam != 0).
_TINY = 1e-12
#: Below this |lam| the transform is the log (the difference, ~lam (log y)^2 / 2, is rounding).
_LOG_LIMIT = 1e-10


def boxcox(y: np.ndarray, lam: float | None) -> np.ndarray:
    """``(y^lam - 1) / lam``, ``log y`` at lam = 0, ``y`` itself when lam is None."""
    y = np.asarray(y, dtype=np.float64)
    if lam is None:
        return y
    if abs(lam) < _LOG_LIMIT:
        return np.log(y)
    return np.expm1(lam * np.log(y)) / lam


def inv_boxcox(z: np.ndarray, lam: float | None) -> np.ndarray:
    """The inverse: ``(lam z + 1)^(1/lam)``, ``exp z`` at lam = 0. Monotone increasing, so it
    maps quantiles to quantiles. Outside the transform's range (``lam z + 1 <= 0``, reachable
    by a Gaussian forecast for lam != 0) ``lam z + 1`` is clipped at a tiny positive value: the
    values then go to 0 (lam > 0) or to a huge number (lam < 0), never NaN."""
    z = np.asarray(z, dtype=np.float64)
    if lam is None:
        return z
    with np.errstate(over="ignore"):
        if abs(lam) < _LOG_LIMIT:
            return np.exp(z)
        return np.exp(np.log1p(np.maximum(lam * z, _TINY - 1.0)) / lam)


def boxcox_log_jacobian(y: np.ndarray, lam: float | None) -> np.ndarray:
    """``log dz/dy = (lam - 1) log y`` (0 without a transform): densities of z -> of y."""
    y = np.asarray(y, dtype=np.float64)
    if lam is None:
        return np.zeros_like(y)
    return (lam - 1.0) * np.log(y)


def _blocks(y: np.ndarray, period: int) -> np.ndarray:
    """The last ``k * period`` values as ``[k, period]`` blocks (R's ``guer.cv``)."""
    k = len(y) // period
    return y[len(y) - k * period :].reshape(k, period)


def guerrero_cv(y: np.ndarray, lam: float, period: int) -> float:
    """Guerrero's criterion: the coefficient of variation over blocks of
    ``sd_b / mean_b^(1 - lam)`` (sample sd with ddof 1, as R)."""
    x = _blocks(np.asarray(y, dtype=np.float64), max(2, int(period)))
    ratio = np.std(x, axis=1, ddof=1) / np.mean(x, axis=1) ** (1.0 - lam)
    mean = float(np.mean(ratio))
    return float(np.std(ratio, ddof=1) / mean) if mean > 0 else float("inf")


def guerrero_lambda(
    y: np.ndarray, period: int, bounds: tuple[float, float] = LAMBDA_RANGE
) -> float:
    """The lam in ``bounds`` minimising :func:`guerrero_cv` (positive ``y``, >= 2 blocks):
    a grid of 61 points, then a bounded Brent search around the best one."""
    grid = np.linspace(bounds[0], bounds[1], 61)
    values = np.array([guerrero_cv(y, lam, period) for lam in grid])
    best = int(np.argmin(values))
    lo = grid[max(best - 1, 0)]
    hi = grid[min(best + 1, len(grid) - 1)]
    res = minimize_scalar(lambda v: guerrero_cv(y, v, period), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-6})
    return float(res.x) if res.fun <= values[best] else float(grid[best])


class TransformChoice(NamedTuple):
    """The chosen transform: ``lam`` (None: no transform, 0: log) and the reason in words."""

    lam: float | None
    reason: str


def choose_transform(
    y: np.ndarray, period: int, mode: str = "auto", lam: float | None = None
) -> TransformChoice:
    """The transform of training values ``y`` under ``mode`` ("auto", "none", "log", "boxcox").

    ``period`` is the season in steps (1 or less when there is none: blocks of 2). For
    "boxcox", ``lam`` fixes lambda; unset, it is Guerrero's estimate. "log" and "boxcox" need
    positive values (a ``ValueError`` names the first bad one); "auto" never transforms a series
    with zeros or negative values.
    """
    y = np.asarray(y, dtype=np.float64)
    if mode == "none":
        return TransformChoice(None, "fitted in data units (transform = 'none')")
    positive = bool(np.all(y > 0))
    if mode in ("log", "boxcox") and not positive:
        bad = y[y <= 0]
        raise ValueError(
            f"y: transform = {mode!r} needs positive values, but {bad.size} are <= 0 "
            f"(e.g. {bad[0]!r}); use transform = 'none' or shift the series"
        )
    if mode == "log":
        return TransformChoice(0.0, "fitted in log units (transform = 'log')")
    block = max(2, int(period))
    if mode == "boxcox":
        if lam is not None:
            return TransformChoice(float(lam), f"fitted in Box-Cox units, lambda = {lam:.3g} "
                                               "(transform = 'boxcox', lambda given)")
        if len(y) // block < 2:
            raise ValueError(f"y: estimating the Box-Cox lambda needs at least two blocks of "
                             f"{block} values, got {len(y)} values; set data.boxcox_lambda")
        est = guerrero_lambda(y, block)
        return TransformChoice(est, f"fitted in Box-Cox units, lambda = {est:.3g} "
                                    "(Guerrero's estimate)")
    if mode != "auto":
        raise ValueError(f"transform must be 'auto', 'none', 'log' or 'boxcox', got {mode!r}")
    if not positive:
        return TransformChoice(None, "fitted in data units: the series has values <= 0")
    if len(y) // block < 3 or np.ptp(y) == 0:
        return TransformChoice(None, "fitted in data units: too few values to tell whether the "
                                     "spread grows with the level")
    est = guerrero_lambda(y, block)
    best = min(max(est, 0.0), 1.0)
    cv_best = guerrero_cv(y, best, block)
    cv_none = guerrero_cv(y, 1.0, block)
    cv_log = guerrero_cv(y, 0.0, block)
    what = "seasonal swing" if period > 1 else "spread"
    if est <= 0.0 or cv_log <= LOG_RATIO * cv_best:
        return TransformChoice(0.0, f"fitted in log units: the {what} grows with the level "
                                    f"(Guerrero lambda = {est:.2f})")
    if cv_none <= NONE_RATIO * cv_best:
        if int(period) in LOG_SEASONS and len(y) <= LOG_RULE_MAX_VALUES:
            return TransformChoice(0.0, f"fitted in log units: the {what} need not grow with "
                                        f"the level (Guerrero lambda = {est:.2f}), but monthly "
                                        f"and quarterly series of up to "
                                        f"{LOG_RULE_MAX_VALUES} positive values are logged "
                                        f"(a rule chosen on rolling-origin windows)")
        return TransformChoice(None, f"fitted in data units: the {what} does not grow with "
                                     f"the level (Guerrero lambda = {est:.2f})")
    return TransformChoice(best, f"fitted in Box-Cox units (lambda = {best:.2f}): the {what} "
                                 f"grows with the level, less than proportionally")




def inverse_mean(mu: np.ndarray, sd: np.ndarray, lam: float | None, nodes: int = 40) -> np.ndarray:
    """``E[inv_boxcox(Z)]`` for ``Z ~ N(mu, sd^2)`` elementwise: the mean in data units of a
    Gaussian forecast in transformed units. Closed form for none (``mu``) and log
    (``exp(mu + sd^2 / 2)``); for other lambdas no closed form exists and the expectation is
    taken by Gauss-Hermite quadrature with ``nodes`` nodes (exact for polynomials of degree up to
    ``2 nodes - 1``, so for lam = 1/k with k < nodes; the transformed range's edge is handled by
    the clipping of :func:`inv_boxcox`)."""
    mu = np.asarray(mu, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    if lam is None:
        return mu + 0.0 * sd
    if lam == 0.0:
        return np.exp(mu + 0.5 * sd**2)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    values = inv_boxcox(mu[..., None] + sd[..., None] * x, lam)
    return values @ w


__all__ = [
    "LAMBDA_RANGE",
    "LOG_RULE_MAX_VALUES",
    "LOG_SEASONS",
    "TransformChoice",
    "boxcox",
    "boxcox_log_jacobian",
    "choose_transform",
    "guerrero_cv",
    "guerrero_lambda",
    "inv_boxcox",
    "inverse_mean",
]
