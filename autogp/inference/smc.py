"""Data-annealed sequential Monte Carlo over kernel structures (Saad et al., ICML 2023).

Particles start from the grammar's prior. Each round adds data, reweights every particle by its
incremental likelihood ``log p(y_new | y_old, particle)``, resamples when the effective sample
size falls below ``ess_threshold * P``, and rejuvenates with structure moves (exact MH) followed
by a batched hyperparameter refinement. The running sum of ``log mean_p w_p * increment_p`` is
the usual unbiased (in expectation of its exponential) estimate of ``log p(y)``.

This module runs whole fits (:func:`run_smc`, :func:`run_smc_panel`) and online updates
(:func:`update_smc`) from a grammar and :class:`~autogp.inference.settings.SMCSettings`; the
compiled round they repeat is in :mod:`autogp.inference.rounds`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from autogp._xla import jit
from autogp.inference import calibration, evidence
from autogp.inference import grammar as gr
from autogp.inference.rounds import (
    SMCState,
    compilation_counts,
    init_state,
    likelihood_fn,
    make_data,
    prepare_programs,
    run_draws,
    run_rounds,
)
from autogp.inference.settings import SMCSettings

Array = jax.Array


class SMCResult(NamedTuple):
    """The particle approximation of one series' posterior (arrays ``[P, ...]``)."""

    ops: np.ndarray
    params: np.ndarray
    noise: np.ndarray
    log_weights: np.ndarray
    # The SMC estimate of log p(y); with smc.likelihood_power = eta != 1, of the power
    # posterior's normaliser, log of the integral of p(y | T, theta)^eta p(T, theta).
    log_marginal_likelihood: float
    history: dict[str, list[Any]]


# --- schedules ---------------------------------------------------------------------------------
def schedule_counts(
    n: int, schedule: str = SMCSettings.schedule, num_rounds: int = SMCSettings.num_rounds,
    counts: Sequence[int] | None = None, initial: int | None = None,
) -> list[int]:
    """Data counts per round, increasing, ending at ``n``.

    * ``linear``: fractions 1/R, 2/R, ..., 1 of the data;
    * ``log``: geometrically spaced counts from a few points to n;
    * ``counts``: the given increasing list (its last entry is raised to n if smaller);
    * ``online``: one point at a time after ``initial`` points.
    """
    if schedule == "linear":
        out = [max(1, int(math.ceil(n * (r + 1) / num_rounds))) for r in range(num_rounds)]
    elif schedule == "log":
        start = max(2, min(n, 8))
        out = [int(round(v)) for v in np.geomspace(start, n, num_rounds)]
    elif schedule == "counts":
        if not counts:
            raise ValueError("schedule 'counts' needs a list of counts")
        out = [min(int(c), n) for c in counts]
        if out[-1] < n:
            out.append(n)
    elif schedule == "online":
        start = initial if initial is not None else max(1, n - num_rounds)
        out = list(range(start, n + 1))
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    out = sorted(set(max(1, min(c, n)) for c in out))
    return out


def _result(state: SMCState, history, g: int = 0, squares: Sequence[list[float]] | None = None,
            prior_origins: float = 0.0) -> SMCResult:
    if squares is not None:  # per series, unlike the rest of the history
        history = {**history, **_calibration_history(squares[g], prior_origins)}
    return SMCResult(
        ops=np.asarray(state.ops[g]),
        params=np.asarray(state.params[g]),
        noise=np.asarray(state.noise[g]),
        log_weights=np.asarray(state.log_weights[g]),
        log_marginal_likelihood=float(state.log_evidence[g]),
        history=history,
    )


def _calibration_history(squares: Sequence[float], prior_origins: float) -> dict[str, list]:
    """A series' held-out origins' mean squared scores and the forecast scale they give
    (:mod:`autogp.inference.calibration`), as history entries."""
    return {"held_out_mean_squares": [float(v) for v in squares],
            "predictive_scale": [calibration.predictive_scale(squares, prior_origins)]}


#: ``structure_weights`` that reweigh the final particles by the modes they found
#: (``_mode_weights``) instead of keeping the SMC's importance weights.
MODE_WEIGHTS = ("laplace", "prequential")


def pool_runs(runs: Sequence[SMCResult], *, joint_weights: bool = False) -> SMCResult:
    """Independent SMC runs of one series as one particle approximation.

    Run r's particles keep their normalised weights, scaled by its share Z_r / sum_s Z_s of the
    evidence estimates, and the pooled evidence is their mean (each Z_r is unbiased, so their
    mean is too, with less variance). ``joint_weights``: the runs' weights were computed over
    all of their particles together (the modes' weights of ``_mode_weights``), so they are
    kept as they are."""
    log_z = np.array([r.log_marginal_likelihood for r in runs], dtype=np.float64)
    if joint_weights:
        log_weights = np.concatenate([np.asarray(r.log_weights) for r in runs])
    else:
        log_share = log_z - logsumexp(log_z)
        log_weights = np.concatenate([
            np.asarray(r.log_weights) - logsumexp(r.log_weights) + share
            for r, share in zip(runs, log_share, strict=True)
        ])
    return SMCResult(
        ops=np.concatenate([r.ops for r in runs]),
        params=np.concatenate([r.params for r in runs]),
        noise=np.concatenate([r.noise for r in runs]),
        log_weights=log_weights,
        log_marginal_likelihood=float(logsumexp(log_z) - np.log(len(runs))),
        history={**runs[0].history, "run_log_marginal_likelihood": log_z.tolist()},
    )


def run_smc_panel(
    xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    grammar: gr.Grammar,
    settings: SMCSettings,
    *,
    key: Array,
    callback: Callable[[int, int], None] | None = None,
    debug: bool = False,
    pad_to: int | None = None,
    seasonal_periods: Sequence[float | Sequence[float] | None] | None = None,
    known_vars: Sequence[np.ndarray | None] | None = None,
) -> list[SMCResult]:
    """Fit G series (normalised x in [0, 1], y standardised) in one compiled program.

    ``known_vars``: per series the known variances of its observations (normalised units;
    None where it has none), added to the learned noise.

    ``seasonal_periods`` (normalised units; per series a period, a list of periods, or None
    where unknown) add each series' calendar seasons to the period proposal. With
    ``settings.restarts`` R > 1 each series is fitted R times independently (R adjacent groups
    of the program's series axis) and the runs are pooled by :func:`pool_runs`; a run whose
    particles all failed gets zero weight there, and only a series whose runs all failed is an
    error."""
    if np.any(np.isnan(np.concatenate([np.asarray(y) for y in ys]))):
        raise ValueError("y contains NaN; clean the data first (autogp.data does)")
    runs = settings.restarts
    periods = list(seasonal_periods) if seasonal_periods is not None else [None] * len(xs)

    def repeat(seq):
        return [v for v in seq for _ in range(runs)]

    known = list(known_vars) if known_vars is not None else [None] * len(xs)
    xs, ys, periods, known = repeat(xs), repeat(ys), repeat(periods), repeat(known)
    longest = max(len(x) for x in xs)
    # Inducing points live on the time axis: inputs with covariates get the exact likelihood.
    num_inducing = settings.num_inducing(longest) if np.ndim(xs[0]) == 1 else 0
    k_init, k_data, k_run = jax.random.split(key, 3)
    data = make_data(xs, ys, pad_to=pad_to, shuffle=settings.shuffle, key=k_data,
                     period_peaks=settings.period_peaks, seasonal_periods=periods,
                     power=[settings.power_for(len(x)) for x in xs], known_vars=known)
    per_series = [
        schedule_counts(len(x), settings.schedule, settings.num_rounds, settings.counts)
        for x in xs
    ]
    R = max(len(c) for c in per_series)
    # Align schedules of different lengths on their last rounds (shorter ones repeat early counts).
    counts = np.array([[c[max(0, len(c) - R + r)] for c in per_series] for r in range(R)])
    # Every program of the fit compiled side by side before it starts (exported programs).
    prepare_programs(grammar, settings, data, counts, num_particles=settings.num_particles,
                     num_inducing=num_inducing)
    by_modes = settings.structure_weights in MODE_WEIGHTS
    if by_modes:  # the modes are told apart by their Laplace widths: the Hessian program
        evidence.prepare_program(grammar, data, num_particles=settings.num_particles,
                                 num_inducing=num_inducing,
                                 learn_noise=settings.refine.learn_noise)
    state = init_state(grammar, len(xs), settings.num_particles, key=k_init, data=data,
                       settings=settings)
    # The rounds' held-out forecasts need the points in time order and the exact predictive.
    calibrate = settings.calibrate and not settings.shuffle and num_inducing == 0
    recorded: list | None = [] if calibrate else None
    state, history = run_rounds(grammar, settings, state, data, counts, key=k_run,
                                num_inducing=num_inducing, callback=callback, debug=debug,
                                record=recorded)
    squares = None
    if calibrate:
        squares = [calibration.origin_mean_squares(calibration.held_out_scores(recorded, data, g))
                   for g in range(len(xs))]
    if by_modes:
        state = _mode_weights(grammar, settings, state, data, num_inducing, runs)
    draws = settings.refine.posterior_draws
    if draws > 1:
        # Its own key, so the rounds are the same with and without draws.
        state = run_draws(grammar, settings, draws, state, data,
                          key=jax.random.fold_in(key, 7), num_inducing=num_inducing)
    finite = np.isfinite(np.asarray(state.log_evidence)).reshape(-1, runs)
    if not np.all(finite.any(axis=1)):
        bad = np.flatnonzero(~finite.any(axis=1)).tolist()
        raise FloatingPointError(
            f"every particle failed (non-finite likelihood) for series {bad}; the data may be "
            "degenerate (check for constant or extreme values)"
        )
    results = [_result(state, history, g, squares, settings.calibration_prior)
               for g in range(len(xs))]
    if runs == 1:
        return results
    # Mode weights were computed over the modes of all of a series' runs together.
    pooled = [pool_runs(results[g : g + runs], joint_weights=by_modes)
              for g in range(0, len(results), runs)]
    if squares is None:
        return pooled
    # The runs' held-out origins are alike evidence: one scale from all of them.
    return [p._replace(history={**p.history, **_calibration_history(
                [v for r in range(g * runs, (g + 1) * runs) for v in squares[r]],
                settings.calibration_prior)})
            for g, p in enumerate(pooled)]


def _mode_weights(grammar: gr.Grammar, settings: SMCSettings, state: SMCState, data,
                  num_inducing: int, runs: int = 1) -> SMCState:
    """The state with each series' particle weights (over its ``runs`` adjacent groups) from
    their modes (:mod:`autogp.inference.evidence`): each mode's Laplace evidence, or with
    ``structure_weights = "prequential"`` its second-half predictive score."""
    G, P = state.noise.shape
    flat = [np.asarray(a).reshape((G * P,) + a.shape[2:])
            for a in (state.ops, state.params, state.noise)]
    ev = evidence.particle_evidence(grammar, *flat, data, num_particles=P,
                                    num_inducing=num_inducing,
                                    learn_noise=settings.refine.learn_noise,
                                    power=settings.evidence_power)
    prequential = settings.structure_weights == "prequential"
    if prequential:  # the modes as found by their Laplace widths, weighed by their scores
        ev = ev._replace(log_evidence=np.where(
            np.isfinite(ev.log_evidence),
            evidence.prequential_log_scores(grammar, *flat, data, num_particles=P,
                                            num_inducing=num_inducing), -np.inf))
    log_weights = np.empty(G * P)
    for g in range(0, G, runs):
        members = np.arange(g * P, (g + runs) * P)
        log_weights[members] = evidence.laplace_log_weights(flat[0], ev, members,
                                                            mirrors=not prequential)
    if not np.all(np.isfinite(log_weights.reshape(-1, runs * P)).any(axis=1)):
        return state  # no finite evidence: keep the SMC's weights (the check below reports)
    return state._replace(log_weights=jnp.asarray(log_weights.reshape(G, P)))


def run_smc(x, y, grammar: gr.Grammar, settings: SMCSettings, *, key: Array, callback=None,
            debug: bool = False, seasonal_period: float | Sequence[float] | None = None,
            known_var: np.ndarray | None = None) -> SMCResult:
    """Fit one series: normalised ``x`` (in [0, 1]) and standardised ``y`` (``known_var``:
    its observations' known variances in those units, or None)."""
    return run_smc_panel([np.asarray(x)], [np.asarray(y)], grammar, settings, key=key,
                         callback=callback, debug=debug, seasonal_periods=[seasonal_period],
                         known_vars=[known_var])[0]


def update_smc(result: SMCResult, x_all, y_all, grammar: gr.Grammar, settings: SMCSettings, *,
               key: Array, callback=None, num_rounds: int | None = None,
               seasonal_period: float | Sequence[float] | None = None,
               known_var: np.ndarray | None = None) -> SMCResult:
    """Online update: continue a fitted particle set on more data (old points first;
    ``known_var``: the known variances of all of them, or None).

    Reweights by the likelihood of the new points, resamples if needed and rejuvenates, over
    ``num_rounds`` rounds (default: one round per new point, at most ``settings.num_rounds``).
    Copies made by ``refine.posterior_draws`` continue as particles of their own (no new draws).
    """
    x_all, y_all = np.asarray(x_all), np.asarray(y_all)
    # Inducing points live on the time axis: inputs with covariates keep the exact likelihood.
    num_inducing = settings.num_inducing(len(x_all)) if x_all.ndim == 1 else 0
    n_old = int(np.asarray(result.history["count"][-1]).ravel()[0]) if result.history.get(
        "count") else len(x_all)
    n_new = len(x_all)
    if n_new <= n_old:
        return result
    # The learning rate the particles were fitted with: that of the old data's length.
    data = make_data([x_all], [y_all], period_peaks=settings.period_peaks,
                     seasonal_periods=[seasonal_period], power=[settings.power_for(n_old)],
                     known_vars=[known_var])
    rounds = num_rounds or min(n_new - n_old, settings.num_rounds)
    counts = np.unique(np.linspace(n_old, n_new, rounds + 1).round().astype(int)[1:])
    state = SMCState(
        ops=jnp.asarray(result.ops)[None], params=jnp.asarray(result.params)[None],
        noise=jnp.asarray(result.noise)[None], log_likelihood=jnp.zeros((1, len(result.noise))),
        log_weights=jnp.asarray(result.log_weights)[None],
        log_evidence=jnp.asarray([result.log_marginal_likelihood]),
    )
    # Current likelihoods on the old data (the state stores them only inside a fit).
    old = likelihood_fn(data, jnp.asarray([n_old]), len(result.noise), num_inducing)
    state = state._replace(log_likelihood=old(state.ops[0], state.params[0], state.noise[0])[None])
    state, history = run_rounds(grammar, settings, state, data, counts[:, None], key=key,
                                num_inducing=num_inducing, callback=callback)
    if settings.structure_weights in MODE_WEIGHTS:
        state = _mode_weights(grammar, settings, state, data, num_inducing)
    merged = _merged_history(result.history, history)
    return _result(state, merged)


def _merged_history(old: dict, new: dict) -> dict:
    """A continued fit's history: each round's entries after the earlier ones; the fit's
    per-series predictive scale carries over (the new rounds are too few to re-estimate it)."""
    merged = {k: list(old.get(k, [])) + v for k, v in new.items()}
    for key in ("predictive_scale", "held_out_mean_squares"):
        if key in old:
            merged[key] = list(old[key])
    return merged


@functools.partial(jit, static_argnames=("num_particles", "num_inducing"))
def _likelihoods(data, count, ops, params, noise, *, num_particles: int, num_inducing: int):
    """The particles' tempered log likelihoods on the first ``count`` points of ``data``, as
    one compiled program (run eagerly, the evaluator's loops dispatch op by op)."""
    return likelihood_fn(data, count, num_particles, num_inducing)(ops, params, noise)


def revise_smc(result: SMCResult, x_old, y_old, x_new, y_new, grammar: gr.Grammar,
               settings: SMCSettings, *, key: Array, num_rounds: int = 1, callback=None,
               seasonal_period: float | Sequence[float] | None = None,
               known_old: np.ndarray | None = None,
               known_new: np.ndarray | None = None) -> SMCResult:
    """Continue a fitted particle set on revised data (points removed, values replaced).

    The old data ``x_old``, ``y_old`` are those the particles were fitted on, the new ones
    replace them. Each particle is reweighted by its likelihood ratio
    ``(p(y_new | particle) / p(y_old | particle))^eta`` (eta: the learning rate the particles
    were fitted with), which is Bayes' rule moving the posterior from the old data to the new;
    then ``num_rounds`` SMC rounds on the new data resample when the effective sample size is
    low and rejuvenate (the first round does the reweighting). ``num_rounds = 0``: the
    reweighting alone, particles unchanged. ``known_old``, ``known_new``: the observations'
    known variances (or None).
    """
    x_old, y_old, x_new, y_new = (np.asarray(a) for a in (x_old, y_old, x_new, y_new))
    if num_rounds < 0:
        raise ValueError(f"num_rounds must be >= 0, got {num_rounds}")
    count = result.history.get("count")
    n_fit = int(np.asarray(count[-1]).ravel()[0]) if count else len(x_old)
    power = [settings.power_for(n_fit)]
    num_inducing = settings.num_inducing(len(x_new)) if x_new.ndim == 1 else 0
    P = len(result.noise)
    old_data = make_data([x_old], [y_old], power=power, known_vars=[known_old])
    data = make_data([x_new], [y_new], period_peaks=settings.period_peaks,
                     seasonal_periods=[seasonal_period], power=power, known_vars=[known_new])
    state = SMCState(
        ops=jnp.asarray(result.ops)[None], params=jnp.asarray(result.params)[None],
        noise=jnp.asarray(result.noise)[None], log_likelihood=jnp.zeros((1, P)),
        log_weights=jnp.asarray(result.log_weights)[None],
        log_evidence=jnp.asarray([result.log_marginal_likelihood]),
    )
    particles = (state.ops[0], state.params[0], state.noise[0])
    old = _likelihoods(old_data, jnp.asarray([len(x_old)]), *particles, num_particles=P,
                       num_inducing=num_inducing)
    state = state._replace(log_likelihood=old[None])
    if num_rounds == 0:
        new_ll = np.asarray(_likelihoods(data, jnp.asarray([len(x_new)]), *particles,
                                         num_particles=P, num_inducing=num_inducing))
        prior = np.asarray(result.log_weights, dtype=np.float64)
        prior = np.where(np.isnan(prior), -np.inf, prior)
        prior = prior - logsumexp(prior)
        increment = np.where(np.isfinite(new_ll), new_ll - np.asarray(state.log_likelihood[0]),
                             -np.inf)
        log_norm = float(logsumexp(prior + increment))
        if not np.isfinite(log_norm):
            raise FloatingPointError("no particle gives the revised data a finite likelihood")
        history = {**result.history, "count": [*result.history.get("count", []), [len(x_new)]]}
        return result._replace(log_weights=prior + increment - log_norm, history=history,
                               log_marginal_likelihood=result.log_marginal_likelihood + log_norm)
    counts = np.full((num_rounds, 1), len(x_new))
    state, history = run_rounds(grammar, settings, state, data, counts, key=key,
                                num_inducing=num_inducing, callback=callback)
    if not np.isfinite(float(state.log_evidence[0])):
        raise FloatingPointError("no particle gives the revised data a finite likelihood")
    if settings.structure_weights in MODE_WEIGHTS:
        state = _mode_weights(grammar, settings, state, data, num_inducing)
    merged = _merged_history(result.history, history)
    return _result(state, merged)


__all__ = [
    "SMCResult",
    "compilation_counts",
    "pool_runs",
    "revise_smc",
    "run_smc",
    "run_smc_panel",
    "schedule_counts",
    "update_smc",
]
