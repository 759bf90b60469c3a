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
and the bad value, and suggest the nearest valid key for unknown ones. ``engine_settings``
turns a config into the typed grammar and settings the engine (``autogp.inference``) runs with.

Each key is declared once, as a field made by :func:`autogp.setting.setting` (type, default,
range or choices, doc); the [smc] and [refine] sections are derived from the engine's own
settings classes (:mod:`autogp.inference.settings`), so a setting added there is a key here, in
``describe()`` and in the validation. :func:`config_class` gives the configuration of an engine
class that declares more settings.

The package: ``keys`` (sections and the error), ``build`` (building and validating from plain
data, overrides, TOML reading), ``document`` (the key table and TOML writing) and ``derive``
(sections from settings classes and back) are generic; ``sections`` and ``search`` hold the
sections, ``root`` the whole :class:`Config`, and ``engine`` the bridge to the engine's
settings.
"""

from autogp.config.build import parse_overrides
from autogp.config.engine import EngineSettings, engine_settings
from autogp.config.keys import ConfigError
from autogp.config.root import (
    SETTINGS_ENV,
    Config,
    config_class,
    default_toml,
    describe,
    environment_settings,
    load_config,
    loads_config,
)
from autogp.config.search import (
    GrammarConfig,
    GrammarWeights,
    Prior,
    PriorsConfig,
    RefineConfig,
    SMCConfig,
)
from autogp.config.sections import DataConfig, ExperimentConfig, ForecastConfig, OutputConfig

__all__ = [
    "SETTINGS_ENV",
    "Config",
    "ConfigError",
    "DataConfig",
    "EngineSettings",
    "ExperimentConfig",
    "ForecastConfig",
    "GrammarConfig",
    "GrammarWeights",
    "OutputConfig",
    "Prior",
    "PriorsConfig",
    "RefineConfig",
    "SMCConfig",
    "config_class",
    "default_toml",
    "describe",
    "engine_settings",
    "environment_settings",
    "load_config",
    "loads_config",
    "parse_overrides",
]
