"""The sections of a config that describe the structure search: [grammar], [priors], [smc]
and [refine]. Their engine defaults come from the engine's own settings
(:mod:`autogp.inference.settings`), so the two cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass, fields, make_dataclass
from typing import Any

from autogp.config.keys import ConfigError, KeySpec, key, section
from autogp.inference.grammar import DEFAULT_MAX_DEPTH, MAX_SUPPORTED_DEPTH
from autogp.inference.settings import RefineSettings, SMCSettings
from autogp.kernels import spec as _spec

# The engine's defaults: the [smc] and [refine] keys below take theirs from these.
_SMC = SMCSettings()
_REFINE = RefineSettings()


def _prior(param: _spec.Param) -> Any:
    mean, std = param.prior
    return section(Prior, param.doc, default=lambda: Prior(mean, std))


def _weight(default: float, what: str) -> Any:
    return key(float(default), f"prior weight of {what}", "float", lo=0.0, hi=1e6)


class _GrammarWeightsMethods:
    ATOMS = tuple(_spec.KEYS[op] for op in _spec.ATOMS)
    OPERATORS = tuple(_spec.KEYS[op] for op in _spec.OPERATORS)

    def as_dict(self) -> dict[str, float]:
        """Name -> weight, atoms first (names as in ``autogp.kernels.spec``; PLUS is '+')."""
        return {n: float(getattr(self, n)) for n in (*self.ATOMS, *self.OPERATORS)}

    def validate(self, prefix: str) -> None:
        if not any(getattr(self, a) > 0 for a in self.ATOMS):
            raise ConfigError(
                f"{prefix}: at least one atom ({', '.join(self.ATOMS)}) needs a weight > 0; "
                f"all are 0",
                key=prefix,
            )


# One key per atom and operator, from the kernel table: those on by default first.
GrammarWeights = make_dataclass(
    "GrammarWeights",
    [
        (_spec.KEYS[op], float, _weight(w, f"{_spec.KEYS[op]} ({_spec.TITLES[op]})"))
        for op, w in sorted(_spec.DEFAULT_WEIGHTS.items(), key=lambda item: (item[1] == 0, item[0]))
    ],
    bases=(_GrammarWeightsMethods,),
    frozen=True,
    namespace={
        "__module__": __name__,
        "__doc__": """[grammar.weights]: unnormalised probability of each atom/operator in the
    structure prior.

    0 removes a symbol from the grammar. At least one atom needs a positive weight.
    """,
    },
)


@dataclass(frozen=True)
class GrammarConfig:
    """[grammar]: the space of kernel expressions."""

    max_depth: int = key(DEFAULT_MAX_DEPTH, "deepest kernel tree (root = depth 0)", "int", lo=1,
                         hi=MAX_SUPPORTED_DEPTH)
    weights: GrammarWeights = section(GrammarWeights, "structure-prior weights")


@dataclass(frozen=True)
class Prior:
    """Normal(mean, std) on a parameter's unconstrained value."""

    mean: float = key(0.0, "mean in unconstrained space", "float", lo=-1e6, hi=1e6)
    std: float = key(1.0, "standard deviation in unconstrained space", "float",
                     lo=0.0, hi=1e6, lo_open=True)  # fmt: skip


class _PriorsMethods:
    def as_dict(self) -> dict[str, tuple[float, float]]:
        """Parameter name -> (mean, std)."""
        return {f.name: (getattr(self, f.name).mean, getattr(self, f.name).std)
                for f in fields(self)}  # fmt: skip


# One [priors.<name>] per parameter name of the kernel table, and the noise's.
PriorsConfig = make_dataclass(
    "PriorsConfig",
    [(name, Prior, _prior(param)) for name, param in _spec.PARAM_OF_NAME.items()]
    + [("noise", Prior, _prior(_spec.NOISE))],
    bases=(_PriorsMethods,),
    frozen=True,
    namespace={
        "__module__": __name__,
        "__doc__": """[priors]: Normal(mean, std) priors on unconstrained parameters, by parameter
    name.

    Parameters live in normalised units (time in [0, 1], values standardised); positive
    parameters use a log transform, so ``mean = -1.5`` is a median of exp(-1.5) ~ 0.22.
    """,
    },
)


@dataclass(frozen=True)
class SMCConfig:
    """[smc]: sequential Monte Carlo over kernel structures."""

    num_particles: int = key(_SMC.num_particles, "number of particles", "int", lo=1, hi=4096)
    schedule: str = key(
        _SMC.schedule,
        "how observations are added: linear/log steps, explicit counts, or online (one by one)",
        "choice",
        choices=("linear", "log", "counts", "online"),
    )
    num_rounds: int = key(
        _SMC.num_rounds, "data-annealing rounds (linear/log)", "int", lo=1, hi=100_000
    )
    restarts: int = key(
        _SMC.restarts,
        "independent SMC runs of num_particles each, pooled by their evidence estimates "
        "(cost grows with runs x particles)", "int", lo=1, hi=256,
    )
    counts: tuple[int, ...] | None = key(
        _SMC.counts,
        "observations used after each round (schedule = 'counts'), strictly increasing",
        "list",
        item=KeySpec("int", "", lo=1),
        optional=True,
    )
    shuffle: bool = key(
        _SMC.shuffle, "add observations in random order instead of time order", "bool"
    )
    round_sizes: str = key(
        _SMC.round_sizes,
        "each annealing round computes on the smallest quarter of the padded data that holds "
        "its points (grow; up to 4 compiled rounds per length), or always on all of it (full)",
        "choice", choices=("grow", "full"),
    )
    likelihood_power: float = key(
        _SMC.likelihood_power,
        "learning rate of a power posterior for series of at least power_from points: "
        "weights, structure moves and refinement see likelihood_power * log likelihood "
        "(1: the Bayesian posterior)", "float",
        lo=0.0, hi=1.0, lo_open=True,
    )
    power_from: int = key(
        _SMC.power_from,
        "series with at least this many training points use likelihood_power; shorter ones "
        "the Bayesian posterior (0: every series)", "int", lo=0,
    )
    structure_weights: str = key(
        _SMC.structure_weights,
        "how the final particles weigh structures: the SMC's importance weights (smc), or each "
        "mode the particles found by its Laplace evidence (laplace: no Monte Carlo noise from "
        "particle counts), or each mode by its one-step-ahead predictive log density over the "
        "second half of the data at its parameters (prequential)", "choice",
        choices=("smc", "laplace", "prequential"),
    )
    evidence_power: float = key(
        _SMC.evidence_power,
        "with structure_weights = laplace: weigh each mode by p(T) p(y | T)^evidence_power "
        "(1: the Laplace posterior; below 1 flatter over structures)", "float",
        lo=0.0, hi=1.0, lo_open=True,
    )
    ess_threshold: float = key(
        _SMC.ess_threshold, "resample when ESS < ess_threshold * num_particles", "float",
        lo=0.0, hi=1.0,
    )
    resampling: str = key(
        _SMC.resampling,
        "resampling scheme",
        "choice",
        choices=("multinomial", "systematic", "stratified", "residual"),
    )
    rejuvenate: str = key(
        _SMC.rejuvenate,
        "rejuvenate particles every round, or only after resampling",
        "choice",
        choices=("always", "after_resample"),
    )
    structure_moves: int = key(
        _SMC.structure_moves, "structure MCMC moves per particle per round", "int",
        lo=0, hi=10_000,
    )
    subtree_replace: float = key(
        _SMC.replace_prob, "probability of a subtree-replace move", "float", lo=0.0, hi=1.0
    )
    detach_attach: float = key(
        1.0 - _SMC.replace_prob, "probability of a detach-attach move", "float", lo=0.0, hi=1.0
    )
    pick: str = key(
        _SMC.pick,
        "how a move picks its node",
        "choice",
        choices=("uniform", "leaf_biased"),
    )
    period_proposal: float = key(
        _SMC.period_proposal,
        "share of new PER periods drawn near the periodogram's peaks (exact MH; 0: prior only)",
        "float", lo=0.0, hi=0.99,
    )
    period_peaks: int = key(
        _SMC.period_peaks, "periodogram peaks the period proposal uses", "int", lo=1, hi=20
    )
    workers: int = key(
        0, "processes fitting the series of a panel in parallel (results do not depend on it); "
        "0: one per available core for a panel, 1 for a single series",
        "int", lo=0, hi=256,
    )
    backend: str = key(
        "local",
        "where a panel's series are fitted: this machine's processes or a Dask cluster",
        "choice", choices=("local", "dask"),
    )
    scheduler: str | None = key(
        None, "Dask scheduler address, e.g. tcp://host:8786 (unset: a LocalCluster of "
        "'workers' workers)", "str", optional=True,
    )
    period_spread: float = key(
        _SMC.period_spread, "spread (sd of the log period) of the proposal around each peak",
        "float",
        lo=1e-4, hi=2.0,
    )
    likelihood: str = key(
        _SMC.likelihood,
        "exact GP likelihood (cost ~ n^3), or the sparse variational bound with inducing points "
        "(Titsias 2009, cost ~ n m^2) for long series; auto: sparse above sparse_above points",
        "choice",
        choices=("auto", "exact", "sparse"),
    )
    inducing_points: int = key(
        _SMC.inducing_points,
        "inducing points of the sparse likelihood (0: chosen from the series length)", "int",
        lo=0, hi=100_000,
    )
    sparse_above: int = key(
        _SMC.sparse_above,
        "likelihood = 'auto' uses the sparse likelihood above this many points", "int",
        lo=1, hi=100_000_000,
    )

    def validate(self, prefix: str) -> None:
        if self.schedule == "counts" and not self.counts:
            raise ConfigError(
                f"{prefix}.counts: schedule = 'counts' needs a non-empty list of strictly "
                f"increasing observation counts, e.g. counts = [20, 50, 100]",
                key=f"{prefix}.counts",
            )
        if self.counts is not None:
            if self.schedule != "counts":
                raise ConfigError(
                    f"{prefix}.counts is only used with {prefix}.schedule = 'counts' "
                    f"(schedule is {self.schedule!r}); remove it or change the schedule",
                    key=f"{prefix}.counts",
                )
            bad = [b for a, b in zip(self.counts, self.counts[1:], strict=False) if b <= a]
            if bad:
                raise ConfigError(
                    f"{prefix}.counts = {list(self.counts)} must be strictly increasing "
                    f"({bad[0]} does not exceed the count before it)",
                    key=f"{prefix}.counts",
                )
        total = self.subtree_replace + self.detach_attach
        if abs(total - 1.0) > 1e-9:
            raise ConfigError(
                f"{prefix}.subtree_replace + {prefix}.detach_attach must sum to 1, got "
                f"{self.subtree_replace:g} + {self.detach_attach:g} = {total:g}",
                key=f"{prefix}.subtree_replace",
            )


@dataclass(frozen=True)
class RefineConfig:
    """[refine]: parameter refinement of each particle (gradient optimisation or HMC)."""

    mode: str = key(
        _REFINE.mode, "optimise parameters (MAP) or sample them with HMC", "choice",
        choices=("optimize", "hmc"),
    )  # fmt: skip
    optimizer: str = key(
        _REFINE.optimizer, "optimizer for mode = 'optimize'", "choice",
        choices=("adam", "sgd", "rmsprop"),
    )
    steps: int = key(_REFINE.steps, "optimizer steps per refinement", "int", lo=0, hi=100_000)
    late_steps: int = key(
        _REFINE.late_steps,
        "optimizer steps in the rounds on more than half of a series' data, for series of at "
        "least late_from points (-1: steps)",
        "int", lo=-1, hi=100_000,
    )
    late_from: int = key(
        _REFINE.late_from, "series length (points fitted) from which late_steps apply", "int",
        lo=0, hi=10_000_000,
    )
    probes: int = key(
        _REFINE.probes,
        "optimizer gradients from this many random probes (Hutchinson) instead of the exact "
        "inverse, in rounds on at least probes_from columns (0: exact)",
        "int", lo=0, hi=4096,
    )
    probes_from: int = key(
        _REFINE.probes_from, "round size (padded columns) from which probes apply", "int",
        lo=0, hi=10_000_000,
    )
    learning_rate: float = key(
        _REFINE.learning_rate, "optimizer learning rate", "float", lo=0.0, hi=10.0, lo_open=True
    )
    hmc_step_size: float = key(
        _REFINE.hmc_step_size, "HMC leapfrog step size", "float", lo=0.0, hi=10.0, lo_open=True
    )
    hmc_leapfrog_steps: int = key(
        _REFINE.hmc_leapfrog_steps, "leapfrog steps per HMC proposal", "int", lo=1, hi=1000
    )
    hmc_steps: int = key(_REFINE.hmc_steps, "HMC proposals per refinement", "int", lo=0, hi=100_000)
    learn_noise: bool = key(_REFINE.learn_noise, "refine the observation noise too", "bool")
    posterior_draws: int = key(
        _REFINE.posterior_draws,
        "after the last round, replace each particle by this many HMC draws of its parameters "
        "on all the data (hmc_* settings), so forecasts carry parameter uncertainty; 0 or 1: off",
        "int",
        lo=0,
        hi=1000,
    )


__all__ = [
    "GrammarConfig",
    "GrammarWeights",
    "Prior",
    "PriorsConfig",
    "RefineConfig",
    "SMCConfig",
]
