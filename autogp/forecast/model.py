"""The user-facing model: :class:`AutoGP` fits, forecasts, explains, decomposes, updates and saves.

Time and values are normalised per series (:class:`autogp.data.Scaler`: time onto [0, 1] over the
training span, values z-scored, after a log or Box-Cox transform when the data call for one)
before the SMC engine
(:func:`autogp.inference.smc.run_smc`) sees them; everything reported (forecasts, quantiles,
kernel parameters, component curves) is mapped back to data units. Every public method runs its
JAX work in float64 (:mod:`autogp._x64`) without touching JAX's global flag.

The forecast frame follows statsforecast's layout: ``unique_id``, ``ds``, ``AutoGP`` (the mean of
the particle mixture), then ``AutoGP-lo-<level>`` (highest level first) and ``AutoGP-hi-<level>``
(lowest level first), or ``AutoGP-q-<percent>`` columns for explicit quantiles.
"""

from __future__ import annotations

import functools
import math
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.scipy.linalg import cho_solve
from scipy.special import ndtri

from autogp._x64 import with_x64
from autogp.config import Config, engine_settings, load_config
from autogp.data import DataError, Scaler, TimeSeries, from_arrays, from_frame, read_csv
from autogp.data.errors import AutoGPDataWarning
from autogp.data.timeaxis import to_microseconds
from autogp.data.transform import boxcox_log_jacobian, choose_transform, inverse_mean
from autogp.evaluator import gram, posterior_predictive, robust_cholesky
from autogp.evaluator.sparse import (
    inducing_points_for,
    sparse_posterior_predictive,
    sparse_weights,
)
from autogp.forecast import _shapes
from autogp.forecast import explain as _explain
from autogp.forecast.mixture import Mixture, make_mixture, mixture_joint_logpdf
from autogp.kernels import Kernel, pack, structure, to_text, unpack

MODEL_NAME = "AutoGP"


# ---- compiled pieces -------------------------------------------------------------------------
# Shapes are padded to buckets (``_shapes``): training points with a mask, prediction points by
# repetition, so that a handful of compilations serve every horizon and data size.
@functools.partial(jax.jit, static_argnames=("full_cov",))
def _predictive(ops, params, noise, x, y, mask, x_new, full_cov):
    return posterior_predictive(
        ops, params, noise, x, y, mask, x_new, observation_noise=False, full_cov=full_cov
    )


@functools.partial(jax.jit, static_argnames=("full_cov", "num_inducing"))
def _sparse_predictive(ops, params, noise, x, y, mask, x_new, full_cov, num_inducing):
    return sparse_posterior_predictive(
        ops, params, noise, x, y, mask, x_new, observation_noise=False, full_cov=full_cov,
        num_inducing=num_inducing,
    )


_sparse_weights = jax.jit(sparse_weights, static_argnames=("num_inducing",))


@jax.jit
def _alpha(ops, params, noise, x, y, mask):
    """(K + noise I)^-1 y per particle ``[P, N]`` and whether the factorisation worked."""
    P = ops.shape[0]
    K = gram(ops, params, x)
    mask = jnp.broadcast_to(mask, (P, x.shape[0]))
    L, ok = robust_cholesky(K, jnp.exp(noise), mask)
    ym = jnp.where(mask, jnp.broadcast_to(y, (P, y.shape[0])), 0.0)
    alpha = cho_solve((L, True), ym[..., None])[..., 0]
    return jnp.where(mask, alpha, 0.0), ok


@jax.jit
def _cross_means(term_ops, term_params, x_new, x, alpha):
    """Posterior mean of each term: k_term(x_new, x) @ alpha[owner] -> ``[T, M]``."""
    K = gram(term_ops, term_params, x_new, x)  # [T, M, N]
    return jnp.einsum("tmn,tn->tm", K, alpha)


# ---- one fitted series -----------------------------------------------------------------------
@dataclass
class SeriesFit:
    """The particle posterior of one series plus what is needed to map it to data units.

    ``series`` holds the training data (times on its own :class:`TimeAxis`, values in data
    units); ``ops``/``params``/``noise``/``log_weights`` are the SMC particles in normalised
    units (``scaler``).
    """

    series: TimeSeries
    scaler: Scaler
    ops: np.ndarray
    params: np.ndarray
    noise: np.ndarray
    log_weights: np.ndarray
    log_marginal_likelihood: float = float("nan")
    history: dict[str, list[Any]] = field(default_factory=dict)
    updates: int = 0
    # 0: exact GP predictions; else the sparse likelihood's inducing points (as fitted).
    num_inducing: int = 0

    @property
    def unique_id(self) -> str:
        return self.series.unique_id

    @property
    def x(self) -> np.ndarray:
        return self.scaler.forward_t(self.series.t)

    @property
    def y(self) -> np.ndarray:
        return self.scaler.forward_y(self.series.y)

    def padded_training(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Normalised training ``x``, ``y`` padded to a bucket size, and the mask of real points."""
        n = self.series.n
        size = _shapes.bucket(n)
        x = _shapes.pad_grid(self.x, size)
        y = np.concatenate([self.y, np.zeros(size - n)])
        return x, y, np.arange(size) < n

    @property
    def max_depth(self) -> int:
        return int(round(math.log2(self.ops.shape[1] + 1))) - 1

    def weights(self) -> np.ndarray:
        lw = np.asarray(self.log_weights, dtype=np.float64)
        lw = np.where(np.isnan(lw), -np.inf, lw)
        top = np.max(lw)
        if not np.isfinite(top):
            return np.full(lw.shape, 1.0 / lw.size)
        w = np.exp(lw - top)
        return w / w.sum()

    def expressions(self) -> list[Kernel]:
        """The particles' kernel expressions in normalised units."""
        return unpack(self.ops, self.params)

    def smc_result(self) -> Any:
        from autogp.inference.smc import SMCResult

        history = dict(self.history)
        if not history.get("count"):
            history["count"] = [[self.series.n]]
        return SMCResult(
            ops=np.asarray(self.ops),
            params=np.asarray(self.params),
            noise=np.asarray(self.noise),
            log_weights=np.asarray(self.log_weights),
            log_marginal_likelihood=float(self.log_marginal_likelihood),
            history=history,
        )

    # -- predictions in normalised (or log) units -------------------------------------------
    def predictive(self, t_new: np.ndarray, include_noise: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per-particle predictive means and variances ``[P, M]`` in normalised units."""
        return self._predictive(t_new, include_noise, full_cov=False)

    def padded_particles(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ops``, ``params``, ``noise`` padded to a bucket size by repeating the last particle
        (results for the padding are sliced off)."""
        size = _shapes.bucket(self.ops.shape[0], minimum=8)
        return (
            _shapes.pad_repeat(self.ops, size, axis=0),
            _shapes.pad_repeat(self.params, size, axis=0),
            _shapes.pad_repeat(self.noise, size, axis=0),
        )

    def _predictive(
        self, t_new: np.ndarray, include_noise: bool, full_cov: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        P, M = self.ops.shape[0], len(t_new)
        ops, params, noise = (jnp.asarray(a) for a in self.padded_particles())
        x, y, mask = (jnp.asarray(a) for a in self.padded_training())
        x_all = self.scaler.forward_t(np.asarray(t_new, dtype=np.float64))
        parts = _shapes.chunks(M) if not full_cov else [slice(0, M)]
        means, covs = [], []
        for part in parts:
            m = part.stop - part.start
            size = _shapes.bucket_points(m) if not full_cov else _shapes.bucket(m)
            x_new = _shapes.pad_repeat(x_all[part], size)
            if self.num_inducing > 0:
                mean, cov = _sparse_predictive(ops, params, noise, x, y, mask,
                                               jnp.asarray(x_new), full_cov, self.num_inducing)
            else:
                mean, cov = _predictive(
                    ops, params, noise, x, y, mask, jnp.asarray(x_new), full_cov=full_cov
                )
            means.append(np.asarray(mean)[:P, :m])
            covs.append(np.asarray(cov)[:P, :m, :m] if full_cov else np.asarray(cov)[:P, :m])
        if not parts:
            mean, cov = np.zeros((P, 0)), np.zeros((P, 0, 0) if full_cov else (P, 0))
        else:
            mean = np.concatenate(means, axis=1)
            cov = covs[0] if full_cov else np.concatenate(covs, axis=1)
        if include_noise:
            noise_var = np.exp(np.asarray(self.noise, dtype=np.float64))
            if full_cov:
                cov = cov + noise_var[:, None, None] * np.eye(M)
            else:
                cov = cov + noise_var[:, None]
        return mean, cov

    def mixture(self, t_new: np.ndarray, include_noise: bool) -> Mixture:
        mean, var = self.predictive(t_new, include_noise)
        return make_mixture(self.log_weights, mean, var, what=f"particles of {self.unique_id!r}")

    # -- units --------------------------------------------------------------------------------
    def to_data_mean(self, mix: Mixture) -> np.ndarray:
        """The mixture mean in data units: under a transform, the weighted mean of each
        particle's back-transformed Gaussian (log-normal in closed form, other Box-Cox lambdas by
        Gauss-Hermite quadrature, :func:`autogp.data.transform.inverse_mean`)."""
        s = self.scaler
        if not s.transformed:
            return s.value_offset + s.value_scale * mix.mean()
        mu = s.to_transformed(mix.means)
        sd = s.value_scale * mix.sds
        return mix.weights @ inverse_mean(mu, sd, s.boxcox_lambda)

    def in_data_units(self, expr: Kernel) -> Kernel:
        s = self.scaler
        return expr.in_data_units(s.time_scale, s.time_offset, s.value_scale)

    def noise_sd(self) -> np.ndarray:
        """Observation-noise standard deviation per particle, in data (or transformed) units."""
        return np.sqrt(np.exp(np.asarray(self.noise, dtype=np.float64))) * self.scaler.value_scale


# ---- helpers ---------------------------------------------------------------------------------
def _fmt_level(level: float) -> str:
    level = float(level)
    return str(int(level)) if level.is_integer() else f"{level:g}"


def _fmt_quantile(q: float) -> str:
    return f"{100.0 * float(q):.10g}"


def level_columns(levels: Sequence[float], model: str = MODEL_NAME) -> list[str]:
    """Interval column names in statsforecast order (lo: widest first, hi: narrowest first)."""
    lv = sorted({float(v) for v in levels})
    return [f"{model}-lo-{_fmt_level(v)}" for v in reversed(lv)] + [
        f"{model}-hi-{_fmt_level(v)}" for v in lv
    ]


def _check_levels(levels: Iterable[float]) -> list[float]:
    out = []
    for v in levels:
        v = float(v)
        if not 0.0 < v < 100.0:
            raise ValueError(f"prediction-interval levels must be in (0, 100), got {v:g}")
        out.append(v)
    return sorted(set(out))


def _check_quantiles(quantiles: Iterable[float]) -> list[float]:
    out = []
    for q in quantiles:
        q = float(q)
        if not 0.0 < q < 1.0:
            raise ValueError(f"quantiles must be in (0, 1), got {q:g}")
        out.append(q)
    return sorted(set(out))


def _series_key(seed: int, unique_id: str, panel: bool) -> jax.Array:
    key = jax.random.key(seed)
    if panel:  # a series' key depends on its name, not on its position in the panel
        key = jax.random.fold_in(key, zlib.crc32(unique_id.encode("utf-8")) & 0x7FFFFFFF)
    return key


def _stamps_of(series: TimeSeries, t: np.ndarray) -> pd.Index:
    return series.axis.to_ds(t)


def _as_stamps(series: TimeSeries, ds: Any) -> tuple[np.ndarray, pd.Index]:
    """Numeric times and output stamps for user-given future ``ds`` of one series."""
    values = ds if isinstance(ds, pd.Index | pd.Series | np.ndarray | list | tuple) else [ds]
    values = pd.Index(values) if not isinstance(values, pd.Index) else values
    if series.axis.kind == "numeric":
        t = series.axis.to_numeric(np.asarray(values, dtype=np.float64))
        return t, pd.Index(np.asarray(values, dtype=np.float64))
    us = to_microseconds(values, source="ds")
    return series.axis.us_to_numeric(us), pd.DatetimeIndex(us.astype("datetime64[us]"))


def _num_inducing(config: Config, n: int) -> int:
    """0 where a series of ``n`` points gets the exact likelihood, else its inducing points."""
    smc = config.smc
    return inducing_points_for(n, smc.likelihood, smc.inducing_points, smc.sparse_above)


def _scaler(series: TimeSeries, config: Config) -> Scaler:
    """The normalisation of one series under ``config.data`` (transform, centring). The
    transform is chosen from the training values alone (``data.transform``)."""
    from autogp.forecast.metrics import seasonality

    season = seasonality(series.axis)
    center_last = None
    if config.data.center == "recent":
        center_last = season if season > 1 else max(1, int(math.ceil(0.1 * series.n)))
        center_last = min(center_last, series.n)
    try:
        choice = choose_transform(series.y, season, config.data.effective_transform,
                                  config.data.boxcox_lambda)
    except ValueError as exc:
        raise DataError(f"series {series.unique_id!r}: {exc}") from None
    return Scaler.fit(series.t, series.y, boxcox_lambda=choice.lam,
                      transform_reason=choice.reason, center_last=center_last)


def _seasonal_period(series: TimeSeries, scaler: Scaler) -> list[float] | None:
    """The calendar seasons of the series' axis (12 months; 24 and 168 hours; ...) in
    normalised time, as candidates for the period proposal; None when the axis has none."""
    from autogp.data.seasons import candidate_periods

    periods = candidate_periods(series.axis)
    if not periods:
        return None
    return [float(p / scaler.time_scale) for p in periods]


def _particle_fields(result: Any) -> dict[str, Any]:
    """The particle arrays of an SMC result as :class:`SeriesFit` fields (numpy, fixed dtypes)."""
    return {
        "ops": np.asarray(result.ops, dtype=np.int32),
        "params": np.asarray(result.params, dtype=np.float64),
        "noise": np.asarray(result.noise, dtype=np.float64),
        "log_weights": np.asarray(result.log_weights, dtype=np.float64),
        "log_marginal_likelihood": float(result.log_marginal_likelihood),
        "history": {k: list(v) for k, v in dict(result.history).items()},
    }


def fit_series_posterior(
    series: TimeSeries,
    config: Config,
    *,
    panel: bool,
    callback: Callable[[int, int], None] | None = None,
) -> SeriesFit:
    """Run the SMC on one series under ``config`` and return its particle posterior.

    The key comes from ``config.seed`` and, in a panel, the series id (never its position), so
    the result does not depend on which other series are fitted, in what order or where.
    """
    from autogp.inference import smc

    scaler = _scaler(series, config)
    x = scaler.forward_t(series.t)
    y = scaler.forward_y(series.y)
    key = _series_key(config.seed, series.unique_id, panel)
    grammar, settings = engine_settings(config)
    result = smc.run_smc(x, y, grammar, settings, key=key, callback=callback,
                         seasonal_period=_seasonal_period(series, scaler))
    return SeriesFit(
        series=series,
        scaler=scaler,
        **_particle_fields(result),
        num_inducing=_num_inducing(config, series.n),
    )


# ---- the model -------------------------------------------------------------------------------
class AutoGP:
    """Automatic Gaussian-process forecasting: structure discovery by SMC, then prediction.

    Args:
        config: a :class:`autogp.config.Config`, a TOML path, a dict, or ``None`` (defaults).
        seed: random seed (default: the config's ``seed``, 0 unless set).
        particles: number of SMC particles (``smc.num_particles``).
        rounds: SMC data-annealing rounds (``smc.num_rounds``).
        max_depth: deepest kernel tree (``grammar.max_depth``).
        log_transform: True fits ``log(y)`` (``data.transform = "log"``), False the raw values
            (``"none"``); default: the config's ``data.transform`` ("auto": chosen per series).
        overrides: further dotted config keys, e.g. ``{"refine.steps": 20}``.
        progress: show a progress bar on stderr (default: only for panels of several series).

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
        overrides: Mapping[str, Any] | None = None,
        progress: bool | None = None,
    ) -> None:
        extra: dict[str, Any] = dict(overrides or {})
        for key, value in (
            ("seed", seed),
            ("smc.num_particles", particles),
            ("smc.num_rounds", rounds),
            ("grammar.max_depth", max_depth),
        ):
            if value is not None:
                extra[key] = value
        if log_transform is not None:
            extra["data.log_transform"] = bool(log_transform)
            extra["data.transform"] = "log" if log_transform else "none"
        self.config: Config = load_config(config, extra)
        self.progress = progress
        self._fits: dict[str, SeriesFit] = {}
        # Series of the last panel fit that could not be fitted: id -> message.
        self.errors: dict[str, str] = {}

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
    def fits(self) -> dict[str, SeriesFit]:
        """The fitted series' particle posteriors by id (read-only use)."""
        return dict(self._fits)

    def series(self, unique_id: str | None = None) -> TimeSeries:
        """The training data of a series (the only one when ``unique_id`` is None)."""
        return self._fit_of(unique_id).series

    def __repr__(self) -> str:
        if not self._fits:
            return f"AutoGP(particles={self.config.smc.num_particles}, seed={self.seed}, unfitted)"
        return (
            f"AutoGP(particles={self.config.smc.num_particles}, seed={self.seed}, "
            f"series={len(self._fits)})"
        )

    def _fit_of(self, unique_id: str | None) -> SeriesFit:
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

    def _selected(self, unique_id: str | Sequence[str] | None) -> list[SeriesFit]:
        self._require_fitted()
        if unique_id is None:
            return list(self._fits.values())
        ids = [unique_id] if isinstance(unique_id, str) else list(unique_id)
        return [self._fit_of(u) for u in ids]

    # -- data ---------------------------------------------------------------------------------
    def _read(
        self,
        data: Any,
        time_col: str | None,
        target_col: str | None,
        id_col: str | None,
    ) -> list[TimeSeries]:
        d = self.config.data
        time_col = time_col or d.time_col
        target_col = target_col or d.target_col
        id_col = id_col if id_col is not None else d.id_col
        # The point cap protects the exact likelihood only; the sparse one scales.
        max_points = d.max_points if self.config.smc.likelihood == "exact" else None
        common = {
            "strict": d.strict,
            "aggregate": d.aggregate,
            "max_points": max_points,
        }
        if isinstance(data, TimeSeries):
            out = [data]
        elif (
            isinstance(data, list | tuple) and data and all(isinstance(s, TimeSeries) for s in data)
        ):
            out = list(data)
        elif isinstance(data, pd.DataFrame):
            if id_col is None and "unique_id" in data.columns:
                id_col = "unique_id"
            kwargs = dict(common, split_col=d.split_col, test_value=d.test_value)
            if d.split_col is not None and d.split_col not in data.columns:
                kwargs["split_col"] = None
            res = from_frame(data, time_col, target_col, id_col, **kwargs)
            out = res if isinstance(res, list) else [res]
        elif isinstance(data, str | Path):
            kwargs = d.read_kwargs()
            kwargs.update(time_col=time_col, target_col=target_col, id_col=id_col,
                          max_points=max_points)
            res = read_csv(data, **kwargs)
            out = res if isinstance(res, list) else [res]
        elif isinstance(data, tuple) and len(data) == 2:
            t, y = data
            out = [from_arrays(t, y, **common)]
        else:
            raise DataError(
                "fit expects a DataFrame (ds, y[, unique_id]), a (t, y) pair of arrays, a CSV "
                f"path or TimeSeries objects; got {type(data).__name__}"
            )
        seen: set[str] = set()
        for s in out:
            if s.unique_id in seen:
                raise DataError(f"series id {s.unique_id!r} appears twice")
            seen.add(s.unique_id)
        return [s.train() if s.is_test is not None and s.is_test.any() else s for s in out]

    # -- fitting ------------------------------------------------------------------------------
    @with_x64
    def fit(
        self,
        data: Any,
        *,
        time_col: str | None = None,
        target_col: str | None = None,
        id_col: str | None = None,
        backend: str | None = None,
        scheduler: str | None = None,
        client: Any = None,
        resume: str | Path | None = None,
        on_chunk: Callable[[list[str]], None] | None = None,
    ) -> AutoGP:
        """Fit the model to one series or a panel.

        Args:
            data: a DataFrame with a time column (``ds``: dates or numbers), a value column
                (``y``) and, for a panel, an id column (``unique_id`` is picked up
                automatically); or a Dask DataFrame of such rows; or a ``(t, y)`` pair of
                arrays; or a CSV path; or :class:`TimeSeries` objects. Rows marked as test by
                ``data.split_col`` are left out.
            time_col, target_col, id_col: column names (default: the config's ``[data]``).
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

        Each series gets its own random key derived from the seed and its id, so a series' fit
        does not depend on the other series, the backend or the workers. In a panel, a series
        that cannot be fitted is reported (a warning naming it; :attr:`errors`) and left out,
        and every other series is still fitted. Returns ``self``.
        """
        from autogp import parallel

        d = self.config.data
        id_name = id_col if id_col is not None else d.id_col
        if parallel.is_dask_frame(data):
            id_name = id_name or ("unique_id" if "unique_id" in data.columns else None)
            wanted = [time_col or d.time_col, target_col or d.target_col, id_name, d.split_col]
            data = parallel.dask_to_pandas(data, [c for c in wanted if c is not None])
        if id_name is None and isinstance(data, pd.DataFrame) and "unique_id" in data.columns:
            id_name = "unique_id"
        all_series, read_errors = parallel.read_series_tolerant(
            lambda part: self._read(part, time_col, target_col, id_col), data, id_name, sep=d.sep
        )
        panel = len(all_series) + len(read_errors) > 1
        show = self.progress if self.progress is not None else panel
        result = parallel.fit_panel(
            self.config,
            all_series,
            panel=panel,
            backend=backend,
            scheduler=scheduler,
            client=client,
            resume=resume,
            on_chunk=on_chunk,
            progress=show,
        )
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

    def _fit_one(
        self,
        series: TimeSeries,
        panel: bool,
        callback: Callable[[int, int], None] | None = None,
    ) -> SeriesFit:
        return fit_series_posterior(series, self.config, panel=panel, callback=callback)

    @classmethod
    def from_fits(
        cls,
        fits: Iterable[SeriesFit],
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
        if model.config.data.effective_transform == "auto":
            model.config = model.config.with_overrides({"data.transform": "none"})
        (series,) = model._read(data, time_col, target_col, None)[:1]
        exprs = [k if isinstance(k, Kernel) else _parse(k) for k in kernels]
        ops, params = pack(exprs, max_depth=model.config.grammar.max_depth)
        P = len(exprs)
        noise_arr = np.broadcast_to(np.asarray(noise, dtype=np.float64), (P,))
        if np.any(noise_arr <= 0):
            raise ValueError("noise variances must be positive")
        w = np.ones(P) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (P,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be {P} non-negative numbers with a positive sum")
        with np.errstate(divide="ignore"):
            lw = np.log(w / w.sum())
        scaler = _scaler(series, model.config)
        model._fits = {
            series.unique_id: SeriesFit(
                series=series,
                scaler=scaler,
                ops=ops,
                params=params,
                noise=np.log(noise_arr).copy(),
                log_weights=lw,
                history={"count": [[series.n]]},
                num_inducing=_num_inducing(model.config, series.n),
            )
        }
        return model

    # -- updating -----------------------------------------------------------------------------
    @with_x64
    def update(
        self,
        new_data: Any,
        *,
        time_col: str | None = None,
        target_col: str | None = None,
        id_col: str | None = None,
        rounds: int | None = None,
    ) -> AutoGP:
        """Add observations and continue the SMC on them (online use); returns ``self``.

        ``new_data``: a DataFrame (``ds``, ``y``, and ``unique_id`` for panels) or a ``(t, y)``
        pair for a single-series model; any number of rows, even one. New time stamps must not
        repeat fitted ones. The normalisation of the first fit is kept (the particles'
        parameters are in its units), so new times beyond the training span map past 1.
        ``rounds``: SMC rounds spent on the new data (default: one per new point, at most
        ``smc.num_rounds``).
        """
        from autogp.inference.smc import update_smc

        self._require_fitted()
        d = self.config.data
        time_col = time_col or d.time_col
        target_col = target_col or d.target_col
        groups = self._update_groups(new_data, time_col, target_col, id_col)
        for uid, (ds, y) in groups.items():
            fit = self._fit_of(uid)
            t_new, stamps_new = _as_stamps(fit.series, ds)
            y_new = np.asarray(y, dtype=np.float64)
            ok = np.isfinite(y_new)
            if not ok.all():
                if d.strict:
                    raise DataError(f"update: series {uid!r} has missing or non-finite values")
                warnings.warn(
                    f"update: dropped {int((~ok).sum())} rows with missing or non-finite values "
                    f"of series {uid!r}",
                    AutoGPDataWarning,
                    stacklevel=3,
                )
                t_new, stamps_new, y_new = t_new[ok], stamps_new[ok], y_new[ok]
            if t_new.size == 0:
                continue
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
            key = jax.random.fold_in(
                _series_key(self.seed, uid, len(self._fits) > 1), fit.updates + 1
            )
            result = update_smc(
                fit.smc_result(), x_all, yn_all, *engine_settings(self.config), key=key,
                num_rounds=rounds,
                seasonal_period=_seasonal_period(old, fit.scaler),
            )
            order = np.argsort(t_all, kind="stable")
            stamps = old.ds.append(stamps_new)[order]
            series = TimeSeries(t_all[order], y_all[order], uid, old.axis, None, stamps)
            self._fits[uid] = replace(
                fit,
                series=series,
                **_particle_fields(result),
                updates=fit.updates + 1,
            )
        return self

    def _update_groups(
        self, data: Any, time_col: str, target_col: str, id_col: str | None
    ) -> dict[str, tuple[Any, Any]]:
        if isinstance(data, pd.DataFrame):
            for col in (time_col, target_col):
                if col not in data.columns:
                    raise DataError(f"update: the new data have no column {col!r}")
            id_col = id_col or ("unique_id" if "unique_id" in data.columns else None)
            if id_col is None:
                uid = self._fit_of(None).unique_id
                return {uid: (data[time_col], data[target_col].to_numpy(dtype=np.float64))}
            out = {}
            for uid, g in data.groupby(id_col, sort=False):
                out[str(uid)] = (g[time_col], g[target_col].to_numpy(dtype=np.float64))
            return out
        if isinstance(data, tuple) and len(data) == 2:
            uid = self._fit_of(None).unique_id
            return {uid: data}
        raise DataError(f"update expects a DataFrame or a (t, y) pair, got {type(data).__name__}")

    # -- prediction ---------------------------------------------------------------------------
    def _targets(
        self, fit: SeriesFit, horizon: Any, panel_frame: pd.DataFrame | None
    ) -> tuple[np.ndarray, pd.Index]:
        if panel_frame is not None:
            rows = panel_frame
            if "unique_id" in panel_frame.columns:
                rows = panel_frame[panel_frame["unique_id"].astype(str) == fit.unique_id]
            return _as_stamps(fit.series, rows["ds"])
        if horizon is None:
            horizon = self.config.forecast.horizon
        if isinstance(horizon, int | np.integer) and not isinstance(horizon, bool):
            if horizon < 0:
                raise ValueError(f"horizon must be >= 0, got {horizon}")
            return fit.series.future_t(int(horizon)), fit.series.future_ds(int(horizon))
        return _as_stamps(fit.series, horizon)

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

        Intervals are exact quantiles of the Gaussian mixture (bisection on its CDF) mapped to
        data units; under a transform (log, Box-Cox) quantiles (the median included) are the
        back-transformed quantiles, and the mean is the mixture of back-transformed Gaussians'
        means (log-normal closed form; Gauss-Hermite quadrature for other lambdas). Particles whose
        predictions are not finite are dropped with a warning.
        """
        fc = self.config.forecast
        if level is None:
            level = fc.levels if quantiles is None else ()
        levels = _check_levels(level)
        qs = _check_quantiles(quantiles) if quantiles is not None else []
        if include_noise is None:
            include_noise = fc.observation_noise
        if point is None:
            point = fc.point
        if point not in ("mean", "median"):
            raise ValueError(f"predict: point must be 'mean' or 'median', got {point!r}")
        frame = horizon if isinstance(horizon, pd.DataFrame) else None
        if frame is not None and "ds" not in frame.columns:
            raise DataError("predict: a frame of future times needs a 'ds' column")
        parts = []
        for fit in self._selected(unique_id):
            t_new, ds_new = self._targets(fit, horizon, frame)
            if per_particle:
                parts.append(
                    self._predict_particles(fit, t_new, ds_new, levels, qs, include_noise, point)
                )
            else:
                parts.append(
                    self._predict_mixture(fit, t_new, ds_new, levels, qs, include_noise, point)
                )
        out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        return out

    def _probs(self, levels: list[float], qs: list[float]) -> tuple[list[str], np.ndarray]:
        names, probs = [], []
        for lv in reversed(levels):
            names.append(f"{MODEL_NAME}-lo-{_fmt_level(lv)}")
            probs.append(0.5 - lv / 200.0)
        for lv in levels:
            names.append(f"{MODEL_NAME}-hi-{_fmt_level(lv)}")
            probs.append(0.5 + lv / 200.0)
        for q in qs:
            names.append(f"{MODEL_NAME}-q-{_fmt_quantile(q)}")
            probs.append(q)
        return names, np.asarray(probs, dtype=np.float64)

    def _predict_mixture(
        self, fit, t_new, ds_new, levels, qs, include_noise, point="mean"
    ) -> pd.DataFrame:
        df = pd.DataFrame({"unique_id": fit.unique_id, "ds": ds_new}, index=range(len(ds_new)))
        names, probs = self._probs(levels, qs)
        if len(t_new) == 0:
            for c in [MODEL_NAME, *names]:
                df[c] = np.zeros(0)
            return df
        mix = fit.mixture(t_new, include_noise)
        median = point == "median"
        # One bisection for the interval bounds and, last, the median.
        solve = np.append(probs, 0.5) if median else probs
        q = fit.scaler.inverse_y(mix.quantiles(solve)) if solve.size else solve
        df[MODEL_NAME] = q[-1] if median else fit.to_data_mean(mix)
        for name, row in zip(names, q[: len(names)], strict=True):
            df[name] = row
        return df

    def _predict_particles(
        self, fit, t_new, ds_new, levels, qs, include_noise, point="mean"
    ) -> pd.DataFrame:
        mean, var = fit.predictive(t_new, include_noise)
        w = fit.weights()
        structures = [structure(e) for e in fit.expressions()]
        names, probs = self._probs(levels, qs)
        sd = np.sqrt(np.maximum(var, 0.0))
        z = ndtri(probs) if probs.size else np.zeros(0)
        s = fit.scaler
        P, M = mean.shape
        rows = {
            "unique_id": np.full(P * M, fit.unique_id, dtype=object),
            "ds": np.tile(np.asarray(ds_new), P),
            "particle": np.repeat(np.arange(P), M),
            "weight": np.repeat(w, M),
            "structure": np.repeat(np.asarray(structures, dtype=object), M),
        }
        if s.transformed and point == "mean":
            mu = s.to_transformed(mean)
            rows[MODEL_NAME] = inverse_mean(mu, s.value_scale * sd, s.boxcox_lambda).reshape(-1)
        else:
            rows[MODEL_NAME] = s.inverse_y(mean).reshape(-1)
        for name, zk in zip(names, z, strict=True):
            rows[name] = s.inverse_y(mean + zk * sd).reshape(-1)
        df = pd.DataFrame(rows)
        if isinstance(ds_new, pd.DatetimeIndex):
            df["ds"] = pd.DatetimeIndex(df["ds"])
        return df

    @with_x64
    def log_predictive_density(
        self,
        ds: Any,
        y: Any = None,
        *,
        pointwise: bool = False,
        joint: bool = False,
        unique_id: str | None = None,
    ) -> float | np.ndarray:
        """Log predictive density of held-out observations, in data units.

        ``ds``/``y``: time stamps and values (or a DataFrame with ``ds``, ``y`` and, for
        panels, ``unique_id``; then ``y`` is omitted). Per point it is log sum_p w_p
        N(y | mu_p, sd_p^2) including observation noise, with the Jacobian of the normalisation
        (and of the log or Box-Cox transform), so it is a density of ``y`` itself. Returns
        the sum (default) or the per-point values (``pointwise=True``). ``joint=True`` uses the
        particles' joint predictive over all points (full covariances) instead of the product
        of marginals.
        """
        if isinstance(ds, pd.DataFrame):
            frame = ds
            if "unique_id" in frame.columns and unique_id is None:
                total: list[np.ndarray] = []
                for uid, g in frame.groupby("unique_id", sort=False):
                    total.append(
                        np.atleast_1d(
                            self.log_predictive_density(
                                g["ds"], g["y"], pointwise=True, joint=joint, unique_id=str(uid)
                            )
                        )
                    )
                values = np.concatenate(total)
                return values if pointwise else float(values.sum())
            ds, y = frame["ds"], frame["y"]
        fit = self._fit_of(unique_id)
        t_new, _ = _as_stamps(fit.series, ds)
        y_obs = np.atleast_1d(np.asarray(y, dtype=np.float64))
        if y_obs.shape != t_new.shape:
            raise ValueError(f"ds and y differ in length: {t_new.size} and {y_obs.size}")
        s = fit.scaler
        if s.transformed and np.any(y_obs <= 0):
            raise DataError(
                f"log_predictive_density: the model is fitted in {s.units} units, which need "
                "positive values"
            )
        z = s.forward_y(y_obs)
        jac = -math.log(s.value_scale) + boxcox_log_jacobian(y_obs, s.boxcox_lambda)
        if joint:
            mean, cov = fit._predictive(t_new, include_noise=True, full_cov=True)
            value = mixture_joint_logpdf(fit.log_weights, mean, cov, z)
            return float(value + np.sum(jac))
        mix = fit.mixture(t_new, include_noise=True)
        values = mix.logpdf(z) + jac
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
        rows = []
        for fit in self._selected(unique_id):
            w = fit.weights()
            exprs = fit.expressions()
            noise_sd = fit.noise_sd()
            groups: dict[str, list[int]] = {}
            for i, e in enumerate(exprs):
                groups.setdefault(structure(e), []).append(i)
            for text, idx in groups.items():
                best = max(idx, key=lambda i: w[i])
                data_expr = fit.in_data_units(exprs[best])
                rows.append(
                    {
                        "unique_id": fit.unique_id,
                        "structure": text,
                        "weight": float(sum(w[i] for i in idx)),
                        "particles": len(idx),
                        "expression": to_text(data_expr, params=True, precision=4),
                        "noise_sd": float(noise_sd[best]),
                        "reading": _explain.describe(data_expr, fit.series.axis),
                    }
                )
        df = pd.DataFrame(
            rows,
            columns=[
                "unique_id",
                "structure",
                "weight",
                "particles",
                "expression",
                "noise_sd",
                "reading",
            ],
        )
        order = {u: i for i, u in enumerate(self.unique_ids)}
        df["_o"] = df["unique_id"].map(order)
        df = df.sort_values(["_o", "weight"], ascending=[True, False], kind="stable")
        return df.drop(columns="_o").reset_index(drop=True)

    def explain(self, unique_id: str | Sequence[str] | None = None, top: int = 5) -> str:
        """A plain-text summary of the structure posterior (the ``top`` structures per series)."""
        table = self.kernels(unique_id)
        lines = []
        for fit in self._selected(unique_id):
            rows = table[table["unique_id"] == fit.unique_id]
            s = fit.series
            unit = f" in {fit.scaler.units} units" if fit.scaler.transformed else ""
            lines.append(
                f"{fit.unique_id}: {s.n} observations, {s.axis.describe()}; "
                f"{len(fit.noise)} particles, {len(rows)} distinct structures"
            )
            if fit.scaler.transform_reason:
                lines.append(f"  {fit.scaler.transform_reason}")
            for _, r in rows.head(top).iterrows():
                lines.append(f"  {100 * r['weight']:5.1f}%  {r['reading']}")
                lines.append(f"          {r['expression']}  (noise sd {r['noise_sd']:.4g}{unit})")
            if len(rows) > top:
                rest = rows["weight"].iloc[top:].sum()
                lines.append(f"  {100 * rest:5.1f}%  ({len(rows) - top} more structures)")
        return "\n".join(lines)

    # -- decomposition ------------------------------------------------------------------------
    @with_x64
    def decompose(
        self, ds: Any = None, *, unique_id: str | Sequence[str] | None = None
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
        """
        parts = []
        for fit in self._selected(unique_id):
            if ds is None:
                h = self.config.forecast.horizon
                t_new = np.concatenate([fit.series.t, fit.series.future_t(h)])
                ds_new = fit.series.ds.append(fit.series.future_ds(h))
            elif isinstance(ds, pd.DataFrame):
                t_new, ds_new = self._targets(fit, None, ds)
            else:
                t_new, ds_new = _as_stamps(fit.series, ds)
            parts.append(self._decompose_one(fit, t_new, ds_new))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    def _decompose_one(self, fit: SeriesFit, t_new: np.ndarray, ds_new: pd.Index) -> pd.DataFrame:
        P = fit.ops.shape[0]
        x, y, mask = (jnp.asarray(a) for a in fit.padded_training())
        particles = [jnp.asarray(a) for a in fit.padded_particles()]
        if fit.num_inducing > 0:
            # Each term's mean is K_term(x*, z) @ alpha_u: the same products over z.
            alpha, z, ok = _sparse_weights(*particles, x, y, mask,
                                           num_inducing=fit.num_inducing)
            points = np.asarray(z)[:P]
        else:
            alpha, ok = _alpha(*particles, x, y, mask)
            points = None
        alpha, ok = np.asarray(alpha)[:P], np.asarray(ok)[:P]
        usable = ok & np.all(np.isfinite(alpha), axis=1)
        # The mixture's checks: warn about (or fail on) particles that cannot be used.
        flags = np.where(usable, 0.0, np.nan)[:, None]
        mix = make_mixture(fit.log_weights, flags, flags, what=f"particles of {fit.unique_id!r}")
        w = np.zeros(P)
        w[mix.keep] = mix.weights
        terms, owners, kinds = [], [], []
        for p, e in enumerate(fit.expressions()):
            if not mix.keep[p]:
                continue
            for term in _explain.additive_terms(e):
                terms.append(term)
                owners.append(p)
                kinds.append(_explain.classify_term(term))
        M = len(t_new)
        x_all = fit.scaler.forward_t(np.asarray(t_new, dtype=np.float64))
        comps = {k: np.zeros(M) for k in _explain.COMPONENTS}
        if terms and M:
            T = len(terms)
            t_ops, t_params = pack(terms, max_depth=fit.max_depth)
            size = _shapes.bucket(T, minimum=8)
            term_alpha = _shapes.pad_repeat(alpha[np.asarray(owners)], size, axis=0).copy()
            term_alpha[T:] = 0.0  # padding terms contribute nothing
            # Per-term training points: x for the exact posterior, the owner's z for sparse.
            term_x = x if points is None else jnp.asarray(
                _shapes.pad_repeat(points[np.asarray(owners)], size, axis=0))
            t_ops = jnp.asarray(_shapes.pad_repeat(t_ops, size, axis=0))
            t_params = jnp.asarray(_shapes.pad_repeat(t_params, size, axis=0))
            means = np.zeros((T, M))
            for part in _shapes.chunks(M):
                m = part.stop - part.start
                x_new = _shapes.pad_repeat(x_all[part], _shapes.bucket_points(m))
                chunk = _cross_means(
                    t_ops, t_params, jnp.asarray(x_new), term_x, jnp.asarray(term_alpha)
                )
                means[:, part] = np.asarray(chunk)[:T, :m]
            for m_t, p, kind in zip(means, owners, kinds, strict=True):
                comps[kind] += w[p] * m_t
        s = fit.scaler
        df = pd.DataFrame({"unique_id": fit.unique_id, "ds": ds_new}, index=range(len(t_new)))
        observed = pd.Series(fit.series.y, index=fit.series.t)
        y_at = observed.reindex(t_new).to_numpy(dtype=np.float64)
        df["y"] = s.transform_y(y_at)
        fitted = np.zeros(len(t_new))
        for kind in _explain.COMPONENTS:
            values = s.value_scale * comps[kind]
            if kind == "trend":
                values = values + s.value_offset
            df[kind] = values
            fitted = fitted + values
        df["fitted"] = fitted
        df["residual"] = df["y"] - fitted
        df.attrs["units"] = s.units
        return df

    # -- persistence and plots ----------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the fitted model to a ``.autogp`` file (see :mod:`autogp.forecast.saveload`)."""
        from autogp.forecast.saveload import save_model

        return save_model(self, path)

    def plot(
        self,
        forecast: pd.DataFrame | None = None,
        *,
        path: str | Path | None = None,
        unique_id: str | None = None,
        **kwargs: Any,
    ):
        """A forecast plot (matplotlib Figure); written to ``path`` when given."""
        from autogp import plots

        if forecast is None:
            forecast = self.predict(unique_id=unique_id)
        fig = plots.plot_forecast(self, forecast, unique_id=unique_id, **kwargs)
        if path is not None:
            plots.save_figure(fig, path)
        return fig


def _parse(text: str) -> Kernel:
    from autogp.kernels import parse

    return parse(text)


def load(path: str | Path) -> AutoGP:
    """Load a model written by :meth:`AutoGP.save`."""
    from autogp.forecast.saveload import load_model

    return load_model(path)


__all__ = ["MODEL_NAME", "AutoGP", "SeriesFit", "level_columns", "load"]
