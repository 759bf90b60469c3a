"""The configuration of a fit: every setting is a TOML key with a documented default and range.

A config file has the sections below; every key is optional (the defaults apply) and unknown keys
are errors, so a typo never silently does nothing::

    seed = 0

    [data]        # where the series comes from and how it is read
    [grammar]     # the kernel grammar: max_depth and [grammar.weights] per atom/operator
    [priors]      # normal priors in unconstrained space: [priors.l] mean = -1.5, std = 1.0, ...
    [smc]         # sequential Monte Carlo over structures
    [refine]      # parameter refinement inside each rejuvenation (optimisation or HMC)
    [forecast]    # horizon and intervals
    [output]      # what is written where
    [experiment]  # name and metrics of a benchmark run

``default_toml()`` prints the full documented file; ``describe()`` lists every key with its
default and allowed values. ``load_config`` reads a TOML file (stdlib ``tomllib``), a dict or
nothing (defaults), applies dotted-key overrides (``{"smc.num_particles": 64}``) and validates:
errors are :class:`ConfigError` naming the full key (``smc.ess_threshold``), the allowed range
and the bad value, and suggest the nearest valid key for unknown ones.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, make_dataclass, replace
from pathlib import Path
from typing import Any

from autogp.kernels import spec as _spec


class ConfigError(ValueError):
    """An invalid configuration; the message names the key, the allowed values and the value."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


# ---- key specifications ----------------------------------------------------------------------
@dataclass(frozen=True)
class _Spec:
    """What one key accepts. ``kind``: int, float, bool, str, choice, list."""

    kind: str
    doc: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (omit the key in TOML)
    item: _Spec | None = None  # list items

    def allowed(self) -> str:
        """The allowed values in words, e.g. ``an integer in [1, 5]``."""
        if self.kind == "bool":
            text = "true or false"
        elif self.kind == "str":
            text = "a string"
        elif self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "list":
            assert self.item is not None
            text = "a list of " + self.item.allowed().removeprefix("an ").removeprefix("a ")
            text = text.replace("integer ", "integers ").replace("number ", "numbers ")
            text = text.replace("string", "strings").replace("list of one of", "list of")
        else:
            noun = "an integer" if self.kind == "int" else "a number"
            text = noun + self._range()
        if self.optional:
            text += " (or unset)"
        return text

    def _range(self) -> str:
        fmt = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
        if self.lo is not None and self.hi is not None:
            left = "(" if self.lo_open else "["
            right = ")" if self.hi_open else "]"
            return f" in {left}{fmt(self.lo)}, {fmt(self.hi)}{right}"
        if self.lo is not None:
            return f" {'>' if self.lo_open else '>='} {fmt(self.lo)}"
        if self.hi is not None:
            return f" {'<' if self.hi_open else '<='} {fmt(self.hi)}"
        return ""

    def in_range(self, v: float) -> bool:
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        return not (self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)))


def _key(default: Any, doc: str, kind: str, **kw: Any) -> Any:
    """A config field with its spec in the metadata (immutable default)."""
    return field(default=default, metadata={"spec": _Spec(kind, doc, **kw)})


def _section(cls: type, doc: str) -> Any:
    return field(default_factory=cls, metadata={"section": cls, "doc": doc})


def _prior(param: _spec.Param) -> Any:
    mean, std = param.prior
    return field(
        default_factory=lambda: Prior(mean, std), metadata={"section": Prior, "doc": param.doc}
    )


# ---- sections --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataConfig:
    """[data]: the input series and how to read it (see ``autogp.data.read_csv``)."""

    path: str | None = _key(None, "CSV file with the series", "str", optional=True)
    time_col: str = _key("ds", "column with time stamps (dates or numbers)", "str")
    target_col: str = _key("y", "column with the values", "str")
    id_col: str | None = _key(None, "series-id column of a panel", "str", optional=True)
    transform: str = _key(
        "auto",
        "variance-stabilising transform of y: 'auto' (log or Box-Cox when the training data's "
        "seasonal swing grows with the level, by Guerrero's method; never for values <= 0), "
        "'none', 'log', 'boxcox' (lambda from data.boxcox_lambda or estimated)",
        "choice",
        choices=("auto", "none", "log", "boxcox"),
    )
    boxcox_lambda: float | None = _key(
        None, "Box-Cox lambda for transform = 'boxcox' (unset: Guerrero's estimate)", "float",
        lo=-1.0, hi=2.0, optional=True,
    )
    log_transform: bool = _key(
        False, "fit log(y) (values must be positive); true is an alias of transform = 'log'",
        "bool",
    )
    center: str = _key(
        "recent",
        "prior mean of the model: 'recent', the mean of the series' last season (12 months, "
        "7 days, ...; else its last tenth), so that stationary parts of a forecast revert to "
        "the recent level; or 'mean', the whole series' mean (AutoGP.jl)",
        "choice",
        choices=("mean", "recent"),
    )
    strict: bool = _key(False, "missing/non-finite values are errors, not dropped", "bool")
    aggregate: str | None = _key(
        None,
        "how to combine rows with the same time stamp (unset: duplicates are an error)",
        "choice",
        choices=("mean", "sum", "last", "first", "median"),
        optional=True,
    )
    split_col: str | None = _key(
        None, "column marking held-out rows (e.g. 'split')", "str", optional=True
    )
    test_value: str = _key("test", "value of split_col that marks a test row", "str")
    freq_col: str | None = _key(
        None,
        "column with each series' frequency (a pandas alias: YS, QS, MS, W, D, B, h, 30min); "
        "names the calendar of numeric time stamps (B: trading-day numbers) for the seasons "
        "(autogp run)",
        "str", optional=True,
    )
    max_points: int = _key(
        5000, "largest series fitted with an exact GP (cost ~ n^3)", "int", lo=3, hi=1_000_000
    )
    sep: str | None = _key(
        None,
        "CSV separator (unset: detected)",
        "choice",
        choices=(",", ";", "\t", "|"),
        optional=True,
    )

    @property
    def effective_transform(self) -> str:
        """``transform``, with ``log_transform = true`` read as ``"log"``."""
        return "log" if self.log_transform else self.transform

    def _check(self, prefix: str) -> None:
        if self.log_transform and self.transform not in ("auto", "log"):
            raise ConfigError(
                f"{prefix}.log_transform = true contradicts {prefix}.transform = "
                f"{self.transform!r}; set only one of them",
                key=f"{prefix}.log_transform",
            )
        if self.boxcox_lambda is not None and self.effective_transform != "boxcox":
            raise ConfigError(
                f"{prefix}.boxcox_lambda = {self.boxcox_lambda:g} is only used with "
                f"{prefix}.transform = 'boxcox' (transform is {self.effective_transform!r})",
                key=f"{prefix}.boxcox_lambda",
            )

    def read_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``autogp.data.read_csv(self.path, **kwargs)``."""
        return {
            "time_col": self.time_col,
            "target_col": self.target_col,
            "id_col": self.id_col,
            "strict": self.strict,
            "aggregate": self.aggregate,
            "sep": self.sep,
            "max_points": self.max_points,
            "split_col": self.split_col,
            "test_value": self.test_value,
        }


def _weight(default: float, what: str) -> Any:
    return _key(float(default), f"prior weight of {what}", "float", lo=0.0, hi=1e6)


class _GrammarWeightsMethods:
    ATOMS = tuple(_spec.KEYS[op] for op in _spec.ATOMS)
    OPERATORS = tuple(_spec.KEYS[op] for op in _spec.OPERATORS)

    def as_dict(self) -> dict[str, float]:
        """Name -> weight, atoms first (names as in ``autogp.kernels.spec``; PLUS is '+')."""
        return {n: float(getattr(self, n)) for n in (*self.ATOMS, *self.OPERATORS)}

    def _check(self, prefix: str) -> None:
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

    max_depth: int = _key(3, "deepest kernel tree (root = depth 0)", "int", lo=1, hi=5)
    weights: GrammarWeights = _section(GrammarWeights, "structure-prior weights")


@dataclass(frozen=True)
class Prior:
    """Normal(mean, std) on a parameter's unconstrained value."""

    mean: float = _key(0.0, "mean in unconstrained space", "float", lo=-1e6, hi=1e6)
    std: float = _key(1.0, "standard deviation in unconstrained space", "float",
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

    num_particles: int = _key(16, "number of particles", "int", lo=1, hi=4096)
    schedule: str = _key(
        "linear",
        "how observations are added: linear/log steps, explicit counts, or online (one by one)",
        "choice",
        choices=("linear", "log", "counts", "online"),
    )
    num_rounds: int = _key(10, "data-annealing rounds (linear/log)", "int", lo=1, hi=100_000)
    counts: tuple[int, ...] | None = _key(
        None,
        "observations used after each round (schedule = 'counts'), strictly increasing",
        "list",
        item=_Spec("int", "", lo=1),
        optional=True,
    )
    shuffle: bool = _key(False, "add observations in random order instead of time order", "bool")
    ess_threshold: float = _key(
        0.5, "resample when ESS < ess_threshold * num_particles", "float", lo=0.0, hi=1.0
    )
    resampling: str = _key(
        "multinomial",
        "resampling scheme",
        "choice",
        choices=("multinomial", "systematic", "stratified", "residual"),
    )
    rejuvenate: str = _key(
        "always",
        "rejuvenate particles every round, or only after resampling",
        "choice",
        choices=("always", "after_resample"),
    )
    structure_moves: int = _key(
        10, "structure MCMC moves per particle per round", "int", lo=0, hi=10_000
    )
    subtree_replace: float = _key(
        0.5, "probability of a subtree-replace move", "float", lo=0.0, hi=1.0
    )
    detach_attach: float = _key(0.5, "probability of a detach-attach move", "float", lo=0.0, hi=1.0)
    pick: str = _key(
        "uniform",
        "how a move picks its node",
        "choice",
        choices=("uniform", "leaf_biased"),
    )
    period_proposal: float = _key(
        0.5,
        "share of new PER periods drawn near the periodogram's peaks (exact MH; 0: prior only)",
        "float", lo=0.0, hi=0.99,
    )
    period_peaks: int = _key(3, "periodogram peaks the period proposal uses", "int", lo=1, hi=20)
    workers: int = _key(
        0, "processes fitting the series of a panel in parallel (results do not depend on it); "
        "0: one per available core for a panel, 1 for a single series",
        "int", lo=0, hi=256,
    )
    backend: str = _key(
        "local",
        "where a panel's series are fitted: this machine's processes or a Dask cluster",
        "choice", choices=("local", "dask"),
    )
    scheduler: str | None = _key(
        None, "Dask scheduler address, e.g. tcp://host:8786 (unset: a LocalCluster of "
        "'workers' workers)", "str", optional=True,
    )
    period_spread: float = _key(
        0.05, "spread (sd of the log period) of the proposal around each peak", "float",
        lo=1e-4, hi=2.0,
    )
    likelihood: str = _key(
        "auto",
        "exact GP likelihood (cost ~ n^3), or the sparse variational bound with inducing points "
        "(Titsias 2009, cost ~ n m^2) for long series; auto: sparse above sparse_above points",
        "choice",
        choices=("auto", "exact", "sparse"),
    )
    inducing_points: int = _key(
        0, "inducing points of the sparse likelihood (0: chosen from the series length)", "int",
        lo=0, hi=100_000,
    )
    sparse_above: int = _key(
        1000, "likelihood = 'auto' uses the sparse likelihood above this many points", "int",
        lo=1, hi=100_000_000,
    )

    def _check(self, prefix: str) -> None:
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

    mode: str = _key(
        "optimize", "optimise parameters (MAP) or sample them with HMC", "choice",
        choices=("optimize", "hmc"),
    )  # fmt: skip
    optimizer: str = _key(
        "adam", "optimizer for mode = 'optimize'", "choice", choices=("adam", "sgd", "rmsprop")
    )
    steps: int = _key(50, "optimizer steps per refinement", "int", lo=0, hi=100_000)
    learning_rate: float = _key(
        0.05, "optimizer learning rate", "float", lo=0.0, hi=10.0, lo_open=True
    )
    hmc_step_size: float = _key(
        0.05, "HMC leapfrog step size", "float", lo=0.0, hi=10.0, lo_open=True
    )
    hmc_leapfrog_steps: int = _key(10, "leapfrog steps per HMC proposal", "int", lo=1, hi=1000)
    hmc_steps: int = _key(10, "HMC proposals per refinement", "int", lo=0, hi=100_000)
    learn_noise: bool = _key(True, "refine the observation noise too", "bool")
    posterior_draws: int = _key(
        0,
        "after the last round, replace each particle by this many HMC draws of its parameters "
        "on all the data (hmc_* settings), so forecasts carry parameter uncertainty; 0 or 1: off",
        "int",
        lo=0,
        hi=1000,
    )


@dataclass(frozen=True)
class ForecastConfig:
    """[forecast]: what to predict."""

    horizon: int = _key(
        12, "steps ahead on the data's grid (0: fit only)", "int", lo=0, hi=1_000_000
    )
    levels: tuple[float, ...] = _key(
        (80.0, 95.0),
        "central prediction-interval levels in percent",
        "list",
        item=_Spec("float", "", lo=0.0, hi=100.0, lo_open=True, hi_open=True),
    )
    quantiles: tuple[float, ...] | None = _key(
        None,
        "extra quantiles to report, e.g. [0.1, 0.5, 0.9]",
        "list",
        item=_Spec("float", "", lo=0.0, hi=1.0, lo_open=True, hi_open=True),
        optional=True,
    )
    observation_noise: bool = _key(
        True, "intervals for new observations (true) or for the latent function (false)", "bool"
    )
    point: str = _key(
        "mean",
        "point forecast: the predictive mean, or the median (best under absolute-error metrics "
        "such as MASE and sMAPE; below the mean under a log or Box-Cox transform)",
        "choice",
        choices=("mean", "median"),
    )

    def _check(self, prefix: str) -> None:
        for name in ("levels", "quantiles"):
            vals = getattr(self, name)
            if vals is not None and len(set(vals)) != len(vals):
                raise ConfigError(
                    f"{prefix}.{name} = {list(vals)} has repeated values", key=f"{prefix}.{name}"
                )


@dataclass(frozen=True)
class OutputConfig:
    """[output]: files written by a fit, inside ``dir``; ``false`` or "" turns one off."""

    dir: str = _key("autogp_out", "output directory", "str")
    forecast: str | None = _key("forecast.csv", "forecast table", "str", optional=True)
    plot: str | None = _key("forecast.png", "forecast plot", "str", optional=True)
    model: str | None = _key("model.autogp", "fitted model (structures, parameters)", "str",
                             optional=True)  # fmt: skip


@dataclass(frozen=True)
class ExperimentConfig:
    """[experiment]: a named benchmark run."""

    name: str | None = _key(None, "experiment name (used in result files)", "str", optional=True)
    metrics: tuple[str, ...] = _key(
        ("smape", "mase", "coverage"), "metrics to report", "list", item=_Spec("str", "")
    )

    def _check(self, prefix: str) -> None:
        if not self.metrics or any(not m.strip() for m in self.metrics):
            raise ConfigError(
                f"{prefix}.metrics = {list(self.metrics)} must be a non-empty list of names",
                key=f"{prefix}.metrics",
            )


@dataclass(frozen=True)
class Config:
    """A complete, validated configuration (immutable). Build it with :func:`load_config`."""

    seed: int = _key(0, "random seed", "int", lo=0, hi=2**63 - 1)
    data: DataConfig = _section(DataConfig, "the input series")
    grammar: GrammarConfig = _section(GrammarConfig, "the kernel grammar")
    priors: PriorsConfig = _section(PriorsConfig, "parameter priors")
    smc: SMCConfig = _section(SMCConfig, "sequential Monte Carlo")
    refine: RefineConfig = _section(RefineConfig, "parameter refinement")
    forecast: ForecastConfig = _section(ForecastConfig, "forecasting")
    output: OutputConfig = _section(OutputConfig, "output files")
    experiment: ExperimentConfig = _section(ExperimentConfig, "benchmark runs")

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dict (lists for sequences, ``None`` for unset keys);
        ``load_config(cfg.to_dict()) == cfg``."""
        return _to_dict(self)

    def to_toml(self) -> str:
        """The configuration as TOML text (unset keys are left out)."""
        return _to_toml(self.to_dict())

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with dotted-key overrides applied and validated."""
        return load_config(self.to_dict(), overrides)


# ---- building and validating -----------------------------------------------------------------
def _type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(v), type(v).__name__
    )


def _coerce(value: Any, sp: _Spec, key: str) -> Any:
    def wrong(extra: str = "") -> ConfigError:
        return ConfigError(
            f"{key} = {value!r} has the wrong type: expected {sp.allowed()}, got "
            f"{_type_name(value)}{extra}",
            key=key,
        )

    def out_of_range() -> ConfigError:
        return ConfigError(f"{key} = {value!r} is out of range: expected {sp.allowed()}", key=key)

    if (
        value is None
        or (value is False and sp.optional and sp.kind == "str")
        or (value == "" and sp.optional)
    ):
        if sp.optional:
            return None
        raise ConfigError(f"{key} must be set: expected {sp.allowed()}", key=key)
    if sp.kind == "bool":
        if not isinstance(value, bool):
            raise wrong()
        return value
    if sp.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong()
        if not sp.in_range(value):
            raise out_of_range()
        return int(value)
    if sp.kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong()
        v = float(value)
        if not math.isfinite(v) or not sp.in_range(v):
            raise out_of_range()
        return v
    if sp.kind == "str":
        if not isinstance(value, str):
            raise wrong()
        return value
    if sp.kind == "choice":
        if not isinstance(value, str):
            raise wrong()
        if value not in sp.choices:
            close = difflib.get_close_matches(value, sp.choices, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"{key} = {value!r} is not allowed: expected {sp.allowed()}{hint}", key=key
            )
        return value
    if sp.kind == "list":
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise wrong()
        assert sp.item is not None
        return tuple(_coerce(v, sp.item, f"{key}[{i}]") for i, v in enumerate(value))
    raise AssertionError(sp.kind)  # pragma: no cover


def _all_keys(cls: type, prefix: str = "") -> list[str]:
    out = []
    for f in fields(cls):
        full = f"{prefix}{f.name}"
        out.append(full)
        if "section" in f.metadata:
            out.extend(_all_keys(f.metadata["section"], full + "."))
    return out


# Common names for parameters whose short grammar names difflib would not find.
_ALIASES = {
    "lengthscale": "l",
    "length_scale": "l",
    "ls": "l",
    "amplitude": "amp",
    "variance": "amp",
    "noise_variance": "noise",
    "changepoint": "location",
    "change_point": "location",
}


def _unknown(key: str, cls: type, prefix: str) -> ConfigError:
    names = [f.name for f in fields(cls)]
    name = key.rsplit(".", 1)[-1]
    alias = _ALIASES.get(name.lower())
    close = [alias] if alias in names else difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:  # a case slip (lin vs LIN)?
        close = [n for n in names if n.lower() == name.lower()]
    if close:
        hint = f"did you mean {prefix + close[0]!r}?"
    else:
        # Maybe it belongs to another section (max_depth under [smc]).
        everywhere = _all_keys(Config)
        tails = {k.rsplit(".", 1)[-1]: k for k in everywhere}
        other = difflib.get_close_matches(name, list(tails), n=1, cutoff=0.8)
        hint = (
            f"did you mean {tails[other[0]]!r}?"
            if other
            else f"valid keys here: {', '.join(names)}"
        )
    where = f"[{prefix[:-1]}]" if prefix else "the top level"
    return ConfigError(f"unknown key {key!r} in {where}; {hint}", key=key)


def _build(cls: type, data: Any, prefix: str, base: Any = None) -> Any:
    """``cls`` from a mapping; keys not given keep ``base``'s values (or the class defaults)."""
    if isinstance(data, cls):
        data = _to_dict(data)
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{prefix[:-1]} must be a table (a [section] in TOML), got {_type_name(data)} {data!r}",
            key=prefix[:-1],
        )
    names = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if not isinstance(k, str) or k not in names:
            raise _unknown(str(key), cls, prefix)
        f = names[k]
        if "section" in f.metadata:
            default = f.default_factory()  # type: ignore[misc]
            kwargs[k] = _build(f.metadata["section"], v, key + ".", default)
        else:
            kwargs[k] = _coerce(v, f.metadata["spec"], key)
    obj = replace(base, **kwargs) if base is not None else cls(**kwargs)
    check = getattr(obj, "_check", None)
    if check is not None:
        check(prefix[:-1] if prefix else "config")
    return obj


def _to_dict(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_dict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple | list):
        return [_to_dict(v) for v in obj]
    return obj


def _set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    cur = d
    for i, p in enumerate(parts[:-1]):
        nxt = cur.get(p)
        if nxt is None:
            nxt = cur[p] = {}
        elif not isinstance(nxt, dict):
            raise ConfigError(
                f"override {key!r}: {'.'.join(parts[: i + 1])} is not a section", key=key
            )
        cur = nxt
    cur[parts[-1]] = value


def _deep_copy(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, Mapping) else v for k, v in d.items()}


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``["smc.num_particles=32", "data.path=x.csv"]`` -> ``{"smc.num_particles": 32, ...}``.

    Values are read as TOML values (``32``, ``0.5``, ``true``, ``[80, 95]``, ``"text"``); a
    value that is not valid TOML is taken as a plain string.
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value, e.g. seed=1")
        key, text = (s.strip() for s in item.split("=", 1))
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        out[key] = value
    return out


def load_config(
    source: str | Path | Mapping[str, Any] | Config | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build a validated :class:`Config`.

    Args:
        source: a TOML file path, a (nested) dict as ``Config.to_dict()`` gives, a ``Config``,
            or ``None`` for the defaults.
        overrides: dotted keys applied on top, e.g. ``{"smc.num_particles": 64}``.

    Raises:
        ConfigError: unreadable file, TOML syntax, unknown key (with the nearest valid key),
            wrong type or value out of range (naming the full key, allowed values and value).
    """
    origin = ""
    if source is None:
        data: dict[str, Any] = {}
    elif isinstance(source, Config):
        data = source.to_dict()
    elif isinstance(source, Mapping):
        data = _deep_copy(source)
    elif isinstance(source, str | Path):
        path = Path(source)
        origin = f"{path}: "
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    else:
        raise ConfigError(
            f"load_config expects a path, a dict or None, got {type(source).__name__}"
        )
    for key, value in (overrides or {}).items():
        _set_dotted(data, key, value)
    try:
        return _build(Config, data, "")
    except ConfigError as exc:
        if not origin:
            raise
        raise ConfigError(origin + str(exc), key=exc.key) from None


def loads_config(text: str) -> Config:
    """:func:`load_config` for TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    return load_config(data)


# ---- documentation and TOML output -----------------------------------------------------------
def describe() -> list[tuple[str, Any, str, str]]:
    """Every key: ``(full key, default, allowed values, doc)``."""
    rows: list[tuple[str, Any, str, str]] = []

    def walk(cls: type, prefix: str) -> None:
        for f in fields(cls):
            if "section" in f.metadata:
                walk(f.metadata["section"], f"{prefix}{f.name}.")
            else:
                sp: _Spec = f.metadata["spec"]
                default = f.default if f.default is not MISSING else None
                rows.append((prefix + f.name, _to_dict(default), sp.allowed(), sp.doc))

    walk(Config, "")
    # Section defaults that differ from the class default (the priors) come from instances.
    defaults = _flatten(Config().to_dict())
    return [(k, defaults.get(k, d), a, doc) for k, d, a, doc in rows]


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        escaped = v.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        escaped = escaped.replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _to_toml(d: Mapping[str, Any], docs: Mapping[str, tuple[str, str]] | None = None) -> str:
    lines: list[str] = []
    # An unset key whose default is set (a disabled output file) is written as false.
    defaults = _flatten(_to_dict(Config()))

    def emit(table: Mapping[str, Any], prefix: str) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        subs = {k: v for k, v in table.items() if isinstance(v, Mapping)}
        if prefix and (scalars or not subs):
            lines.append(f"\n[{prefix}]")
        for k, v in scalars.items():
            full = f"{prefix}.{k}" if prefix else k
            if docs and full in docs:
                doc, allowed = docs[full]
                lines.append(f"# {doc}. Allowed: {allowed}.")
            if v is None and defaults.get(full) is not None:
                lines.append(f"{k} = false")
            elif v is None:
                lines.append(f"# {k} = (unset)")
            else:
                lines.append(f"{k} = {_toml_value(v)}")
        for k, v in subs.items():
            emit(v, f"{prefix}.{k}" if prefix else k)

    emit(d, "")
    return "\n".join(lines).lstrip("\n") + "\n"


def default_toml() -> str:
    """The default configuration as a TOML file, each key commented with its doc and range."""
    docs = {k: (doc, allowed) for k, _, allowed, doc in describe()}
    return _to_toml(Config().to_dict(), docs)


__all__ = [
    "Config",
    "ConfigError",
    "DataConfig",
    "ExperimentConfig",
    "ForecastConfig",
    "GrammarConfig",
    "GrammarWeights",
    "OutputConfig",
    "Prior",
    "PriorsConfig",
    "RefineConfig",
    "SMCConfig",
    "default_toml",
    "describe",
    "load_config",
    "loads_config",
    "parse_overrides",
]
