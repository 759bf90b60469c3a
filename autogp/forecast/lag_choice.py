"""Choosing the covariates' lags (``data.covariate_lags``) on the training data alone, by
rolling-origin cross-validation: each candidate set of lags is cross-validated on the given
rows (:meth:`autogp.AutoGP.cross_validation`: every window's cutoff lies inside them, so
held-out data never choose) and the set with the lowest mean MASE over the windows wins. A
tie goes to the earlier candidate: list the simpler sets first.

Example::

    choice = choose_covariate_lags(train, h=6, n_windows=2)   # train: ds, y, tv_advert
    model = AutoGP(overrides={"data.covariate_lags": list(choice.lags)}).fit(train)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from autogp.forecast.metrics import mase, seasonality
from autogp.forecast.model import AutoGP
from autogp.forecast.reading import read_panel

#: The covariates at the same time; and this and last period's; and up to three back.
DEFAULT_CANDIDATES: tuple[tuple[int, ...], ...] = ((0,), (0, 1), (0, 1, 2, 3))


@dataclass(frozen=True)
class LagChoice:
    """The chosen lags, and each candidate's mean cross-validated MASE (in candidate order)."""

    lags: tuple[int, ...]
    scores: dict[tuple[int, ...], float]


def cv_mase(cv: pd.DataFrame, y_train: dict[str, np.ndarray], season: dict[str, int]) -> float:
    """The mean over windows (series and cutoffs) of a cross-validation frame's MASE, each
    series scaled by the seasonal naive of its training values ``y_train``."""
    scores = [mase(g["y"].to_numpy(), g["AutoGP"].to_numpy(), y_train[str(uid)],
                   season[str(uid)])
              for (uid, _), g in cv.groupby(["unique_id", "cutoff"], sort=True)]
    return float(np.mean(scores))


def choose_covariate_lags(
    df: Any,
    candidates: Sequence[Sequence[int]] = DEFAULT_CANDIDATES,
    *,
    h: int,
    n_windows: int = 2,
    step_size: int | None = None,
    season: int | None = None,
    **model_kwargs: Any,
) -> LagChoice:
    """The candidate lags with the lowest mean MASE in rolling-origin cross-validation on
    ``df`` (the training data: ``ds``, ``y``, the covariates and, for panels, ``unique_id``).

    ``h``, ``n_windows``, ``step_size``: the windows, as in
    :meth:`autogp.AutoGP.cross_validation`. ``season``: the seasonal-naive period that scales
    MASE (default: the series' usual one, 12 for monthly data). ``model_kwargs``: for
    :class:`autogp.AutoGP` (``config``, ``seed``, ``particles``, ``overrides`` ...); each
    candidate is fitted with ``data.covariate_lags`` set to it, everything else equal."""
    if not candidates:
        raise ValueError("choose_covariate_lags: give at least one candidate set of lags")
    overrides = dict(model_kwargs.pop("overrides", None) or {})
    base = AutoGP(overrides={**overrides, "data.covariate_lags": [0]}, **model_kwargs)
    series, _ = read_panel(df, base.config)
    y_train = {s.unique_id: s.y for s in series}
    periods = {s.unique_id: season or seasonality(s.axis) for s in series}
    scores: dict[tuple[int, ...], float] = {}
    for lags in candidates:
        key = tuple(int(k) for k in lags)
        model = AutoGP(overrides={**overrides, "data.covariate_lags": list(key)},
                       **model_kwargs)
        cv = model.cross_validation(df, h=h, n_windows=n_windows, step_size=step_size)
        scores[key] = cv_mase(cv, y_train, periods)
    best = min(scores, key=lambda k: (scores[k], list(scores).index(k)))
    return LagChoice(best, scores)


__all__ = ["DEFAULT_CANDIDATES", "LagChoice", "choose_covariate_lags", "cv_mase"]
