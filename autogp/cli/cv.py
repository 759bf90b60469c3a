"""``autogp cv``: cross-validation of a series or a panel from the command line.

::

    autogp cv data.csv --horizon 12 --windows 3 --output cv.csv --metrics metrics.csv

Writes the cross-validation frame (``unique_id, ds, cutoff, y, AutoGP, AutoGP-lo-<L>,
AutoGP-hi-<L>``; stdout without ``--output``) and, with ``--metrics``, MASE, sMAPE, scaled CRPS
and coverage per model and per step of the horizon
(:func:`autogp.experiments.cv_scores.cross_validation_metrics`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console

from autogp.config import parse_overrides
from autogp.pipeline.atomic import atomic_write


def write_csv(df: pd.DataFrame, path: Path | None) -> None:
    """``df`` as CSV to ``path`` (atomically) or to stdout when ``path`` is None."""
    if path is None:
        typer.echo(df.to_csv(index=False), nl=False)
        return
    atomic_write(path, lambda fh: df.to_csv(fh, index=False))


def note(text: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(text, markup=False)


def cv(
    data: Annotated[Path, typer.Argument(help="CSV file: ds,y (and a series-id column).")],
    horizon: Annotated[int, typer.Option("--horizon", "-h", help="Steps per window.", min=1)],
    windows: Annotated[int, typer.Option("--windows", "-w", help="Number of windows.", min=1)],
    step: Annotated[
        int | None, typer.Option(help="Steps between cutoffs (default: the horizon).", min=1)
    ] = None,
    refit: Annotated[
        bool,
        typer.Option("--refit/--no-refit",
                     help="Fit every window anew (default), or fit each series once on its "
                     "first window and condition it on the data up to each later cutoff."),
    ] = True,
    level: Annotated[
        list[float] | None,
        typer.Option("--level", "-l", help="Interval level in percent (repeatable)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Cross-validation CSV (default: stdout).")
    ] = None,
    metrics: Annotated[
        Path | None, typer.Option(help="Write the scores per model and step to this CSV.")
    ] = None,
    particles: Annotated[int | None, typer.Option("--particles", "-p", min=1)] = None,
    seed: Annotated[int | None, typer.Option(min=0)] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Processes fitting windows in parallel (0: one per core).", min=0),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="Where windows are fitted: local (default) or dask.")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address (default: a local cluster of --workers "
                     "workers)."),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="Folder keeping finished windows; a rerun with it skips them."),
    ] = None,
    id_col: Annotated[str | None, typer.Option(help="Series-id column of a panel.")] = None,
    time_col: Annotated[str | None, typer.Option(help="Time column (default ds).")] = None,
    target_col: Annotated[str | None, typer.Option(help="Value column (default y).")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="TOML config.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Config override key=value, e.g. smc.num_rounds=5."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar or notes.")] = False,
) -> None:
    """Cross-validate: rolling-origin forecasts in statsforecast's layout, and their scores.

    Registered on the ``autogp`` app by :mod:`autogp.cli.main` (with its error handling)."""
    from autogp.experiments.cv_scores import cross_validation_metrics
    from autogp.forecast.model import AutoGP
    from autogp.forecast.reading import read_panel

    overrides = parse_overrides(set_ or [])
    for key, value in (("smc.workers", workers), ("smc.backend", backend),
                       ("smc.scheduler", scheduler)):
        if value is not None:
            overrides[key] = value
    if scheduler is not None:
        overrides.setdefault("smc.backend", "dask")
    model = AutoGP(config, seed=seed, particles=particles, overrides=overrides,
                   progress=not quiet)
    started = time.perf_counter()
    frame = model.cross_validation(
        data, h=horizon, n_windows=windows, step_size=step, refit=refit,
        level=list(level) if level else None, time_col=time_col, target_col=target_col,
        id_col=id_col, resume=resume,
    )
    if not quiet:
        cutoffs = frame[["unique_id", "cutoff"]].drop_duplicates()
        note(f"cross-validated {frame['unique_id'].nunique()} series, {len(cutoffs)} "
                   f"windows in {time.perf_counter() - started:.1f} s")
    if metrics is not None:
        series, _ = read_panel(data, model.config, time_col, target_col, id_col)
        train = pd.concat([s.to_frame()[["unique_id", "ds", "y"]] for s in series])
        write_csv(cross_validation_metrics(frame, train), metrics)
    write_csv(frame, output)
    if not quiet:
        written = [str(p) for p in (output, metrics) if p is not None]
        if written:
            note("wrote " + ", ".join(written))


__all__ = ["cv"]
