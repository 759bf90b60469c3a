"""A per-series predictive scale from the SMC's own held-out forecasts.

Data annealing fits each round's particles to the first ``c_r`` points only, so the points
after ``c_r`` are still unseen by them. Their predictive distribution of those points, as the
weighted mixture of the particles' Gaussian predictives, is an honest forecast made inside the
training data; its probability integral transforms, mapped to standard-normal scores
``z = Phi^-1(F(y))``, are N(0, 1) where the forecasts are calibrated. Where they are wider, the
series' intervals should widen by about their root mean square.

:func:`held_out_scores` computes those scores from the rounds' recorded particles, from each
round on at least half of the series (earlier rounds have seen too little to say how the final
fit forecasts), at up to a quarter of the series' length ahead. :func:`predictive_scale` turns
them into one factor for the forecast's standard deviations, shrunk towards 1 by a prior worth
``prior_origins`` well-calibrated origins (scores of one origin are strongly correlated over
its steps, so origins, not points, are the units of evidence), and never below 1: the rounds'
forecasts are fitted with the data centred on the whole series' recent level, which the early
rounds have not seen, so they can only look better calibrated than the final forecast is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp, ndtr, ndtri

from autogp._x64 import with_x64
from autogp._xla import jit
from autogp.evaluator import posterior_predictive

#: Rounds on fewer than this share of a series' points are not used.
FROM_SHARE = 0.5
#: Steps ahead scored from each round, as a share of the series' length (at least 1).
STEPS_SHARE = 0.25
#: Scores are clipped to this many standard deviations: a PIT of 0 or 1 (a point far outside
#: every particle's predictive) would otherwise be infinite.
MAX_SCORE = 6.0


@jit
def _particle_predictive(ops, params, noise, x, y, mask, x_new, known_var):
    """Each particle's predictive means and variances ``[P, M]`` of noisy observations at
    ``x_new`` given the masked training points."""
    return posterior_predictive(ops, params, noise, x, y, mask, x_new, observation_noise=True,
                                full_cov=False, known_var=known_var)


def mixture_scores(log_weights: np.ndarray, means: np.ndarray, variances: np.ndarray,
                   y: np.ndarray) -> np.ndarray:
    """Standard-normal scores ``Phi^-1(F(y))`` ``[M]`` of values ``y`` under the Gaussian
    mixture with ``log_weights`` ``[P]`` and per-particle ``means``, ``variances`` ``[P, M]``.
    Particles with a non-finite weight, mean or variance are left out; NaN where none is
    left."""
    lw = np.asarray(log_weights, dtype=np.float64)
    means, variances = np.asarray(means, np.float64), np.asarray(variances, np.float64)
    ok = np.isfinite(lw) & np.all(np.isfinite(means) & np.isfinite(variances)
                                  & (variances > 0), axis=1)
    if not ok.any():
        return np.full(np.shape(y), np.nan)
    w = np.exp(lw[ok] - logsumexp(lw[ok]))
    cdf = w @ ndtr((np.asarray(y)[None, :] - means[ok]) / np.sqrt(variances[ok]))
    return np.clip(ndtri(np.clip(cdf, 0.0, 1.0)), -MAX_SCORE, MAX_SCORE)


def _per_particle(x, P: int):
    return x if np.ndim(x) == 1 else np.broadcast_to(x, (P,) + np.shape(x))


@with_x64
def held_out_scores(rounds: Sequence[tuple[np.ndarray, object]], data, g: int
                    ) -> list[np.ndarray]:
    """Series ``g``'s scores, one array per usable round (steps 1, 2, ... ahead), from
    ``rounds``: ``(counts [G], state)`` after each round, the state's arrays ``[G, P, ...]``,
    and the fit's :class:`~autogp.inference.smc_round.Data` (points in time order)."""
    n = int(np.asarray(data.length)[g])
    steps = max(1, math.ceil(STEPS_SHARE * n))
    x, y = np.asarray(data.x, np.float64)[g], np.asarray(data.y, np.float64)[g]
    known = None if data.known_var is None else np.asarray(data.known_var, np.float64)[g]
    N = x.shape[0]
    out = []
    for counts, state in rounds:
        c = int(np.asarray(counts)[g])
        if c < FROM_SHARE * n or c >= n:
            continue
        k = min(steps, n - c)
        # A fixed number of prediction points per series (repeats of the last are sliced off),
        # so one compiled program serves every round.
        idx = np.minimum(c + np.arange(steps), n - 1)
        ops, params, noise = (np.asarray(a)[g] for a in (state.ops, state.params, state.noise))
        P = ops.shape[0]
        mask = np.arange(N) < c
        mean, var = _particle_predictive(
            jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
            jnp.asarray(_per_particle(x, P)), jnp.asarray(y), jnp.asarray(mask),
            jnp.asarray(_per_particle(x[idx], P)),
            None if known is None else jnp.asarray(np.where(mask, known, 0.0)))
        z = mixture_scores(np.asarray(state.log_weights)[g], np.asarray(mean)[:, :k],
                           np.asarray(var)[:, :k], y[c : c + k])
        if np.all(np.isfinite(z)):
            out.append(z)
    return out


def origin_mean_squares(scores: Sequence[np.ndarray]) -> list[float]:
    """Each origin's mean squared score (1 where its forecasts are calibrated)."""
    return [float(np.mean(np.square(z))) for z in scores if np.size(z)]


def predictive_scale(per_origin: Sequence[float], prior_origins: float) -> float:
    """The factor for the forecast's standard deviations from the origins' mean squared scores
    (:func:`origin_mean_squares`): the square root of their mean, with ``prior_origins``
    origins of mean square 1 added, and at least 1."""
    per_origin = list(per_origin)
    if not per_origin:
        return 1.0
    mean_square = (prior_origins + sum(per_origin)) / (prior_origins + len(per_origin))
    return float(math.sqrt(max(1.0, mean_square)))


__all__ = ["held_out_scores", "mixture_scores", "origin_mean_squares", "predictive_scale"]
