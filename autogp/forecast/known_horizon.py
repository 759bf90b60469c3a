"""Forecasts whose horizon is known before the fit, made by a panel's workers.

``autogp fit`` knows its horizon, levels and future covariates before it fits; forecasting
every series in the calling process after the workers have finished would leave that work on
one core (0.2-0.9 s per M3 series with the default settings, ``benchmarks/panel``). A
:class:`ForecastRequest` instead has each worker forecast a series right after fitting it
(:class:`~autogp.parallel.work.AfterFit`) and send the frame back with the fit; the calling
process only puts the frames together. The same function as :meth:`AutoGP.predict` makes
them, and autogp's programs give the same bits in every process (``autogp._xla``). A
series whose forecast failed in its worker is forecast here, where the error is raised as
``predict`` raises it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from autogp.config import Config
from autogp.forecast.model import AutoGP
from autogp.forecast.prediction import predict_frame
from autogp.inference.posterior import Posterior
from autogp.parallel.work import AfterFit, AfterFitResult


@dataclasses.dataclass(frozen=True, eq=False)
class ForecastRequest:
    """The arguments of :meth:`AutoGP.predict` for a forecast decided before the fit (None:
    the config's ``[forecast]`` setting, as in ``predict``); ``X_df`` the covariates' future
    values."""

    horizon: int | None = None
    level: tuple[float, ...] | None = None
    quantiles: tuple[float, ...] | None = None
    include_noise: bool | None = None
    point: str | None = None
    X_df: pd.DataFrame | None = None

    def __call__(self, fit: Posterior, config: Config, rows: pd.DataFrame | None
                 ) -> pd.DataFrame:
        """One series' forecast frame (``rows``: its rows of ``X_df``, when split by id)."""
        return predict_frame([fit], config, self.horizon, level=self.level,
                             quantiles=self.quantiles, include_noise=self.include_noise,
                             point=self.point, X_df=self.X_df if rows is None else rows)

    def after_fit(self) -> AfterFit:
        """The work for :meth:`AutoGP.fit`'s ``after_fit``: each series carries only its own
        rows of a panel's ``X_df`` to its worker."""
        if self.X_df is None or "unique_id" not in self.X_df.columns:
            return AfterFit(self)
        ids = self.X_df["unique_id"].astype(str)
        rows = {str(uid): part for uid, part in self.X_df.groupby(ids, sort=False)}
        return AfterFit(dataclasses.replace(self, X_df=None), rows)

    def predict(self, model: AutoGP, unique_id: str) -> pd.DataFrame:
        """One series' forecast made here (what a worker would have sent)."""
        return model.predict(self.horizon, level=self.level, quantiles=self.quantiles,
                             include_noise=self.include_noise, point=self.point,
                             unique_id=unique_id, X_df=self.X_df)

    def assemble(self, model: AutoGP,
                 done: Mapping[str, AfterFitResult] | None = None) -> pd.DataFrame:
        """The forecast of every fitted series of ``model``, in its order: the frames its
        workers made (``done``, default the model's :attr:`AutoGP.after_fit_results`; their
        warnings raised here) and, for a series without one, a forecast made here. Equal to
        ``model.predict(...)`` with this request's arguments."""
        done = model.after_fit_results if done is None else done
        parts = []
        for uid in model.unique_ids:
            result: Any = done.get(uid)
            parts.append(result.result() if result is not None else self.predict(model, uid))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


__all__ = ["ForecastRequest"]
