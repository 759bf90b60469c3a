"""autogp as a statsforecast model: ``StatsForecast(models=[AutoGP(season_length=12), AutoETS(
season_length=12)], freq="MS")`` fits, forecasts and cross-validates both in one call.

Needs statsforecast (``pip install "autogp[bench]"``); ``import autogp`` does not import this
module. The page ``docs/statsforecast.md`` shows it in use.
"""

from __future__ import annotations

try:
    import statsforecast  # noqa: F401 - the library this module plugs autogp into
except ImportError:
    raise ImportError('autogp.integrations.statsforecast needs statsforecast: pip install '
                      '"autogp[bench]"') from None

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autogp.config import Config
from autogp.forecast.model import AutoGP as Estimator
from autogp.integrations import arrays
from autogp.integrations.forksafe import call

Level = Sequence[float] | None


class AutoGP:
    """autogp's Gaussian-process structure search as a statsforecast model.

    statsforecast gives a model one series' values and no time stamps, so this model fits them
    on integer steps. For a series ``y`` of ``n`` values (covariates ``X``, ``n`` rows, and
    their future ``X_future``, ``h`` rows), statsforecast's ``forecast`` of this model is, with
    the same ``seed`` and settings, exactly::

        train = pd.DataFrame({"ds": np.arange(1, n + 1), "y": y,
                              "x1": X[:, 0], ...,            # covariates, if any
                              "freq": "MS"})                 # if a calendar is named
        fit = autogp.AutoGP(model.config).fit(train)         # model.config: see below
        fit.predict(h, level=level, X_df=pd.DataFrame({"ds": np.arange(n + 1, n + h + 1),
                                                       "x1": X_future[:, 0], ...}))

    (:mod:`autogp.integrations.arrays` builds those frames.) ``model.config`` is the config
    the arguments below give, with the training frame's column names set (``data.time_col =
    "ds"``, ``data.target_col = "y"``, no id, split or noise column) and ``data.freq_col =
    "freq"`` when a calendar is named: that key names the calendar of a numeric time axis, so
    a monthly series numbered 1, 2, ... gets the seasons of monthly data (a 12-month period
    among the period proposal's candidates, the last 12 months as the recent level, MASE's
    season 12), as dates would give it. A series' fit depends only on its own values and the
    seed, never on the other series, ``n_jobs`` or the order.

    ``predict(h, X, level)`` after ``fit(y, X)`` gives the same numbers as ``forecast``.
    ``fitted=True`` (``predict_in_sample``) gives autogp's posterior predictive at the training
    steps themselves, given all of the training data: a smoothed fit with its intervals, not
    one-step-ahead forecasts as exponential smoothing's fitted values are. ``forward`` (used by
    ``cross_validation(refit=False)`` or an integer ``refit``) conditions the fitted particles
    on the later observations without a new search, as ``autogp.AutoGP.cross_validation(
    refit=False)`` does; its ``y`` must continue the fitted series.

    statsforecast's ``n_jobs > 1`` forks worker processes; JAX cannot run in a fork of a process
    whose JAX runtime is running, so in such a worker each fit runs in a fresh helper process
    of the worker (:mod:`autogp.integrations.forksafe`), with the same results.

    Args:
        season_length: observations per season, as statsforecast's models take it; names the
            calendar whose seasonal lag it is (12: ``"MS"``, 4: ``"QS"``, 52: ``"W"``, 7:
            ``"D"``, 5: ``"B"``, 24: ``"h"``, 48: ``"30min"``; 1 or unset: none).
        freq: the calendar itself, a pandas alias (what one step is; overrides the mapping of
            ``season_length``, which must then agree with it).
        config, seed, particles, rounds, max_depth, log_transform, overrides: as
            :class:`autogp.AutoGP` takes them (e.g. ``config="configs/quick.toml"``,
            ``overrides={"forecast.point": "median"}``).
        covariates: names for the columns of ``X`` (default ``x1``, ``x2``, ...): they name
            the covariates in the fitted models' ``kernels()`` and ``explain()``.
        alias: the model's name in statsforecast's columns (``AutoGP``, ``AutoGP-lo-95``, ...).
        progress: autogp's progress bar and notes (default off).
    """

    uses_exog = True

    def __init__(
        self,
        season_length: int | None = None,
        *,
        freq: str | None = None,
        config: Config | str | Path | Mapping[str, Any] | None = None,
        seed: int | None = None,
        particles: int | None = None,
        rounds: int | None = None,
        max_depth: int | None = None,
        log_transform: bool | None = None,
        overrides: Mapping[str, Any] | None = None,
        covariates: Sequence[str] | None = None,
        alias: str = "AutoGP",
        progress: bool = False,
    ) -> None:
        self.season_length = season_length
        self.freq = arrays.calendar(season_length, freq)
        self.covariates = None if covariates is None else [str(c) for c in covariates]
        if self.covariates is not None:
            arrays.covariate_names(self.covariates, len(self.covariates))
        self.alias = alias
        self.progress = progress
        self.prediction_intervals = None  # statsforecast's conformal intervals: not supported
        layout = {"data.time_col": "ds", "data.target_col": "y", "data.id_col": None,
                  "data.split_col": None, "data.noise_col": None,
                  "data.freq_col": arrays.FREQ_COLUMN if self.freq else None}
        self.config: Config = Estimator(
            config, seed=seed, particles=particles, rounds=rounds, max_depth=max_depth,
            log_transform=log_transform, overrides={**(overrides or {}), **layout},
        ).config

    # -- statsforecast's model protocol -------------------------------------------------------
    def new(self) -> AutoGP:
        """An unfitted copy (statsforecast fits one per series)."""
        b = type(self).__new__(type(self))
        b.__dict__.update(self.__dict__)
        return b

    def __repr__(self) -> str:
        return self.alias

    def _train(self, y: Any, X: Any) -> Any:
        if self.prediction_intervals is not None:
            raise ValueError(
                "AutoGP's intervals come from its posterior; statsforecast's conformal "
                "prediction_intervals are not supported for it (pass level= alone)")
        return arrays.training_frame(y, X, self.covariates, self.freq)

    def fit(self, y: np.ndarray, X: np.ndarray | None = None) -> AutoGP:
        """Fit one series (``X``: its covariates, one column each); returns ``self``."""
        self.train_ = self._train(y, X)
        self.model_ = call(arrays.fit, self.config, self.train_, self.progress)
        return self

    def _fitted(self) -> Any:
        if not hasattr(self, "model_"):
            raise RuntimeError("AutoGP (statsforecast) is not fitted yet: call fit(y) first")
        return self.model_

    def predict(self, h: int, X: np.ndarray | None = None,
                level: Level = None) -> dict[str, np.ndarray]:
        """Forecast ``h`` steps after the fitted series (``X``: the covariates' future values);
        ``mean`` and, for each ``level``, ``lo-<level>`` and ``hi-<level>``."""
        return call(arrays.predict, self._fitted(), self.train_, h, X, level)

    def predict_in_sample(self, level: Level = None) -> dict[str, np.ndarray]:
        """The posterior predictive at the training steps: ``fitted`` and, for each ``level``,
        ``fitted-lo-<level>`` and ``fitted-hi-<level>``."""
        return call(arrays.in_sample, self._fitted(), self.train_, level)

    def forecast(self, y: np.ndarray, h: int, X: np.ndarray | None = None,
                 X_future: np.ndarray | None = None, level: Level = None,
                 fitted: bool = False) -> dict[str, np.ndarray]:
        """Fit ``y`` and forecast ``h`` steps, keeping nothing (statsforecast's ``forecast`` and
        ``cross_validation``); ``fitted``: the in-sample values too."""
        train = self._train(y, X)
        return call(arrays.forecast, self.config, train, h, X_future, level, fitted,
                    self.progress)

    def forward(self, y: np.ndarray, h: int, X: np.ndarray | None = None,
                X_future: np.ndarray | None = None, level: Level = None,
                fitted: bool = False) -> dict[str, np.ndarray]:
        """Forecast ``h`` steps after ``y``, a continuation of the fitted series, from the
        fitted particles conditioned on its later values (no new search)."""
        model = self._fitted()
        train = self._train(y, X)
        before = self.train_
        n = len(before)
        same = len(train) >= n and all(
            np.array_equal(train[c].to_numpy()[:n], before[c].to_numpy(), equal_nan=True)
            for c in arrays.covariates_of(before) + ["y"])
        if not same or arrays.covariates_of(train) != arrays.covariates_of(before):
            raise ValueError(
                f"forward: y (and X) must continue the fitted series (its first {n} values, "
                "the same covariates); AutoGP conditions its fit on later values of the same "
                "series, not on another series")
        return call(arrays.forward, model, train, h, X_future, level, fitted)


__all__ = ["AutoGP"]
