"""What an experiment leaves behind: its files in ``output.dir`` and the tables on stdout."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from autogp.config import Config
from autogp.experiments.markdown import experiment_report
from autogp.forecast.model import AutoGP
from autogp.pipeline.atomic import atomic_write, atomic_write_text

if TYPE_CHECKING:
    from autogp.experiments.figures import Figures


def machine_description() -> str:
    """The machine, for ``summary.json``: ``x86_64 Linux, 16 cores``."""
    return f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores"


def write_outputs(
    config: Config,
    model: AutoGP,
    forecast: pd.DataFrame,
    metrics: pd.DataFrame,
    summary: dict[str, Any],
    quiet: bool,
    err: Console,
    *,
    train: pd.DataFrame | None = None,
    baselines: pd.DataFrame | None = None,
    errors: dict[str, str] | None = None,
    scores: pd.DataFrame | None = None,
) -> None:
    """Write the experiment's files into ``output.dir``: ``errors.csv`` (series not fitted),
    ``train.csv``, ``baselines.csv``, ``structures.csv``, the forecast, ``metrics.csv`` (one row
    a scored series), ``scores.csv`` (one row a series and model: ``scores``), the figures
    (:func:`~autogp.experiments.figures.write_experiment_figures`), ``summary.json``,
    ``report.md`` (the scores beside the baselines' and the published ones, and the figures),
    and the model file and plot when the config names them."""
    o = config.output
    directory = Path(o.dir)
    written = []
    if errors:
        table = pd.DataFrame({"unique_id": list(errors), "error": list(errors.values())})
        p = directory / "errors.csv"
        atomic_write(p, lambda fh: table.to_csv(fh, index=False))
        written.append(p)
    if train is not None:
        p = directory / "train.csv"
        atomic_write(p, lambda fh: train.to_csv(fh, index=False))
        written.append(p)
    if baselines is not None:
        p = directory / "baselines.csv"
        atomic_write(p, lambda fh: baselines.to_csv(fh, index=False))
        written.append(p)
    structures = model.kernels()[["unique_id", "structure", "weight"]]
    p = directory / "structures.csv"
    atomic_write(p, lambda fh: structures.to_csv(fh, index=False))
    written.append(p)
    if o.forecast:
        p = directory / o.forecast
        atomic_write(p, lambda fh: forecast.to_csv(fh, index=False))
        written.append(p)
    if len(metrics):
        p = directory / "metrics.csv"
        atomic_write(p, lambda fh: metrics.to_csv(fh, index=False))
        written.append(p)
    if scores is not None and len(scores):
        p = directory / "scores.csv"
        atomic_write(p, lambda fh: scores.to_csv(fh, index=False))
        written.append(p)
    figures = experiment_figures(directory, summary["experiment"], config.seed, scores=scores,
                                 structures=structures, train=train, forecast=forecast,
                                 baselines=baselines)
    summary.update(figures.as_dict())
    written += [directory / name for name, _ in figures.written]
    p = directory / "summary.json"
    atomic_write_text(p, json.dumps(summary, indent=2) + "\n")
    written.append(p)
    p = directory / "report.md"
    atomic_write_text(p, experiment_report(summary))
    written.append(p)
    if o.model:
        p = directory / o.model
        model.save(p)
        written.append(p)
    if o.plot:
        from autogp import plots  # matplotlib, only when a plot is asked for

        p = directory / o.plot
        plots.save_figure(plots.plot_forecast(model, forecast), p)
        written.append(p)
    if not quiet:
        err.print("wrote " + ", ".join(str(p) for p in written), markup=False)


def experiment_figures(
    directory: Path, name: str, seed: int, *, scores: pd.DataFrame | None,
    structures: pd.DataFrame, **tables: pd.DataFrame | None,
) -> Figures:
    """The figures of one experiment (its series one group, called ``name``), written into
    ``directory``: :func:`~autogp.experiments.figures.write_experiment_figures`."""
    from autogp.experiments.figures import GROUP_COL, write_experiment_figures  # matplotlib

    return write_experiment_figures(
        directory, scores=None if scores is None else scores.assign(**{GROUP_COL: name}),
        structures=structures.assign(**{GROUP_COL: name}), group_label="experiment",
        seed=seed, **tables)


def print_summary(out: Console, summary: dict[str, Any]) -> None:
    """The summary's metrics and, when there is one, the model comparison, as tables."""
    table = Table(title=f"experiment {summary['experiment']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("series", str(summary["series"]))
    table.add_row("scored series", str(summary["scored_series"]))
    table.add_row("fit time (s)", f"{summary['fit_seconds']:.1f}")
    for k, v in summary["metrics"].items():
        table.add_row(k + (" (mean)" if summary["scored_series"] > 1 else ""), f"{v:.4g}")
    out.print(table)
    comparison = summary.get("comparison")
    if comparison:
        first = next(iter(comparison.values()))
        wanted = ("smape", "mase", "scaled_crps", "coverage_80", "coverage_95", "width_95")
        columns = [c for c in wanted if c in first] or list(first)
        side = Table(title="per-series means, same split (lower is better except coverage)")
        side.add_column("model")
        for c in columns:
            side.add_column(c, justify="right")
        for model, row in comparison.items():
            side.add_row(model, *(f"{row[c]:.4g}" for c in columns))
        out.print(side)


__all__ = ["experiment_figures", "machine_description", "print_summary", "write_outputs"]
