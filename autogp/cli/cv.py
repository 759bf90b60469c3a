"""``autogp cv``: cross-validation of a series or a panel from the command line.

::

    autogp cv data.csv --horizon 12 --windows 3 --output cv.csv --metrics metrics.csv

Writes the cross-validation frame (``unique_id, ds, cutoff, y, AutoGP, AutoGP-lo-<L>,
AutoGP-hi-<L>``; stdout without ``--output``) and, with ``--metrics``, MASE, sMAPE, scaled CRPS
and coverage per model and per step of the horizon
(:func:`autogp.experiments.cv_scores.cross_validation_metrics`), with a figure of them beside it
(``<metrics stem>_by_step.png``: the mean MASE and scaled CRPS per step and model, with bootstrap
intervals over the windows).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console

from autogp.cli.options import (
    BackendOption,
    ConfigOption,
    IdColOption,
    LevelOption,
    NoiseColOption,
    ParticlesOption,
    QuietOption,
    ResumeOption,
    SchedulerOption,
    SeedOption,
    SetOption,
    TargetColOption,
    TimeColOption,
    WorkersOption,
)
from autogp.config import environment_settings, parse_overrides
from autogp.pipeline.atomic import atomic_write


def write_csv(df: pd.DataFrame, path: Path | None) -> None:
    """``df`` as CSV to ``path`` (atomically) or to stdout when ``path`` is None."""
    if path is None:
        typer.echo(df.to_csv(index=False), nl=False)
        return
    atomic_write(path, lambda fh: df.to_csv(fh, index=False))


def note(text: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(text, markup=False)


def write_cv_figure(metrics: Path, windows: pd.DataFrame, seed: int) -> Path | None:
    """The scores per forecast step as a figure beside the metrics file
    (:func:`autogp.experiments.figures.plot_cv_scores`); None, with a warning, when it cannot
    be drawn (no window has a held-out value)."""
    from autogp.experiments import figures  # matplotlib
    from autogp.plots import save_figure

    path = figures.cv_figure_path(metrics)
    try:
        fig = figures.plot_cv_scores(windows, seed=seed)
    except ValueError as exc:
        warnings.warn(f"no figure of the scores: {exc}", stacklevel=2)
        return None
    return save_figure(fig, path)


def cv(
    data: Annotated[Path, typer.Argument(help="CSV file: ds,y (and a series-id column).")],
    horizon: Annotated[int, typer.Option("--horizon", help="Steps per window.", min=1,
                                         show_default="required")],
    windows: Annotated[int, typer.Option("--windows", "-w", help="Number of windows.", min=1,
                                         show_default="required")],
    step: Annotated[
        int | None, typer.Option(help="Steps between cutoffs.", min=1,
                                 show_default="the horizon")
    ] = None,
    refit: Annotated[
        bool,
        typer.Option("--refit/--no-refit",
                     help="Fit every window anew, or fit each series once on its first window "
                     "and condition it on the data up to each later cutoff."),
    ] = True,
    level: LevelOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Cross-validation CSV.",
                                  show_default="stdout")
    ] = None,
    metrics: Annotated[
        Path | None, typer.Option(help="Write the scores per model and step to this CSV, and a "
                                  "figure of them beside it (<stem>_by_step.png).",
                                  show_default="none")
    ] = None,
    particles: ParticlesOption = None,
    seed: SeedOption = None,
    workers: WorkersOption = None,
    backend: BackendOption = None,
    scheduler: SchedulerOption = None,
    resume: ResumeOption = None,
    id_col: IdColOption = None,
    time_col: TimeColOption = None,
    target_col: TargetColOption = None,
    noise_col: NoiseColOption = None,
    config: ConfigOption = None,
    set_: SetOption = None,
    quiet: QuietOption = False,
) -> None:
    """Cross-validate: rolling-origin forecasts in statsforecast's layout, and their scores.

    Registered on the ``autogp`` app by :mod:`autogp.cli.main` (with its error handling)."""
    from autogp.experiments.cv_scores import (
        cross_validation_window_scores,
        window_scores_summary,
    )
    from autogp.forecast.model import AutoGP
    from autogp.forecast.reading import read_panel

    overrides = {**environment_settings(), **parse_overrides(set_ or [])}
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
        id_col=id_col, noise_col=noise_col, resume=resume,
    )
    if not quiet:
        cutoffs = frame[["unique_id", "cutoff"]].drop_duplicates()
        note(f"cross-validated {frame['unique_id'].nunique()} series, {len(cutoffs)} "
                   f"windows in {time.perf_counter() - started:.1f} s")
    figure = None
    if metrics is not None:
        series, _ = read_panel(data, model.config, time_col, target_col, id_col)
        train = pd.concat([s.to_frame()[["unique_id", "ds", "y"]] for s in series])
        windows = cross_validation_window_scores(frame, train)
        write_csv(window_scores_summary(windows), metrics)
        figure = write_cv_figure(metrics, windows, model.config.seed)
    write_csv(frame, output)
    if not quiet:
        written = [str(p) for p in (output, metrics, figure) if p is not None]
        if written:
            note("wrote " + ", ".join(written))


__all__ = ["cv"]
