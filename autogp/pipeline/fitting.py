"""Fitting one series under a config: its random key, its normalisation, its candidate periods,
its likelihood, and the SMC run that turns them into a :class:`Posterior`.

Time and values are normalised per series (:class:`autogp.data.Scaler`: time onto [0, 1] over the
training span, values z-scored, after a log or Box-Cox transform when the data call for one)
before the SMC engine (:func:`autogp.inference.smc.run_smc`) sees them. A series longer than
``data.window`` points is fitted on its most recent ``window`` points.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np

from autogp.config import Config, engine_settings
from autogp.data import DataError, Scaler, TimeSeries
from autogp.data.covariates import CovariateScaling
from autogp.data.lags import prior_shares
from autogp.data.seasons import candidate_periods, mase_season
from autogp.data.transform import choose_transform
from autogp.evaluator.sparse import inducing_points_for
from autogp.inference import smc
from autogp.inference.grammar import with_covariates
from autogp.inference.posterior import Posterior
from autogp.kernels import Kernel, pack, parse
from autogp.kernels.spec import MAX_COVARIATES
from autogp.pipeline.full_resolution import full_resolution_stage, ge_weight_to
from autogp.pipeline.series_prior import prior_label, series_engine


def series_key(seed: int, unique_id: str, panel: bool) -> jax.Array:
    """The random key of a series: from the seed and, in a panel, the series' id (never its
    position, so a fit does not depend on the other series)."""
    key = jax.random.key(seed)
    if panel:  # a series' key depends on its name, not on its position in the panel
        key = jax.random.fold_in(key, zlib.crc32(unique_id.encode("utf-8")) & 0x7FFFFFFF)
    return key


def num_inducing(config: Config, n: int) -> int:
    """0 where a series of ``n`` points gets the exact likelihood, else its inducing points."""
    settings = config.smc
    return inducing_points_for(n, settings.likelihood, settings.inducing_points,
                               settings.sparse_above)


#: A thinned window keeps at least this many observations per cycle of the shortest season.
MIN_POINTS_PER_CYCLE = 8


def window_stride(series: TimeSeries, config: Config) -> int:
    """Every how many observations the fitting window keeps one (1: every one).

    ``data.window`` recent points can be less than one cycle of a calendar season: 300
    half-hours are 6 days, less than a week. With ``data.window_seasons = k`` the window then
    reaches back k cycles of the longest season (two weeks at k = 2) and keeps every
    ``stride``-th point of that span, so the fit sees the weekly pattern at the cost of
    ``window`` points. The stride is capped so that the shortest season keeps
    ``MIN_POINTS_PER_CYCLE`` points a cycle (a day of half-hours: 16 at stride 3), which never
    thins daily, weekly, monthly or trading-day data (their shortest season is under 16
    steps), only hourly and finer series. The default, k = 3 (three weeks of half-hours,
    every 4th), was chosen on rolling origins inside the training data of the three sub-daily
    series of ``benchmarks/scaling/`` (README there), against k = 0 (off) and 2."""
    window, cycles = config.data.window, config.data.window_seasons
    periods = candidate_periods(series.axis)
    if not window or not cycles or series.n <= window or not periods:
        return 1
    cap = int(min(periods) // (MIN_POINTS_PER_CYCLE * series.axis.step))
    span = cycles * max(periods)
    recent = series.t[-window:]
    if cap < 2 or recent[-1] - recent[0] >= span:
        return 1
    needed = int(np.count_nonzero(series.t > series.t[-1] - span))
    return max(1, min(cap, -(-needed // window)))


class FittingWindow(NamedTuple):
    """The part of a series a fit sees: ``series``, the ``left_out`` training points it does
    not hold, and the ``stride`` it kept one point in (1: every point)."""

    series: TimeSeries
    left_out: int
    stride: int


def fitting_window(series: TimeSeries, config: Config) -> FittingWindow:
    """The part of ``series`` a fit sees: its most recent ``data.window`` points (all of them
    when the window is 0 or the series is shorter), thinned to every ``window_stride``-th point
    of a longer span where the recent points do not cover the calendar seasons. Forecasts
    condition on the recent past; the older points cost n^3 (n m^2 with the sparse bound) and
    on the long series of ``benchmarks/scaling/`` made forecasts worse, not better."""
    window = config.data.window
    if not window:
        return FittingWindow(series, 0, 1)
    stride = window_stride(series, config)
    seen = series.last(window * stride).every(stride)
    return FittingWindow(seen, series.n - seen.n, stride)


def series_scaler(series: TimeSeries, config: Config, stride: int = 1) -> Scaler:
    """The normalisation of one series under ``config.data`` (transform, centring). The
    transform is chosen from the training values alone (``data.transform``). ``stride``: the
    series keeps every stride-th observation of its axis (a thinned window), so its last
    season is ``season / stride`` of its points."""
    season = mase_season(series.axis)
    center_last = None
    if config.data.center == "recent":
        center_last = (-(-season // stride) if season > 1
                       else max(1, int(math.ceil(0.1 * series.n))))
        center_last = min(center_last, series.n)
    try:
        # "evidence" fits both scales of a positive series (fit_series_posterior); a series
        # that reaches here under it is not positive or constant, where auto's rule applies.
        mode = config.data.effective_transform
        choice = choose_transform(series.y, season, "auto" if mode == "evidence" else mode,
                                  config.data.boxcox_lambda)
    except ValueError as exc:
        raise DataError(f"series {series.unique_id!r}: {exc}") from None
    return Scaler.fit(series.t, series.y, boxcox_lambda=choice.lam,
                      transform_reason=choice.reason, center_last=center_last)


def seasonal_periods(series: TimeSeries, scaler: Scaler) -> list[float] | None:
    """The calendar seasons of the series' axis (12 months; 24 and 168 hours; ...) in
    normalised time, as candidates for the period proposal; None when the axis has none."""
    periods = candidate_periods(series.axis)
    if not periods:
        return None
    return [float(p / scaler.time_scale) for p in periods]


def data_log_evidence(posterior: Posterior, config: Config) -> float:
    """The fit's log evidence in data units: the SMC's estimate of log p(z) for the normalised
    values z, plus the log Jacobian of the normalisation and transform over the fitted points
    (times the series' learning rate eta: a power posterior's evidence is of p(y | theta)^eta).
    Fits of one series on different scales are compared by it."""
    y = posterior.series.y
    eta = engine_settings(config)[1].power_for(y.size)
    jacobian = float(np.sum(posterior.scaler.forward_y_log_jacobian(y)))
    return float(posterior.log_marginal_likelihood) + eta * jacobian


#: The scales ``data.transform = "evidence"`` fits a positive series on.
EVIDENCE_TRANSFORMS = ("none", "log")


def evidence_transforms(series: TimeSeries, config: Config) -> tuple[str, ...]:
    """The transforms a fit of ``series`` (its fitting window) compares: both of
    :data:`EVIDENCE_TRANSFORMS` under ``data.transform = "evidence"`` when its values are
    positive and not constant, else none (a single fit under the resolved transform)."""
    if config.data.effective_transform != "evidence":
        return ()
    y = np.asarray(series.y)
    if not (np.all(y > 0) and np.ptp(y) > 0):
        return ()
    return EVIDENCE_TRANSFORMS


def choose_by_evidence(fits: dict[str, Posterior], config: Config) -> Posterior:
    """The fit with the highest :func:`data_log_evidence` (ties: the first), its scaler's
    reason naming the comparison (for ``explain()``)."""
    scores = {name: data_log_evidence(fit, config) for name, fit in fits.items()}
    finite = {k: v for k, v in scores.items() if np.isfinite(v)}
    best = max(finite, key=finite.get) if finite else next(iter(fits))

    def units(name: str) -> str:
        return f"{fits[name].scaler.units} units"

    others = ", ".join(f"{units(name)}: {scores[name]:.1f}" for name in fits if name != best)
    reason = (f"fitted in {units(best)}: its log evidence in data units, with the transform's "
              f"Jacobian, is {scores[best]:.1f} nats (fitted in {others}; "
              "transform = 'evidence')")
    chosen = fits[best]
    return dataclasses.replace(
        chosen, scaler=dataclasses.replace(chosen.scaler, transform_reason=reason))


def _part_of(callback: Callable[[int, int], None] | None, k: int, parts: int):
    """A progress callback for the k-th of ``parts`` fits of one series: one bar for all."""
    if callback is None:
        return None
    return lambda done, total: callback(k * total + done, parts * total)


def known_noise(series: TimeSeries, scaler: Scaler, config: Config) -> dict[str, np.ndarray]:
    """``{"known_var": ...}``: the series' known observation variances in normalised units
    (:meth:`Scaler.forward_var`), or ``{}`` when it has none (the engine's calls then stay as
    without them)."""
    if series.noise_sd is None:
        return {}
    return {"known_var": scaler.forward_var(series.y, series.noise_sd)}


def fit_series_posterior(
    series: TimeSeries,
    config: Config,
    *,
    panel: bool,
    callback: Callable[[int, int], None] | None = None,
) -> Posterior:
    """Run the SMC on one series under ``config`` and return its particle posterior, after
    the full-resolution stage where it applies (``autogp.pipeline.full_resolution``: a series
    longer than the window, by default).

    The key comes from ``config.seed`` and, in a panel, the series id (never its position), so
    the result does not depend on which other series are fitted, in what order or where.
    Where the stage will re-fit, the search gives GE's prior weight to an atom with a
    state-space form (:func:`~autogp.pipeline.full_resolution.ge_weight_to`).
    Under ``data.transform = "evidence"`` a positive series is fitted on each scale of
    :data:`EVIDENCE_TRANSFORMS` with the same key, and the fit with the higher evidence in data
    units is kept (:func:`choose_by_evidence`).
    """
    atom = ge_weight_to(series, config, fitting_window(series, config).left_out)
    window = _window_posterior(series, config, panel=panel, callback=callback, ge_to=atom)
    return full_resolution_stage(window, series, config)


def _window_posterior(series: TimeSeries, config: Config, *, panel: bool,
                      callback: Callable[[int, int], None] | None, ge_to: str) -> Posterior:
    candidates = evidence_transforms(fitting_window(series, config).series, config)
    if candidates:
        fits = {mode: _window_posterior(
                    series, config.with_overrides({"data.transform": mode}), panel=panel,
                    callback=_part_of(callback, k, len(candidates)), ge_to=ge_to)
                for k, mode in enumerate(candidates)}
        return choose_by_evidence(fits, config)
    key = series_key(config.seed, series.key_id or series.unique_id, panel)
    series, left_out, stride = fitting_window(series, config)
    scaler = series_scaler(series, config, stride)
    scaling = covariate_scaling(series, config)
    grammar, settings = covariate_engine(config, scaling, ge_to, series)
    y = scaler.forward_y(series.y)
    if scaling is None:
        x = scaler.forward_t(series.t)
    else:
        x = np.column_stack([scaler.forward_t(series.t),
                             scaling.forward(series.covariates.to_numpy())])
    result = smc.run_smc(x, y, grammar, settings, key=key, callback=callback,
                         seasonal_period=seasonal_periods(series, scaler),
                         **known_noise(series, scaler, config))
    return Posterior.from_smc(series, scaler, result, left_out=left_out,
                              num_inducing=num_inducing(config, series.n), stride=stride,
                              covariate_scaling=scaling, ge_weight_to=ge_to,
                              prior=prior_label(config, series))


def covariate_engine(config: Config, scaling: CovariateScaling | None, ge_to: str = "",
                     series: TimeSeries | None = None, points: int | None = None):
    """The grammar and SMC settings of a fit of ``series`` (its fitted window; ``points`` of
    its observations where given: :func:`~autogp.pipeline.series_prior.series_engine`) with
    the covariates of ``scaling`` (their atoms in the grammar, each covariate's lagged copies
    sharing its prior weight: :func:`autogp.data.lags.prior_shares`; None: without any), and
    with GE's prior weight given to the atom ``ge_to`` where that is set
    (``Posterior.ge_weight_to``)."""
    grammar, settings = series_engine(config, series, ge_to, points)
    if scaling is not None:
        grammar = with_covariates(grammar, len(scaling.names), config.grammar.covariate_weight,
                                  prior_shares(scaling.column_sources()))
    return grammar, settings


def covariate_scaling(series: TimeSeries, config: Config) -> CovariateScaling | None:
    """The standardisation of the series' covariates (None without any); DataError where the
    exact likelihood, which covariates need, is not used or there are too many."""
    if series.covariates is None or series.covariates.shape[1] == 0:
        return None
    names = list(series.covariates.columns)
    if len(names) > MAX_COVARIATES:
        raise DataError(f"series {series.unique_id!r} has {len(names)} covariates {names}; at "
                        f"most {MAX_COVARIATES} are supported")
    if num_inducing(config, series.n) > 0:
        raise DataError(
            f"series {series.unique_id!r}: covariates {names} need the exact likelihood, but "
            f"its {series.n} points get the sparse one (smc.sparse_above="
            f"{config.smc.sparse_above}); fit a shorter window (data.window) or set "
            "smc.likelihood = 'exact'")
    return CovariateScaling.fit(series.covariates, config.data.covariate_lags)


__all__ = [
    "EVIDENCE_TRANSFORMS",
    "FittingWindow",
    "choose_by_evidence",
    "covariate_engine",
    "covariate_scaling",
    "data_log_evidence",
    "evidence_transforms",
    "fit_series_posterior",
    "fitting_window",
    "window_stride",
    "num_inducing",
    "seasonal_periods",
    "series_key",
    "series_scaler",
]


def posterior_from_kernels(
    series: TimeSeries,
    config: Config,
    kernels: Sequence[Kernel | str],
    *,
    weights: Sequence[float] | None = None,
    noise: float | Sequence[float] = 0.01,
) -> Posterior:
    """Given particles (kernels in normalised units, with noise variances and weights) on the
    series' fitting window, in place of an SMC fit."""
    series, left_out, stride = fitting_window(series, config)
    scaling = covariate_scaling(series, config)  # covariates: extra numeric columns
    names = () if scaling is None else scaling.names
    exprs = [k if isinstance(k, Kernel) else parse(k, names) for k in kernels]
    ops, params = pack(exprs, max_depth=config.grammar.max_depth)
    P = len(exprs)
    noise_arr = np.broadcast_to(np.asarray(noise, dtype=np.float64), (P,))
    if np.any(noise_arr <= 0):
        raise ValueError("noise variances must be positive")
    w = np.ones(P) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (P,) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {P} non-negative numbers with a positive sum")
    with np.errstate(divide="ignore"):
        lw = np.log(w / w.sum())
    return Posterior(
        series=series,
        scaler=series_scaler(series, config, stride),
        ops=ops,
        params=params,
        noise=np.log(noise_arr).copy(),
        log_weights=lw,
        history={"count": [[series.n]]},
        num_inducing=num_inducing(config, series.n),
        left_out=left_out,
        stride=stride,
        covariate_scaling=scaling,
    )
