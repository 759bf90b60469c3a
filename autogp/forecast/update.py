"""Online updates: new observations of a fitted series, and the SMC continued on them (see
:meth:`autogp.AutoGP.update`). New rows of a fit with covariates carry their covariates'
values (:func:`row_covariates`); the standardisation of the first fit is kept, as its
normalisation of time and values is."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
import pandas as pd

from autogp.config import Config
from autogp.data import AutoGPDataWarning, DataError, TimeSeries
from autogp.forecast.crossval import stamp_text
from autogp.forecast.prediction import as_stamps
from autogp.inference import smc
from autogp.inference.posterior import Posterior
from autogp.pipeline.fitting import covariate_engine, seasonal_periods, series_key


class NewRows(NamedTuple):
    """One series' rows of new or revised data: stamps, values, known noise sds (or None) and
    the rows themselves (None for a ``(t, y)`` pair), where their covariates are read."""

    ds: Any
    y: np.ndarray
    noise_sd: np.ndarray | None
    frame: pd.DataFrame | None


def update_groups(
    data: Any, time_col: str, target_col: str, id_col: str | None, single_id: Callable[[], str],
    noise_col: str | None = None,
) -> dict[str, NewRows]:
    """New rows by series id from a frame (``id_col``, or ``unique_id`` when present;
    ``noise_col`` when given) or a ``(t, y)`` pair; rows without an id go to
    ``single_id()``."""
    if isinstance(data, pd.DataFrame):
        for col in (time_col, target_col, noise_col):
            if col is not None and col not in data.columns:
                raise DataError(f"update: the new data have no column {col!r}")

        def columns(g: pd.DataFrame) -> NewRows:
            sd = None if noise_col is None else pd.to_numeric(g[noise_col]).to_numpy(float)
            return NewRows(g[time_col], g[target_col].to_numpy(dtype=np.float64), sd, g)

        id_col = id_col or ("unique_id" if "unique_id" in data.columns else None)
        if id_col is None:
            return {single_id(): columns(data)}
        return {str(uid): columns(g) for uid, g in data.groupby(id_col, sort=False)}
    if isinstance(data, tuple) and len(data) == 2:
        uid = single_id()
        return {uid: NewRows(data[0], np.asarray(data[1], dtype=np.float64), None, None)}
    raise DataError(f"update expects a DataFrame or a (t, y) pair, got {type(data).__name__}")


def row_covariates(fit: Posterior, frame: pd.DataFrame | None, stamps: pd.Index, what: str,
                   used: np.ndarray | None = None) -> np.ndarray | None:
    """``[M, C]`` values (data units) of the fit's covariates on the new or revised rows
    ``frame`` (stamps ``stamps``), in row order; None for a fit without covariates. A missing
    column, or a value that is not a finite number on a row that is ``used``, is an error
    naming the column (and the row's stamp)."""
    names = list(fit.covariates)
    if not names:
        return None
    if fit.covariate_scaling.lagged:
        lags = list(fit.covariate_scaling.lags)
        raise NotImplementedError(
            f"{what}: series {fit.unique_id!r} was fitted with lagged covariates "
            f"(data.covariate_lags = {lags}), whose columns on new or revised rows depend on "
            f"earlier rows; {what} does not rebuild them: fit the whole data again")
    missing = names if frame is None else [n for n in names if n not in frame.columns]
    if missing:
        given = "a (t, y) pair has none" if frame is None else "the new data have no column"
        raise DataError(
            f"{what}: series {fit.unique_id!r} was fitted with covariates {names}, so its new "
            f"and revised rows need their values; covariate {missing[0]!r} is missing ({given}"
            f"{'' if frame is None else ' ' + repr(missing[0])})", column=missing[0])
    used = np.ones(len(frame), bool) if used is None else np.asarray(used, bool)
    out = np.empty((len(frame), len(names)))
    for c, name in enumerate(names):
        raw = frame[name]
        values = (raw.astype(np.float64) if pd.api.types.is_bool_dtype(raw)
                  else pd.to_numeric(raw, errors="coerce")).to_numpy(np.float64)
        bad = np.flatnonzero(used & ~np.isfinite(values))
        if bad.size:
            i = int(bad[0])
            raise DataError(f"{what}: series {fit.unique_id!r}, covariate {name!r} at "
                            f"{stamp_text(stamps[i])} is not a finite number "
                            f"({raw.iloc[i]!r})", column=name, value=raw.iloc[i])
        out[:, c] = values
    return out


def update_posterior(
    fit: Posterior,
    ds: Any,
    y: Any,
    config: Config,
    *,
    panel: bool,
    rounds: int | None = None,
    noise_sd: np.ndarray | None = None,
    frame: pd.DataFrame | None = None,
) -> Posterior | None:
    """``fit`` with the observations ``y`` at stamps ``ds`` added and the SMC continued on them;
    None when no usable row is new. The normalisation of the first fit is kept. ``noise_sd``:
    the new observations' known noise standard deviations, needed when (and only when) the
    fit has them. ``frame``: the new rows, with a column per covariate of the fit."""
    uid = fit.unique_id
    t_new, stamps_new = as_stamps(fit.series, ds)
    y_new = np.asarray(y, dtype=np.float64)
    sd_new = checked_noise(fit, stamps_new, y_new, noise_sd)
    ok = np.isfinite(y_new)
    cov_new = row_covariates(fit, frame, stamps_new, "update", ok)
    if not ok.all():
        if config.data.strict:
            raise DataError(f"update: series {uid!r} has missing or non-finite values")
        warnings.warn(
            f"update: dropped {int((~ok).sum())} rows with missing or non-finite values "
            f"of series {uid!r}",
            AutoGPDataWarning,
            stacklevel=4,  # the caller of AutoGP.update
        )
        t_new, stamps_new, y_new = t_new[ok], stamps_new[ok], y_new[ok]
        sd_new = None if sd_new is None else sd_new[ok]
        cov_new = None if cov_new is None else cov_new[ok]
    if t_new.size == 0:
        return None
    if np.unique(t_new).size != t_new.size or np.isin(t_new, fit.series.t).any():
        raise DataError(
            f"update: series {uid!r}: new time stamps repeat each other or fitted ones"
        )
    if fit.scaler.transformed and np.any(y_new <= 0):
        raise DataError(
            f"update: series {uid!r} was fitted in {fit.scaler.units} units, which need "
            f"positive values; got {y_new[y_new <= 0][0]!r}"
        )
    old = fit.series
    t_all = np.concatenate([old.t, t_new])
    y_all = np.concatenate([old.y, y_new])
    cov_all = None if cov_new is None else np.concatenate([old.covariates.to_numpy(), cov_new])
    x_all = fit.inputs(t_all, cov_all)
    yn_all = fit.scaler.forward_y(y_all)
    sd_all = None if sd_new is None else np.concatenate([old.noise_sd, sd_new])
    known = {} if sd_all is None else {"known_var": fit.scaler.forward_var(y_all, sd_all)}
    key = jax.random.fold_in(series_key(config.seed, uid, panel), fit.updates + 1)
    result = smc.update_smc(
        fit.smc_result(), x_all, yn_all,
        *covariate_engine(config, fit.covariate_scaling, fit.ge_weight_to, fit.series,
                         fit.series.n - fit.added),
        key=key, num_rounds=rounds,
        seasonal_period=seasonal_periods(old, fit.scaler), **known,
    )
    order = np.argsort(t_all, kind="stable")
    stamps = old.ds.append(stamps_new)[order]
    # The missing stamps after the fitted data stay in the series until new data pass them.
    end_t = old.end_t if old.end_t is not None and old.end_t > t_all.max() else None
    covariates = None if cov_all is None else pd.DataFrame(cov_all[order],
                                                           columns=list(fit.covariates))
    series = TimeSeries(t_all[order], y_all[order], uid, old.axis, None, stamps, end_t,
                        noise_sd=None if sd_all is None else sd_all[order], covariates=covariates)
    return Posterior.from_smc(series, fit.scaler, result, num_inducing=fit.num_inducing,
                              updates=fit.updates + 1, left_out=fit.left_out,
                              stride=fit.stride, added=fit.added + int(t_new.size),
                              covariate_scaling=fit.covariate_scaling,
                              ge_weight_to=fit.ge_weight_to, prior=fit.prior)


def checked_noise(fit: Posterior, stamps: pd.Index, y: np.ndarray, sd: np.ndarray | None
                  ) -> np.ndarray | None:
    """The new rows' known noise sds, checked: given exactly when the fit has them, and finite
    and >= 0 on every row with a value (an error names the first other row's stamp)."""
    uid = fit.unique_id
    if (sd is None) != (fit.series.noise_sd is None):
        has = "was fitted with" if sd is None else "was fitted without"
        raise DataError(f"update: series {uid!r} {has} known observation noise; the new data "
                        f"must {'' if sd is None else 'not '}carry it too (noise_col)")
    if sd is None:
        return None
    sd = np.asarray(sd, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(np.isfinite(y) & ~(np.isfinite(sd) & (sd >= 0)))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"update: series {uid!r}, row at {stamps[i]}: the known noise "
                        f"standard deviation is {sd[i]:g}; it must be a finite number >= 0")
    return sd


__all__ = ["NewRows", "checked_noise", "row_covariates", "update_groups", "update_posterior"]
