"""The whole configuration: :class:`Config` with every section, and how it is read and written."""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, make_dataclass
from pathlib import Path
from typing import Any

from autogp.config import build, document
from autogp.config.keys import ConfigError, section
from autogp.config.search import (
    GrammarConfig,
    PriorsConfig,
    RefineConfig,
    SMCConfig,
    refine_section,
    smc_section,
)
from autogp.config.sections import DataConfig, ExperimentConfig, ForecastConfig, OutputConfig
from autogp.inference.settings import SMCSettings
from autogp.setting import setting


@dataclass(frozen=True)
class Config:
    """A complete, validated configuration (immutable). Build it with :func:`load_config`."""

    seed: int = setting(0, "random seed", lo=0, hi=2**63 - 1)
    data: DataConfig = section(DataConfig, "the input series")
    grammar: GrammarConfig = section(GrammarConfig, "the kernel grammar")
    priors: PriorsConfig = section(PriorsConfig, "parameter priors")
    smc: SMCConfig = section(SMCConfig, "sequential Monte Carlo")
    refine: RefineConfig = section(RefineConfig, "parameter refinement")
    forecast: ForecastConfig = section(ForecastConfig, "forecasting")
    output: OutputConfig = section(OutputConfig, "output files")
    experiment: ExperimentConfig = section(ExperimentConfig, "benchmark runs")

    @classmethod
    def load(
        cls,
        source: str | Path | Mapping[str, Any] | Config | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> Config:
        """A validated configuration of this class (see :func:`load_config`)."""
        return build.load(cls, source, overrides)

    @classmethod
    def loads(cls, text: str) -> Config:
        """:meth:`load` for TOML text."""
        return build.loads(cls, text)

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str, str]]:
        """Every key: ``(full key, default, allowed values, doc)``."""
        return document.describe(cls)

    @classmethod
    def default_toml(cls) -> str:
        """The defaults as a TOML file, each key commented with its doc and range."""
        return document.default_toml(cls)

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dict (lists for sequences, strings for modes, ``None`` for unset
        keys); ``load_config(cfg.to_dict()) == cfg``."""
        return build.to_dict(self)

    def to_toml(self) -> str:
        """The configuration as TOML text (unset keys are left out)."""
        return document.to_toml(self.to_dict(), type(self))

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with dotted-key overrides applied and validated."""
        return type(self).load(self.to_dict(), overrides)


@functools.cache
def config_class(engine: type[SMCSettings] = SMCSettings) -> type[Config]:
    """The :class:`Config` whose [smc] and [refine] sections are derived from ``engine`` (a
    subclass of :class:`~autogp.inference.settings.SMCSettings` that declares more settings):
    its keys, ``describe()``, validation and :func:`~autogp.config.engine_settings` follow."""
    if engine is SMCSettings:
        return Config
    smc, refine = smc_section(engine), refine_section(engine)
    docs = {name: Config.__dataclass_fields__[name].metadata["doc"] for name in ("smc", "refine")}
    return make_dataclass(
        f"Config_{engine.__name__}",
        [("smc", smc, section(smc, docs["smc"])),
         ("refine", refine, section(refine, docs["refine"]))],
        bases=(Config,), frozen=True,
        namespace={"__module__": __name__, "__doc__": Config.__doc__},
    )


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
    return Config.load(source, overrides)


def loads_config(text: str) -> Config:
    """:func:`load_config` for TOML text."""
    return Config.loads(text)


#: Settings for every fit of a process, as ``--set`` gives them on the command line:
#: ``AUTOGP_SET="smc.num_particles=4 smc.num_rounds=3"`` (shell quoting for values with
#: spaces). A quick configuration for a script or a smoke test, without editing it.
SETTINGS_ENV = "AUTOGP_SET"


def environment_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The dotted-key settings of :data:`SETTINGS_ENV` in ``environ`` (default
    ``os.environ``), checked against the keys; ``{}`` when it is unset or empty.

    Raises:
        ConfigError: a malformed item or a bad key or value, the message naming the variable.
    """
    text = (os.environ if environ is None else environ).get(SETTINGS_ENV, "").strip()
    if not text:
        return {}
    try:
        settings = build.parse_overrides(shlex.split(text))
        Config.load(None, settings)
    except (ValueError, ConfigError) as exc:  # shlex: unclosed quotes
        raise ConfigError(f"{SETTINGS_ENV}={text!r}: {exc}",
                          key=getattr(exc, "key", None)) from None
    return settings


def describe() -> list[tuple[str, Any, str, str]]:
    """Every key: ``(full key, default, allowed values, doc)``."""
    return Config.describe()


def default_toml() -> str:
    """The default configuration as a TOML file, each key commented with its doc and range."""
    return Config.default_toml()


__all__ = [
    "SETTINGS_ENV",
    "Config",
    "config_class",
    "default_toml",
    "describe",
    "environment_settings",
    "load_config",
    "loads_config",
]
