"""What the command line's options say: help texts, the defaults they show, and how a message
spells a reader setting in the words of the command that shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autogp.config import Config
from autogp.data.spelling import NAME_ONLY

# Settings a config file may change: --help shows these defaults and names the key.
DEFAULTS = Config()


def config_default(value: object, key: str) -> str:
    """The ``[default: ...]`` text of an option that falls back to a config key."""
    shown = "auto" if value is None else str(value).lower() if isinstance(value, bool) else value
    return f"{shown}, config {key}"


# The command-line options of the readers' settings; others are set with --set data.NAME=VALUE.
_READER_FLAGS = {"time_col": "--time-col", "target_col": "--target-col", "id_col": "--id-col",
                 "noise_col": "--noise-col", "aggregate": "--aggregate", "strict": "--strict"}


def cli_spelling(name: str, value: object) -> str:
    """A reader setting as ``autogp fit`` takes it: ``--time-col date``, ``--strict``."""
    flag = _READER_FLAGS.get(name)
    if flag is None:
        return f"--set data.{name}" + ("" if value is NAME_ONLY else f"={value}")
    if value is NAME_ONLY or value is True:
        return flag
    return f"{flag} {value}"


def config_spelling(name: str, value: object) -> str:
    """A reader setting as a config file (``autogp run``) takes it: ``data.time_col = "date"``."""
    if value is NAME_ONLY:
        return f"data.{name}"
    shown = str(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')
    return f"data.{name} = {shown}"


# Options that several commands share.
BackendOption = Annotated[
    str | None,
    typer.Option(help="Where a panel's series are fitted: local or dask.",
                 show_default=config_default(DEFAULTS.smc.backend, "smc.backend")),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(help="Dask scheduler address, e.g. tcp://host:8786 (implies --backend dask).",
                 show_default="a local cluster of --workers workers"),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(help="Processes fitting a panel's series in parallel (0: one per core).",
                 min=0, show_default=config_default(DEFAULTS.smc.workers, "smc.workers")),
]
LevelOption = Annotated[
    list[float] | None,
    typer.Option("--level", "-l", help="Interval level in percent (repeatable).",
                 show_default=config_default(
                     " ".join(f"{v:g}" for v in DEFAULTS.forecast.levels), "forecast.levels")),
]
QuantileOption = Annotated[
    list[float] | None,
    typer.Option("--quantile", "-q", help="Quantile in (0, 1) (repeatable); without --level, "
                 "replaces the intervals.", show_default="none"),
]
LatentOption = Annotated[
    bool,
    typer.Option("--latent", help="Intervals for the latent function, not new data.",
                 show_default="off: intervals for new observations"),
]
OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Forecast CSV file.", show_default="stdout"),
]
PlotOption = Annotated[
    Path | None,
    typer.Option(help="Forecast plot (.png/.pdf/.svg).", show_default="no plot"),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Config override key=value, e.g. smc.num_rounds=5 "
                 "(repeatable).", show_default="none"),
]
ParticlesOption = Annotated[
    int | None,
    typer.Option("--particles", "-p", min=1,
                 help="Particles (kernel structures) in the SMC population; more explore "
                 "more structures and take longer.",
                 show_default=config_default(DEFAULTS.smc.num_particles, "smc.num_particles")),
]
PriorOption = Annotated[
    str | None,
    typer.Option(help="Priors of the fit: autogp.jl (AutoGP.jl's), learned (learned across "
                 "the shipped panels, by season and length), panel (learned from this panel "
                 "first) or a prior file.",
                 show_default=config_default(DEFAULTS.grammar.prior, "grammar.prior")),
]
SeedOption = Annotated[
    int | None,
    typer.Option(min=0, help="Random seed; the same seed gives the same forecast.",
                 show_default=config_default(DEFAULTS.seed, "seed")),
]
ResumeOption = Annotated[
    Path | None,
    typer.Option(help="Folder keeping finished series; a rerun with it skips them.",
                 show_default="none"),
]
TimeColOption = Annotated[
    str | None,
    typer.Option(help="Time column.",
                 show_default=config_default(DEFAULTS.data.time_col, "data.time_col")),
]
TargetColOption = Annotated[
    str | None,
    typer.Option(help="Value column.",
                 show_default=config_default(DEFAULTS.data.target_col, "data.target_col")),
]
IdColOption = Annotated[
    str | None,
    typer.Option(help="Series-id column of a panel (one file, many series).",
                 show_default="unique_id when the file has it, config data.id_col"),
]
NoiseColOption = Annotated[
    str | None,
    typer.Option(help="Column of each value's known measurement-error standard deviation "
                 "(data units), added to the learned noise.",
                 show_default="none, config data.noise_col"),
]
FutureOption = Annotated[
    Path | None,
    typer.Option(help="CSV of the covariates' future values: the time column, every covariate "
                 "column of the data (its extra numeric columns) and, for panels, the id "
                 "column, with a row for every forecast date.",
                 show_default="none: data without covariates"),
]


def read_future(path: Path | None, time_col: str | None, id_col: str | None,
                config: Config) -> object:
    """The ``--future`` file as ``X_df`` (columns ``ds``, ``unique_id`` and the covariates)."""
    if path is None:
        return None
    from autogp.data import DataError
    from autogp.data.header import read_frame

    try:
        frame = read_frame(path, config.data.sep, strict=config.data.strict)
    except DataError as exc:  # not UTF-8, under data.strict
        raise DataError(f"--future {exc}", source=exc.source) from None
    except (OSError, ValueError) as exc:
        raise DataError(f"--future {path}: cannot read it as CSV: {exc}") from None
    time_col = time_col or config.data.time_col
    if time_col not in frame.columns:
        raise DataError(f"--future {path}: no time column {time_col!r} (columns: "
                        f"{list(frame.columns)})", column=time_col)
    renames = {time_col: "ds"}
    id_col = id_col or config.data.id_col
    if id_col is not None and id_col in frame.columns:
        renames[id_col] = "unique_id"
    return frame.rename(columns=renames)


ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML config.", show_default="none")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", help="No progress bar or notes.", show_default="off")
]
