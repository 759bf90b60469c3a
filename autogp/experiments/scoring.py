"""Scoring a panel of forecasts against held-out truth (M3/M4 benchmark conventions).

Forecast frames use statsforecast's layout: ``unique_id``, ``ds``, the truth ``y``, and per model
``{model}`` (the point forecast), ``{model}-lo-{L}`` and ``{model}-hi-{L}`` (the central ``L``%
interval), with ``L`` written as ``f"{L:g}"`` (``95``, ``97.5``).

* :func:`scaled_crps` is the M4/Nixtla-style quantile approximation of the CRPS: twice the pinball
  loss averaged over the available quantile levels and the held-out points, divided by the mean
  absolute held-out value. Levels 50/80/90/95 give the taus 0.025, 0.05, 0.1, 0.25, 0.5, 0.75,
  0.9, 0.95, 0.975; the point forecast stands in for the 0.5 quantile.
* :func:`mixture_crps` is the exact CRPS of a Gaussian mixture (Grimit et al., 2006).
* :func:`score_forecasts` gives sMAPE, MASE, scaled CRPS, interval coverage and relative interval
  width per series and model; :func:`summary_table` averages them per model.

Only numpy, scipy and pandas are used here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr
from scipy.stats import norm

from autogp.forecast.columns import interval_columns, level_label
from autogp.forecast.metrics import mase, smape

# Rows of the pairwise term handled at once in mixture_crps (bounds the P x P x M temporary).
_PAIRWISE_BLOCK_ELEMENTS = 4_000_000


# ---- level and quantile bookkeeping ----------------------------------------------------------
def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 100.0:
        raise ValueError(f"interval levels must lie strictly between 0 and 100, got {level:g}")
    return level


def _interval_taus(level: float) -> tuple[float, float]:
    """The (lower, upper) quantile levels bounding the central ``level``% interval."""
    level = _check_level(level)
    half = level / 200.0
    return round(0.5 - half, 12), round(0.5 + half, 12)


def level_taus(levels: Sequence[float]) -> list[float]:
    """Sorted quantile levels implied by central intervals at ``levels`` plus the median.

    ``level_taus([50, 80, 90, 95])`` is ``[0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975]``.
    """
    taus = {0.5}
    for level in levels:
        taus.update(_interval_taus(level))
    return sorted(taus)


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    for col in columns:
        if col not in frame.columns:
            raise ValueError(f"{what} has no column {col!r} (columns: {list(frame.columns)})")


def quantiles_from_frame(
    fc: pd.DataFrame, model: str, levels: Sequence[float]
) -> dict[float, np.ndarray]:
    """Quantile forecasts ``{tau: values}`` read from ``model``'s statsforecast-layout columns.

    The point forecast column ``{model}`` is taken as the 0.5 quantile; ``{model}-lo-{L}`` and
    ``{model}-hi-{L}`` give the quantiles ``(1 - L/100) / 2`` and ``(1 + L/100) / 2``.
    """
    _require_columns(fc, [model], "the forecast frame")
    quantiles = {0.5: fc[model].to_numpy(dtype=np.float64)}
    for level in levels:
        lo_tau, hi_tau = _interval_taus(level)
        lo_col, hi_col = interval_columns(model, level)
        _require_columns(fc, [lo_col, hi_col], "the forecast frame")
        quantiles[lo_tau] = fc[lo_col].to_numpy(dtype=np.float64)
        quantiles[hi_tau] = fc[hi_col].to_numpy(dtype=np.float64)
    return dict(sorted(quantiles.items()))


# ---- quantile scores -------------------------------------------------------------------------
def pinball_loss(y: np.ndarray, q: np.ndarray, tau: float) -> np.ndarray:
    """Elementwise pinball (quantile) loss of quantile forecast ``q`` at level ``tau``.

    ``tau * (y - q)`` where ``y >= q``, else ``(1 - tau) * (q - y)``.
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must lie in [0, 1], got {tau}")
    diff = np.asarray(y, dtype=np.float64) - np.asarray(q, dtype=np.float64)
    return np.maximum(tau * diff, (tau - 1.0) * diff)


def scaled_crps(y: np.ndarray, quantiles: Mapping[float, np.ndarray]) -> float:
    """M4/Nixtla-style scaled CRPS from quantile forecasts.

    The mean, over the taus in ``quantiles`` and over the points, of ``2 * pinball_loss``, divided
    by ``mean(|y|)``. NaN when ``mean(|y|)`` is 0 or there are no points.
    """
    y = np.asarray(y, dtype=np.float64)
    if not quantiles:
        raise ValueError("scaled_crps needs at least one quantile forecast")
    if y.size == 0:
        return float("nan")
    losses = [np.mean(pinball_loss(y, q, tau)) for tau, q in quantiles.items()]
    scale = np.mean(np.abs(y))
    if not scale > 0:
        return float("nan")
    return float(2.0 * np.mean(losses) / scale)


# ---- exact CRPS of a Gaussian mixture --------------------------------------------------------
def _crps_kernel(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``A(m, v) = E|X|`` for ``X ~ N(m, v)``.

    ``A(m, v) = 2 sqrt(v) phi(m / sqrt(v)) + m (2 Phi(m / sqrt(v)) - 1)``, and ``A(m, 0) = |m|``
    (a point mass).
    """
    sd = np.sqrt(v)
    positive = sd > 0
    z = np.divide(m, sd, out=np.zeros_like(m), where=positive)
    gaussian = 2.0 * sd * norm.pdf(z) + m * (2.0 * ndtr(z) - 1.0)
    return np.where(positive, gaussian, np.abs(m))


def mixture_crps(
    weights: np.ndarray, means: np.ndarray, sds: np.ndarray, y: np.ndarray
) -> np.ndarray:
    """Exact CRPS of the Gaussian mixture ``sum_p w_p N(means[p], sds[p]^2)`` at each point.

    Grimit et al. (2006): ``sum_i w_i A(y - mu_i, s_i^2)
    - 1/2 sum_ij w_i w_j A(mu_i - mu_j, s_i^2 + s_j^2)`` with ``A`` the mean absolute value of a
    normal variable. Standard deviations of 0 are point masses.

    Args:
        weights: ``[P]`` non-negative component weights (normalised here to sum to 1).
        means: ``[P, M]`` component means at the M points.
        sds: ``[P, M]`` component standard deviations (>= 0).
        y: ``[M]`` observed values.

    Returns:
        ``[M]`` CRPS values (in the units of ``y``).
    """
    w = np.asarray(weights, dtype=np.float64)
    mu = np.asarray(means, dtype=np.float64)
    sd = np.asarray(sds, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if w.ndim != 1 or mu.ndim != 2 or mu.shape != sd.shape or mu.shape != (w.size, y.size):
        raise ValueError(
            "mixture_crps expects weights [P], means [P, M], sds [P, M] and y [M]; got shapes "
            f"{w.shape}, {mu.shape}, {sd.shape} and {y.shape}"
        )
    if not (np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0):
        raise ValueError("mixture weights must be finite, non-negative and not all zero")
    if not np.all(np.isfinite(sd) & (sd >= 0)):
        raise ValueError("mixture standard deviations must be finite and non-negative")
    w = w / w.sum()
    var = sd * sd

    spread_to_truth = np.einsum("p,pm->m", w, _crps_kernel(y[None, :] - mu, var))

    spread_within = np.zeros_like(y)
    block = max(1, _PAIRWISE_BLOCK_ELEMENTS // max(1, w.size * y.size))
    for start in range(0, w.size, block):
        rows = slice(start, start + block)
        pair = _crps_kernel(mu[rows, None, :] - mu[None, :, :], var[rows, None, :] + var[None])
        spread_within += np.einsum("i,j,ijm->m", w[rows], w, pair)

    return spread_to_truth - 0.5 * spread_within


# ---- panel scores ----------------------------------------------------------------------------
def _time_order(uid: object, ds: pd.Series) -> pd.Series:
    """Sort keys for one series' time stamps: numbers as numbers, dates as dates.

    A panel read back from CSV that mixes dated series with numbered ones (trading days) has
    every stamp as text, and text sorts ``"10"`` before ``"9"``; each series is parsed on its
    own axis first.
    """
    if pd.api.types.is_numeric_dtype(ds) or pd.api.types.is_datetime64_any_dtype(ds):
        return ds
    try:
        return pd.to_numeric(ds)
    except (TypeError, ValueError):
        pass
    try:
        return pd.to_datetime(ds, format="mixed")
    except (TypeError, ValueError):
        raise ValueError(
            f"the training frame: series {uid!r} has time stamps that are neither numbers nor "
            f"dates, e.g. {ds.iloc[0]!r}"
        ) from None


def training_values(train: pd.DataFrame) -> dict[object, np.ndarray]:
    """Training values per series, in time order (each series sorted on its own parsed time
    axis: a panel may mix series with dates and series with numeric time stamps)."""
    _require_columns(train, ["unique_id", "ds", "y"], "the training frame")
    values = {}
    for uid, g in train.groupby("unique_id", sort=True):
        order = np.argsort(_time_order(uid, g["ds"]).to_numpy(), kind="stable")
        values[uid] = g["y"].to_numpy(dtype=np.float64)[order]
    return values


def _score_one(
    y: np.ndarray,
    series: pd.DataFrame,
    model: str,
    levels: Sequence[float],
    y_train: np.ndarray,
    season_length: int,
) -> dict[str, float]:
    """All scores of one model on one series."""
    point = series[model].to_numpy(dtype=np.float64)
    scale = np.mean(np.abs(y))
    row = {
        "smape": smape(y, point),
        "mase": mase(y, point, y_train, season_length),
        "scaled_crps": scaled_crps(y, quantiles_from_frame(series, model, levels)),
    }
    for level in levels:
        lo_col, hi_col = interval_columns(model, level)
        lo = series[lo_col].to_numpy(dtype=np.float64)
        hi = series[hi_col].to_numpy(dtype=np.float64)
        label = level_label(level)
        row[f"coverage_{label}"] = float(np.mean((lo <= y) & (y <= hi)))
        row[f"width_{label}"] = float(np.mean(hi - lo) / scale) if scale > 0 else float("nan")
    return row


def _crps_in_log_units(cdf, t_lo, t_y, t_hi, grid_points: int) -> np.ndarray:
    """The CRPS integral of a positive variable with CDF ``cdf(t)`` at ``x = e^t``, taken in
    ``t = log x`` by the trapezoid rule on grids from ``min(t_lo, t_y)`` to ``t_y`` (``F^2``) and
    from ``t_y`` to ``max(t_hi, t_y)`` (``(1 - F)^2``); ``cdf`` maps ``[K, M]`` to ``[K, M]``."""
    u = np.linspace(0.0, 1.0, grid_points // 2 + 1)[:, None]
    start = np.minimum(t_lo, t_y)
    below = start[None, :] + (t_y - start)[None, :] * u
    end = np.maximum(t_hi, t_y)
    above = t_y[None, :] + (end - t_y)[None, :] * u
    return np.trapezoid(cdf(below) ** 2 * np.exp(below), below, axis=0) + np.trapezoid(
        (1.0 - cdf(above)) ** 2 * np.exp(above), above, axis=0
    )


def lognormal_mixture_crps(
    weights: np.ndarray,
    log_means: np.ndarray,
    log_sds: np.ndarray,
    y: np.ndarray,
    *,
    grid_points: int = 4001,
) -> np.ndarray:
    """CRPS of the log-normal mixture ``sum_p w_p LogNormal(log_means[p], log_sds[p]^2)`` at each
    point: the integral of ``(F(x) - 1{x >= y})^2``. This is the forecast of a model fitted in
    log units; the Gaussian closed form does not apply.

    The integral is taken in ``t = log x`` (``dx = e^t dt``) by the trapezoid rule, on grids
    below and above ``log y`` that span every component's 5.3-sd range and, above, the upper
    tail where ``(1 - F)^2 e^t`` peaks for a wide component (near ``sd / 2`` sds above its
    mean). A grid linear in ``x`` would be too coarse near ``y`` once the spread in log units
    is wide (a log sd of 3 spans eight decades). ``y <= 0`` lies below the support: its CRPS
    is ``-y`` plus the integral of ``(1 - F)^2`` over ``x > 0``.

    Shapes as :func:`mixture_crps` (``log_means``/``log_sds`` in log units). Returns ``[M]``.
    """
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    mu = np.asarray(log_means, dtype=np.float64)
    sd = np.maximum(np.asarray(log_sds, dtype=np.float64), 1e-12)
    y = np.asarray(y, dtype=np.float64)
    t_lo = np.min(mu - 5.3 * sd, axis=0)
    # e^t overflows past 709; a forecast that reaches there has an astronomically large CRPS.
    t_hi = np.minimum(np.max(mu + (5.3 + sd) * sd, axis=0), 700.0)
    positive = y > 0
    t_y = np.where(positive, np.log(np.where(positive, y, 1.0)), t_lo)

    def cdf(t):
        phi = ndtr((t[:, None, :] - mu[None]) / sd[None])
        return np.einsum("p,gpm->gm", w, phi)

    crps = _crps_in_log_units(cdf, t_lo, t_y, t_hi, grid_points)
    # y <= 0: the integrand is 1 on [y, 0) and (1 - F)^2 ~ 1 on (0, e^t_lo), left of the grid.
    return np.where(positive, crps, crps - y + np.exp(t_lo))


def boxcox_mixture_crps(
    weights: np.ndarray,
    means: np.ndarray,
    sds: np.ndarray,
    y: np.ndarray,
    lam: float,
    *,
    grid_points: int = 4001,
) -> np.ndarray:
    """CRPS of ``X = inv_boxcox(Z)``, ``Z ~ sum_p w_p N(means[p], sds[p]^2)`` (a model fitted in
    Box-Cox units with lambda ``lam``) at each point ``y``: the integral of
    ``(F(x) - 1{x >= y})^2`` with ``F(x) = sum_p w_p Phi((boxcox(x, lam) - means[p]) / sds[p])``.

    ``lam = 0`` is :func:`lognormal_mixture_crps`. Otherwise the integral is taken the same way,
    in ``t = log x`` by the trapezoid rule on grids below and above ``log y``; the grids span the
    back-transformed 5.3-sd range of every component (8 sds above, for the upper tail), starting
    no lower than ``log y - 14`` (below ``1e-6 y``, F is taken as constant: its part is at most
    ``1e-6 y``).
    ``y <= 0`` lies below the support: ``-y`` is added for the stretch ``[y, 0)``.
    """
    if lam == 0.0:
        return lognormal_mixture_crps(weights, means, sds, y, grid_points=grid_points)
    from autogp.data.transform import boxcox, inv_boxcox

    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    mu = np.asarray(means, dtype=np.float64)
    sd = np.maximum(np.asarray(sds, dtype=np.float64), 1e-12)
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(divide="ignore"):
        t_lo = np.log(np.min(inv_boxcox(mu - 5.3 * sd, lam), axis=0))
        t_hi = np.minimum(np.log(np.max(inv_boxcox(mu + 8.0 * sd, lam), axis=0)), 700.0)
    positive = y > 0
    t_y = np.where(positive, np.log(np.where(positive, y, 1.0)), np.maximum(t_lo, t_hi - 14.0))
    t_lo = np.maximum(t_lo, np.minimum(t_y, t_hi) - 14.0)

    def cdf(t):
        z = boxcox(np.exp(t), lam)
        phi = ndtr((z[:, None, :] - mu[None]) / sd[None])
        return np.einsum("p,gpm->gm", w, phi)

    crps = _crps_in_log_units(cdf, t_lo, t_y, t_hi, grid_points)
    # Left of the grid, (0, e^start): F is at most F(e^start) and, there, nearly the mass that
    # the clipped inverse puts at 0; count it as constant.
    start = np.minimum(t_lo, t_y)
    crps = crps + np.exp(start) * np.where(positive, cdf(start[None, :])[0] ** 2, 0.0)
    # y <= 0: the integrand is 1 on [y, 0) and (1 - F)^2 ~ 1 on (0, e^t_lo), left of the grid.
    return np.where(positive, crps, crps - y + np.exp(start))


def score_forecasts(
    fc: pd.DataFrame,
    train: pd.DataFrame,
    models: Sequence[str],
    levels: Sequence[float],
    season_length: int | Mapping[object, int] = 12,
) -> pd.DataFrame:
    """Scores per series and model.

    Args:
        fc: held-out rows: ``unique_id``, ``ds``, the truth ``y`` and each model's
            statsforecast-layout columns (``{model}``, ``{model}-lo-{L}``, ``{model}-hi-{L}``).
        train: training rows ``unique_id``, ``ds``, ``y`` (for the MASE scale).
        models: model names to score.
        levels: interval levels (percent) to score.
        season_length: seasonal lag of the MASE scale (lag 1 when a series is too short), or
            one per series id (a mapping; ids not in it use 1).

    Returns:
        One row per (unique_id, model) with ``smape`` (M3: 200 * mean |y-f| / (|y|+|f|)),
        ``mase``, ``scaled_crps``, and per level ``coverage_{L}`` (share of points inside the
        interval, ends included) and ``width_{L}`` (mean interval width / mean |y|).
    """
    _require_columns(fc, ["unique_id", "ds", "y"], "the forecast frame")
    levels = [_check_level(level) for level in levels]
    for model in models:
        _require_columns(fc, [model], "the forecast frame")
        for level in levels:
            _require_columns(fc, interval_columns(model, level), "the forecast frame")
    train_values = training_values(train)
    missing = [uid for uid in pd.unique(fc["unique_id"]) if uid not in train_values]
    if missing:
        raise ValueError(
            f"{len(missing)} series of the forecast frame have no training rows, e.g. {missing[:5]}"
        )
    rows = []
    for uid, series in fc.groupby("unique_id", sort=False):
        y = series["y"].to_numpy(dtype=np.float64)
        for model in models:
            m = season_length.get(uid, 1) if isinstance(season_length, Mapping) else season_length
            scores = _score_one(y, series, model, levels, train_values[uid], m)
            rows.append({"unique_id": uid, "model": model, **scores})
    return pd.DataFrame(rows)


def horizon_errors(fc: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Mean sMAPE per forecast step (1..H, by row order within each series), one column a model.

    The index is ``horizon``; a point's sMAPE is ``200 |y - f| / (|y| + |f|)`` (0 when both are 0).
    """
    _require_columns(fc, ["unique_id", "y"], "the forecast frame")
    _require_columns(fc, list(models), "the forecast frame")
    y = fc["y"].to_numpy(dtype=np.float64)
    step = fc.groupby("unique_id", sort=False).cumcount().to_numpy() + 1
    per_point = {}
    for model in models:
        f = fc[model].to_numpy(dtype=np.float64)
        denom = np.abs(y) + np.abs(f)
        per_point[model] = 200.0 * np.divide(
            np.abs(y - f), denom, out=np.zeros_like(denom), where=denom > 0
        )
    table = pd.DataFrame(per_point).groupby(pd.Index(step, name="horizon")).mean()
    return table


def horizon_coverage(fc: pd.DataFrame, models: Sequence[str], level: float) -> pd.DataFrame:
    """Share of held-out points inside each model's ``level``% interval, per forecast step.

    Same layout as :func:`horizon_errors` (index ``horizon``, one column a model); the interval
    is closed, as in :func:`score_forecasts`.
    """
    columns = {m: interval_columns(m, level) for m in models}
    _require_columns(fc, ["unique_id", "y", *sum(columns.values(), ())], "the forecast frame")
    y = fc["y"].to_numpy(dtype=np.float64)
    step = fc.groupby("unique_id", sort=False).cumcount().to_numpy() + 1
    inside = {
        m: (fc[lo].to_numpy(dtype=np.float64) <= y) & (y <= fc[hi].to_numpy(dtype=np.float64))
        for m, (lo, hi) in columns.items()
    }
    return pd.DataFrame(inside, dtype=np.float64).groupby(pd.Index(step, name="horizon")).mean()


def summary_table(scores: pd.DataFrame, levels: Sequence[float]) -> pd.DataFrame:
    """Per-model means of the scores (index ``model``, in order of first appearance).

    Columns: ``smape``, ``mase``, ``scaled_crps``, then ``coverage_{L}`` and ``width_{L}`` per
    level. NaN entries (e.g. MASE of a series with a constant training history) are skipped.
    """
    columns = ["smape", "mase", "scaled_crps"]
    labels = [level_label(level) for level in levels]
    columns += [f"coverage_{label}" for label in labels] + [f"width_{label}" for label in labels]
    _require_columns(scores, ["model", *columns], "the scores frame")
    return scores.groupby("model", sort=False)[columns].mean()


def _markdown_cell(value: object, float_format: str) -> str:
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else format(float(value), float_format)
    return str(value).replace("|", "\\|")


def to_markdown_table(df: pd.DataFrame, float_format: str = ".3f") -> str:
    """A GitHub-flavoured Markdown table of ``df``, index as the first column."""
    index_name = df.index.name if df.index.name is not None else ""
    header = [str(index_name), *map(str, df.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * len(df.columns)) + "|",
    ]
    for index, row in df.iterrows():
        cells = [_markdown_cell(index, float_format)]
        cells += [_markdown_cell(value, float_format) for value in row.to_numpy()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "horizon_coverage",
    "horizon_errors",
    "interval_columns",
    "level_label",
    "level_taus",
    "mixture_crps",
    "pinball_loss",
    "quantiles_from_frame",
    "scaled_crps",
    "score_forecasts",
    "summary_table",
    "to_markdown_table",
    "training_values",
]
