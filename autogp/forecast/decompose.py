"""Decomposition frames: a fitted series split into trend, seasonal, smooth, change-point and
noise components (see :meth:`autogp.AutoGP.decompose`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from autogp.forecast.covariates import as_stamps, covariates_at
from autogp.forecast.explain import (
    COMPONENTS,
    COVARIATE_COMPONENT,
    additive_terms,
    classify_term,
)
from autogp.forecast.prediction import forecast_targets
from autogp.inference.posterior import Posterior
from autogp.kernels import Kernel


def component_terms(expr: Kernel) -> list[tuple[Kernel, str]]:
    """The top-level additive terms of ``expr``, each with its component (:data:`COMPONENTS`)."""
    return [(term, classify_term(term)) for term in additive_terms(expr)]


def decomposition_frame(post: Posterior, t_new: np.ndarray, ds_new: pd.Index,
                        covariates: np.ndarray | None = None) -> pd.DataFrame:
    """Columns ``unique_id``, ``ds``, ``y``, the components, ``fitted`` and ``residual`` of one
    series at ``t_new``, in the fitted (possibly transformed) units (``attrs["units"]``). A fit
    with covariates (their values at ``t_new`` in ``covariates``) has a ``covariates``
    component too, after ``noise``."""
    labels = COMPONENTS + ((COVARIATE_COMPONENT,) if post.covariates else ())
    comps = post.component_means(t_new, component_terms, labels, covariates=covariates)
    s = post.scaler
    df = pd.DataFrame({"unique_id": post.unique_id, "ds": ds_new}, index=range(len(t_new)))
    observed = pd.Series(post.series.y, index=post.series.t)
    y_at = observed.reindex(t_new).to_numpy(dtype=np.float64)
    df["y"] = s.transform_y(y_at)
    fitted = np.zeros(len(t_new))
    for kind in labels:
        values = s.value_scale * comps[kind]
        if kind == "trend":
            values = values + s.value_offset
        df[kind] = values
        fitted = fitted + values
    df["fitted"] = fitted
    df["residual"] = df["y"] - fitted
    df.attrs["units"] = s.units
    return df


def decompose_frame(fits: Sequence[Posterior], ds: Any, horizon: int,
                    X_df: pd.DataFrame | None = None) -> pd.DataFrame:
    """:meth:`autogp.AutoGP.decompose` of ``fits``: at ``ds`` (stamps, or a frame with ``ds``
    and ``unique_id``), by default at the training times and ``horizon`` future steps (only
    the training times for a fit with covariates, unless ``X_df`` gives their future)."""
    parts = []
    for fit in fits:
        if ds is None and fit.covariates and X_df is None:
            t_new, ds_new = fit.series.t, fit.series.ds
        elif ds is None:
            t_new = np.concatenate([fit.series.t, fit.series.future_t(horizon)])
            ds_new = fit.series.ds.append(fit.series.future_ds(horizon))
        elif isinstance(ds, pd.DataFrame):
            t_new, ds_new = forecast_targets(fit.series, None, ds, horizon)
        else:
            t_new, ds_new = as_stamps(fit.series, ds)
        parts.append(decomposition_frame(fit, t_new, ds_new,
                                         covariates_at(fit, t_new, ds_new, X_df)))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


__all__ = ["component_terms", "decompose_frame", "decomposition_frame"]
