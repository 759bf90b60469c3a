"""The user-facing model: :class:`AutoGP` fits, forecasts, explains, decomposes, updates and saves.

An :class:`AutoGP` holds one :class:`~autogp.inference.posterior.Posterior` per fitted series and
turns them into frames; the work is done elsewhere: reading the data
(:mod:`~autogp.forecast.reading`), fitting a series (:mod:`~autogp.pipeline.fitting`, panels by
:mod:`autogp.parallel`), forecast frames (:mod:`~autogp.forecast.prediction`, columns by
:mod:`~autogp.forecast.columns`), structure tables (:mod:`~autogp.forecast.tables`),
decompositions (:mod:`~autogp.forecast.decompose`), online updates
(:mod:`~autogp.forecast.update`), cross-validation (:mod:`~autogp.forecast.crossval`), model
files (:mod:`~autogp.pipeline.saveload`) and plots (:mod:`~autogp.forecast.plots`). Everything
reported (forecasts, quantiles, kernel parameters, component curves) is in data units. Every
public method runs its JAX work in float64 (:mod:`autogp._x64`) without touching JAX's global
flag.

The forecast frame follows statsforecast's layout: ``unique_id``, ``ds``, ``AutoGP`` (the mean of
the particle mixture), then ``AutoGP-lo-<level>`` (highest level first) and ``AutoGP-hi-<level>``
(lowest level first), or ``AutoGP-q-<percent>`` columns for explicit quantiles.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from autogp._x64 import with_x64
from autogp.config import Config, environment_settings, load_config
from autogp.data import AutoGPDataWarning, DataError, TimeSeries
from autogp.forecast.columns import MODEL_NAME, level_columns
from autogp.forecast.covariates import covariates_at
from autogp.forecast.crossval import cross_validation as rolling_forecasts
from autogp.forecast.decompose import decompose_frame
from autogp.forecast.prediction import as_stamps, predict_frame
from autogp.forecast.reading import read_panel, read_series
from autogp.forecast.revise import RevisedData
from autogp.forecast.tables import explanation, structure_table
from autogp.forecast.update import update_groups, update_posterior
from autogp.inference.posterior import Posterior
from autogp.kernels import Kernel
from autogp.parallel.panel import fit_panel
from autogp.parallel.work import AfterFit
from autogp.pipeline import saveload
from autogp.pipeline.fitting import posterior_from_kernels


class AutoGP(RevisedData):
    """Automatic Gaussian-process forecasting: structure discovery by SMC, then prediction.

    Args:
        config: a :class:`autogp.config.Config`, a TOML path, a dict, or ``None`` (defaults).
        seed: random seed (default: the config's ``seed``, 0 unless set).
        particles: number of SMC particles (``smc.num_particles``).
        rounds: SMC data-annealing rounds (``smc.num_rounds``).
        max_depth: deepest kernel tree (``grammar.max_depth``).
        log_transform: True fits ``log(y)`` (``data.transform = "log"``), False the raw values
            (``"none"``); default: the config's ``data.transform`` ("auto": chosen per series).
        prior: the priors of the fit (``grammar.prior``): ``"autogp.jl"`` (the config's
            [priors]), ``"learned"`` (learned across the shipped panels, by the series'
            season and length), ``"panel"`` (learned from the panel given to :meth:`fit`
            first; kept in its ``resume`` folder) or a prior file's path.
        overrides: further dotted config keys, e.g. ``{"refine.steps": 20}``. The
            environment variable ``AUTOGP_SET`` (``"smc.num_particles=4 smc.num_rounds=3"``)
            sets keys for every model made from a path, a dict or the defaults, below these.
        progress: show a progress bar on stderr (default: only for panels of several series;
            a first run's compilation is shown unless ``progress=False``).

    Example::

        model = AutoGP(particles=16).fit(df)          # df: ds, y (and unique_id)
        fc = model.predict(18, level=[80, 95])        # statsforecast-style frame
        print(model.explain())
    """

    def __init__(
        self,
        config: Config | str | Path | Mapping[str, Any] | None = None,
        *,
        seed: int | None = None,
        particles: int | None = None,
        rounds: int | None = None,
        max_depth: int | None = None,
        log_transform: bool | None = None,
        prior: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        progress: bool | None = None,
    ) -> None:
        # $AUTOGP_SET under the explicit arguments; not over a Config, which was built already
        from_env = {} if isinstance(config, Config) else environment_settings()
        extra: dict[str, Any] = {**from_env, **(overrides or {})}
        for key, value in (
            ("seed", seed),
            ("smc.num_particles", particles),
            ("smc.num_rounds", rounds),
            ("grammar.max_depth", max_depth),
            ("grammar.prior", prior),
        ):
            if value is not None:
                extra[key] = value
        if log_transform is not None:
            extra["data.log_transform"] = bool(log_transform)
            extra["data.transform"] = "log" if log_transform else "none"
        self.config: Config = load_config(config, extra)
        self.progress = progress
        self._fits: dict[str, Posterior] = {}
        # Series of the last panel fit that could not be fitted: id -> message.
        self.errors: dict[str, str] = {}
        # Seconds the last fit spent compiling (summed over worker processes).
        self.compile_seconds = 0.0
        # The last fit's after_fit results by series id (AfterFitResult).
        self.after_fit_results: dict[str, Any] = {}

    # -- basics -------------------------------------------------------------------------------
    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def is_fitted(self) -> bool:
        return bool(self._fits)

    @property
    def unique_ids(self) -> list[str]:
        """The fitted series' ids, in fitting order."""
        return list(self._fits)

    @property
    def fits(self) -> dict[str, Posterior]:
        """The fitted series' particle posteriors by id (read-only use)."""
        return dict(self._fits)

    def series(self, unique_id: str | None = None) -> TimeSeries:
        """The training data of a series (the only one when ``unique_id`` is None)."""
        return self._fit_of(unique_id).series

    def __repr__(self) -> str:
        fitted = f"series={len(self._fits)}" if self._fits else "unfitted"
        return f"AutoGP(particles={self.config.smc.num_particles}, seed={self.seed}, {fitted})"

    def _fit_of(self, unique_id: str | None) -> Posterior:
        self._require_fitted()
        if unique_id is None:
            if len(self._fits) > 1:
                raise ValueError(
                    f"this model holds {len(self._fits)} series; pass unique_id= one of "
                    f"{self.unique_ids[:5]}{'...' if len(self._fits) > 5 else ''}"
                )
            return next(iter(self._fits.values()))
        try:
            return self._fits[str(unique_id)]
        except KeyError:
            raise KeyError(f"no fitted series {unique_id!r}; have {self.unique_ids[:5]}") from None

    def _require_fitted(self) -> None:
        if not self._fits:
            raise RuntimeError("the model is not fitted yet: call fit(...) first")

    def _selected(self, unique_id: str | Sequence[str] | None) -> list[Posterior]:
        self._require_fitted()
        if unique_id is None:
            return list(self._fits.values())
        ids = [unique_id] if isinstance(unique_id, str) else list(unique_id)
        return [self._fit_of(u) for u in ids]

    # -- fitting ------------------------------------------------------------------------------
    @with_x64
    def fit(
        self,
        data: Any,
        *,
        time_col: str | None = None,
        target_col: str | None = None,
        id_col: str | None = None,
        noise_col: str | None = None,
        backend: str | None = None,
        scheduler: str | None = None,
        client: Any = None,
        resume: str | Path | None = None,
        on_chunk: Callable[[list[str]], None] | None = None,
        after_fit: AfterFit | None = None,
    ) -> AutoGP:
        """Fit the model to one series or a panel.

        Args:
            data: a DataFrame with a time column (``ds``: dates or numbers), a value column
                (``y``) and, for a panel, an id column (``unique_id`` is picked up
                automatically); or a Dask DataFrame of such rows; or a ``(t, y)`` pair of
                arrays; or a CSV path; or :class:`TimeSeries` objects. Rows marked as test by
                ``data.split_col`` are left out.
            time_col, target_col, id_col: column names (default: the config's ``[data]``).
            noise_col: a column of known measurement-error standard deviations (data units),
                added to the learned noise (``data.noise_col``; see docs/workflow.md).
            backend: where a panel's series are fitted: ``"local"`` (``smc.workers``
                processes of this machine) or ``"dask"`` (a ``dask.distributed`` cluster);
                default ``smc.backend``.
            scheduler: the Dask scheduler's address (implies ``backend="dask"``; default
                ``smc.scheduler``; unset: a ``LocalCluster`` of ``smc.workers``
                single-threaded workers).
            client: a ``dask.distributed.Client`` to use instead (implies ``backend="dask"``).
            resume: a folder where each finished chunk of series is written as it completes;
                series already there (from an interrupted run with the same settings) are
                loaded instead of fitted again.
            on_chunk: called with the ids of each chunk once it is finished (and saved).
            after_fit: work on each fit done by the worker that made it, right after it (a
                forecast decided before the fit: :mod:`autogp.forecast.known_horizon`); its
                results by series id in :attr:`after_fit_results`.

        Each series gets its own random key derived from the seed and its id, so a series' fit
        does not depend on the other series, the backend or the workers. In a panel, a series
        that cannot be fitted is reported (a warning naming it; :attr:`errors`) and left out,
        and every other series is still fitted. Returns ``self``.
        """
        all_series, read_errors = read_panel(data, self.config, time_col, target_col, id_col,
                                             noise_col)
        panel = len(all_series) + len(read_errors) > 1
        show = self.progress if self.progress is not None else panel
        result = fit_panel(
            self.config,
            all_series,
            panel=panel,
            backend=backend,
            scheduler=scheduler,
            client=client,
            resume=resume,
            on_chunk=on_chunk,
            progress=show,
            notes=self.progress is not False,
            after=after_fit,
        )
        self.config = result.config or self.config  # grammar.prior "panel": the learned file
        self.compile_seconds = result.compile_seconds
        self.after_fit_results = result.after
        errors = {**read_errors, **result.errors}
        order = [s.unique_id for s in all_series]
        self._fits = {u: result.fits[u] for u in order if u in result.fits}
        self.errors = {u: errors[u] for u in [*read_errors, *order] if u in errors}
        for uid, message in self.errors.items():
            warnings.warn(f"series {uid!r} was not fitted: {message}", AutoGPDataWarning,
                          stacklevel=3)
        if not self._fits:
            first = next(iter(self.errors.items()), ("?", "no series"))
            raise DataError(f"no series could be fitted; series {first[0]!r}: {first[1]}")
        return self

    @classmethod
    def from_fits(
        cls,
        fits: Iterable[Posterior],
        config: Config | str | Path | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AutoGP:
        """A model holding already fitted series (e.g. from a distributed or resumed run)."""
        model = cls(config, **kwargs)
        model._fits = {fit.unique_id: fit for fit in fits}
        return model

    @classmethod
    @with_x64
    def from_kernels(
        cls,
        data: Any,
        kernels: Sequence[Kernel | str],
        *,
        weights: Sequence[float] | None = None,
        noise: float | Sequence[float] = 0.01,
        config: Config | str | Path | Mapping[str, Any] | None = None,
        time_col: str | None = None,
        target_col: str | None = None,
        **kwargs: Any,
    ) -> AutoGP:
        """A model with given particles instead of an SMC fit (one series).

        ``kernels`` are expressions (or their text) with parameters in *normalised* units: time
        in [0, 1] over the training span, values z-scored (after the transform of
        ``data.transform``; "auto" means none here, as the kernels are given). ``noise`` is the
        normalised observation-noise variance (one for all or one per kernel); ``weights``
        default to equal.
        """
        model = cls(config, **kwargs)
        if model.config.data.effective_transform in ("auto", "evidence"):
            model.config = model.config.with_overrides({"data.transform": "none"})
        (series,) = read_series(data, model.config, time_col, target_col, None)[:1]
        fit = posterior_from_kernels(series, model.config, kernels, weights=weights, noise=noise)
        model._fits = {series.unique_id: fit}
        return model

    # -- cross-validation ---------------------------------------------------------------------
    @with_x64
    def cross_validation(
        self,
        df: Any,
        *,
        h: int,
        n_windows: int = 1,
        step_size: int | None = None,
        refit: bool = True,
        level: Sequence[float] | None = None,
        time_col: str | None = None,
        target_col: str | None = None,
        id_col: str | None = None,
        noise_col: str | None = None,
        backend: str | None = None,
        scheduler: str | None = None,
        client: Any = None,
        resume: str | Path | None = None,
    ) -> pd.DataFrame:
        """Rolling-origin forecasts in statsforecast's layout (:mod:`autogp.forecast.crossval`):
        ``n_windows`` windows of ``h`` steps, ``step_size`` (default ``h``) apart, the last
        ending at each series' last stamp. ``refit=True``: every (series, cutoff) is its own fit,
        all in one panel (``backend`` ... ``resume`` as in :meth:`fit`), equal to a fit of the
        data truncated at the cutoff with the same seed. ``refit=False``: one fit per series on
        its first window, conditioned on the data up to each later cutoff. Returns ``unique_id,
        ds, cutoff, y, AutoGP, AutoGP-lo/hi-<L>`` sorted by ``unique_id, cutoff, ds``; the
        model's fits are not changed. Windows of a panel that fail are left out with a warning
        (:attr:`errors`)."""
        all_series, read_errors = read_panel(df, self.config, time_col, target_col, id_col,
                                             noise_col)
        panel = len(all_series) + len(read_errors) > 1
        show = self.progress if self.progress is not None else panel
        frame, errors = rolling_forecasts(
            all_series, self.config, h=h, n_windows=n_windows, step_size=step_size,
            refit=refit, level=level, panel=panel, backend=backend, scheduler=scheduler,
            client=client, resume=resume, progress=show,
        )
        for uid, message in read_errors.items():
            warnings.warn(f"series {uid!r} was not cross-validated: {message}",
                          AutoGPDataWarning, stacklevel=3)
        self.errors = {**read_errors, **errors}
        return frame

    # -- updating -----------------------------------------------------------------------------
    @with_x64
    def update(
        self,
        new_data: Any,
        *,
        time_col: str | None = None,
        target_col: str | None = None,
        id_col: str | None = None,
        noise_col: str | None = None,
        rounds: int | None = None,
    ) -> AutoGP:
        """Add observations and continue the SMC on them (online use); returns ``self``.

        ``new_data``: a DataFrame (``ds``, ``y``, and ``unique_id`` for panels) or a ``(t, y)``
        pair for a single-series model; any number of rows, even one. New time stamps must not
        repeat fitted ones. The normalisation of the first fit is kept (the particles'
        parameters are in its units), so new times beyond the training span map past 1.
        ``rounds``: SMC rounds spent on the new data (default: one per new point, at most
        ``smc.num_rounds``). ``noise_col``: the new rows' known noise column, as in :meth:`fit`.
        A fit with covariates needs their columns in ``new_data`` (an error names a missing one).
        """
        self._require_fitted()
        d = self.config.data
        time_col = time_col or d.time_col
        target_col = target_col or d.target_col
        groups = update_groups(new_data, time_col, target_col, id_col,
                               lambda: self._fit_of(None).unique_id, noise_col or d.noise_col)
        for uid, rows in groups.items():
            fit = self._fit_of(uid)
            updated = update_posterior(fit, rows.ds, rows.y, self.config, rounds=rounds,
                                       panel=len(self._fits) > 1, noise_sd=rows.noise_sd,
                                       frame=rows.frame)
            if updated is not None:
                self._fits[uid] = updated
        return self

    # -- prediction ---------------------------------------------------------------------------
    @with_x64
    def predict(
        self,
        horizon: int | Any = None,
        *,
        level: Sequence[float] | None = None,
        quantiles: Sequence[float] | None = None,
        include_noise: bool | None = None,
        point: str | None = None,
        per_particle: bool = False,
        unique_id: str | Sequence[str] | None = None,
        X_df: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Forecast: the mean of the particle mixture and its prediction intervals.

        Args:
            horizon: steps ahead on the data's grid (default ``forecast.horizon``), or the
                future time stamps themselves (a list/Index of dates or numbers, or a DataFrame
                with ``ds`` and, for panels, ``unique_id``).
            level: central interval levels in percent (default ``forecast.levels``, unless
                ``quantiles`` is given); columns ``AutoGP-lo-95`` ... ``AutoGP-hi-95``.
            quantiles: probabilities in (0, 1); columns ``AutoGP-q-10`` etc.
            include_noise: intervals for new noisy observations (True) or for the latent
                function (False); default ``forecast.observation_noise``.
            point: the ``AutoGP`` column: ``"mean"`` or ``"median"`` of the predictive
                distribution (default ``forecast.point``). The median minimises expected absolute
                error; under a transform it is the back-transformed median (monotone map).
            per_particle: one row per (time, particle) with the particle's weight, structure,
                mean and its own Gaussian intervals, instead of the mixture.
            unique_id: restrict to some series of a panel.
            X_df: the covariates' future values, for a model fitted with covariates (extra
                numeric columns of the training frame): ``ds``, every covariate column and,
                for panels, ``unique_id``, with a row for every forecast date (statsforecast's
                convention). A missing column, date or value is an error naming it.

        Intervals are exact quantiles of the Gaussian mixture (bisection on its CDF) mapped to
        data units; under a transform (log, Box-Cox) quantiles (the median included) are the
        back-transformed quantiles, and the mean is the mixture of back-transformed Gaussians'
        means (log-normal closed form; Gauss-Hermite quadrature for other lambdas). Particles whose
        predictions are not finite are dropped with a warning.
        """
        return predict_frame(
            self._selected(unique_id),
            self.config,
            horizon,
            level=level,
            quantiles=quantiles,
            include_noise=include_noise,
            point=point,
            per_particle=per_particle,
            X_df=X_df,
        )

    @with_x64
    def log_predictive_density(
        self,
        ds: Any,
        y: Any = None,
        *,
        pointwise: bool = False,
        joint: bool = False,
        unique_id: str | None = None,
        X_df: pd.DataFrame | None = None,
    ) -> float | np.ndarray:
        """Log predictive density of held-out observations, in data units.

        ``ds``/``y``: time stamps and values (or a DataFrame with ``ds``, ``y`` and, for
        panels, ``unique_id``; then ``y`` is omitted). Per point it is log sum_p w_p
        N(y | mu_p, sd_p^2) including observation noise, with the Jacobian of the normalisation
        (and of the log or Box-Cox transform), so it is a density of ``y`` itself. Returns
        the sum (default) or the per-point values (``pointwise=True``). ``joint=True`` uses the
        particles' joint predictive over all points (full covariances) instead of the product
        of marginals. A fit with covariates reads their values from the frame ``ds`` (its
        covariate columns) or ``X_df``.
        """
        frame = None
        if isinstance(ds, pd.DataFrame):
            frame = ds
            if "unique_id" in frame.columns and unique_id is None:
                total: list[np.ndarray] = []
                for uid, g in frame.groupby("unique_id", sort=False):
                    total.append(
                        np.atleast_1d(
                            self.log_predictive_density(
                                g, pointwise=True, joint=joint, unique_id=str(uid), X_df=X_df
                            )
                        )
                    )
                values = np.concatenate(total)
                return values if pointwise else float(values.sum())
            ds, y = frame["ds"], frame["y"]
        fit = self._fit_of(unique_id)
        t_new, stamps = as_stamps(fit.series, ds)
        y_obs = np.atleast_1d(np.asarray(y, dtype=np.float64))
        if y_obs.shape != t_new.shape:
            raise ValueError(f"ds and y differ in length: {t_new.size} and {y_obs.size}")
        values = fit.log_predictive_density(t_new, y_obs, joint=joint, covariates=covariates_at(
            fit, t_new, stamps, X_df if X_df is not None else frame))
        if joint:
            return values
        return values if pointwise else float(values.sum())

    # -- structures ---------------------------------------------------------------------------
    def kernels(self, unique_id: str | Sequence[str] | None = None) -> pd.DataFrame:
        """The posterior over kernel structures, one row per distinct structure per series.

        Columns: ``unique_id``, ``structure`` (text without parameters), ``weight`` (total
        posterior weight of the particles with this structure), ``particles`` (how many),
        ``expression`` (the highest-weight such particle, parameters in data units),
        ``noise_sd`` (its observation-noise standard deviation in data units) and ``reading``
        (a plain-English description). Sorted by weight within each series.
        """
        return structure_table(self._selected(unique_id), order=self.unique_ids)

    def explain(self, unique_id: str | Sequence[str] | None = None, top: int = 5) -> str:
        """A plain-text summary of the structure posterior (the ``top`` structures per series)."""
        return explanation(self._selected(unique_id), self.kernels(unique_id), top)

    # -- decomposition ------------------------------------------------------------------------
    @with_x64
    def decompose(
        self, ds: Any = None, *, unique_id: str | Sequence[str] | None = None,
        X_df: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Posterior-mean components of the fitted series, at past and future time stamps.

        Each particle's kernel is split at its top-level ``+`` into terms, each term classified
        (see :mod:`autogp.forecast.explain`: trend, seasonal, smooth, changepoint, noise), and
        the term's posterior mean k_term(x*, x) (K + noise I)^-1 y computed; components are the
        weighted averages over particles. ``ds`` default: the training times plus
        ``forecast.horizon`` future steps.

        Columns: ``unique_id``, ``ds``, ``y`` (observed, NaN in the future), the five
        components, ``fitted`` (their sum = the posterior mean of the latent function) and
        ``residual`` (``y - fitted``). The series mean is included in ``trend``. Under a
        transform everything, ``y`` included, is in the transformed units (``attrs["units"]``:
        "log" or "boxcox"; components add there, i.e. multiply in data units under log):
        a sum of components has no meaning after a nonlinear map back.

        A fit with covariates has a ``covariates`` component (every term with a covariate
        atom); future stamps need the covariates' values there (``X_df`` as in
        :meth:`predict`), so by default only the training times are decomposed unless
        ``X_df`` is given.
        """
        return decompose_frame(self._selected(unique_id), ds, self.config.forecast.horizon, X_df)

    # -- persistence and plots ----------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the fitted model to a ``.autogp`` file (see :mod:`autogp.pipeline.saveload`)."""
        self._require_fitted()
        return saveload.save_model(self, path)

    def plot(
        self,
        forecast: pd.DataFrame | None = None,
        *,
        path: str | Path | None = None,
        unique_id: str | None = None,
        **kwargs: Any,
    ):
        """A forecast plot (matplotlib Figure); written to ``path`` when given."""
        from autogp.forecast import plots  # matplotlib is imported only when a plot is drawn

        if forecast is None:
            forecast = self.predict(unique_id=unique_id)
        fig = plots.plot_forecast(self, forecast, unique_id=unique_id, **kwargs)
        if path is not None:
            plots.save_figure(fig, path)
        return fig


def load(path: str | Path) -> AutoGP:
    """Load a model written by :meth:`AutoGP.save`."""
    saved = saveload.load_model(path)
    return AutoGP.from_fits(saved.fits, saved.config)


__all__ = ["MODEL_NAME", "AutoGP", "level_columns", "load"]
