"""``autogp run CONFIG``: an experiment described entirely by a config file.

The config's ``[data]`` section names the series (``path``, columns, ``id_col`` for panels,
``split_col`` marking held-out rows); ``[smc]``/``[grammar]``/``[refine]``/``[priors]`` the
model; ``[forecast]`` the horizon and interval levels; ``[output]`` the files written into
``output.dir``; ``[experiment]`` the name and the metrics.

When test points exist (a split column, or ``--holdout N``) the model is fitted on the training
part, forecasts are made at the test time stamps and scored: sMAPE, MASE (seasonal-naive scale)
and the coverage of each interval level, per series and averaged (``metrics.csv``,
``summary.json``, and a table on stdout). Without test points it simply forecasts
``forecast.horizon`` steps.

A relative ``data.path`` is relative to the config file's folder; when no file is there it is
looked up in the working directory, then (by file name) in ``examples/data/``. So are
``experiment.baselines`` and ``experiment.reference``.

``experiment.group_col``/``group_value`` fit only the series of one group of the file (M3's
yearly series of a file that also holds quarterly ones); ``experiment.parts`` makes the
experiment a list of such configs (:mod:`~autogp.experiments.parts`).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console

from autogp.config import Config, ConfigError, load_config
from autogp.config.learned_prior import AUTOGP_JL, LEARNED, PANEL
from autogp.data import DataError, TimeSeries, from_frame, read_csv
from autogp.data.header import read_frame
from autogp.data.seasons import with_frequency
from autogp.experiments.comparison import (
    baselines_from_file,
    baselines_on_split,
    comparison_table,
    model_scores,
)
from autogp.experiments.published import read_reference
from autogp.experiments.report import machine_description, print_summary, write_outputs
from autogp.experiments.sampling import read_strata, sample_ids, stratified_sample
from autogp.experiments.series_scores import (
    SUPPORTED_METRICS,
    forecast_and_score_chunk,
    forecast_and_score_fit,
)
from autogp.forecast.metrics import seasonality
from autogp.forecast.model import AutoGP
from autogp.parallel import AfterFit, map_chunks, read_series_tolerant, resolve_workers
from autogp.parallel.panel import panel_prior_config
from autogp.parallel.panel_prior import FILE_NAME


def with_run_prior(config: Config, config_path: Path, trains: list[TimeSeries], *,
                   resume: bool, quiet: bool) -> Config:
    """``config`` with ``grammar.prior`` a file a worker can read: a prior file named
    relative to the config's folder, or ``"panel"`` learned from the run's training series
    into ``output.dir/prior/`` (a resumed run reads it back; a new run learns it again)."""
    prior = config.grammar.prior
    if prior in (AUTOGP_JL, LEARNED):
        return config
    if prior != PANEL:
        return config.with_overrides({"grammar.prior": str(find_file(prior, config_path))})
    folder = Path(config.output.dir) / "prior"
    if not resume:
        (folder / FILE_NAME).unlink(missing_ok=True)
        shutil.rmtree(folder / "prior_fits", ignore_errors=True)
    return panel_prior_config(config, trains, folder, lambda c, series, fits: AutoGP(
        c, progress=not quiet).fit(series, resume=fits if resume else None).fits)


def prior_counts(model: AutoGP) -> dict[str, int]:
    """How many series were fitted under each prior (``Posterior.prior``; "autogp.jl": the
    config's own)."""
    counts: dict[str, int] = {}
    for fit in model.fits.values():
        counts[fit.prior or AUTOGP_JL] = counts.get(fit.prior or AUTOGP_JL, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def resolve_data_path(config: Config, config_path: Path) -> Path:
    """Where ``data.path`` points (see the module docstring for the search order)."""
    if config.data.path is None:
        raise ConfigError(
            f"{config_path}: data.path must be set for 'autogp run' (the series to fit)",
            key="data.path",
        )
    return find_file(config.data.path, config_path)


def find_file(path: str, config_path: Path) -> Path:
    """A file named in a config: relative to the config's folder, else to the working
    directory, else (by file name) in ``examples/data/``."""
    given = Path(path).expanduser()
    if given.is_absolute():
        candidates = [given]
    else:
        candidates = [
            config_path.parent / given,
            Path.cwd() / given,
            Path.cwd() / "examples" / "data" / given.name,
        ]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise DataError(f"data file {str(given)!r} not found (tried {tried})")


def apply_freq_column(series: list[TimeSeries], data_path: Path, config: Config
                      ) -> list[TimeSeries]:
    """Name the calendar of numeric time axes from ``data.freq_col`` (one value per series)."""
    d = config.data
    columns = [d.freq_col] + ([d.id_col] if d.id_col else [])
    try:
        frame = read_frame(data_path, d.sep, usecols=columns)
    except ValueError as exc:
        raise DataError(f"{data_path}: data.freq_col = {d.freq_col!r}: {exc}") from None
    if d.id_col is None:
        values = frame[d.freq_col].dropna().astype(str).unique()
        freq = {series[0].unique_id: values[0]} if len(values) else {}
    else:
        frame = frame.dropna().drop_duplicates(d.id_col)
        freq = dict(zip(frame[d.id_col].astype(str), frame[d.freq_col].astype(str), strict=True))
    return [with_frequency(s, freq.get(s.unique_id)) for s in series]


def group_members(data_path: Path, config: Config) -> set[str] | None:
    """The ids of the series whose ``experiment.group_col`` is ``experiment.group_value``
    (None: the config names no group)."""
    e, id_col = config.experiment, config.data.id_col
    if e.group_col is None:
        return None
    if id_col is None:
        raise ConfigError("experiment.group_col needs a panel: set data.id_col",
                          key="experiment.group_col")
    try:
        frame = read_frame(data_path, config.data.sep, usecols=[id_col, e.group_col],
                           dtype=str)
    except ValueError as exc:
        raise DataError(f"{data_path}: experiment.group_col = {e.group_col!r}: {exc}") from None
    members = set(frame.loc[frame[e.group_col] == e.group_value, id_col])
    if not members:
        values = sorted(frame[e.group_col].dropna().unique())[:20]
        raise DataError(f"{data_path}: no series has {e.group_col} = {e.group_value!r} "
                        f"(experiment.group_value; values in the file: {values})")
    return members


def panel_ids(data_path: Path, config: Config) -> list[str] | None:
    """The file's series ids in order of first appearance (None for a single series, or
    where an id is missing: the whole read then names that row)."""
    id_col = config.data.id_col
    if id_col is None:
        return None
    try:
        ids = read_frame(data_path, config.data.sep, usecols=[id_col], dtype=str,
                         keep_default_na=False)
    except ValueError:
        return None  # the whole read names the problem
    unique = [str(i).strip() for i in pd.unique(ids[id_col])]
    return None if "" in unique or len(set(unique)) != len(unique) else unique


def series_to_read(data_path: Path, config: Config, members: set[str] | None,
                   limit: int | None) -> list[str] | None:
    """The ids of the series the run fits: those of its group ``members`` (None: all, see
    :func:`group_members`), then ``limit`` of them
    (:func:`~autogp.experiments.sampling.stratified_sample`); None: every series is read (no
    group and no limit, or ids that only a whole read can check)."""
    if members is None and limit is None:
        return None
    ids = panel_ids(data_path, config)
    if ids is None:
        return None
    if members is not None:
        ids = [i for i in ids if i in members]
    if limit is not None:
        ids = sample_ids(ids, read_strata(data_path, config.data.id_col), limit, config.seed)
    return ids


def split_series(series: TimeSeries, holdout: int | None
                 ) -> tuple[TimeSeries, TimeSeries | None]:
    """(training part, held-out part): the split column's test rows, else the last ``holdout``
    points, else no held-out part."""
    if series.is_test is not None and series.is_test.any():
        return series.train(), series.test()
    if holdout:
        return series.split(holdout)
    return series, None


def series_reader(config: Config, ids: list[str] | None = None
                  ) -> Callable[[Any], list[TimeSeries]]:
    """Read a CSV path (only the series ``ids``, when given) or (one series' rows of) a frame
    with the config's ``[data]`` settings."""
    kwargs = config.data.read_kwargs()

    def read(source: Any) -> list[TimeSeries]:
        if isinstance(source, pd.DataFrame):
            res = from_frame(source, **{k: v for k, v in kwargs.items() if k != "sep"})
        else:
            res = read_csv(source, **kwargs, ids=ids)
        return res if isinstance(res, list) else [res]

    return read


def forecast_and_score_all(
    items: list[tuple[Any, TimeSeries, TimeSeries | None]], config: Config
) -> list[tuple[pd.DataFrame, dict[str, Any] | None]]:
    """Forecast and score fitted series (panel order kept), on as many worker processes as
    the fit used: the predictive programs and the mixture CRPS cost about a third of a fit
    per series with the default settings, too much to leave on one core for a panel of
    thousands. (A run's fit workers do this beside each fit: this is for the series whose
    forecast did not come back with its fit.)"""
    if not items:
        return []
    workers = min(resolve_workers(config.smc.workers), max(1, len(items) // 8))
    settings = config.to_dict()
    if workers <= 1:
        return forecast_and_score_chunk(items, settings)
    size = max(1, min(64, len(items) // (4 * workers)))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    done = dict(map_chunks(forecast_and_score_chunk, chunks, settings, workers=workers))
    return [result for i in range(len(chunks)) for result in done[i]]


def run_single_experiment(
    config_path: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    limit: int | None = None,
    baselines: bool = False,
    holdout: int | None = None,
    quiet: bool = False,
    resume: bool = False,
    out: Console | None = None,
    err: Console | None = None,
) -> dict[str, Any]:
    """Run the experiment of ``config_path`` (one panel, not a config of parts: see
    :func:`autogp.experiments.parts.run_experiment`); returns the summary that is also written.

    ``resume``: keep each finished chunk of series in ``<output.dir>/resume`` as it completes
    and load the series already there instead of fitting them again (the outputs are the same
    as those of an uninterrupted run). Series that cannot be read or fitted are listed in
    ``errors.csv`` (``unique_id``, ``error``) and every other series is still forecast.
    """
    out = out or Console()
    err = err or Console(stderr=True)
    config_path = Path(config_path)
    config = load_config(config_path, overrides)
    if config.experiment.parts:
        raise ConfigError(f"{config_path}: a config of parts runs through "
                          "autogp.experiments.run_experiment", key="experiment.parts")
    unknown = [m for m in config.experiment.metrics if m not in SUPPORTED_METRICS]
    if unknown:
        raise ConfigError(
            f"{config_path}: experiment.metrics: unknown {unknown}; supported: "
            f"{list(SUPPORTED_METRICS)}",
            key="experiment.metrics",
        )
    data_path = resolve_data_path(config, config_path)
    # Only the series the run fits are parsed (a sample of thousands reads in a second).
    members = group_members(data_path, config)
    ids = series_to_read(data_path, config, members, limit)
    all_series, read_errors = read_series_tolerant(
        series_reader(config, ids), data_path, config.data.id_col, sep=config.data.sep, ids=ids
    )
    if ids is None:  # every series was read: its group and sample are chosen now
        all_series = [s for s in all_series if members is None or s.unique_id in members]
        if limit is not None:
            all_series = stratified_sample(all_series, data_path, config.data.id_col, limit,
                                           config.seed)
    if config.data.freq_col is not None:
        all_series = apply_freq_column(all_series, data_path, config)
    pairs = [split_series(s, holdout) for s in all_series]
    name = config.experiment.name or config_path.stem
    if not quiet:
        n_test = sum(t is not None for _, t in pairs)
        err.print(
            f"experiment {name}: {len(pairs)} series from {data_path}"
            + (f", {n_test} with held-out points" if n_test else ""),
            markup=False,
        )
    started = time.perf_counter()
    resume_dir = Path(config.output.dir) / "resume" if resume else None
    config = with_run_prior(config, config_path, [train for train, _ in pairs],
                            resume=resume, quiet=quiet)
    # Each worker forecasts and scores its series right after fitting them.
    after = AfterFit(forecast_and_score_fit, {t.unique_id: (t, h) for t, h in pairs})
    model = AutoGP(config, progress=not quiet).fit([train for train, _ in pairs],
                                                    resume=resume_dir, after_fit=after)
    fit_seconds = time.perf_counter() - started  # with the workers' forecasts and scores
    errors = {**read_errors, **model.errors}
    if errors:  # shown even under --quiet: these series are missing from the outputs
        for uid, message in errors.items():
            err.print(f"warning: series {uid!r} was not fitted: {message}", markup=False,
                      soft_wrap=True)
        err.print(f"{len(errors)} series could not be fitted (listed in errors.csv)",
                  markup=False)
    levels = sorted(set(config.forecast.levels))
    items = [(model.fits[t.unique_id], t, h) for t, h in pairs if t.unique_id in model.fits]
    done = model.after_fit_results
    rest = iter(forecast_and_score_all([i for i in items if i[1].unique_id not in done], config))
    frames, rows = [], []
    for _, train, _ in items:
        result = done.get(train.unique_id)
        fc, row = result.result() if result is not None else next(rest)
        frames.append(fc)
        if row is not None:
            rows.append(row)
    forecast = pd.concat(frames, ignore_index=True)
    metrics = pd.DataFrame(rows)
    summary: dict[str, Any] = {
        "experiment": name,
        "config": str(config_path),
        "data": str(data_path),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine_description(),
        "command": "autogp " + " ".join(sys.argv[1:]) if sys.argv[1:] else str(config_path),
        "series": len(pairs),
        "scored_series": len(rows),
        "failed_series": len(errors),
        "particles": config.smc.num_particles,
        "priors": prior_counts(model),
        "workers": min(resolve_workers(config.smc.workers), len(pairs)),
        "seed": config.seed,
        "horizons": sorted({len(h.y) for _, h in pairs if h is not None}),
        "seasons": sorted({seasonality(t.axis) for t, _ in pairs}),
        "fit_seconds": round(fit_seconds, 3),
        "fit_seconds_per_series": round(fit_seconds / max(1, len(pairs)), 3),
        "metrics": {},
    }
    if rows:
        numeric = metrics.drop(columns=["unique_id", "n_train", "n_test"]).select_dtypes("number")
        summary["metrics"] = {c: float(np.nanmean(numeric[c])) for c in numeric.columns}
    train_frame = pd.concat(
        [pd.DataFrame({"unique_id": t.unique_id, "ds": t.ds, "y": t.y}) for t, _ in pairs],
        ignore_index=True,
    )
    baseline_fc = scores = None
    if rows:
        scored = forecast.dropna(subset=["y"]) if "y" in forecast else forecast
        seasons = {t.unique_id: seasonality(t.axis) for t, _ in pairs}
        if config.experiment.baselines is not None:
            baselines_path = find_file(config.experiment.baselines, config_path)
            baseline_fc = baselines_from_file(baselines_path, scored, levels)
            summary["baseline_source"] = f"read from `{baselines_path}`"
        elif baselines:
            if not quiet:
                err.print("fitting statsforecast baselines (AutoETS, AutoARIMA, AutoTheta, "
                          "SeasonalNaive) on the same split", markup=False)
            baseline_fc, summary["baseline_seconds"] = baselines_on_split(train_frame, scored,
                                                                          levels, seasons)
            summary["baseline_source"] = (
                "statsforecast fitted on the same split, each series with its own season")
        scores = model_scores(scored, baseline_fc, train_frame, levels, seasons)
        summary["comparison"] = comparison_table(scores, levels)
    if config.experiment.reference is not None:
        summary["published"] = read_reference(
            find_file(config.experiment.reference, config_path), name)
    write_outputs(config, model, forecast, metrics, summary, quiet, err,
                  train=train_frame, baselines=baseline_fc, errors=errors, scores=scores)
    print_summary(out, summary)
    return summary


__all__ = [
    "SUPPORTED_METRICS",
    "apply_freq_column",
    "find_file",
    "resolve_data_path",
    "run_single_experiment",
    "group_members",
    "panel_ids",
    "series_to_read",
    "series_reader",
    "split_series",
]
