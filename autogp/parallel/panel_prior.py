"""Priors learned from a panel: fit its series under the base prior, then learn, per kind of
series, the type-II prior of their particles (:mod:`autogp.inference.empirical_bayes`).

Kinds of series (:func:`kind_groups`): each season in observations with short (up to
``learned_prior.SHORT`` fitted points) and long series apart, each season whole, short and
long series of any season, and every series; a kind with fewer than ``min_series`` series is
left out, and a fit takes the most specific kind that matches its series
(:meth:`~autogp.config.learned_prior.PriorTable.group_for`). Each kind is learned from at most
``max_series`` of its series (the first by id, so the choice does not depend on the order of
the panel). The fits run on :func:`~autogp.parallel.panel.fit_panel`'s backends and resume
from its folder; the learned file is written there too, and a resumed run reads it back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autogp.config import Config, engine_settings
from autogp.config.learned_prior import (
    ANY_LENGTH,
    AUTOGP_JL,
    SHORT,
    PriorGroup,
    PriorTable,
    covers,
    group_of,
    prior_table_text,
    read_prior_table,
)
from autogp.data import TimeSeries
from autogp.data.seasons import mase_season
from autogp.inference.empirical_bayes import learn_prior, stack_particles
from autogp.inference.evidence import particle_evidence, second_half_log_likelihood
from autogp.inference.grammar import Grammar
from autogp.inference.padding import make_data
from autogp.inference.posterior import Posterior
from autogp.pipeline.fitting import fitting_window

#: A kind of series needs this many fitted series to get its own prior.
MIN_SERIES = 20
#: At most this many series of a kind are fitted to learn its prior.
MAX_SERIES = 200
FILE_NAME = "learned_prior.toml"


def series_kind(series: TimeSeries, config: Config) -> tuple[int, int]:
    """(season in observations, fitted points) of ``series``: what picks its prior group."""
    seen = fitting_window(series, config).series
    return mase_season(seen.axis), seen.n


def kind_groups(kinds: dict[str, tuple[int, int]], min_series: int = MIN_SERIES
                ) -> list[tuple[str, tuple[int, ...], tuple[int, int], list[str]]]:
    """``(name, seasons, points, ids)`` of every kind with at least ``min_series`` series,
    the most specific first; ``kinds``: id -> (season, points)."""
    lengths = (((1, SHORT), f"up to {SHORT} points"), ((SHORT + 1, 0), f"over {SHORT} points"))
    specs = []
    for season in sorted({s for s, _ in kinds.values()}):
        specs += [(f"season {season}, {words}", (season,), points) for points, words in lengths]
        specs.append((f"season {season}", (season,), ANY_LENGTH))
    specs += [(f"any season, {words}", (), points) for points, words in lengths]
    specs.append(("any series", (), ANY_LENGTH))
    out = []
    for name, seasons, points in specs:
        ids = sorted(u for u, (s, n) in kinds.items() if covers(seasons, points, s, n))
        if len(ids) >= min_series:
            out.append((name, seasons, points, ids))
    return out


def holdout_densities(fit: Posterior) -> np.ndarray:
    """``log p(y_2 | y_1, theta)`` of each particle of ``fit`` on its normalised window
    (``y_1`` its first half): what the predictive objective scores."""
    data = make_data([fit.x], [fit.y])
    return second_half_log_likelihood(fit.ops, fit.params, fit.noise, data,
                                      num_particles=len(fit.noise))


def laplace_modes(fit: Posterior, grammar: Grammar
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(params, noise, param_var, noise_var)``: each particle's mode (in its canonical
    mirror image) and the Laplace variance of every unconstrained coordinate around it, on
    the fit's normalised window with the untempered likelihood (``inf`` where a coordinate is
    not active, the width of a failed Hessian the prior's)."""
    P, S, M = fit.params.shape
    data = make_data([fit.x], [fit.y])
    ev = particle_evidence(grammar, fit.ops, fit.params, fit.noise, data, num_particles=P)
    var = np.full((P, S * M + 1), np.inf)
    for b in range(P):
        coords, width = ev.coords[b], ev.widths[b]
        if len(coords):
            var[b, coords] = np.diag(np.linalg.inv(width))
    flat = ev.flat
    return (flat[:, :-1].reshape(P, S, M), flat[:, -1], var[:, :-1].reshape(P, S, M),
            var[:, -1])


def learn_table(fits: dict[str, Posterior], kinds: dict[str, tuple[int, int]], config: Config,
                *, source: str, min_series: int = MIN_SERIES, max_series: int = MAX_SERIES,
                objective: str = "evidence", laplace: bool = False) -> PriorTable:
    """The prior table learned from ``fits`` (fitted under ``config``'s base prior), one
    group per kind of :func:`kind_groups`, by ``objective``
    (:data:`~autogp.inference.empirical_bayes.OBJECTIVES`); ``laplace``: each particle's
    prior ratio integrated over its mode's Laplace width (else read at the mode)."""
    base = engine_settings(config).grammar
    fitted = {u: k for u, k in kinds.items() if u in fits and fits[u].covariate_scaling is None}
    held = ({u: holdout_densities(fits[u]) for u in fitted} if objective == "predictive"
            else None)
    modes = {u: laplace_modes(fits[u], base) for u in fitted} if laplace else None
    groups: list[PriorGroup] = []
    for name, seasons, points, ids in kind_groups(fitted, min_series):
        chosen = ids[:max_series]
        if modes is None:
            sets = [(f.ops, f.params, f.noise, f.log_weights) for f in (fits[u] for u in chosen)]
        else:
            sets = [(fits[u].ops, modes[u][0], modes[u][1], fits[u].log_weights)
                    for u in chosen]
        particles = stack_particles(
            sets, None if held is None else [held[u] for u in chosen],
            None if modes is None else [(modes[u][2], modes[u][3]) for u in chosen])
        learned = learn_prior(particles, base, objective=objective)
        groups.append(group_of(name, learned.grammar, seasons=seasons, points=points,
                               series=learned.num_series, gain=learned.gain))
    if not groups:
        raise ValueError(f"a prior needs at least {min_series} fitted series of one kind "
                         f"(without covariates); {len(fitted)} were fitted")
    return PriorTable(source=source, groups=tuple(groups))


def learning_sample(all_series: Sequence[TimeSeries], config: Config,
                    max_series: int = MAX_SERIES) -> tuple[list[TimeSeries], dict]:
    """The series fitted to learn a panel's prior (at most ``max_series`` of each season and
    length, the first by id) and every series' kind."""
    kinds = {s.unique_id: series_kind(s, config) for s in all_series}
    by_kind: dict[tuple[int, bool], list[str]] = {}
    for u, (season, n) in sorted(kinds.items()):
        by_kind.setdefault((season, n <= SHORT), []).append(u)
    keep = {u for ids in by_kind.values() for u in ids[:max_series]}
    return [s for s in all_series if s.unique_id in keep], kinds


def learn_panel_prior(config: Config, all_series: Sequence[TimeSeries], *,
                      folder: str | Path, fit: Any, max_series: int | None = None,
                      min_series: int | None = None) -> Path:
    """Learn the prior of ``all_series`` (their training rows: the series as given) and write
    it to ``folder/learned_prior.toml``; a file already there (a resumed run) is read back
    instead. ``fit(config, series, resume)`` fits series (``fit_panel`` with the caller's
    backend) and returns ``{id: Posterior}``. Returns the file's path."""
    folder = Path(folder)
    path = folder / FILE_NAME
    if path.exists():
        read_prior_table(path)  # a damaged file is an error here, not in every worker
        return path
    max_series = MAX_SERIES if max_series is None else max_series
    min_series = MIN_SERIES if min_series is None else min_series
    base = config.with_overrides({"grammar.prior": AUTOGP_JL})
    sample, kinds = learning_sample(all_series, base, max_series)
    fits = fit(base, sample, folder / "prior_fits")
    digest = hashlib.sha256("".join(sorted(kinds)).encode()).hexdigest()[:12]
    table = learn_table(fits, {u: kinds[u] for u in fits}, base, min_series=min_series,
                        max_series=max_series,
                        source=f"panel of {len(all_series)} series (ids sha256 {digest}), "
                               f"{len(fits)} fitted with seed {config.seed}")
    folder.mkdir(parents=True, exist_ok=True)
    text = prior_table_text(table, header=(
        "Priors learned from a panel's training rows (autogp.parallel.panel_prior):\n"
        "type-II empirical Bayes over each series' SMC particles."))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def summary(table: PriorTable) -> list[str]:
    """One line per group: its kind, series and the learned trend-slope and noise priors."""
    lines = []
    for g in table.groups:
        slope = g.priors.get("LIN.amp")
        slope_text = (f"LIN slope variance median {np.exp(slope[0]):.3g} (sd {slope[1]:.2f})"
                      if slope else "no LIN")
        lines.append(f"{g.name}: {g.series} series, {slope_text}, noise variance median "
                     f"{np.exp(g.noise[0]):.3g}, {g.gain:+.1f} nats")
    return lines


__all__ = ["FILE_NAME", "MAX_SERIES", "MIN_SERIES", "holdout_densities", "kind_groups",
           "laplace_modes", "learn_panel_prior",
           "learn_table", "learning_sample", "series_kind", "summary"]
