"""The engine's typed settings built from a user config: the one bridge between the two.

``autogp.inference`` never reads a :class:`~autogp.config.Config`; every fit, update and
baseline gets its grammar and settings from :func:`engine_settings`.
"""

from __future__ import annotations

from typing import NamedTuple

from autogp.config.derive import settings_from
from autogp.config.root import Config
from autogp.inference.grammar import Grammar
from autogp.inference.settings import SMCSettings
from autogp.kernels import spec


class EngineSettings(NamedTuple):
    """What the engine needs besides the data and the key."""

    grammar: Grammar
    smc: SMCSettings


def _grammar(config: Config) -> Grammar:
    """The structure prior ([grammar]) and parameter priors ([priors])."""
    cfg = config.to_dict()
    names = {"PLUS": "+", "TIMES": "*"}
    weights = {names.get(k, k): float(w) for k, w in cfg["grammar"]["weights"].items()}
    priors = {}
    for op, params in spec.PARAM_NAMES.items():
        for name in params:
            entry = cfg["priors"].get(name)
            if entry is not None:
                priors[(op, name)] = (entry["mean"], entry["std"])
    noise = cfg["priors"].get("noise")
    return Grammar.default(
        max_depth=cfg["grammar"]["max_depth"],
        weights=weights,
        param_priors=priors,
        noise_prior=(noise["mean"], noise["std"]) if noise is not None else None,
    )


def _smc_settings(config: Config) -> SMCSettings:
    """The settings class [smc] was derived from, built from the [smc] and [refine] keys of
    its settings' names; the keys [smc] writes for an engine setting give that setting."""
    smc, refine = config.smc, config.refine
    return settings_from(
        smc, type(smc).SETTINGS,
        refine=settings_from(refine, type(refine).SETTINGS), **smc.engine_fields(),
    )


def engine_settings(config: Config) -> EngineSettings:
    """The grammar and SMC settings a fit under ``config`` runs with."""
    return EngineSettings(_grammar(config), _smc_settings(config))


__all__ = ["EngineSettings", "engine_settings"]
