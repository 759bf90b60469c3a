"""An experiment made of parts (``experiment.parts``): each part is a config file of its own
(its data, group, horizon, baselines, published results), run as its own experiment into
``output.dir/<its experiment.name>``; then an overall ``summary.json`` and ``report.md`` in
``output.dir``, one row a part. Options given on the command line apply to every part, so
``--limit N`` samples N series of each part and ``--resume`` resumes each part."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from rich.console import Console

from autogp.config import Config, ConfigError, load_config
from autogp.experiments.markdown import parts_report
from autogp.experiments.report import machine_description
from autogp.experiments.runner import find_file, run_single_experiment
from autogp.pipeline.atomic import atomic_write_text

if TYPE_CHECKING:
    from autogp.experiments.figures import Figures

# The sections a config of parts leaves to its parts (it sets only output.dir and experiment).
UNUSED_SECTIONS = ("data", "grammar", "priors", "smc", "refine", "forecast")


def part_configs(config_path: Path, config: Config) -> list[tuple[str, Path]]:
    """``(name, config file)`` of each part, checked: parts are plain experiments with
    distinct names, and the config of the parts sets nothing that they would not use."""
    defaults, bare = Config(), load_config(config_path)
    for name in ("seed", *UNUSED_SECTIONS):
        if getattr(bare, name) != getattr(defaults, name):
            raise ConfigError(
                f"{config_path}: {name} is set in an experiment with parts, whose parts are "
                f"configs of their own; set it in each part, or on the command line (--set) "
                "for all of them", key=name)
    parts: list[tuple[str, Path]] = []
    for given in config.experiment.parts:
        path = find_file(given, config_path)
        part = load_config(path)
        if part.experiment.parts:
            raise ConfigError(
                f"{config_path}: experiment.parts: {path} has parts of its own; a part must be "
                "a plain experiment", key="experiment.parts")
        name = part.experiment.name or path.stem
        if name in (n for n, _ in parts):
            raise ConfigError(
                f"{config_path}: experiment.parts: two parts are called {name!r} (their "
                "experiment.name), so one would overwrite the other's outputs",
                key="experiment.parts")
        parts.append((name, path))
    return parts


def run_parts(
    config_path: Path,
    config: Config,
    *,
    overrides: dict[str, Any] | None,
    out: Console | None = None,
    err: Console | None = None,
    quiet: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Run every part of ``config`` (see the module docstring); returns the overall summary.

    ``options`` (``limit``, ``baselines``, ``holdout``, ``resume``) are passed to each part's
    :func:`~autogp.experiments.runner.run_single_experiment`."""
    out = out or Console()
    err = err or Console(stderr=True)
    root = Path(config.output.dir)
    name = config.experiment.name or config_path.stem
    parts = part_configs(config_path, config)
    summaries = []
    for part_name, path in parts:
        if not quiet:
            err.print(f"{name}: part {part_name} ({path})", markup=False)
        part_overrides = {**(overrides or {}), "output.dir": str(root / part_name)}
        summaries.append(run_single_experiment(path, overrides=part_overrides, quiet=quiet,
                                               out=out, err=err, **options))
    summary = {
        "experiment": name,
        "config": str(config_path),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine_description(),
        "command": "autogp " + " ".join(sys.argv[1:]) if sys.argv[1:] else str(config_path),
        "parts": {part_name: {"dir": str(root / part_name), **s}
                  for (part_name, _), s in zip(parts, summaries, strict=True)},
    }
    root.mkdir(parents=True, exist_ok=True)
    figures = parts_figures(root, [part_name for part_name, _ in parts], config.seed)
    summary.update(figures.as_dict())
    report = parts_report(name, summaries, figures.as_dict())
    atomic_write_text(root / "summary.json", json.dumps(summary, indent=2) + "\n")
    atomic_write_text(root / "report.md", report)
    out.print(report, markup=False, soft_wrap=True)
    if not quiet:
        written = [root / "summary.json", root / "report.md", *(root / f for f, _ in
                                                                 figures.written)]
        err.print("wrote " + ", ".join(str(p) for p in written), markup=False)
    return summary


def parts_figures(root: Path, names: list[str], seed: int) -> Figures:
    """The figures of all the parts together, one group a part, written into ``root``: the
    scores per part and model, and the structure families (from each part's ``scores.csv``
    and ``structures.csv``; :mod:`~autogp.experiments.figures`)."""
    from autogp.experiments.figures import GROUP_COL, write_experiment_figures  # matplotlib

    def read(file: str) -> pd.DataFrame | None:
        frames = [pd.read_csv(root / n / file, dtype={"unique_id": str}).assign(
                      **{GROUP_COL: n}) for n in names if (root / n / file).is_file()]
        return pd.concat(frames, ignore_index=True) if frames else None

    return write_experiment_figures(root, scores=read("scores.csv"),
                                    structures=read("structures.csv"),
                                    group_label="part of the experiment", seed=seed,
                                    series_figure=False)




def run_experiment(
    config_path: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    quiet: bool = False,
    out: Console | None = None,
    err: Console | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Run the experiment of ``config_path``: its parts one after another when it lists
    ``experiment.parts``, else its one panel; returns the summary that is also written.
    ``options`` (``limit``, ``baselines``, ``holdout``, ``resume``) are those of
    :func:`~autogp.experiments.runner.run_single_experiment`."""
    config_path = Path(config_path)
    config = load_config(config_path, overrides)
    if config.experiment.parts:
        return run_parts(config_path, config, overrides=overrides, quiet=quiet, out=out,
                         err=err, **options)
    return run_single_experiment(config_path, overrides=overrides, quiet=quiet, out=out,
                                 err=err, **options)


__all__ = ["UNUSED_SECTIONS", "part_configs", "run_experiment", "run_parts"]
