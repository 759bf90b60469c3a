"""Online updates: new observations of a fitted series, and the SMC continued on them (see
:meth:`autogp.AutoGP.update`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pandas as pd

from autogp.config import Config, engine_settings
from autogp.data import AutoGPDataWarning, DataError, TimeSeries
from autogp.forecast.prediction import as_stamps
from autogp.inference import smc
from autogp.inference.posterior import Posterior
from autogp.pipeline.fitting import seasonal_periods, series_key


def update_groups(
    data: Any, time_col: str, target_col: str, id_col: str | None, single_id: Callable[[], str],
    noise_col: str | None = None,
) -> dict[str, tuple[Any, Any, np.ndarray | None]]:
    """New ``(stamps, values, known noise sds or None)`` by series id from a frame
    (``id_col``, or ``unique_id`` when present; ``noise_col`` when given) or a ``(t, y)``
    pair; rows without an id go to ``single_id()``."""
    if isinstance(data, pd.DataFrame):
        for col in (time_col, target_col, noise_col):
            if col is not None and col not in data.columns:
                raise DataError(f"update: the new data have no column {col!r}")

        def columns(g: pd.DataFrame) -> tuple[Any, Any, np.ndarray | None]:
            sd = None if noise_col is None else pd.to_numeric(g[noise_col]).to_numpy(float)
            return g[time_col], g[target_col].to_numpy(dtype=np.float64), sd

        id_col = id_col or ("unique_id" if "unique_id" in data.columns else None)
        if id_col is None:
            return {single_id(): columns(data)}
        return {str(uid): columns(g) for uid, g in data.groupby(id_col, sort=False)}
    if isinstance(data, tuple) and len(data) == 2:
        uid = single_id()
        return {uid: (*data, None)}
    raise DataError(f"update expects a DataFrame or a (t, y) pair, got {type(data).__name__}")


def update_posterior(
    fit: Posterior,
    ds: Any,
    y: Any,
    config: Config,
    *,
    panel: bool,
    rounds: int | None = None,
    noise_sd: np.ndarray | None = None,
) -> Posterior | None:
    """``fit`` with the observations ``y`` at stamps ``ds`` added and the SMC continued on them;
    None when no usable row is new. The normalisation of the first fit is kept. ``noise_sd``:
    the new observations' known noise standard deviations, needed when (and only when) the
    fit has them."""
    uid = fit.unique_id
    if fit.covariates:
        raise DataError(
            f"update: series {uid!r} was fitted with covariates {list(fit.covariates)}; online "
            "updates do not take covariates yet: fit again on the extended data")
    t_new, stamps_new = as_stamps(fit.series, ds)
    y_new = np.asarray(y, dtype=np.float64)
    sd_new = checked_noise(fit, stamps_new, y_new, noise_sd)
    ok = np.isfinite(y_new)
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
    x_all = fit.scaler.forward_t(t_all)
    yn_all = fit.scaler.forward_y(y_all)
    sd_all = None if sd_new is None else np.concatenate([old.noise_sd, sd_new])
    known = {} if sd_all is None else {"known_var": fit.scaler.forward_var(y_all, sd_all)}
    key = jax.random.fold_in(series_key(config.seed, uid, panel), fit.updates + 1)
    result = smc.update_smc(
        fit.smc_result(), x_all, yn_all, *engine_settings(config), key=key, num_rounds=rounds,
        seasonal_period=seasonal_periods(old, fit.scaler), **known,
    )
    order = np.argsort(t_all, kind="stable")
    stamps = old.ds.append(stamps_new)[order]
    # The missing stamps after the fitted data stay in the series until new data pass them.
    end_t = old.end_t if old.end_t is not None and old.end_t > t_all.max() else None
    series = TimeSeries(t_all[order], y_all[order], uid, old.axis, None, stamps, end_t,
                        noise_sd=None if sd_all is None else sd_all[order])
    return Posterior.from_smc(series, fit.scaler, result, num_inducing=fit.num_inducing,
                              updates=fit.updates + 1, left_out=fit.left_out,
                              stride=fit.stride, added=fit.added + int(t_new.size))


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


__all__ = ["checked_noise", "update_groups", "update_posterior"]
