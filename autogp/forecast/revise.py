"""Revised data: observations of a fitted series removed or their values replaced, and the SMC
continued on the revised data (see :meth:`autogp.AutoGP.remove_data` and
:meth:`autogp.AutoGP.replace_data`).

The particles are reweighted by their likelihood ratio between the revised and the fitted data
(Bayes' rule from one posterior to the other), resampled when their effective sample size is
low and rejuvenated on the revised data (:func:`autogp.inference.smc.revise_smc`). The
normalisation of the first fit is kept, as by :meth:`~autogp.AutoGP.update`. Removed stamps
count as missing values: forecasts still start after the series' last time stamp. Revised rows
of a fit with covariates carry their covariates' values, which replace the fitted ones.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pandas as pd

from autogp._x64 import with_x64
from autogp.config import Config
from autogp.data import DataError, TimeSeries
from autogp.forecast.crossval import stamp_text
from autogp.forecast.prediction import as_stamps
from autogp.forecast.update import row_covariates, update_groups
from autogp.inference import smc
from autogp.inference.posterior import Posterior
from autogp.pipeline.fitting import covariate_engine, seasonal_periods, series_key

# Folded into a series' key after its update count: a revision and an update never share a key.
REVISION_STREAM = 0x5EB


def fitted_rows(fit: Posterior, ds: Any, what: str) -> np.ndarray:
    """The positions in ``fit``'s training data of the stamps ``ds``; a :class:`DataError`
    names the stamps that are not there (or that repeat)."""
    series = fit.series
    t, stamps = as_stamps(series, ds)
    at = np.clip(np.searchsorted(series.t, t), 0, max(series.n - 1, 0))
    tol = 1e-9 * max(1.0, series.axis.step if series.axis.regular else 1.0)
    found = np.abs(series.t[at] - t) <= tol if series.n else np.zeros(t.size, bool)
    if not found.all():
        missing = ", ".join(stamp_text(s) for s in stamps[~found][:5])
        more = f" and {int((~found).sum()) - 5} more" if (~found).sum() > 5 else ""
        raise DataError(
            f"{what}: series {fit.unique_id!r} has no fitted observation at {missing}{more} "
            f"(its fitted data run from {stamp_text(series.ds[0])} to "
            f"{stamp_text(series.ds[-1])}; points outside a fitting window are not held)"
        )
    if np.unique(at).size != at.size:
        raise DataError(f"{what}: series {fit.unique_id!r}: the stamps repeat each other")
    return at


def revise_posterior(fit: Posterior, keep: np.ndarray, y: np.ndarray, config: Config, *,
                     panel: bool, rounds: int = 1,
                     covariates: np.ndarray | None = None) -> Posterior:
    """``fit`` moved to the data ``y`` (data units) at the training stamps where ``keep``;
    ``covariates``: the covariates' ``[n, C]`` values at every training stamp (default: the
    fitted ones)."""
    old = fit.series
    if covariates is None and old.covariates is not None:
        covariates = old.covariates.to_numpy()
    if int(keep.sum()) < 2:
        raise DataError(f"series {fit.unique_id!r}: the revised data would hold "
                        f"{int(keep.sum())} observations; at least 2 are needed")
    if fit.scaler.transformed and np.any(y[keep] <= 0):
        raise DataError(
            f"series {fit.unique_id!r} was fitted in {fit.scaler.units} units, which need "
            f"positive values; got {float(y[keep][y[keep] <= 0][0])}"
        )
    stamps = None if old.stamps is None else old.stamps[keep]
    # Removed stamps are missing values: forecasts still start after the last stamp.
    end_t = old.last_t if old.last_t > old.t[keep][-1] else None
    sd = None if old.noise_sd is None else old.noise_sd[keep]
    kept = None if covariates is None else pd.DataFrame(np.asarray(covariates)[keep],
                                                        columns=list(fit.covariates))
    series = TimeSeries(old.t[keep], y[keep], old.unique_id, old.axis, None, stamps, end_t,
                        key_id=old.key_id, noise_sd=sd, covariates=kept)
    known = {} if sd is None else {
        "known_old": fit.scaler.forward_var(old.y, old.noise_sd),
        "known_new": fit.scaler.forward_var(series.y, sd)}
    key = jax.random.fold_in(series_key(config.seed, old.key_id or old.unique_id, panel),
                             fit.updates + 1)
    try:
        result = smc.revise_smc(
            fit.smc_result(), fit.x, fit.y,
            fit.inputs(series.t, None if kept is None else kept.to_numpy()),
            fit.scaler.forward_y(series.y),
            *covariate_engine(config, fit.covariate_scaling, fit.ge_weight_to, fit.series,
                         fit.series.n - fit.added),
            key=jax.random.fold_in(key, REVISION_STREAM), num_rounds=rounds,
            seasonal_period=seasonal_periods(old, fit.scaler), **known,
        )
    except FloatingPointError as exc:
        raise DataError(f"series {fit.unique_id!r}: {exc}") from None
    removed = int((~keep).sum())
    return Posterior.from_smc(series, fit.scaler, result, num_inducing=fit.num_inducing,
                              updates=fit.updates + 1, left_out=fit.left_out, stride=fit.stride,
                              added=max(0, fit.added - removed),
                              covariate_scaling=fit.covariate_scaling,
                              ge_weight_to=fit.ge_weight_to, prior=fit.prior)


def remove_posterior(fit: Posterior, ds: Any, config: Config, *, panel: bool,
                     rounds: int = 1) -> Posterior:
    """``fit`` without its observations at the stamps ``ds``."""
    keep = np.ones(fit.series.n, bool)
    keep[fitted_rows(fit, ds, "remove_data")] = False
    return revise_posterior(fit, keep, np.asarray(fit.series.y), config, panel=panel,
                            rounds=rounds)


def replace_posterior(fit: Posterior, ds: Any, y: Any, config: Config, *, panel: bool,
                      rounds: int = 1, frame: pd.DataFrame | None = None) -> Posterior:
    """``fit`` with the values ``y`` in place of its observations at the stamps ``ds``;
    ``frame``: those rows, with a column per covariate of the fit (their revised values)."""
    values = np.asarray(y, dtype=np.float64).reshape(-1)
    rows = fitted_rows(fit, ds, "replace_data")
    revised = row_covariates(fit, frame, fit.series.ds[rows], "replace_data")
    if values.size != rows.size:
        raise DataError(f"replace_data: series {fit.unique_id!r}: {rows.size} stamps and "
                        f"{values.size} values")
    bad = ~np.isfinite(values)
    if bad.any():
        raise DataError(f"replace_data: series {fit.unique_id!r}: the value at "
                        f"{stamp_text(fit.series.ds[rows[bad][0]])} is {float(values[bad][0])}; "
                        "use remove_data to drop an observation")
    y_all = np.array(fit.series.y, dtype=np.float64)
    y_all[rows] = values
    covariates = None
    if revised is not None:
        covariates = fit.series.covariates.to_numpy(dtype=np.float64, copy=True)
        covariates[rows] = revised
    return revise_posterior(fit, np.ones(fit.series.n, bool), y_all, config, panel=panel,
                            rounds=rounds, covariates=covariates)


class RevisedData:
    """:meth:`remove_data` and :meth:`replace_data` of :class:`autogp.AutoGP` (which holds
    ``config``, ``_fits`` and ``_fit_of``)."""

    @with_x64
    def remove_data(self, ds: Any, *, unique_id: str | None = None, rounds: int = 1) -> Any:
        """Remove the observations at the time stamps ``ds`` of a fitted series (``unique_id``:
        which series of a panel) and continue the SMC on the remaining data: the particles are
        reweighted by their likelihood ratio remaining / fitted data, resampled when their
        effective sample size is low and rejuvenated for ``rounds`` rounds (0: reweighted
        only). A stamp that is not a fitted observation is an error naming it. The model is
        changed in place and returned, as by :meth:`update`; the same seed gives the same
        result."""
        fit = self._fit_of(unique_id)
        self._fits[fit.unique_id] = remove_posterior(fit, ds, self.config, rounds=rounds,
                                                     panel=len(self._fits) > 1)
        return self

    @with_x64
    def replace_data(self, df: Any, *, time_col: str | None = None,
                     target_col: str | None = None, id_col: str | None = None,
                     rounds: int = 1) -> Any:
        """Revised values of fitted observations: ``df`` holds ``ds``, ``y`` (and
        ``unique_id`` for panels, and the covariates' columns for a fit with covariates: their
        revised values), or is a ``(t, y)`` pair for one series without covariates. The SMC
        continues on the revised data as in :meth:`remove_data`; a stamp that is not a fitted
        observation, or a missing covariate, is an error naming it, and then no series is
        changed."""
        d = self.config.data
        groups = update_groups(df, time_col or d.time_col, target_col or d.target_col, id_col,
                               lambda: self._fit_of(None).unique_id)
        revised = {uid: replace_posterior(self._fit_of(uid), rows.ds, rows.y, self.config,
                                          rounds=rounds, panel=len(self._fits) > 1,
                                          frame=rows.frame)
                   for uid, rows in groups.items()}
        self._fits.update(revised)
        return self


__all__ = ["RevisedData", "fitted_rows", "remove_posterior", "replace_posterior",
           "revise_posterior"]
