"""The prior a series is fitted under: the config's grammar, with the learned prior group of
the series' kind where ``grammar.prior`` names one (``autogp.config.learned_prior``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from autogp.config import Config, EngineSettings, engine_settings
from autogp.config.learned_prior import PriorGroup, PriorTable, apply_group, prior_table
from autogp.data import TimeSeries
from autogp.data.seasons import mase_season
from autogp.inference.grammar import Grammar
from autogp.kernels import spec


def _series_group(config: Config, series: TimeSeries | None, points: int | None
                  ) -> tuple[PriorTable | None, PriorGroup | None]:
    """The prior file ``grammar.prior`` names (None: the config's own priors) and the group of
    it that ``series`` (its fitted points; ``points`` of them where given) takes."""
    table = prior_table(config)
    if table is None or series is None:
        return None, None
    return table, table.group_for(mase_season(series.axis),
                                  series.n if points is None else points)


def prior_label(config: Config, series: TimeSeries | None, points: int | None = None) -> str:
    """What :func:`series_engine` applies to ``series``: ``""`` for the config's own priors,
    else the prior file and the name of its group (``"learned_prior.toml: season 1, up to 60
    points"``), or the file and "no group" where none matches."""
    table, group = _series_group(config, series, points)
    if table is None:
        return ""
    where = Path(table.path).name
    return f"{where}: {group.name}" if group is not None else f"{where}: no group matches"


def _moved_ge_weight(grammar: Grammar, atom: str) -> Grammar:
    """``grammar`` with GE's production weight added to ``atom``'s."""
    weights = list(grammar.weights)
    op = spec.OPCODE_OF_NAME[atom]
    weights[op] += weights[spec.GE]
    weights[spec.GE] = 0.0
    return dataclasses.replace(grammar, weights=tuple(weights))


def series_engine(config: Config, series: TimeSeries | None, ge_to: str = "",
                  points: int | None = None) -> EngineSettings:
    """The grammar and SMC settings ``series`` (its fitted points; ``points`` of them where
    given) is fitted under: the learned group of its season and length where ``grammar.prior``
    names a prior file, then GE's weight moved to ``ge_to`` where that is set."""
    grammar, settings = engine_settings(config)
    _, group = _series_group(config, series, points)
    if group is not None:
        grammar = apply_group(grammar, group, config)
    if ge_to:
        grammar = _moved_ge_weight(grammar, ge_to)
    return EngineSettings(grammar, settings)


__all__ = ["prior_label", "series_engine"]
