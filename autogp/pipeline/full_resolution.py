"""The full-resolution stage of a long series' fit: after the SMC on the window, the heaviest
structures with a state-space form are re-fitted on the last points of the series at full
resolution by the exact Kalman-filter likelihood, and forecast from the filter.

The SMC itself runs on the window (``data.window`` points, thinned for sub-daily data): its
rounds need thousands of likelihood evaluations, which the filter cannot afford on thousands of
points (about 15 us a step per particle at state dimension 44 on one core). The stage costs
``data.full_resolution_steps`` value-and-gradient passes of the few structures it re-fits.

Per series (``data.full_resolution``: "auto" takes series longer than the window and of at
least ``data.full_resolution_from`` points, "on" every series, "off" none):

1. the posterior's distinct structures are ranked by weight, each by its heaviest particle;
2. the heaviest ``data.full_resolution_structures`` of those whose tree has a state-space
   form within ``data.full_resolution_dim`` states (``autogp.statespace.support``) are
   re-fitted (Adam from the window's parameters, in the window's normalisation) on the last
   ``data.full_resolution_points`` observations, all in one compiled program;
3. they replace their structures' particles and share those structures' weight in proportion
   to their exact log marginal likelihoods on those points; every other particle keeps its
   window fit and weight (the two likelihoods score different data, so they are not compared),
   with the reason recorded (``Posterior.full_resolution``, read by ``explain()``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import logsumexp

from autogp.config import Config
from autogp.data import TimeSeries
from autogp.inference import shapes
from autogp.inference.full_resolution import (
    NOT_FINITE,
    NOT_REFITTED,
    FullResolution,
    refit,
)
from autogp.inference.posterior import Posterior
from autogp.pipeline.series_prior import series_engine
from autogp.statespace import BLOCK, support
from autogp.statespace.filter import round_up

#: The state dimension the filter runs in is a multiple of this (fewer compiled programs).
DIM_STEP = 16


def _applies(config: Config, total: int, left_out: int) -> bool:
    mode = config.data.full_resolution
    return mode == "on" or (mode == "auto" and left_out > 0
                            and total >= config.data.full_resolution_from)


def stage_applies(post: Posterior, config: Config) -> bool:
    """Whether the stage runs on a fit (before any covariate or noise check)."""
    return _applies(config, post.series.n + post.left_out, post.left_out)


def _refusal(series: TimeSeries) -> str:
    """Why the state-space likelihood cannot take ``series`` ("": it can)."""
    if series.covariates is not None and series.covariates.shape[1] > 0:
        return "the state-space likelihood takes no covariates"
    if series.noise_sd is not None:
        return "the state-space likelihood takes no known observation noise"
    return ""


def ge_weight_to(series: TimeSeries, config: Config, left_out: int) -> str:
    """The atom that takes ``GE``'s prior weight in the search of ``series`` (``left_out`` of
    its points outside the window), or "" for the config's own grammar: where the stage will
    re-fit (no covariates, no known noise), ``data.full_resolution_ge``, an atom with a
    state-space form, so that the structures the search finds can be re-fitted (``GE`` has
    none)."""
    atom = config.data.full_resolution_ge
    if atom == "GE" or not config.grammar.weights.GE or _refusal(series):
        return ""
    return atom if _applies(config, series.n, left_out) else ""


def with_ge_weight_to(config: Config, atom: str) -> Config:
    """``config`` with ``GE``'s prior weight added to ``atom``'s ("": ``config`` itself)."""
    if not atom:
        return config
    weights = config.grammar.weights
    return config.with_overrides({"grammar.weights.GE": 0.0,
                                  f"grammar.weights.{atom}": getattr(weights, atom) + weights.GE})


def _structures(post: Posterior) -> list[list[int]]:
    """The particles of each distinct structure, heaviest structure first."""
    w = post.weights()
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(np.asarray(post.ops)):
        groups.setdefault(row.tobytes(), []).append(i)
    return sorted(groups.values(), key=lambda idx: -float(w[idx].sum()))


def _kept(post: Posterior, t, y, reason: np.ndarray, note: str = "") -> Posterior:
    P = len(post.noise)
    fr = FullResolution(t, y, np.zeros(P, bool), reason, np.full(P, np.nan), 0, note)
    return dataclasses.replace(post, full_resolution=fr)


def full_resolution_stage(post: Posterior, series: TimeSeries, config: Config) -> Posterior:
    """``post`` (a window fit of ``series``) after the full-resolution stage (module doc);
    ``post`` itself where the stage does not apply."""
    if not stage_applies(post, config):
        return post
    d = config.data
    tail = series.last(d.full_resolution_points)
    t, y = np.asarray(tail.t, dtype=np.float64), np.asarray(tail.y, dtype=np.float64)
    P = len(post.noise)
    not_refitted = np.full(P, NOT_REFITTED)
    if why := _refusal(series):
        return _kept(post, t, y, not_refitted, why)
    # A transform chosen on a positive window meets the zeros of a longer tail here: they are
    # named below, not warned about by numpy's log.
    with np.errstate(divide="ignore", invalid="ignore"):
        x, z = post.scaler.forward_t(t), post.scaler.forward_y(y)
    if not np.all(np.isfinite(z)):
        return _kept(post, t, y, not_refitted,
                     f"values outside the window's {post.scaler.units} transform's domain")
    w = post.weights()
    groups = _structures(post)
    reps = np.array([max(idx, key=lambda i: w[i]) for idx in groups])
    cap = round_up(d.full_resolution_dim, BLOCK)
    size = shapes.bucket(len(reps), minimum=8)  # padded by repetition: fewer programs
    padded = shapes.pad_repeat(reps, size, axis=0)
    sup = support(post.ops[padded], post.params[padded], dim=cap)
    sup = sup._replace(**{k: v[: len(reps)] for k, v in sup._asdict().items()})
    reason = not_refitted.copy()
    for idx, why in zip(groups, sup.reason, strict=True):
        reason[idx] = int(why) or NOT_REFITTED  # supported ones not re-fitted: below the top
    # the heaviest structures among those with a state-space form
    fine = (sup.reason == 0) & (np.cumsum(sup.reason == 0) <= d.full_resolution_structures)
    if not fine.any():
        return _kept(post, t, y, reason)
    # Room for PER's order to grow a little as its length scale moves (else it scores -inf).
    dim = min(cap, round_up(int(sup.used[fine].max()) + DIM_STEP, DIM_STEP))
    # the parameter priors of the window fit (its learned prior group, where it has one)
    settings = series_engine(config, post.series)
    refine = settings.smc.refine
    chosen = reps[fine]
    params, noise, ll = refit(post.ops[chosen], post.params[chosen], post.noise[chosen], x, z,
                              grammar=settings.grammar, dim=dim,
                              steps=d.full_resolution_steps,
                              learning_rate=refine.learning_rate,
                              period_step=refine.period_step,
                              batch=d.full_resolution_structures)
    finite = np.isfinite(ll)
    for j in np.flatnonzero(~finite):
        reason[groups[np.flatnonzero(fine)[j]]] = NOT_FINITE
    if not finite.any():
        return _kept(post, t, y, reason)
    chosen, params, noise, ll = chosen[finite], params[finite], noise[finite], ll[finite]
    refitted = [groups[g] for g in np.flatnonzero(fine)[finite]]
    mass = float(sum(w[idx].sum() for idx in refitted))
    others = np.setdiff1d(np.arange(P), np.concatenate(refitted))
    with np.errstate(divide="ignore"):
        log_w = np.concatenate([np.log(mass) + ll - logsumexp(ll), np.log(w[others])])
    R = len(chosen)
    fr = FullResolution(
        t, y,
        state_space=np.arange(R + len(others)) < R,
        reason=np.concatenate([np.zeros(R, int), reason[others]]),
        log_likelihood=np.concatenate([ll, np.full(len(others), np.nan)]),
        dim=dim,
    )
    return dataclasses.replace(
        post,
        ops=np.concatenate([post.ops[chosen], post.ops[others]]),
        params=np.concatenate([params, post.params[others]]),
        noise=np.concatenate([noise, post.noise[others]]),
        log_weights=log_w,
        full_resolution=fr,
    )


__all__ = ["DIM_STEP", "full_resolution_stage", "ge_weight_to", "stage_applies",
           "with_ge_weight_to"]
