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
    data: Any, time_col: str, target_col: str, id_col: str | None, single_id: Callable[[], str]
) -> dict[str, tuple[Any, Any]]:
    """New ``(stamps, values)`` by series id from a frame (``id_col``, or ``unique_id`` when
    present) or a ``(t, y)`` pair; rows without an id go to ``single_id()``."""
    if isinstance(data, pd.DataFrame):
        for col in (time_col, target_col):
            if col not in data.columns:
                raise DataError(f"update: the new data have no column {col!r}")
        id_col = id_col or ("unique_id" if "unique_id" in data.columns else None)
        if id_col is None:
            uid = single_id()
            return {uid: (data[time_col], data[target_col].to_numpy(dtype=np.float64))}
        out = {}
        for uid, g in data.groupby(id_col, sort=False):
            out[str(uid)] = (g[time_col], g[target_col].to_numpy(dtype=np.float64))
        return out
    if isinstance(data, tuple) and len(data) == 2:
        uid = single_id()
        return {uid: data}
    raise DataError(f"update expects a DataFrame or a (t, y) pair, got {type(data).__name__}")


def update_posterior(
    fit: Posterior,
    ds: Any,
    y: Any,
    config: Config,
    *,
    panel: bool,
    rounds: int | None = None,
) -> Posterior | None:
    """``fit`` with the observations ``y`` at stamps ``ds`` added and the SMC continued on them;
    None when no usable row is new. The normalisation of the first fit is kept."""
    uid = fit.unique_id
    if fit.covariates:
        raise DataError(
            f"update: series {uid!r} was fitted with covariates {list(fit.covariates)}; online "
            "updates do not take covariates yet: fit again on the extended data")
    t_new, stamps_new = as_stamps(fit.series, ds)
    y_new = np.asarray(y, dtype=np.float64)
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
    key = jax.random.fold_in(series_key(config.seed, uid, panel), fit.updates + 1)
    result = smc.update_smc(
        fit.smc_result(), x_all, yn_all, *engine_settings(config), key=key, num_rounds=rounds,
        seasonal_period=seasonal_periods(old, fit.scaler),
    )
    order = np.argsort(t_all, kind="stable")
    stamps = old.ds.append(stamps_new)[order]
    # The missing stamps after the fitted data stay in the series until new data pass them.
    end_t = old.end_t if old.end_t is not None and old.end_t > t_all.max() else None
    series = TimeSeries(t_all[order], y_all[order], uid, old.axis, None, stamps, end_t)
    return Posterior.from_smc(series, fit.scaler, result, num_inducing=fit.num_inducing,
                              updates=fit.updates + 1, left_out=fit.left_out,
                              stride=fit.stride, added=fit.added + int(t_new.size))


__all__ = ["update_groups", "update_posterior"]
