"""The particle posterior of one fitted series, and the predictions it makes.

A :class:`Posterior` is what a fit returns per series: the SMC particles (kernel structures,
parameters and noise in normalised units, log weights), the training data and the
:class:`~autogp.data.Scaler` that maps normalised units to data units. It gives the
per-particle predictive (exact or sparse GP), the mixture's mean and quantiles in data units,
the log predictive density of held-out values, and the posterior means of parts of the kernels
(for decompositions). Build one from an SMC result with :meth:`Posterior.from_smc`.

Shapes are padded to buckets (:mod:`~autogp.inference.shapes`): training points with a mask,
particles and prediction points by repetition, so a handful of compilations serve every
horizon and data size.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp
import numpy as np
from scipy.special import ndtri

from autogp._xla import jit
from autogp.data import DataError, Scaler, TimeSeries
from autogp.data.covariates import CovariateScaling
from autogp.data.transform import inverse_mean
from autogp.evaluator import gram, posterior_predictive, robust_cholesky
from autogp.evaluator.linalg import cho_solve
from autogp.evaluator.sparse import sparse_posterior_predictive, sparse_weights
from autogp.inference import shapes
from autogp.inference.full_resolution import FullResolution
from autogp.inference.full_resolution import predict as predict_state_space
from autogp.inference.mixture import Mixture, make_mixture, mixture_joint_logpdf
from autogp.inference.smc import SMCResult
from autogp.kernels import Kernel, pack, unpack


# ---- compiled pieces -------------------------------------------------------------------------
@functools.partial(jit, static_argnames=("full_cov",))
def _predictive(ops, params, noise, x, y, mask, x_new, full_cov, known_var=None):
    return posterior_predictive(
        ops, params, noise, x, y, mask, x_new, observation_noise=False, full_cov=full_cov,
        known_var=known_var,
    )


@functools.partial(jit, static_argnames=("full_cov", "num_inducing"))
def _sparse_predictive(ops, params, noise, x, y, mask, x_new, full_cov, num_inducing,
                       known_var=None):
    return sparse_posterior_predictive(
        ops, params, noise, x, y, mask, x_new, observation_noise=False, full_cov=full_cov,
        num_inducing=num_inducing, known_var=known_var,
    )


_sparse_weights = jit(sparse_weights, static_argnames=("num_inducing",))


@jit
def _alpha(ops, params, noise, x, y, mask, known_var=None):
    """(K + noise I)^-1 y per particle ``[P, N]`` (plus the known variances on the diagonal)
    and whether the factorisation worked."""
    P = ops.shape[0]
    K = gram(ops, params, x)
    mask = jnp.broadcast_to(mask, (P, y.shape[0]))
    if known_var is not None:
        known_var = jnp.broadcast_to(known_var, (P, y.shape[0]))
    L, ok = robust_cholesky(K, jnp.exp(noise), mask, known_var)
    ym = jnp.where(mask, jnp.broadcast_to(y, (P, y.shape[0])), 0.0)
    alpha = cho_solve(L, ym[..., None])[..., 0]
    return jnp.where(mask, alpha, 0.0), ok


@jit
def _cross_means(term_ops, term_params, x_new, x, alpha):
    """Posterior mean of each term: k_term(x_new, x) @ alpha[owner] -> ``[T, M]``."""
    K = gram(term_ops, term_params, x_new, x)  # [T, M, N]
    return jnp.einsum("tmn,tn->tm", K, alpha)


def _per_particle(x, P: int):
    """Inputs with covariates ``[N, 1 + C]`` repeated for ``P`` particles (the evaluator reads
    a 2-D input as per-particle times); time-only inputs ``[N]`` are shared as they are."""
    return x if np.ndim(x) == 1 else jnp.broadcast_to(jnp.asarray(x), (P,) + np.shape(x))


# ---- the posterior ---------------------------------------------------------------------------
@dataclass
class Posterior:
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
    # Earlier training points outside the fitting window (data.window): not in ``series``.
    left_out: int = 0
    # The window kept every ``stride``-th training point (see pipeline.fitting.window_stride).
    stride: int = 1
    # Observations that online updates appended to ``series`` after the fit (all fitted: only
    # the fit's own window was thinned).
    added: int = 0
    # How the covariates (``series.covariates``) were standardised; None without covariates.
    covariate_scaling: CovariateScaling | None = None
    # The full-resolution stage's re-fit of a long series' heaviest structures by the Kalman
    # filter (those particles predict from it); None where the stage did not run.
    full_resolution: FullResolution | None = None
    # The atom that took GE's prior weight in the search (data.full_resolution_ge), which
    # updates keep; "": the config's grammar.
    ge_weight_to: str = ""
    # The learned prior the fit ran under (its file and group: pipeline.series_prior); "":
    # the config's [priors] and [grammar.weights] as written.
    prior: str = ""

    @classmethod
    def from_smc(
        cls,
        series: TimeSeries,
        scaler: Scaler,
        result: SMCResult,
        *,
        num_inducing: int = 0,
        updates: int = 0,
        left_out: int = 0,
        stride: int = 1,
        added: int = 0,
        covariate_scaling: CovariateScaling | None = None,
        ge_weight_to: str = "",
        prior: str = "",
    ) -> Posterior:
        """The posterior of ``series`` (normalised by ``scaler``) that an SMC run found."""
        return cls(
            series=series,
            scaler=scaler,
            ops=np.asarray(result.ops, dtype=np.int32),
            params=np.asarray(result.params, dtype=np.float64),
            noise=np.asarray(result.noise, dtype=np.float64),
            log_weights=np.asarray(result.log_weights, dtype=np.float64),
            log_marginal_likelihood=float(result.log_marginal_likelihood),
            history={k: list(v) for k, v in dict(result.history).items()},
            updates=updates,
            num_inducing=num_inducing,
            left_out=left_out,
            stride=stride,
            added=added,
            covariate_scaling=covariate_scaling,
            ge_weight_to=ge_weight_to,
            prior=prior,
        )

    def smc_result(self) -> SMCResult:
        """The particles as an SMC result (to continue the SMC on new data)."""
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

    @property
    def unique_id(self) -> str:
        return self.series.unique_id

    @property
    def x(self) -> np.ndarray:
        """Normalised training inputs: ``[n]`` times, or ``[n, 1 + C]`` with the standardised
        covariates after the time."""
        return self.inputs(self.series.t, None if self.series.covariates is None
                           else self.series.covariates.to_numpy())

    @property
    def covariates(self) -> tuple[str, ...]:
        """The names of the covariates the model was fitted with (empty without)."""
        return () if self.covariate_scaling is None else self.covariate_scaling.names

    def inputs(self, t: np.ndarray, covariates: np.ndarray | None = None) -> np.ndarray:
        """Normalised inputs at times ``t`` with covariate values ``[M, C]`` in data units."""
        x = self.scaler.forward_t(np.asarray(t, dtype=np.float64))
        if self.covariate_scaling is None:
            return x
        if covariates is None or np.shape(covariates) != (len(x), len(self.covariates)):
            raise DataError(f"series {self.unique_id!r}: predictions need the values of the "
                            f"covariates {list(self.covariates)} at every time")
        return np.column_stack([x, self.covariate_scaling.forward(covariates)])

    @property
    def y(self) -> np.ndarray:
        return self.scaler.forward_y(self.series.y)

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

    def in_data_units(self, expr: Kernel) -> Kernel:
        s = self.scaler
        return expr.in_data_units(s.time_scale, s.time_offset, s.value_scale)

    def noise_sd(self) -> np.ndarray:
        """Observation-noise standard deviation per particle, in data (or transformed) units."""
        return np.sqrt(np.exp(np.asarray(self.noise, dtype=np.float64))) * self.scaler.value_scale

    # -- padded inputs of the compiled functions ------------------------------------------------
    def padded_training(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Normalised training ``x``, ``y`` padded to a bucket size, and the mask of real points."""
        n = self.series.n
        size = shapes.bucket(n)
        x = self.x
        if x.ndim == 1:
            x = shapes.pad_grid(x, size)
        else:  # time continues its grid, covariates of the (masked) padding are 0
            x = np.column_stack([shapes.pad_grid(x[:, 0], size),
                                 np.concatenate([x[:, 1:], np.zeros((size - n, x.shape[1] - 1))])])
        y = np.concatenate([self.y, np.zeros(size - n)])
        return x, y, np.arange(size) < n

    def known_var(self) -> np.ndarray | None:
        """The training observations' known variances in normalised units, padded as
        :meth:`padded_training` (zeros on the padding); None when the series has none."""
        sd = self.series.noise_sd
        if sd is None:
            return None
        known = self.scaler.forward_var(self.series.y, sd)
        return np.concatenate([known, np.zeros(shapes.bucket(self.series.n) - known.size)])

    def padded_particles(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``ops``, ``params``, ``noise`` padded to a bucket size by repeating the last particle
        (results for the padding are sliced off)."""
        size = shapes.bucket(self.ops.shape[0], minimum=8)
        return (
            shapes.pad_repeat(self.ops, size, axis=0),
            shapes.pad_repeat(self.params, size, axis=0),
            shapes.pad_repeat(self.noise, size, axis=0),
        )

    # -- predictions in normalised (or transformed) units ---------------------------------------
    def predictive(
        self, t_new: np.ndarray, include_noise: bool, full_cov: bool = False,
        covariates: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-particle predictive means ``[P, M]`` and variances ``[P, M]`` (covariances
        ``[P, M, M]`` with ``full_cov``) in normalised units. ``covariates``: ``[M, C]`` values
        of the covariates at ``t_new`` in data units (needed exactly when the fit has some)."""
        P, M = self.ops.shape[0], len(t_new)
        ops, params, noise = (jnp.asarray(a) for a in self.padded_particles())
        x, y, mask = self.padded_training()
        x, y, mask = jnp.asarray(_per_particle(x, ops.shape[0])), jnp.asarray(y), jnp.asarray(mask)
        known = self.known_var()
        x_all = self.inputs(t_new, covariates)
        parts = shapes.chunks(M) if not full_cov else [slice(0, M)]
        means, covs = [], []
        for part in parts:
            m = part.stop - part.start
            size = shapes.bucket_points(m) if not full_cov else shapes.bucket(m)
            x_new = _per_particle(shapes.pad_repeat(x_all[part], size, axis=0), ops.shape[0])
            if self.num_inducing > 0:
                mean, cov = _sparse_predictive(ops, params, noise, x, y, mask,
                                               jnp.asarray(x_new), full_cov, self.num_inducing,
                                               None if known is None else jnp.asarray(known))
            else:
                mean, cov = _predictive(
                    ops, params, noise, x, y, mask, jnp.asarray(x_new), full_cov=full_cov,
                    known_var=None if known is None else jnp.asarray(known),
                )
            means.append(np.asarray(mean)[:P, :m])
            covs.append(np.asarray(cov)[:P, :m, :m] if full_cov else np.asarray(cov)[:P, :m])
        if not parts:
            mean, cov = np.zeros((P, 0)), np.zeros((P, 0, 0) if full_cov else (P, 0))
        else:
            mean = np.concatenate(means, axis=1)
            cov = covs[0] if full_cov else np.concatenate(covs, axis=1)
        if not full_cov:
            mean, cov = self._state_space_rows(mean, cov, t_new)
        if include_noise:
            noise_var = np.exp(np.asarray(self.noise, dtype=np.float64))
            if full_cov:
                cov = cov + noise_var[:, None, None] * np.eye(M)
            else:
                cov = cov + noise_var[:, None]
        scale = self.forecast_scale(x_all)
        if np.any(scale != 1.0):
            cov = cov * (np.outer(scale, scale) if full_cov else scale**2)
        return mean, cov

    def predictive_scale(self) -> float:
        """The fit's factor for its forecasts' standard deviations beyond the data
        (``smc.calibrate``; 1 when off)."""
        values = self.history.get("predictive_scale") or [1.0]
        return float(np.ravel(values)[0])

    def forecast_scale(self, x_new: np.ndarray) -> np.ndarray:
        """Per prediction input (normalised) the factor for its standard deviation: the
        predictive scale after the last training time, 1 up to it."""
        t_new = x_new if np.ndim(x_new) == 1 else x_new[:, 0]
        t_train = self.x if np.ndim(self.x) == 1 else self.x[:, 0]
        last = np.max(t_train) if np.size(t_train) else -np.inf
        return np.where(np.asarray(t_new) > last, self.predictive_scale(), 1.0)

    def full_resolution_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The full-resolution stage's points, normalised: ``x [N]``, ``y [N]``."""
        fr = self.full_resolution
        return self.scaler.forward_t(fr.t), self.scaler.forward_y(fr.y)

    def _state_space_rows(self, mean, var, t_new, terms: bool = False):
        """``mean``, ``var`` ``[P, M]`` with the rows of the particles the full-resolution
        stage re-fitted replaced by the filter's predictions (and, with ``terms``, those
        particles' indices and top-level terms' means ``[R, C, M]``)."""
        fr = self.full_resolution
        rows = np.zeros(0, int) if fr is None else np.flatnonzero(fr.state_space)
        comps = None
        if rows.size:
            x, y = self.full_resolution_points()
            m, v, comps = predict_state_space(
                fr, x, y, self.ops[rows], self.params[rows], self.noise[rows],
                self.scaler.forward_t(np.asarray(t_new, dtype=np.float64)))
            mean, var = np.array(mean), np.array(var)
            mean[rows], var[rows] = m, v
        return (mean, var, rows, comps) if terms else (mean, var)

    def mixture(self, t_new: np.ndarray, include_noise: bool,
                covariates: np.ndarray | None = None) -> Mixture:
        mean, var = self.predictive(t_new, include_noise, covariates=covariates)
        return make_mixture(self.log_weights, mean, var, what=f"particles of {self.unique_id!r}")

    # -- predictions in data units --------------------------------------------------------------
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

    def quantiles(
        self, t_new: np.ndarray, probs: np.ndarray, include_noise: bool, point: str = "mean",
        covariates: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The point forecast ``[M]`` (the mixture's ``"mean"`` or ``"median"``) and the
        mixture's quantiles ``[K, M]`` at ``probs``, in data units (quantiles map through the
        monotone inverse of the normalisation unchanged)."""
        mix = self.mixture(t_new, include_noise, covariates)
        median = point == "median"
        # One bisection for the interval bounds and, last, the median.
        solve = np.append(probs, 0.5) if median else probs
        q = self.scaler.inverse_y(mix.quantiles(solve)) if solve.size else solve
        return (q[-1] if median else self.to_data_mean(mix)), q[: len(probs)]

    def particle_quantiles(
        self, t_new: np.ndarray, probs: np.ndarray, include_noise: bool, point: str = "mean",
        covariates: np.ndarray | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each particle's own Gaussian forecast in data units: its point forecast ``[P, M]``
        (mean, or median = the back-transformed mean) and its quantiles at each of ``probs``."""
        mean, var = self.predictive(t_new, include_noise, covariates=covariates)
        sd = np.sqrt(np.maximum(var, 0.0))
        z = ndtri(probs) if probs.size else np.zeros(0)
        s = self.scaler
        if s.transformed and point == "mean":
            mu = s.to_transformed(mean)
            points = inverse_mean(mu, s.value_scale * sd, s.boxcox_lambda)
        else:
            points = s.inverse_y(mean)
        return points, [s.inverse_y(mean + zk * sd) for zk in z]

    def log_predictive_density(
        self, t_new: np.ndarray, y: np.ndarray, *, joint: bool = False,
        covariates: np.ndarray | None = None,
    ) -> np.ndarray | float:
        """Log predictive density of observations ``y`` at ``t_new`` in data units (with the
        Jacobian of the normalisation and transform), including observation noise: per point
        ``[M]``, or with ``joint`` one number from the particles' joint predictive."""
        s = self.scaler
        if s.transformed and np.any(y <= 0):
            raise DataError(
                f"log_predictive_density: the model is fitted in {s.units} units, which need "
                "positive values"
            )
        z = s.forward_y(y)
        jac = s.forward_y_log_jacobian(y)
        if joint:
            mean, cov = self.predictive(t_new, include_noise=True, full_cov=True,
                                        covariates=covariates)
            value = mixture_joint_logpdf(self.log_weights, mean, cov, z)
            return float(value + np.sum(jac))
        mix = self.mixture(t_new, include_noise=True, covariates=covariates)
        return mix.logpdf(z) + jac

    # -- decomposition ------------------------------------------------------------------------
    def component_means(
        self,
        t_new: np.ndarray,
        split: Callable[[Kernel], Sequence[tuple[Kernel, str]]],
        labels: Sequence[str],
        covariates: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Posterior means ``[M]`` of labelled parts of the particles' kernels, in normalised
        units, averaged over the particles.

        ``split(expr)`` cuts a particle's expression into ``(term, label)`` pairs whose kernels
        add up to it; a term's mean is k_term(x*, x) (K + noise I)^-1 y (with the inducing
        points for a sparse posterior). Particles whose factorisation fails are dropped as in
        :meth:`mixture`. Returns the weighted sum per label of ``labels``.
        """
        P = self.ops.shape[0]
        particles = [jnp.asarray(a) for a in self.padded_particles()]
        x, y, mask = self.padded_training()
        x_shared = jnp.asarray(x)
        x, y, mask = (jnp.asarray(_per_particle(x, particles[0].shape[0])), jnp.asarray(y),
                      jnp.asarray(mask))
        known = self.known_var()
        if self.num_inducing > 0:
            # Each term's mean is K_term(x*, z) @ alpha_u: the same products over z.
            alpha, z, ok = _sparse_weights(*particles, x, y, mask, num_inducing=self.num_inducing,
                                           known_var=None if known is None else jnp.asarray(known))
            points = np.asarray(z)[:P]
        else:
            alpha, ok = _alpha(*particles, x, y, mask,
                               None if known is None else jnp.asarray(known))
            points = None
        alpha, ok = np.asarray(alpha)[:P], np.asarray(ok)[:P]
        usable = ok & np.all(np.isfinite(alpha), axis=1)
        # The mixture's checks: warn about (or fail on) particles that cannot be used.
        flags = np.where(usable, 0.0, np.nan)[:, None]
        mix = make_mixture(self.log_weights, flags, flags, what=f"particles of {self.unique_id!r}")
        w = np.zeros(P)
        w[mix.keep] = mix.weights
        terms, owners, kinds = [], [], []
        for p, e in enumerate(self.expressions()):
            if not mix.keep[p]:
                continue
            for term, kind in split(e):
                terms.append(term)
                owners.append(p)
                kinds.append(kind)
        M = len(t_new)
        x_all = self.inputs(t_new, covariates)
        comps = {k: np.zeros(M) for k in labels}
        if terms and M:
            T = len(terms)
            t_ops, t_params = pack(terms, max_depth=self.max_depth)
            size = shapes.bucket(T, minimum=8)
            term_alpha = shapes.pad_repeat(alpha[np.asarray(owners)], size, axis=0).copy()
            term_alpha[T:] = 0.0  # padding terms contribute nothing
            # Per-term training points: x for the exact posterior, the owner's z for sparse.
            term_x = _per_particle(x_shared, size) if points is None else jnp.asarray(
                shapes.pad_repeat(points[np.asarray(owners)], size, axis=0))
            t_ops = jnp.asarray(shapes.pad_repeat(t_ops, size, axis=0))
            t_params = jnp.asarray(shapes.pad_repeat(t_params, size, axis=0))
            means = np.zeros((T, M))
            for part in shapes.chunks(M):
                m = part.stop - part.start
                x_new = _per_particle(
                    shapes.pad_repeat(x_all[part], shapes.bucket_points(m), axis=0), size)
                chunk = _cross_means(
                    t_ops, t_params, jnp.asarray(x_new), term_x, jnp.asarray(term_alpha)
                )
                means[:, part] = np.asarray(chunk)[:T, :m]
            # Particles re-fitted at full resolution: their terms' means from the smoother.
            _, _, rows, smoothed = self._state_space_rows(np.zeros((P, M)), np.zeros((P, M)),
                                                          t_new, terms=True)
            for r, p in enumerate(rows):
                mine = [i for i, owner in enumerate(owners) if owner == p]
                means[mine] = smoothed[r, : len(mine)]
            for m_t, p, kind in zip(means, owners, kinds, strict=True):
                comps[kind] += w[p] * m_t
        return comps


__all__ = ["Posterior"]
