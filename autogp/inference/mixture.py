"""The predictive distribution of a weighted particle collection: a mixture of Gaussians.

Each particle p gives a Gaussian N(mu_p, sd_p^2) at every prediction point; with normalised
weights w_p the posterior predictive is the mixture sum_p w_p N(mu_p, sd_p^2). This module gives
its mean, its quantiles (vectorised bisection on the CDF, sum_p w_p Phi((q - mu_p) / sd_p) = level)
and its log density, and drops particles whose predictions are unusable.

Everything here works in one space (normalised or log units); callers map the results back to data
units with the (monotone) inverse of the normalisation, which carries quantiles over unchanged.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
from jax.scipy.special import logsumexp, ndtr
from jax.scipy.stats import norm

from autogp._x64 import with_x64
from autogp._xla import jit
from autogp.inference import shapes

# Bisection iterations: the bracket starts at most ~100 standard deviations wide; 200 halvings
# shrink any float64 bracket to adjacent floats, so the answer is as exact as the CDF itself.
_BISECTION_STEPS = 200
_BRACKET_SDS = 40.0


class PredictionError(ValueError):
    """No particle gives a usable prediction (all are NaN/infinite or have zero weight)."""


class AutoGPPredictionWarning(RuntimeWarning):
    """Some particles were dropped from a prediction because their output was not finite."""


@dataclass(frozen=True)
class Mixture:
    """A Gaussian mixture at M points: weights ``[P]`` (sum 1, all > 0), means and standard
    deviations ``[P, M]`` (finite, sd >= 0)."""

    weights: np.ndarray
    means: np.ndarray
    sds: np.ndarray
    keep: np.ndarray  # bool [P_original]: which input particles were kept

    @property
    def log_weights(self) -> np.ndarray:
        return np.log(self.weights)

    def mean(self) -> np.ndarray:
        """Mixture mean ``[M]``."""
        return self.weights @ self.means

    def variance(self) -> np.ndarray:
        """Mixture variance ``[M]`` (law of total variance)."""
        m = self.mean()
        return self.weights @ (self.sds**2 + (self.means - m) ** 2)

    def quantiles(self, probs: np.ndarray | list[float]) -> np.ndarray:
        """Quantiles ``[K, M]`` for probabilities ``probs`` ``[K]`` (each in (0, 1))."""
        return mixture_quantiles(self.weights, self.means, self.sds, probs)

    def logpdf(self, y: np.ndarray) -> np.ndarray:
        """Log density ``[M]`` of values ``y`` ``[M]`` (one per point)."""
        return mixture_logpdf(self.weights, self.means, self.sds, y)


def make_mixture(
    log_weights: np.ndarray, means: np.ndarray, variances: np.ndarray, *, what: str = "particles"
) -> Mixture:
    """Validate per-particle predictions and drop unusable particles.

    Particles with zero weight (log weight ``-inf``) are dropped silently; particles with
    positive weight whose means or variances are not finite anywhere are dropped with an
    :class:`AutoGPPredictionWarning` naming how many and how much weight they carried; the
    remaining weights are renormalised. Slightly negative variances (round-off) are clipped to
    0. Raises :class:`PredictionError` when nothing usable is left.
    """
    lw = np.asarray(log_weights, dtype=np.float64).reshape(-1)
    means = np.asarray(means, dtype=np.float64)
    variances = np.asarray(variances, dtype=np.float64)
    if means.ndim != 2 or means.shape != variances.shape or means.shape[0] != lw.size:
        raise ValueError(
            f"expected log_weights [P], means and variances [P, M], got {lw.shape}, "
            f"{means.shape}, {variances.shape}"
        )
    finite = np.all(np.isfinite(means), axis=1) & np.all(np.isfinite(variances), axis=1)
    lw_clean = np.where(np.isnan(lw) | (lw == np.inf), -np.inf, lw)
    keep = finite & (lw_clean > -np.inf)
    bad_weighted = ~finite & (lw_clean > -np.inf)
    if not np.any(keep):
        n = lw.size
        raise PredictionError(
            f"no usable {what}: all {n} give non-finite predictions or have zero weight "
            f"(the fitted covariance matrices could not be factorised; try more data, a "
            f"log transform or a different seed)"
        )
    w_all = np.exp(lw_clean - np.max(lw_clean[keep]))
    if np.any(bad_weighted):
        finite_top = np.max(lw_clean[lw_clean > -np.inf])
        lost = np.exp(lw_clean[bad_weighted] - finite_top).sum()
        total = np.exp(lw_clean[lw_clean > -np.inf] - finite_top).sum()
        warnings.warn(
            f"dropped {int(bad_weighted.sum())} of {lw.size} {what} whose predictions are not "
            f"finite (posterior weight {lost / total:.3g}); the others are renormalised",
            AutoGPPredictionWarning,
            stacklevel=3,
        )
    w = w_all[keep]
    w = w / w.sum()
    sds = np.sqrt(np.maximum(variances[keep], 0.0))
    return Mixture(w, means[keep], sds, keep)


@jit
def _quantiles_jit(log_w, means, sds, probs):
    # log_w [P], means/sds [P, M], probs [K] -> [K, M]
    w = jnp.exp(log_w)
    pos = sds > 0
    safe_sd = jnp.where(pos, sds, 1.0)
    live = (w > 0)[:, None]
    lo = jnp.min(jnp.where(live, means - _BRACKET_SDS * sds, jnp.inf), axis=0)
    hi = jnp.max(jnp.where(live, means + _BRACKET_SDS * sds, -jnp.inf), axis=0)
    width = jnp.maximum(hi - lo, 1e-300)
    lo, hi = lo - 1e-9 * width, hi + 1e-9 * width
    K = probs.shape[0]
    lo = jnp.broadcast_to(lo, (K,) + lo.shape)
    hi = jnp.broadcast_to(hi, (K,) + hi.shape)

    def cdf(q):  # q [K, M] -> [K, M]
        z = (q[:, None, :] - means[None]) / safe_sd[None]
        phi = jnp.where(pos[None], ndtr(z), (q[:, None, :] >= means[None]).astype(q.dtype))
        return jnp.einsum("p,kpm->km", w, phi)

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < probs[:, None]
        return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, _BISECTION_STEPS, body, (lo, hi))
    return 0.5 * (lo + hi)


@with_x64
def mixture_quantiles(weights, means, sds, probs) -> np.ndarray:
    """Quantiles ``[K, M]`` of the mixture sum_p w_p N(means[p], sds[p]^2) at each of M points.

    Solves sum_p w_p Phi((q - mu_p) / sd_p) = prob by bisection, vectorised over points and
    probabilities. A particle with sd 0 is a point mass. For a single particle the result equals
    ``mu + sd * norm.ppf(prob)`` to float64 precision.
    """
    weights = np.asarray(weights, dtype=np.float64)
    probs = np.atleast_1d(np.asarray(probs, dtype=np.float64))
    if np.any((probs <= 0) | (probs >= 1)):
        raise ValueError(f"probabilities must be in (0, 1), got {probs.tolist()}")
    means = np.asarray(means, dtype=np.float64)
    sds = np.asarray(sds, dtype=np.float64)
    K, M = probs.size, means.shape[1]
    log_w, means, sds = _padded(weights, means, sds)
    out = _quantiles_jit(
        jnp.asarray(log_w),
        jnp.asarray(means),
        jnp.asarray(sds),
        jnp.asarray(shapes.pad_repeat(probs, shapes.bucket(K, minimum=8))),
    )
    return np.asarray(out)[:K, :M]


def _padded(weights: np.ndarray, means: np.ndarray, sds: np.ndarray):
    """Log weights, means and sds padded to bucket sizes (zero-weight particles, repeated
    points), so that the compiled kernels are reused across sizes."""
    P, M = means.shape
    w = weights / weights.sum()
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    p_size, m_size = shapes.bucket(P, minimum=8), shapes.bucket(M)
    log_w = np.concatenate([log_w, np.full(p_size - P, -np.inf)])
    means = shapes.pad_repeat(means, m_size, axis=1)
    sds = shapes.pad_repeat(sds, m_size, axis=1)
    means = np.concatenate([means, np.zeros((p_size - P, m_size))])
    sds = np.concatenate([sds, np.ones((p_size - P, m_size))])
    return log_w, means, sds


@jit
def _logpdf_jit(log_w, means, sds, y):
    comp = norm.logpdf(y[None], means, jnp.maximum(sds, 1e-300))
    return logsumexp(log_w[:, None] + comp, axis=0)


@with_x64
def mixture_logpdf(weights, means, sds, y) -> np.ndarray:
    """log sum_p w_p N(y | means[p], sds[p]^2) at each of M points: ``[M]``."""
    weights = np.asarray(weights, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    M = means.shape[1]
    log_w, means, sds = _padded(weights, means, np.asarray(sds, dtype=np.float64))
    y = shapes.pad_repeat(np.asarray(y, dtype=np.float64), means.shape[1])
    out = _logpdf_jit(jnp.asarray(log_w), jnp.asarray(means), jnp.asarray(sds), jnp.asarray(y))
    return np.asarray(out)[:M]


def mixture_joint_logpdf(log_weights, means, covs, y) -> float:
    """log sum_p w_p N(y | means[p], covs[p]) for a vector ``y`` ``[M]`` (full covariances
    ``[P, M, M]``); particles whose covariance cannot be factorised are skipped."""
    lw = np.asarray(log_weights, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    terms, used = [], []
    for p in range(lw.size):
        if not np.isfinite(lw[p]) or not np.all(np.isfinite(covs[p])):
            continue
        jitter = 1e-12 * abs(float(np.mean(np.diag(covs[p])))) * np.eye(y.size)
        try:
            L = np.linalg.cholesky(covs[p] + jitter)
        except np.linalg.LinAlgError:
            continue
        r = np.linalg.solve(L, y - means[p])
        log_det_half = np.log(np.diag(L)).sum()
        terms.append(lw[p] - 0.5 * r @ r - log_det_half - 0.5 * y.size * np.log(2 * np.pi))
        used.append(lw[p])
    if not terms:
        raise PredictionError("no particle gives a usable joint predictive density")
    # Renormalise over the particles that were usable.
    return float(scipy.special.logsumexp(terms) - scipy.special.logsumexp(used))


__all__ = [
    "AutoGPPredictionWarning",
    "Mixture",
    "PredictionError",
    "make_mixture",
    "mixture_joint_logpdf",
    "mixture_logpdf",
    "mixture_quantiles",
]
