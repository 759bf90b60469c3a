"""The engine's settings: each declared once, typed, immutable and hashable.

Every field is made by :func:`autogp.setting.setting` with its default, allowed values and doc;
``autogp.config`` derives its [smc] and [refine] TOML sections, ``describe()`` and validation
from these classes, and the compiled programs' keys leave out the fields declared
``in_programs=False``. Modes are ``StrEnum`` members, equal to their strings. The engine never
sees the user config.
"""

from __future__ import annotations

import dataclasses
import enum

from autogp.evaluator.sparse import inducing_points_for
from autogp.setting import Spec, as_members, setting, spec_of


class RefineMode(enum.StrEnum):
    """How a rejuvenation refines a particle's parameters."""

    OPTIMIZE = "optimize"  # gradient steps towards the mode (MAP)
    HMC = "hmc"  # Hamiltonian Monte Carlo draws


class Optimizer(enum.StrEnum):
    ADAM = "adam"
    SGD = "sgd"
    RMSPROP = "rmsprop"


class Schedule(enum.StrEnum):
    """How the observations are added over the rounds of data annealing."""

    LINEAR = "linear"
    LOG = "log"
    COUNTS = "counts"  # the list in ``counts``
    ONLINE = "online"  # one at a time


class RoundSizes(enum.StrEnum):
    GROW = "grow"
    FULL = "full"


class Resampling(enum.StrEnum):
    MULTINOMIAL = "multinomial"
    SYSTEMATIC = "systematic"
    STRATIFIED = "stratified"
    RESIDUAL = "residual"


class Rejuvenate(enum.StrEnum):
    ALWAYS = "always"
    AFTER_RESAMPLE = "after_resample"


class Pick(enum.StrEnum):
    """How a structure move picks the node it changes."""

    UNIFORM = "uniform"
    LEAF_BIASED = "leaf_biased"


class Likelihood(enum.StrEnum):
    AUTO = "auto"
    EXACT = "exact"
    SPARSE = "sparse"


class StructureWeights(enum.StrEnum):
    SMC = "smc"
    LAPLACE = "laplace"
    PREQUENTIAL = "prequential"


@dataclasses.dataclass(frozen=True)
class RefineSettings:
    """Parameter refinement inside each rejuvenation, and the posterior draws after the fit."""

    mode: RefineMode = setting(
        RefineMode.OPTIMIZE, "optimise parameters (MAP) or sample them with HMC")
    optimizer: Optimizer = setting(Optimizer.ADAM, "optimizer for mode = 'optimize'")
    steps: int = setting(50, "optimizer steps per refinement", lo=0, hi=100_000)
    # The late rounds are the expensive ones; fewer steps there trade accuracy for time, so the
    # default keeps every round's refinement.
    late_steps: int = setting(
        -1, "optimizer steps in the rounds on more than half of a series' data, for series of "
        "at least late_from points (-1: steps)", lo=-1, hi=100_000)
    late_from: int = setting(
        0, "series length (points fitted) from which late_steps apply", lo=0, hi=10_000_000)
    # Hutchinson's trace estimate replaces the exact inverse in the gradient only: the values,
    # the moves and the weights stay exact. It pays off on large rounds alone.
    probes: int = setting(
        16, "optimizer gradients from this many random probes (Hutchinson) instead of the "
        "exact inverse, in rounds on at least probes_from columns (0: exact)", lo=0, hi=4096)
    probes_from: int = setting(
        256, "round size (padded columns) from which probes apply", lo=0, hi=10_000_000)
    learning_rate: float = setting(
        0.05, "optimizer learning rate", lo=0.0, hi=10.0, lo_open=True)
    hmc_step_size: float = setting(
        0.05, "HMC leapfrog step size", lo=0.0, hi=10.0, lo_open=True)
    hmc_leapfrog_steps: int = setting(10, "leapfrog steps per HMC proposal", lo=1, hi=1000)
    hmc_steps: int = setting(10, "HMC proposals per refinement", lo=0, hi=100_000)
    # The likelihood's modes in a PER period are a few percent wide; Adam's first steps move
    # every coordinate by about learning_rate, and can carry the period out of its mode before
    # the amplitude and length scale have adapted (benchmarks/choose_defaults/seasonal_search).
    period_step: float = setting(
        1.0, "the optimiser's step for PER periods, as a fraction of its step for the other "
        "parameters (1: the same)", lo=0.0, hi=1.0)
    learn_noise: bool = setting(True, "refine the observation noise too")
    posterior_draws: int = setting(
        0, "after the last round, replace each particle by this many HMC draws of its "
        "parameters on all the data (hmc_* settings), so forecasts carry parameter "
        "uncertainty; 0 or 1: off", lo=0, hi=1000, in_programs=False)

    def __post_init__(self) -> None:
        as_members(self)


@dataclasses.dataclass(frozen=True)
class SMCSettings:
    """Everything a fit reads besides the grammar, the data and the key."""

    num_particles: int = setting(16, "number of particles", lo=1, hi=4096, in_programs=False)
    schedule: Schedule = setting(
        Schedule.LINEAR,
        "how observations are added: linear/log steps, explicit counts, or online (one by one)",
        in_programs=False)
    num_rounds: int = setting(
        10, "data-annealing rounds (linear/log)", lo=1, hi=100_000, in_programs=False)
    # Runs fitted side by side in one compiled program and pooled by their evidence: a run
    # that locked onto a poor mode early gets little weight instead of being the whole answer.
    restarts: int = setting(
        1, "independent SMC runs of num_particles each, pooled by their evidence estimates "
        "(cost grows with runs x particles)", lo=1, hi=256, in_programs=False)
    counts: tuple[int, ...] | None = setting(
        None, "observations used after each round (schedule = 'counts'), strictly increasing",
        kind="list", item=Spec("int", "", lo=1), optional=True, in_programs=False)
    shuffle: bool = setting(
        False, "add observations in random order instead of time order", in_programs=False)
    round_sizes: RoundSizes = setting(
        RoundSizes.GROW,
        "each annealing round computes on the smallest quarter of the padded data that holds "
        "its points (grow; up to 4 compiled rounds per length), or always on all of it (full)",
        in_programs=False)
    # A generalised (power) posterior p(y | T, theta)^eta p(T, theta) (Grunwald's SafeBayes):
    # eta < 1 flattens the posterior over structures where the model family is misspecified,
    # which long series need: there the likelihood piles the weight onto one structure whose
    # intervals are too narrow at long horizons. On short series the evidence between
    # structures is weak already and flattening it lets poor extrapolations in. Each series'
    # rate is data of the compiled rounds, so series on both sides of power_from share them.
    likelihood_power: float = setting(
        0.5, "learning rate of a power posterior for series of at least power_from points: "
        "weights, structure moves and refinement see likelihood_power * log likelihood "
        "(1: the Bayesian posterior)", lo=0.0, hi=1.0, lo_open=True, in_programs=False)
    power_from: int = setting(
        60, "series with at least this many training points use likelihood_power; shorter "
        "ones the Bayesian posterior (0: every series)", lo=0, in_programs=False)
    # "smc" is the posterior through particle counts, with Monte Carlo noise ~1/sqrt(P) per
    # structure. The refinement optimises, so particles are point masses at modes; "laplace"
    # and "prequential" weigh those modes without that noise (inference/evidence.py).
    structure_weights: StructureWeights = setting(
        StructureWeights.SMC,
        "how the final particles weigh structures: the SMC's importance weights (smc), or each "
        "mode the particles found by its Laplace evidence (laplace: no Monte Carlo noise from "
        "particle counts), or each mode by its one-step-ahead predictive log density over the "
        "second half of the data at its parameters (prequential)", in_programs=False)
    evidence_power: float = setting(
        1.0, "with structure_weights = laplace: weigh each mode by p(T) p(y | T)^evidence_power "
        "(1: the Laplace posterior; below 1 flatter over structures)",
        lo=0.0, hi=1.0, lo_open=True, in_programs=False)
    # Intervals on short M3 series under-cover (benchmarks/choose_defaults/calibration): the
    # rounds' particles forecast the points the later rounds add before they see them, and
    # those held-out errors say how much wider this series' forecasts should be.
    calibrate: bool = setting(
        False, "widen the forecast's standard deviations beyond the data by a per-series "
        "factor from the rounds' own held-out forecasts (each round's particles forecasting "
        "the points after the ones they were fitted to, from rounds on at least half of the "
        "data): the root mean square of their standard-normal scores, shrunk towards 1 by "
        "calibration_prior origins, never below 1", in_programs=False)
    calibration_prior: float = setting(
        2.0, "with calibrate: the prior's weight in well-calibrated origins (0: the rounds' "
        "scores alone)", lo=0.0, hi=1000.0, in_programs=False)
    ess_threshold: float = setting(
        0.5, "resample when ESS < ess_threshold * num_particles", lo=0.0, hi=1.0)
    resampling: Resampling = setting(Resampling.MULTINOMIAL, "resampling scheme")
    rejuvenate: Rejuvenate = setting(
        Rejuvenate.ALWAYS, "rejuvenate particles every round, or only after resampling")
    structure_moves: int = setting(
        10, "structure MCMC moves per particle per round", lo=0, hi=10_000)
    replace_prob: float = setting(
        0.5, "probability of a subtree-replace move (else detach-attach)", lo=0.0, hi=1.0)
    pick: Pick = setting(Pick.UNIFORM, "how a move picks its node")
    period_proposal: float = setting(
        0.5, "share of new PER periods drawn near the periodogram's peaks (exact MH; 0: prior "
        "only)", lo=0.0, hi=0.99)
    # A short seasonal series' posterior sits on trees with a PER term at its season, which the
    # prior reaches rarely; these particles start there, with importance weights p / Q. Off by
    # default: on 19 M3 quarterly training windows it changed little (the weights give the
    # seasonal particles the prior's mass, and the first round's few points rarely keep them;
    # benchmarks/choose_defaults/seasonal_search).
    seasonal_start: float = setting(
        0.0, "share of the initial particles drawn as 'S + PER' with the PER period at the "
        "periodogram's peaks or calendar seasons, on series that have them (exact: importance "
        "weights prior / proposal; needs period_proposal > 0; 0: every initial particle from "
        "the prior)", lo=0.0, hi=0.99)
    period_peaks: int = setting(
        3, "periodogram peaks the period proposal uses", lo=1, hi=20, in_programs=False)
    period_spread: float = setting(
        0.05, "spread (sd of the log period) of the proposal around each peak", lo=1e-4, hi=2.0)
    likelihood: Likelihood = setting(
        Likelihood.AUTO,
        "exact GP likelihood (cost ~ n^3), or the sparse variational bound with inducing "
        "points (Titsias 2009, cost ~ n m^2) for long series; auto: sparse above sparse_above "
        "points", in_programs=False)
    inducing_points: int = setting(
        0, "inducing points of the sparse likelihood (0: chosen from the series length)",
        lo=0, hi=100_000, in_programs=False)
    sparse_above: int = setting(
        1000, "likelihood = 'auto' uses the sparse likelihood above this many points",
        lo=1, hi=100_000_000, in_programs=False)
    refine: RefineSettings = dataclasses.field(default_factory=RefineSettings)

    def __post_init__(self) -> None:
        as_members(self)

    def power_for(self, n: int) -> float:
        """The learning rate of a series of ``n`` points (1 below ``power_from``)."""
        return self.likelihood_power if n >= self.power_from else 1.0

    def for_programs(self) -> SMCSettings:
        """These settings with every field declared ``in_programs=False`` (here and in
        ``refine``) set to its default: they key the compiled programs (initial particles,
        round, posterior draws), so two fits that differ only in host-side settings share
        their programs."""
        return _programs_only(self)

    def num_inducing(self, n: int) -> int:
        """Inducing points of the likelihood of a series of ``n`` points (0: exact)."""
        return inducing_points_for(n, self.likelihood, self.inducing_points, self.sparse_above)


def _programs_only(settings):
    """``settings`` (a settings dataclass) with its host-only fields at their defaults,
    recursively through nested settings."""
    changes = {}
    for f in dataclasses.fields(settings):
        sp = spec_of(f)
        value = getattr(settings, f.name)
        if sp is not None and not sp.in_programs:
            changes[f.name] = f.default
        elif sp is None and dataclasses.is_dataclass(value):
            changes[f.name] = _programs_only(value)
    return dataclasses.replace(settings, **changes)


__all__ = [
    "Likelihood",
    "Optimizer",
    "Pick",
    "RefineMode",
    "RefineSettings",
    "Rejuvenate",
    "Resampling",
    "RoundSizes",
    "SMCSettings",
    "Schedule",
    "StructureWeights",
]
