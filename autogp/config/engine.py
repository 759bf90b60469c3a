"""The engine's typed settings built from a user config: the one bridge between the two.

``autogp.inference`` never reads a :class:`~autogp.config.Config`; every fit, update and
baseline gets its grammar and settings from :func:`engine_settings`.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from autogp.config.root import Config
from autogp.inference.grammar import Grammar
from autogp.inference.settings import RefineSettings, SMCSettings
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
    """[smc] and [refine] keys of the same names; the two move probabilities become one."""
    smc = config.smc
    total = smc.subtree_replace + smc.detach_attach
    same_name = {
        f.name: getattr(smc, f.name)
        for f in dataclasses.fields(SMCSettings)
        if f.name not in ("replace_prob", "refine")
    }
    refine = RefineSettings(
        **{f.name: getattr(config.refine, f.name) for f in dataclasses.fields(RefineSettings)}
    )
    return SMCSettings(
        **same_name,
        replace_prob=smc.subtree_replace / total if total > 0 else SMCSettings.replace_prob,
        refine=refine,
    )


def engine_settings(config: Config) -> EngineSettings:
    """The grammar and SMC settings a fit under ``config`` runs with."""
    return EngineSettings(_grammar(config), _smc_settings(config))


__all__ = ["EngineSettings", "engine_settings"]
