"""The whole configuration: :class:`Config` with every section, and how it is read and written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autogp.config import build, document
from autogp.config.keys import key, section
from autogp.config.search import GrammarConfig, PriorsConfig, RefineConfig, SMCConfig
from autogp.config.sections import DataConfig, ExperimentConfig, ForecastConfig, OutputConfig


@dataclass(frozen=True)
class Config:
    """A complete, validated configuration (immutable). Build it with :func:`load_config`."""

    seed: int = key(0, "random seed", "int", lo=0, hi=2**63 - 1)
    data: DataConfig = section(DataConfig, "the input series")
    grammar: GrammarConfig = section(GrammarConfig, "the kernel grammar")
    priors: PriorsConfig = section(PriorsConfig, "parameter priors")
    smc: SMCConfig = section(SMCConfig, "sequential Monte Carlo")
    refine: RefineConfig = section(RefineConfig, "parameter refinement")
    forecast: ForecastConfig = section(ForecastConfig, "forecasting")
    output: OutputConfig = section(OutputConfig, "output files")
    experiment: ExperimentConfig = section(ExperimentConfig, "benchmark runs")

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dict (lists for sequences, ``None`` for unset keys);
        ``load_config(cfg.to_dict()) == cfg``."""
        return build.to_dict(self)

    def to_toml(self) -> str:
        """The configuration as TOML text (unset keys are left out)."""
        return document.to_toml(self.to_dict(), Config)

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with dotted-key overrides applied and validated."""
        return load_config(self.to_dict(), overrides)


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
    return build.load(Config, source, overrides)


def loads_config(text: str) -> Config:
    """:func:`load_config` for TOML text."""
    return build.loads(Config, text)


def describe() -> list[tuple[str, Any, str, str]]:
    """Every key: ``(full key, default, allowed values, doc)``."""
    return document.describe(Config)


def default_toml() -> str:
    """The default configuration as a TOML file, each key commented with its doc and range."""
    return document.default_toml(Config)


__all__ = ["Config", "default_toml", "describe", "load_config", "loads_config"]
