"""The sections of a config that describe the structure search: [grammar], [priors], [smc]
and [refine]. [smc] and [refine] are derived from the engine's settings classes
(:mod:`autogp.inference.settings`), where each of their keys is declared."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, make_dataclass
from typing import Any

from autogp.config.derive import FieldDecl, section_from
from autogp.config.keys import ConfigError, section
from autogp.inference.grammar import DEFAULT_MAX_DEPTH, MAX_SUPPORTED_DEPTH
from autogp.inference.settings import SMCSettings
from autogp.kernels import spec as _spec
from autogp.setting import setting


def _prior(param: _spec.Param) -> Any:
    mean, std = param.prior
    return section(Prior, param.doc, default=lambda: Prior(mean, std))


def _weight(default: float, what: str) -> Any:
    return setting(float(default), f"prior weight of {what}", lo=0.0, hi=1e6)


class _GrammarWeightsMethods:
    ATOMS = tuple(_spec.KEYS[op] for op in _spec.ATOMS if op not in _spec.COVARIATE_ATOMS)
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
        if op not in _spec.COVARIATE_ATOMS
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

    max_depth: int = setting(DEFAULT_MAX_DEPTH, "deepest kernel tree (root = depth 0)", lo=1,
                             hi=MAX_SUPPORTED_DEPTH)
    weights: GrammarWeights = section(GrammarWeights, "structure-prior weights")
    covariate_weight: float = setting(
        6.0, "prior weight of each covariate's atoms (LIN[c] gets 2/3 of it, SE[c] 1/3; a "
        "covariate's lagged copies, data.covariate_lags, share it evenly); used only for data "
        "with covariates (extra numeric columns)", lo=0.0, hi=1e6)
    prior: str = setting(
        "autogp.jl", "the priors a fit uses where [priors] and [grammar.weights] keep their "
        "defaults: 'autogp.jl' (those defaults, AutoGP.jl's), 'learned' (learned across the "
        "shipped panels' training rows, by the series' season and length: "
        "autogp/config/learned_prior.toml), 'panel' (learned from the panel being fitted, "
        "before its series are fitted) or a prior file's path", kind="str")


@dataclass(frozen=True)
class Prior:
    """Normal(mean, std) on a parameter's unconstrained value."""

    mean: float = setting(0.0, "mean in unconstrained space", lo=-1e6, hi=1e6)
    std: float = setting(1.0, "standard deviation in unconstrained space",
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


class _SMCChecks:
    """What [smc] adds to its derived keys: checks across them, and the engine setting that
    two of its keys stand for."""

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
                    f"(schedule is {str(self.schedule)!r}); remove it or change the schedule",
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

    def engine_fields(self) -> dict[str, Any]:
        """The engine settings [smc] writes under other keys: the two move probabilities are
        the engine's one ``replace_prob``."""
        total = self.subtree_replace + self.detach_attach
        default = self.SETTINGS.__dataclass_fields__["replace_prob"].default
        return {"replace_prob": self.subtree_replace / total if total > 0 else default}


# Keys of [smc] that are the product's, not the engine's: where a panel's series are fitted.
_PANEL_KEYS: list[FieldDecl] = [
    ("workers", int, setting(
        0, "processes fitting the series of a panel in parallel (results do not depend on it); "
        "0: one per available core for a panel, 1 for a single series", lo=0, hi=256)),
    ("backend", str, setting(
        "local", "where a panel's series are fitted: this machine's processes or a Dask "
        "cluster", kind="choice", choices=("local", "dask"))),
    ("scheduler", str | None, setting(
        None, "Dask scheduler address, e.g. tcp://host:8786 (unset: a LocalCluster of "
        "'workers' workers)", kind="str", optional=True)),
]


@functools.cache
def smc_section(engine: type[SMCSettings] = SMCSettings) -> type:
    """[smc]: every top-level setting of ``engine``, the move probabilities as two keys, and
    where a panel runs."""
    replace = engine.__dataclass_fields__["replace_prob"].default
    moves = [
        ("subtree_replace", float, setting(
            replace, "probability of a subtree-replace move", lo=0.0, hi=1.0)),
        ("detach_attach", float, setting(
            1.0 - replace, "probability of a detach-attach move", lo=0.0, hi=1.0)),
    ]
    return section_from(
        engine, "SMCConfig", "[smc]: sequential Monte Carlo over kernel structures.",
        module=__name__, swap={"replace_prob": moves}, extra=_PANEL_KEYS, bases=(_SMCChecks,),
    )


@functools.cache
def refine_section(engine: type[SMCSettings] = SMCSettings) -> type:
    """[refine]: every setting of ``engine``'s refinement."""
    refine = engine.__dataclass_fields__["refine"].default_factory
    return section_from(
        refine, "RefineConfig",
        "[refine]: parameter refinement of each particle (gradient optimisation or HMC).",
        module=__name__,
    )


SMCConfig = smc_section()
RefineConfig = refine_section()


__all__ = [
    "GrammarConfig",
    "GrammarWeights",
    "Prior",
    "PriorsConfig",
    "RefineConfig",
    "SMCConfig",
    "refine_section",
    "smc_section",
]
