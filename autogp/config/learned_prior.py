"""Prior files: priors learned across series, by the kind of series they serve.

A prior file (TOML) holds groups, each the priors and production weights learned from one kind
of series: its season in observations (1 for yearly or unseasonal data, 4 quarterly, 12
monthly, ...) and its length. A fit takes the group of its series (:meth:`PriorTable.group_for`:
the most specific that matches) and applies it to every entry of the config's [priors] and
[grammar.weights] the user left at its default (:func:`apply_group`): a prior set by hand wins.

``grammar.prior`` names the prior a fit uses: ``"autogp.jl"`` (LogNormal(-1.5, 1) on every
positive parameter, AutoGP.jl's weights: the [priors] section as written), ``"learned"`` (the
file shipped in the package, learned on the training rows of the shipped panels), ``"panel"``
(learned from the panel being fitted: see ``autogp.parallel.panel_prior``) or a prior file's
path.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from autogp.config.keys import ConfigError
from autogp.config.root import Config
from autogp.inference.grammar import Grammar
from autogp.kernels import spec

#: The values of ``grammar.prior`` that are not a file.
AUTOGP_JL = "autogp.jl"
LEARNED = "learned"
PANEL = "panel"
SHIPPED = Path(__file__).with_name("learned_prior.toml")
#: Series up to this many fitted points are "short" (a group's ``points = [1, 60]``).
SHORT = 60
ANY_LENGTH = (1, 0)  # points = [lo, hi], hi 0: no bound


def covers(seasons: Sequence[int], points: tuple[int, int], season: int, n: int) -> bool:
    """Whether a group of ``seasons`` (empty: any) and ``points = [lo, hi]`` (hi 0: no upper
    bound) serves a series of season ``season`` with ``n`` fitted points."""
    lo, hi = points
    return (not seasons or season in seasons) and n >= lo and (hi == 0 or n <= hi)


#: [grammar.weights] keys (PLUS, TIMES, atom names) -> opcode.
OPCODE_OF_KEY = {key: op for op, key in spec.KEYS.items() if op != spec.EMPTY}


@dataclasses.dataclass(frozen=True)
class PriorGroup:
    """The prior learned from one kind of series."""

    name: str
    seasons: tuple[int, ...]  # empty: any season
    points: tuple[int, int]  # [lo, hi] fitted points, hi 0: no upper bound
    series: int  # how many series it was learned from
    gain: float  # nats of log evidence it added over those series
    weights: Mapping[str, float]  # opcode name -> production weight
    priors: Mapping[str, tuple[float, float]]  # "LIN.amp" -> (mean, std)
    noise: tuple[float, float]

    def matches(self, season: int, points: int) -> bool:
        return covers(self.seasons, self.points, season, points)

    @property
    def specificity(self) -> tuple[int, int]:
        return (bool(self.seasons), self.points != ANY_LENGTH)


@dataclasses.dataclass(frozen=True)
class PriorTable:
    """A prior file's groups and where it came from."""

    source: str
    groups: tuple[PriorGroup, ...]
    path: str = ""

    def group_for(self, season: int, points: int) -> PriorGroup | None:
        """The most specific group matching a series of ``points`` fitted points whose season
        is ``season`` observations (a season first, then a length); None when none does."""
        matching = [g for g in self.groups if g.matches(season, points)]
        return max(matching, key=lambda g: g.specificity) if matching else None


def group_of(name: str, grammar: Grammar, *, seasons: Sequence[int], points: tuple[int, int],
             series: int, gain: float) -> PriorGroup:
    """A group holding ``grammar``'s priors and weights (those of opcodes it can produce)."""
    mean, std = grammar.prior_mean_table, grammar.prior_std_table
    on = [op for op in (*spec.ATOMS, *spec.OPERATORS) if grammar.weights[op] > 0
          and op not in spec.COVARIATE_ATOMS]
    priors = {f"{spec.NAMES[op]}.{p}": (float(mean[op, k]), float(std[op, k]))
              for op in on for k, p in enumerate(spec.PARAM_NAMES[op])}
    return PriorGroup(name, tuple(int(s) for s in seasons), points, series, float(gain),
                      {spec.KEYS[op]: float(grammar.weights[op]) for op in on}, priors,
                      tuple(float(v) for v in grammar.noise_prior))


def _number(v: object, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ConfigError(f"{where}: a finite number expected, got {v!r}")
    return float(v)


def _pair(v: object, where: str) -> tuple[float, float]:
    if not isinstance(v, list) or len(v) != 2:
        raise ConfigError(f"{where}: [mean, std] expected, got {v!r}")
    mean, std = _number(v[0], where), _number(v[1], where)
    if std <= 0:
        raise ConfigError(f"{where}: the std must be positive, got {std}")
    return mean, std


def _group(raw: Mapping, where: str) -> PriorGroup:
    known = {"name", "seasons", "points", "series", "gain", "noise", "weights", "priors"}
    extra = sorted(set(raw) - known)
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r} (expected {sorted(known)})")
    points = raw.get("points", list(ANY_LENGTH))
    if (not isinstance(points, list) or len(points) != 2
            or not all(isinstance(p, int) and p >= 0 for p in points)):
        raise ConfigError(f"{where}.points: [lo, hi] whole numbers expected, got {points!r}")
    weights = {}
    for name, w in raw.get("weights", {}).items():
        if name not in OPCODE_OF_KEY:
            raise ConfigError(f"{where}.weights: unknown atom or operator {name!r}")
        weights[name] = _number(w, f"{where}.weights.{name}")
        if weights[name] < 0:
            raise ConfigError(f"{where}.weights.{name}: must be >= 0, got {w!r}")
    priors = {}
    for dotted, pair in raw.get("priors", {}).items():
        op_name, _, param = dotted.partition(".")
        op = spec.OPCODE_OF_NAME.get(op_name)
        if op is None or param not in spec.PARAM_NAMES[op]:
            raise ConfigError(f"{where}.priors: {dotted!r} is no parameter (expected "
                              "ATOM.parameter, e.g. 'LIN.amp')")
        priors[dotted] = _pair(pair, f"{where}.priors.{dotted!r}")
    return PriorGroup(
        name=str(raw.get("name", where)),
        seasons=tuple(int(s) for s in raw.get("seasons", [])),
        points=(int(points[0]), int(points[1])),
        series=int(raw.get("series", 0)),
        gain=_number(raw.get("gain", 0.0), f"{where}.gain"),
        weights=weights, priors=priors,
        noise=_pair(raw["noise"], f"{where}.noise") if "noise" in raw else spec.NOISE.prior,
    )


def read_prior_table(path: str | Path) -> PriorTable:
    """A prior file; :class:`ConfigError` naming the file and the entry where it is wrong."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"grammar.prior: cannot read the prior file {str(path)!r}: "
                          f"{exc.strerror or exc}", key="grammar.prior") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"prior file {str(path)!r}: {exc}", key="grammar.prior") from None
    groups = raw.get("group", [])
    if not groups:
        raise ConfigError(f"prior file {str(path)!r} has no [[group]]", key="grammar.prior")
    return PriorTable(
        source=str(raw.get("source", "")),
        groups=tuple(_group(g, f"{path.name}: group {i + 1}") for i, g in enumerate(groups)),
        path=str(path),
    )


def _toml_pair(pair: tuple[float, float]) -> str:
    return f"[{pair[0]:.4f}, {pair[1]:.4f}]"


def prior_table_text(table: PriorTable, header: str = "") -> str:
    """``table`` as a prior file (TOML): :func:`read_prior_table` reads it back."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.append(f"source = {_toml_string(table.source)}")
    for g in table.groups:
        lines += ["", "[[group]]", f"name = {_toml_string(g.name)}",
                  f"seasons = [{', '.join(str(s) for s in g.seasons)}]",
                  f"points = [{g.points[0]}, {g.points[1]}]",
                  f"series = {g.series}", f"gain = {g.gain:.1f}   # nats of log evidence",
                  f"noise = {_toml_pair(g.noise)}   # log noise variance: [mean, std]",
                  "[group.weights]"]
        lines += [f"{k} = {v:.3f}" for k, v in g.weights.items()]
        lines.append("[group.priors]   # unconstrained parameter: [mean, std]")
        lines += [f'"{k}" = {_toml_pair(v)}' for k, v in g.priors.items()]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


@functools.cache
def _read_cached(path: str, mtime: float) -> PriorTable:
    return read_prior_table(path)


def prior_table(config: Config) -> PriorTable | None:
    """The prior file ``grammar.prior`` names (None for ``"autogp.jl"``); ``"panel"`` must
    have been replaced by the learned file's path before a fit."""
    name = config.grammar.prior
    if name == AUTOGP_JL:
        return None
    if name == PANEL:
        raise ConfigError("grammar.prior = 'panel' is learned from a panel before its series "
                          "are fitted (AutoGP.fit on a panel, autogp fit or autogp run); a "
                          "single fit needs 'autogp.jl', 'learned' or a prior file",
                          key="grammar.prior")
    path = SHIPPED if name == LEARNED else Path(name)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        raise ConfigError(f"grammar.prior: no prior file {name!r} (expected 'autogp.jl', "
                          f"'learned', 'panel' or a prior file's path)",
                          key="grammar.prior") from None
    return _read_cached(str(path), mtime)


def apply_group(grammar: Grammar, group: PriorGroup, config: Config) -> Grammar:
    """``grammar`` with ``group``'s priors and weights in every entry the config's [priors]
    and [grammar.weights] leave at their defaults (an entry set by hand is kept)."""
    defaults = Config()
    set_priors = {name for name, value in config.priors.as_dict().items()
                  if value != defaults.priors.as_dict()[name]}
    set_weights = {name for name, w in config.grammar.weights.as_dict().items()
                   if w != defaults.grammar.weights.as_dict()[name]}
    mean = np.array(grammar.prior_mean_table)
    std = np.array(grammar.prior_std_table)
    for dotted, (m, s) in group.priors.items():
        op_name, _, param = dotted.partition(".")
        if param not in set_priors:
            op = spec.OPCODE_OF_NAME[op_name]
            k = spec.PARAM_NAMES[op].index(param)
            mean[op, k], std[op, k] = m, s
    weights = np.array(grammar.weights)
    if group.weights and not set_weights:  # relative numbers: a group's set replaces the whole
        for op in (*spec.ATOMS, *spec.OPERATORS):
            if op not in spec.COVARIATE_ATOMS:
                weights[op] = 0.0
        for name, w in group.weights.items():
            weights[OPCODE_OF_KEY[name]] = w
    noise = grammar.noise_prior if "noise" in set_priors else group.noise
    return dataclasses.replace(grammar, weights=tuple(weights),
                               param_prior_mean=tuple(map(tuple, mean)),
                               param_prior_std=tuple(map(tuple, std)), noise_prior=noise)


__all__ = ["AUTOGP_JL", "LEARNED", "OPCODE_OF_KEY", "PANEL", "SHIPPED", "SHORT", "PriorGroup",
           "PriorTable", "apply_group", "covers", "group_of", "prior_table", "prior_table_text",
           "read_prior_table"]
