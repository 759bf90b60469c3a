"""Cross-validation in statsforecast's layout: rolling forecast origins over each series.

Windows are statsforecast's: on a series' time stamps (its observations, then the stamps after
them whose values are missing), window ``i`` of ``n_windows`` (``0`` the earliest) forecasts
the ``h`` stamps after the cutoff at position ``L - h - (n_windows - 1 - i) * step_size - 1`` of
its ``L`` stamps, so the last window ends at the last stamp. ``cutoff`` is the last stamp of the
window's training data; the training data are the observations up to and including it.

``refit=True``: every (series, cutoff) is its own fit. All of them run as one panel through
:func:`autogp.parallel.fit_panel` (local process pool or Dask, resumable; each window is
forecast by the worker that fits it, right after the fit), each window's
random key being the one a fit of its series alone would get (the seed and, for a panel, the
series id: :attr:`TimeSeries.key_id`). A window's forecast therefore equals
``AutoGP(seed=...).fit(data truncated at the cutoff).predict(h)``.

``refit=False``: each series is fitted once, on its first window's training data; a later
window conditions that posterior on the observations up to its cutoff. The particles
(structures, parameters, noise) are kept and reweighted by their joint predictive density of
the added observations (to the power of the fit's learning rate), which is Bayes' rule for a
posterior over those particles; forecasts then condition each particle's GP on all the data
up to the cutoff. No SMC round runs after the first fit.

A window with fewer than :data:`autogp.data.MIN_POINTS` observations up to its cutoff raises
a :class:`DataError` naming the series and the cutoff, before anything is fitted.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from autogp.config import Config, engine_settings
from autogp.data import MIN_POINTS, AutoGPDataWarning, DataError, TimeSeries
from autogp.data.lags import is_lagged, lag_sources, look_up, rebuilt_history
from autogp.forecast.columns import MODEL_NAME
from autogp.forecast.prediction import predict_frame
from autogp.inference.posterior import Posterior
from autogp.parallel.panel import fit_panel
from autogp.parallel.work import AfterFit

CV_KEYS = ("unique_id", "ds", "cutoff", "y")


@dataclasses.dataclass(frozen=True)
class Window:
    """One (series, cutoff) of a cross-validation: the training data (a series named
    :attr:`name`, keyed as its series), where to forecast (``h`` steps on the grid when the
    next ``h`` stamps are those steps, else the stamps) and the values there (NaN where
    missing)."""

    unique_id: str
    cutoff: Any
    train: TimeSeries
    horizon: int | pd.Index
    y_test: np.ndarray

    @property
    def name(self) -> str:
        return self.train.unique_id


def _grid_after(series: TimeSeries, start: float) -> np.ndarray:
    """The grid times after ``start`` up to the series' last stamp (:attr:`last_t`)."""
    last = series.last_t
    if last <= start:
        return np.zeros(0)
    steps = int(np.ceil((last - start) / series.axis.step)) + 1
    grid = series.axis.future_numeric(start, steps)
    return grid[grid <= last + 1e-9 * max(1.0, abs(last))]


def stamps_of(series: TimeSeries) -> tuple[np.ndarray, pd.Index, np.ndarray]:
    """The numeric times, stamps and values of a series' rows, as statsforecast counts them.

    On a regular axis, every grid step from the first observation to the last stamp: rows
    whose values were missing (dropped by the reader, or after the last observation,
    :attr:`TimeSeries.end_t`) are rows with a missing value. Otherwise (an irregular axis, or
    observations off the grid) the observations, then the last stamp when its value is
    missing."""
    t, ds, y = series.t, series.ds, series.y
    if series.axis.regular and series.n > 1:
        grid = np.concatenate([t[:1], _grid_after(series, float(t[0]))])
        at = np.clip(np.searchsorted(grid, t), 0, grid.size - 1)
        on_grid = np.isclose(grid[at], t, rtol=0.0, atol=1e-9 * series.axis.step)
        if on_grid.all() and np.unique(at).size == t.size:
            y_grid = np.full(grid.size, np.nan)
            y_grid[at] = y
            grid[at] = t
            stamps = np.asarray(series.axis.to_ds(grid)).astype(np.asarray(ds).dtype)
            stamps[at] = np.asarray(ds)  # the observations' own stamps, exactly
            return grid, pd.Index(stamps), y_grid
    t_more = np.zeros(0) if series.end_t is None else np.array([series.end_t])
    ds_more = series.axis.to_ds(t_more)
    missing = np.full(t_more.size, np.nan)
    return np.concatenate([t, t_more]), ds.append(ds_more), np.concatenate([y, missing])


def stamp_text(stamp: Any) -> str:
    """A time stamp as messages show it: a date alone at midnight, else in full."""
    if isinstance(stamp, pd.Timestamp) and stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    return str(stamp)


def window_name(unique_id: str, cutoff: Any) -> str:
    """The name of a window's fit in the panel (and in resume folders and messages)."""
    return f"{unique_id} @ cutoff {stamp_text(cutoff)}"


def window_covariates(series: TimeSeries, seen: np.ndarray) -> pd.DataFrame | None:
    """The series' covariates on a window's training rows ``seen``, without those constant
    there: a fit of the data truncated at the cutoff leaves them out too (they say nothing the
    level does not, :func:`autogp.forecast.covariates.attach_covariates`)."""
    if series.covariates is None:
        return None
    rows = series.covariates[seen]
    varies = [c for c in rows.columns if np.ptp(rows[c].to_numpy()) > 0] if len(rows) else []
    return rows[varies] if varies else None


def series_windows(
    series: TimeSeries, h: int, n_windows: int, step_size: int, *, panel: bool
) -> list[Window]:
    """The cross-validation windows of one series, earliest first."""
    t_all, ds_all, y_all = stamps_of(series)
    uid = series.unique_id
    out = []
    for i in range(n_windows):
        cut = len(t_all) - h - (n_windows - 1 - i) * step_size - 1
        if cut < 0:
            raise DataError(
                f"series {uid!r}: {len(t_all)} time stamps are too few for {n_windows} windows "
                f"of horizon {h} and step {step_size}; use fewer windows or a smaller step"
            )
        cutoff, cutoff_t = ds_all[cut], float(t_all[cut])
        seen = series.t <= cutoff_t
        n = int(seen.sum())
        if n < MIN_POINTS:
            raise DataError(
                f"series {uid!r}: the window with cutoff {stamp_text(cutoff)} has {n} "
                f"observations up to its cutoff; at least {MIN_POINTS} are needed to fit it "
                "(use fewer windows, a smaller step or horizon)"
            )
        train = TimeSeries(
            series.t[seen], series.y[seen], window_name(uid, cutoff), series.axis, None,
            series.ds[seen], cutoff_t, key_id=uid if panel else None,
            noise_sd=None if series.noise_sd is None else series.noise_sd[seen],
            covariates=window_covariates(series, seen),
        )
        # statsforecast forecasts the next h rows; on a grid without gaps they are the next
        # h steps, forecast exactly as predict(h) of the truncated data does.
        ds_test = ds_all[cut + 1 : cut + 1 + h]
        horizon: int | pd.Index = h if train.future_ds(h).equals(ds_test) else ds_test
        out.append(Window(uid, cutoff, train, horizon, y_all[cut + 1 : cut + 1 + h]))
    return out


def condition_on(fit: Posterior, series: TimeSeries, cutoff_t: float, config: Config
                 ) -> Posterior:
    """``fit`` conditioned on the observations of ``series`` after its training data up to
    ``cutoff_t``: the same particles reweighted by their joint predictive density of those
    observations (to the fit's learning rate), with the training data extended to them."""
    old = fit.series
    new = (series.t > old.t[-1]) & (series.t <= cutoff_t)
    end = cutoff_t if cutoff_t > (series.t[new][-1] if new.any() else old.t[-1]) else None
    if not new.any():
        return dataclasses.replace(fit, series=dataclasses.replace(old, end_t=end))
    t_new, y_new = series.t[new], series.y[new]
    if fit.scaler.transformed and np.any(y_new <= 0):
        raise DataError(
            f"series {series.unique_id!r} was fitted in {fit.scaler.units} units, which need "
            f"positive values; the data up to a later cutoff hold {y_new.min()!r}"
        )
    # The fit's own covariates (a window leaves out those constant on its training data).
    future = series.covariates[new][list(fit.covariates)] if fit.covariates else None
    mean, cov = fit.predictive(t_new, include_noise=True, full_cov=True,
                               covariates=None if future is None else future.to_numpy())
    if series.noise_sd is not None:  # the added observations' known variances
        cov = cov + np.diag(fit.scaler.forward_var(y_new, series.noise_sd[new]))
    resid = fit.scaler.forward_y(y_new)[None, :] - mean
    sign, logdet = np.linalg.slogdet(cov)
    quad = np.einsum("pm,pm->p", resid, np.linalg.solve(cov, resid[..., None])[..., 0])
    log_density = -0.5 * (quad + logdet + t_new.size * np.log(2.0 * np.pi))
    # A particle whose predictive is not a proper Gaussian gets no weight.
    log_density = np.where((sign > 0) & np.isfinite(log_density), log_density, -np.inf)
    eta = engine_settings(config)[1].power_for(old.n)
    prior = np.where(np.isnan(fit.log_weights), -np.inf, fit.log_weights)
    log_weights = prior - logsumexp(prior) + eta * log_density
    log_evidence = float(logsumexp(log_weights))
    if not np.isfinite(log_evidence):
        raise DataError(f"series {series.unique_id!r}: no particle of the first window's fit "
                        f"gives the data up to the cutoff a finite density (refit=False)")
    extended = TimeSeries(
        np.concatenate([old.t, t_new]), np.concatenate([old.y, y_new]), old.unique_id,
        old.axis, None, old.ds.append(series.ds[new]), end, key_id=old.key_id,
        noise_sd=None if old.noise_sd is None or series.noise_sd is None
        else np.concatenate([old.noise_sd, series.noise_sd[new]]),
        covariates=None if future is None else pd.concat([old.covariates, future]),
    )
    return dataclasses.replace(
        fit, series=extended, log_weights=log_weights - log_evidence,
        log_marginal_likelihood=float(fit.log_marginal_likelihood) + log_evidence,
        added=fit.added + int(t_new.size),
    )


def known_covariates(series: TimeSeries, lags: Sequence[int] = (0,)) -> pd.DataFrame | None:
    """The series' own covariates as ``X_df`` (``ds`` and the columns): cross-validation takes
    a window's future covariates from the frame itself. With lagged copies
    (``data.covariate_lags``) it gives the covariates' history that the columns hold."""
    if series.covariates is None:
        return None
    if not is_lagged(lags):
        return series.covariates.assign(ds=series.ds)
    names = list(series.covariates.columns)
    history = rebuilt_history(lag_sources(names, lags), series.covariates.to_numpy(),
                              series.t, series.axis)
    times = np.unique(np.concatenate([t for t, _ in history.values()]))
    frame = pd.DataFrame({base: look_up(t, v, times) for base, (t, v) in history.items()})
    return frame.assign(ds=series.axis.to_ds(times))


def window_forecast(fit: Posterior, config: Config,
                    where: tuple[int | pd.Index, pd.DataFrame | None],
                    level: Sequence[float] | None = None) -> pd.DataFrame:
    """A window's forecast frame from its fit (``where``: the window's horizon and its
    series' own covariates)."""
    horizon, covariates = where
    return predict_frame([fit], config, horizon, level=level, X_df=covariates)


def cross_validation(
    all_series: Sequence[TimeSeries],
    config: Config,
    *,
    h: int,
    n_windows: int = 1,
    step_size: int | None = None,
    refit: bool = True,
    level: Sequence[float] | None = None,
    panel: bool | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
    client: Any = None,
    resume: str | Path | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Rolling-origin forecasts of ``all_series`` (see the module's description).

    ``level``: interval levels in percent (default ``forecast.levels``, as in ``predict``).
    ``panel``: whether the data are a panel (keys derive from the series ids; default: more
    than one series). Returns the frame (``unique_id, ds, cutoff, y, AutoGP,
    AutoGP-lo-<L>..., AutoGP-hi-<L>...``, sorted by ``unique_id, cutoff, ds``) and an error
    message per window of a panel that could not be fitted (left out of the frame, with a
    warning naming it).
    """
    for name, value, least in (("h", h, 1), ("n_windows", n_windows, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"cross_validation: {name} must be an integer >= {least}, "
                             f"got {value!r}")
    step = h if step_size is None else step_size
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
        raise ValueError(f"cross_validation: step_size must be an integer >= 1, got {step!r}")
    if panel is None:
        panel = len(all_series) > 1
    windows = [w for s in all_series
               for w in series_windows(s, int(h), int(n_windows), int(step), panel=panel)]
    by_series = {s.unique_id: s for s in all_series}
    first: dict[str, Window] = {}
    for w in windows:
        first.setdefault(w.unique_id, w)
    fitted = windows if refit else list(first.values())
    known = {s.unique_id: known_covariates(s, config.data.covariate_lags) for s in all_series}
    # A refitted window's forecast is made by the worker that fits it, right after the fit.
    after = AfterFit(functools.partial(window_forecast, level=level),
                     {w.name: (w.horizon, known[w.unique_id]) for w in windows}) if refit else None
    result = fit_panel(config, [w.train for w in fitted], panel=panel, backend=backend,
                       scheduler=scheduler, client=client, resume=resume, progress=progress,
                       after=after, unit="windows" if refit else "series")
    if result.errors and not panel:
        name, message = next(iter(result.errors.items()))
        raise DataError(f"{name}: {message}")
    errors = dict(result.errors)
    parts = []
    for w in windows:
        fit = result.fits.get(w.name)
        if not refit:
            fit = result.fits.get(first[w.unique_id].name)
            if fit is None:
                errors.setdefault(w.name, "its series' first window was not fitted")
                continue
            try:
                fit = condition_on(fit, by_series[w.unique_id], w.train.last_t, config)
            except DataError as exc:
                if not panel:
                    raise
                errors[w.name] = str(exc)
                continue
        if fit is None:
            continue
        done = result.after.get(w.name) if refit else None
        fc = (done.result() if done is not None
              else window_forecast(fit, config, (w.horizon, known[w.unique_id]), level=level))
        fc.insert(2, "cutoff", w.cutoff)
        fc.insert(3, "y", w.y_test)
        fc["unique_id"] = w.unique_id
        parts.append(fc)
    for name, message in errors.items():
        warnings.warn(f"cross-validation window {name!r} was not fitted: {message}",
                      AutoGPDataWarning, stacklevel=3)
    if not parts:
        raise DataError(f"no cross-validation window could be fitted; {next(iter(errors))}: "
                        f"{next(iter(errors.values()))}")
    frame = pd.concat(parts, ignore_index=True)
    frame = frame.sort_values(["unique_id", "cutoff", "ds"], kind="stable")
    return frame.reset_index(drop=True), errors



__all__ = ["CV_KEYS", "MODEL_NAME", "Window", "condition_on", "cross_validation",
           "known_covariates", "series_windows", "stamp_text", "stamps_of", "window_covariates",
           "window_forecast", "window_name"]
