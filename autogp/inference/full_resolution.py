"""Particles scored on a long series at full resolution by the state-space (Kalman filter)
likelihood, and their predictions from the filter and smoother.

A long series is searched on a window (``data.window`` points, thinned for sub-daily data);
the full-resolution stage (``autogp.pipeline.full_resolution``) then re-fits the heaviest
structures that have a state-space form on the last points of the series at full
resolution, by :func:`refit`, and keeps what it did in a :class:`FullResolution`: the points
it used, which particles it re-fitted (they are predicted by :func:`predict` from the filter
run to the end of those points), and why the others kept the window's dense fit.

Times and values are in the window fit's normalisation (its ``Scaler``): points before the
window have normalised times below 0, so the windowed parameters start the re-fit unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import optax

from autogp._xla import jit
from autogp.inference import shapes
from autogp.inference.grammar import Grammar, log_prior_noise, log_prior_params
from autogp.inference.refine import optimize
from autogp.statespace import (
    REASONS,
    state_space_log_likelihood,
    state_space_posterior,
    time_invariant,
    top_level_terms,
)

#: Why a particle kept the window's fit, beyond the tree-level :data:`statespace.REASONS`.
NOT_REFITTED = -1
NOT_FINITE = -2
FALLBACK_REASONS = {
    **{k: v for k, v in REASONS.items() if k},
    NOT_REFITTED: "below the heaviest structures with a state-space form, which the stage "
                  "re-fits (data.full_resolution_structures)",
    NOT_FINITE: "its full-resolution likelihood was not finite",
}
STATE_SPACE = "state space (Kalman filter), full resolution"


@dataclass(frozen=True)
class FullResolution:
    """What the full-resolution stage did to a posterior's particles.

    ``t``, ``y``: the points it fitted (the series' time axis and data units). Per particle:
    ``state_space`` (re-fitted on them and predicted by the filter), ``reason`` (a key of
    :data:`FALLBACK_REASONS` for the others, 0 for the re-fitted ones) and ``log_likelihood``
    (the exact log marginal likelihood of the points, normalised units; NaN where not
    computed). ``dim``: the state dimension the filter ran in. ``note``: why the stage
    re-fitted nothing (empty when it ran)."""

    t: np.ndarray
    y: np.ndarray
    state_space: np.ndarray
    reason: np.ndarray
    log_likelihood: np.ndarray
    dim: int
    note: str = ""

    def scored_by(self, p: int, window: str) -> str:
        """Which likelihood scored particle ``p`` (``window``: the window's, in words), and
        why, for a particle that kept the window's fit."""
        if self.state_space[p]:
            return f"{STATE_SPACE} on the last {len(self.t)} points"
        why = self.note or FALLBACK_REASONS.get(int(self.reason[p]), "unknown")
        return f"{window} (kept: {why})"


@functools.partial(jit, static_argnames=("grammar", "dim", "steps", "learning_rate",
                                             "period_step", "regular_grid", "method"))
def _refit(ops, params, noise, x, y, grammar, dim, steps, learning_rate, period_step,
           regular_grid, method):
    def log_posterior(p, n):
        ll = state_space_log_likelihood(ops, p, n, x, y, dim=dim, regular_grid=regular_grid,
                                        method=method)
        return ll + log_prior_params(grammar, ops, p) + log_prior_noise(grammar, n), ll

    out = optimize(log_posterior, ops, params, noise, optimizer=optax.adam(learning_rate),
                   steps=steps, period_step=period_step)
    # The objective's last pass scores the end point; score the kept point once more so that
    # a particle whose steps did not improve it has its own likelihood too.
    ll = state_space_log_likelihood(ops, out.params, out.noise, x, y, dim=dim,
                                    regular_grid=regular_grid, method=method)
    return out.params, out.noise, ll


def regular(x: np.ndarray) -> bool:
    """The points are equally spaced (the filter then uses one transition matrix)."""
    d = np.diff(np.asarray(x, dtype=np.float64))
    return d.size > 0 and bool(np.allclose(d, d[0], rtol=1e-9, atol=0.0)) and d[0] > 0


def refit(ops, params, noise, x, y, *, grammar: Grammar, dim: int, steps: int,
          learning_rate: float, period_step: float = 1.0, batch: int = 1):
    """MAP re-fit of particles ``[P]`` on ``(x, y)`` (normalised) by Adam in unconstrained
    space on the state-space log likelihood plus the parameter and noise priors, all
    particles in one compiled program. Returns ``(params, noise, log_likelihood)`` (numpy)
    at the better of the start and the end (the log likelihood without the priors).
    ``batch``: fewer particles are padded to this many (one compiled program for all)."""
    x = np.asarray(x, dtype=np.float64)
    P = len(noise)
    if P < batch:  # repeat the last particle: one program for any number of them
        ops, params, noise = (shapes.pad_repeat(np.asarray(a), batch, axis=0)
                              for a in (ops, params, noise))
    grid = regular(x)
    # The Chandrasekhar recursions where every tree starts time-invariant (the likelihood falls
    # back to the filter by itself if a step leaves that); else the filter without that check.
    fast = grid and bool(np.all(time_invariant(ops, params, noise, x, y, dim=int(dim))))
    p, n, ll = _refit(jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
                      jnp.asarray(x), jnp.asarray(y, dtype=jnp.float64), grammar, int(dim),
                      int(steps), float(learning_rate), float(period_step), grid,
                      "auto" if fast else "kalman")
    return np.asarray(p)[:P], np.asarray(n)[:P], np.asarray(ll)[:P]


def predict(fr: FullResolution, x, y, ops, params, noise, x_new):
    """Means and variances ``[P, M]`` of f (white-noise atoms in the variance, as the dense
    predictive) at normalised times ``x_new`` for particles ``ops``/``params``/``noise``
    ``[P]``, from the filter and smoother on the normalised points ``(x, y)``; plus each
    particle's top-level terms' means ``[P, C, M]`` (C the most terms of a tree, NaN padding).
    One particle at a time (the smoother keeps ``N dim^2`` floats per particle); the
    prediction points are padded to a bucket so that horizons share their programs."""
    M = len(x_new)
    size = shapes.bucket_points(M) if M <= shapes.CHUNK else M
    x_pad = shapes.pad_repeat(np.asarray(x_new, dtype=np.float64), size, axis=0)
    means, variances, terms = [], [], []
    for p in range(ops.shape[0]):
        # every tree's terms padded to the most a heap holds: one program for all trees
        slots = top_level_terms(ops[p:p + 1])
        width = (ops.shape[1] + 1) // 2
        padded = np.full((1, width), -1, np.int32)
        padded[:, : slots.shape[1]] = slots
        mean, var, comp, _ = state_space_posterior(
            ops[p:p + 1], params[p:p + 1], noise[p:p + 1], x, y, None, x_pad, dim=fr.dim,
            components=padded)
        means.append(np.asarray(mean)[0, :M])
        variances.append(np.asarray(var)[0, :M])
        terms.append(np.asarray(comp)[0, : int(np.sum(slots >= 0)), :M])
    width = max((t.shape[0] for t in terms), default=0)
    comps = np.full((len(terms), width, M), np.nan)
    for p, t in enumerate(terms):
        comps[p, : t.shape[0]] = t
    if not means:
        return np.zeros((0, M)), np.zeros((0, M)), comps
    return np.stack(means), np.stack(variances), comps


__all__ = ["FALLBACK_REASONS", "NOT_FINITE", "NOT_REFITTED", "STATE_SPACE", "FullResolution",
           "predict", "refit", "regular"]
