"""The engine's settings: typed, immutable and hashable (parts of the compiled programs' keys).

These dataclasses are the one place the engine's defaults are written; ``autogp.config`` reads
its [smc] and [refine] defaults from them and builds them from a user's file
(``autogp.config.engine_settings``). The engine never sees the user config.
"""

from __future__ import annotations

import dataclasses

from autogp.evaluator.sparse import inducing_points_for


@dataclasses.dataclass(frozen=True)
class RefineSettings:
    """Parameter refinement inside each rejuvenation, and the posterior draws after the fit."""

    mode: str = "optimize"  # or "hmc" or "none"
    optimizer: str = "adam"  # or "sgd" or "rmsprop"
    steps: int = 50
    # Optimiser steps in the rounds on more than half of a series' data, for series of at
    # least ``late_from`` points (-1: ``steps``). Those rounds are the large ones: 0 makes a
    # 300-point fit about 5x faster, but the particles that late structure moves changed then
    # go unrefined. Rolling-origin MASE was 4-10% worse with 0, 0.3-1.6% worse with 20 on short
    # windows and 12% worse on the longest ones (benchmarks/choose_defaults/, tenth and
    # eleventh runs), so it is off by default.
    late_steps: int = -1
    late_from: int = 0
    # Optimiser gradients from this many Rademacher probes (Hutchinson's trace estimate) instead
    # of the exact inverse, in rounds computed on at least ``probes_from`` columns with the
    # exact likelihood; 0: exact everywhere. The values, the moves and the weights stay exact.
    # On the 9 longest development-panel windows 16 probes fitted in 0.85x the time with
    # rolling-origin MASE 0.709 against 0.768 and the same CRPS (benchmarks/choose_defaults/,
    # twelfth run); shorter series (M3) never reach 256 columns and keep the exact gradient.
    probes: int = 16
    probes_from: int = 256
    learning_rate: float = 0.05
    hmc_step_size: float = 0.05
    hmc_leapfrog_steps: int = 10
    hmc_steps: int = 10
    learn_noise: bool = True
    posterior_draws: int = 0  # 0 or 1: off


@dataclasses.dataclass(frozen=True)
class SMCSettings:
    """Everything a fit reads besides the grammar, the data and the key."""

    num_particles: int = 16
    schedule: str = "linear"  # or "log", "counts", "online"
    num_rounds: int = 10
    # Independent SMC runs of num_particles each, fitted side by side in one compiled program
    # and pooled by their evidence estimates: a run that locked onto a poor mode early gets
    # little weight instead of being the whole answer.
    restarts: int = 1
    counts: tuple[int, ...] | None = None  # schedule "counts"
    shuffle: bool = False
    # "grow": each round computes on the smallest quarter of the padded data holding its points
    # (see rounds.round_size); "full": every round on all of it (one compiled round per length).
    round_sizes: str = "grow"
    ess_threshold: float = 0.5
    resampling: str = "multinomial"
    rejuvenate: str = "always"  # or "after_resample"
    structure_moves: int = 10
    replace_prob: float = 0.5  # subtree-replace; else detach-attach
    pick: str = "uniform"
    period_proposal: float = 0.5
    period_peaks: int = 3
    period_spread: float = 0.05
    likelihood: str = "auto"  # or "exact" or "sparse"
    inducing_points: int = 0  # 0: chosen from the series length
    sparse_above: int = 1000
    # Learning rate eta of a generalised (power) posterior, p(y | T, theta)^eta p(T, theta): the
    # SMC weights, the structure moves' acceptance and the refinement all see eta * log p(y).
    # eta < 1 flattens the posterior over structures where the model family is misspecified
    # (Grunwald's SafeBayes); 1 is the Bayesian posterior. It applies to series of at least
    # power_from points: on long series the likelihood piles the weight onto one structure whose
    # intervals are too narrow at long horizons; on short ones the evidence between structures
    # is weak already and flattening it lets poor extrapolations in (rolling-origin windows of
    # both panels, benchmarks/choose_defaults/). Each series' rate is data of the compiled
    # rounds (rounds.Data.power), so series on both sides of power_from share one program.
    likelihood_power: float = 0.5
    power_from: int = 60
    # How the final particles weigh the structures: "smc", the SMC's importance weights (the
    # posterior through particle counts, Monte Carlo noise ~1/sqrt(P) per structure); or
    # "laplace", each mode the particles found weighted by its Laplace evidence (the refinement
    # optimises, so particles are point masses at modes; inference/evidence.py); or
    # "prequential", each of those modes by log p(T) + eta log p(y_{h+1..n} | y_{1..h}, theta*),
    # h half the data: the one-step-ahead forecasts the SMC's weights score, without the noise.
    structure_weights: str = "smc"
    # With "laplace": tau of p(T | y) ~ p(T) p(y | T)^tau, each mode's Laplace evidence (less
    # its structure prior) raised to tau. 1 is the Laplace posterior over the modes found; tau < 1
    # flattens it (a power posterior over structures only) where the evidence piles every
    # structure's weight onto the best mode found.
    evidence_power: float = 1.0
    refine: RefineSettings = dataclasses.field(default_factory=RefineSettings)

    def power_for(self, n: int) -> float:
        """The learning rate of a series of ``n`` points (1 below ``power_from``)."""
        return self.likelihood_power if n >= self.power_from else 1.0

    def for_programs(self) -> SMCSettings:
        """These settings with every field the compiled programs (initial particles, round,
        posterior draws) do not read set to its default: they key the programs, so two fits
        that differ only in the schedule, the learning rate (data of the round: rounds.Data.power)
        or the likelihood's choice (num_inducing is its own key) share their programs."""
        host_only = {name: _FIELDS[name].default for name in _HOST_ONLY}
        return dataclasses.replace(
            self, **host_only, refine=dataclasses.replace(self.refine, posterior_draws=0))

    def num_inducing(self, n: int) -> int:
        """Inducing points of the likelihood of a series of ``n`` points (0: exact)."""
        return inducing_points_for(n, self.likelihood, self.inducing_points, self.sparse_above)


_FIELDS = {field.name: field for field in dataclasses.fields(SMCSettings)}
# Read on the host only (schedules, padding, the likelihood's choice, the learning rate by
# length): never inside a compiled program. A field left off this list only costs compiles.
_HOST_ONLY = ("num_particles", "schedule", "num_rounds", "restarts", "counts", "shuffle",
              "round_sizes", "period_peaks", "likelihood", "inducing_points", "sparse_above",
              "likelihood_power", "power_from", "structure_weights", "evidence_power")

__all__ = ["RefineSettings", "SMCSettings"]
