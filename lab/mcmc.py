"""Independent MCMC chains over kernel structures on all the data (a baseline for the SMC).

:func:`fit_mcmc` runs P chains side by side. Every chain starts from a draw of the grammar's
prior; each iteration applies ``settings.structure_moves`` exact Metropolis-Hastings structure
moves (:func:`autogp.inference.moves.structure_move`) followed by the parameter refinement of
``settings.refine`` (optimisation or HMC), exactly one rejuvenation of
:func:`autogp.inference.rounds.smc_round`, but always on the full data set and with no reweighting
or resampling.

Implementation: the SMC's compiled round is reused with every round's data count equal to n,
``ess_threshold = 0`` (never resample) and ``rejuvenate = "always"``. The first round's
reweighting by the full likelihood (the only non-zero increment) is discarded at the end: the
result's weights are uniform, ``log(1/P)``. The chains' states are the particles. One
compilation serves every iteration (and every fit with the same settings and data length).

The evidence ``log p(y)`` is *not* estimated by MCMC: ``log_marginal_likelihood`` is NaN.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import numpy as np

from autogp.inference import rounds, smc
from autogp.inference.grammar import Grammar
from autogp.inference.settings import SMCSettings

Array = jax.Array


def mcmc_settings(settings: SMCSettings) -> SMCSettings:
    """The SMC round settings that make a round a pure MCMC iteration (no resampling)."""
    return dataclasses.replace(settings, ess_threshold=0.0, rejuvenate="always")


def fit_mcmc(
    x,
    y,
    grammar: Grammar,
    settings: SMCSettings,
    *,
    key: Array,
    num_iterations: int | None = None,
    callback: Callable[[int, int], None] | None = None,
) -> smc.SMCResult:
    """Run ``settings.num_particles`` independent MCMC chains over structures and parameters.

    Args:
      x: normalised inputs in [0, 1], ``[N]``.
      y: standardised targets, ``[N]`` (no NaN).
      grammar: the structure and parameter priors.
      settings: uses ``num_particles``, ``structure_moves``, ``replace_prob``, ``pick``, the
        period proposal's settings and ``refine`` (not its posterior draws); the likelihood is
        always the exact one.
      key: a JAX PRNG key; the same key gives identical chains.
      num_iterations: iterations per chain (default ``settings.num_rounds``).
      callback: called as ``callback(iteration, num_iterations)`` after each iteration.

    Returns:
      An :class:`~autogp.inference.smc.SMCResult` holding the chains' final states as P
      particles with uniform log weights ``log(1/P)`` and ``log_marginal_likelihood = NaN``
      (MCMC does not estimate the evidence). ``history`` has per-iteration ``acceptance``
      (mean structure-move acceptance), ``count`` (always N) and ``log_likelihood`` (the
      chains' final log likelihoods on all the data).
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.shape} and {y.shape}")
    if np.any(~np.isfinite(y)) or np.any(~np.isfinite(x)):
        raise ValueError("x and y must be finite; clean the data first (autogp.data does)")
    iterations = settings.num_rounds if num_iterations is None else int(num_iterations)
    if iterations < 1:
        raise ValueError(f"num_iterations must be >= 1, got {iterations}")

    settings = mcmc_settings(settings)
    P = settings.num_particles
    k_init, k_run = jax.random.split(key)
    # Time order, no shuffle: every round sees all points.
    data = rounds.make_data([x], [y], period_peaks=settings.period_peaks,
                            power=[settings.power_for(len(x))])
    counts = np.full((iterations, 1), len(x), dtype=np.int32)
    state = rounds.init_state(grammar, 1, P, key=k_init)
    state, history = rounds.run_rounds(
        grammar, settings, state, data, counts, key=k_run, callback=callback
    )
    history = {
        "acceptance": history["acceptance"],
        "count": [c[0] for c in history["count"]],
        "log_likelihood": np.asarray(state.log_likelihood[0]).tolist(),
    }
    return smc.SMCResult(
        ops=np.asarray(state.ops[0]),
        params=np.asarray(state.params[0]),
        noise=np.asarray(state.noise[0]),
        log_weights=np.full(P, -math.log(P)),
        log_marginal_likelihood=float("nan"),
        history=history,
    )


__all__ = ["fit_mcmc", "mcmc_settings"]
