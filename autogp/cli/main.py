"""The ``autogp`` command line.

::

    autogp fit data.csv --horizon 18 --output forecast.csv --plot forecast.png --save model.autogp
    autogp forecast model.autogp --horizon 24
    autogp explain model.autogp
    autogp run configs/airline.toml
    autogp --version

Results (the forecast CSV when no ``--output`` is given, the explain table, experiment metrics)
go to stdout; progress bars, notes and warnings go to stderr. Every file is written atomically
(a temporary file in the same directory, then ``os.replace``), so an interrupted run never leaves
a half-written output behind. Bad input (data, configuration, model files) ends with a one-line
``error: ...`` message on stderr and exit code 2, without a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pandas as pd
import typer
from rich.console import Console

from autogp import __version__
from autogp._x64 import Float64Unavailable, x64
from autogp.cli.cv import cv as cv_command
from autogp.cli.explanation import print_explanation
from autogp.cli.options import (
    DEFAULTS,
    BackendOption,
    ConfigOption,
    FutureOption,
    IdColOption,
    LatentOption,
    LevelOption,
    NoiseColOption,
    OutputOption,
    ParticlesOption,
    PlotOption,
    PriorOption,
    QuantileOption,
    QuietOption,
    ResumeOption,
    SchedulerOption,
    SeedOption,
    SetOption,
    TargetColOption,
    TimeColOption,
    WorkersOption,
    cli_spelling,
    config_default,
    config_spelling,
    read_future,
)
from autogp.config import ConfigError, environment_settings, parse_overrides
from autogp.data import DataError
from autogp.data.spelling import spelled_as
from autogp.inference.mixture import PredictionError
from autogp.pipeline.atomic import atomic_write
from autogp.pipeline.saveload import ModelFileError

app = typer.Typer(
    name="autogp",
    help=(
        "Automatic Gaussian-process forecasting: discover the covariance structure of a time "
        "series (SMC over kernel expressions) and forecast with it."
    ),
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)

F = TypeVar("F", bound=Callable[..., Any])
USER_ERRORS = (DataError, ConfigError, ModelFileError, PredictionError, Float64Unavailable)


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _out() -> Console:
    return Console(highlight=False)


def _format_warning(message, category, filename, lineno, line=None) -> str:  # noqa: ANN001
    return f"warning: {message}\n"


def cli_command(fn: F, spelling: Callable[[str, Any], str] = cli_spelling) -> F:
    """Run a command in float64, with one-line warnings and clean user errors (exit code 2)
    that spell settings the way the command takes them (``spelling``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = warnings.formatwarning
        warnings.formatwarning = _format_warning  # type: ignore[assignment]
        try:
            with x64(), spelled_as(spelling):
                return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            message = str(exc).strip().replace("\n", " ")
            _err().print(f"error: {message}", markup=False)
            raise typer.Exit(code=2) from None
        except FileNotFoundError as exc:
            _err().print(f"error: {exc}", markup=False)
            raise typer.Exit(code=2) from None
        except KeyboardInterrupt:
            _err().print("error: interrupted (series finished before the stop are kept when "
                         "the run was started with --resume; rerun with it to continue)",
                         markup=False)
            raise typer.Exit(code=130) from None
        finally:
            warnings.formatwarning = old

    return wrapper  # type: ignore[return-value]


def config_command(fn: F) -> F:
    """:func:`cli_command` for a command whose reader settings come from a config file."""
    return cli_command(fn, config_spelling)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"autogp {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Automatic Gaussian-process forecasting (autogp)."""
    from autogp.parallel.work import enable_compilation_cache, quiet_xla_logs

    quiet_xla_logs()  # before JAX starts its backend: XLA's slow-compile alarms stay quiet
    enable_compilation_cache()


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while fitting: workers are ended and finished chunks kept."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def unfitted_series_reported_once() -> Iterator[None]:
    """Silence the per-series 'was not fitted' warnings of a panel fit: the command lists the
    series itself (:func:`report_unfitted`)."""
    from autogp.data import AutoGPDataWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"series '.*' was not fitted",
                                category=AutoGPDataWarning)
        yield


def report_unfitted(console: Console, errors: dict[str, str]) -> None:
    """One line per series that could not be fitted, then how many."""
    for uid, message in errors.items():
        _note(console, f"warning: series {uid!r} was not fitted: {message}")
    if errors:
        _note(console, f"{len(errors)} series could not be fitted and are not in the forecast")


# ---- output helpers --------------------------------------------------------------------------
def write_csv(df: pd.DataFrame, path: str | Path | None) -> None:
    """``df`` as CSV to ``path`` (atomically) or to stdout when ``path`` is None."""
    if path is None:
        typer.echo(df.to_csv(index=False), nl=False)
        return
    atomic_write(path, lambda fh: df.to_csv(fh, index=False))


def _note(console: Console, text: str) -> None:
    console.print(text, markup=False, soft_wrap=True)


def _levels(level: list[float] | None, config_levels: tuple[float, ...]) -> list[float]:
    return list(level) if level else list(config_levels)


def fit_time(seconds: float, compiling: float) -> str:
    """A fit's time and how much of it was compiling (worker processes compile at the same
    time, so their sum can exceed the wall time)."""
    if compiling <= seconds:
        return f"{seconds:.1f} s, {compiling:.1f} s of it compiling"
    return f"{seconds:.1f} s (compiling: {compiling:.1f} s summed over the workers)"


def check_fit_only(**flags: Any) -> None:
    """Horizon 0 fits without forecasting: refuse, before any work, when nothing would be kept
    (no --save, --explain or --components) or a forecast is asked for all the same."""
    asked = [f"--{name}" for name in ("output", "plot", "level", "quantile", "latent")
             if flags[name]]
    if asked:
        raise ConfigError(f"horizon 0 fits without forecasting, but {', '.join(asked)} asks "
                          f"for a forecast: give a horizon of at least 1", key="forecast.horizon")
    if not any(flags[name] for name in ("save", "explain", "components")):
        raise ConfigError("horizon 0 fits without forecasting and nothing would be kept: give "
                          "a horizon of at least 1, or add --save MODEL.autogp (or --explain, "
                          "--components)", key="forecast.horizon")


# ---- commands --------------------------------------------------------------------------------
@app.command()
@cli_command
def fit(
    data: Annotated[Path, typer.Argument(help="CSV file: ds,y (headerless 2 columns work).")],
    horizon: Annotated[
        int | None,
        typer.Option(help="Steps to forecast (0: fit only; needs --save, --explain or "
                     "--components).", min=0,
                     show_default=config_default(DEFAULTS.forecast.horizon, "forecast.horizon")),
    ] = None,
    output: OutputOption = None,
    plot: PlotOption = None,
    components: Annotated[
        Path | None,
        typer.Option(help="Component plot from the decomposition.", show_default="no plot"),
    ] = None,
    save: Annotated[
        Path | None, typer.Option(help="Save the fitted model (.autogp).", show_default="not saved")
    ] = None,
    level: LevelOption = None,
    quantile: QuantileOption = None,
    particles: ParticlesOption = None,
    prior: PriorOption = None,
    seed: SeedOption = None,
    workers: WorkersOption = None,
    backend: BackendOption = None,
    scheduler: SchedulerOption = None,
    resume: ResumeOption = None,
    time_col: TimeColOption = None,
    target_col: TargetColOption = None,
    id_col: IdColOption = None,
    noise_col: NoiseColOption = None,
    future: FutureOption = None,
    config: ConfigOption = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Missing values are errors, not dropped.",
                           show_default="off")
    ] = False,
    aggregate: Annotated[
        str | None,
        typer.Option(help="Combine duplicate stamps: mean, sum, last, first, median.",
                     show_default="duplicates are errors"),
    ] = None,
    log_transform: Annotated[
        bool | None,
        typer.Option("--log/--no-log",
                     help="Fit log(y) / the raw values.",
                     show_default=config_default(DEFAULTS.data.transform + ": chosen from the "
                                                 "data", "data.transform")),
    ] = None,
    latent: LatentOption = False,
    set_: SetOption = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Print the structure table to stderr.",
                           show_default="off")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Fit a model to a series (or a panel: a unique_id column, or --id-col) and forecast it."""
    from autogp.forecast.known_horizon import ForecastRequest
    from autogp.forecast.model import AutoGP
    from autogp.forecast.reading import read_panel

    err = _err()
    overrides = {**environment_settings(), **parse_overrides(set_ or [])}
    if strict:
        overrides["data.strict"] = True
    if aggregate is not None:
        overrides["data.aggregate"] = aggregate
    if horizon is not None:
        overrides["forecast.horizon"] = horizon
    if workers is not None:
        overrides["smc.workers"] = workers
    if backend is not None:
        overrides["smc.backend"] = backend
    if scheduler is not None:
        overrides["smc.scheduler"] = scheduler
        overrides.setdefault("smc.backend", "dask")
    model = AutoGP(
        config,
        seed=seed,
        particles=particles,
        log_transform=log_transform,
        prior=prior,
        overrides=overrides,
        progress=not quiet,
    )
    fit_only = model.config.forecast.horizon == 0
    if fit_only:
        check_fit_only(output=output, plot=plot, level=level, quantile=quantile, latent=latent,
                       save=save, explain=explain, components=components)
    future_df = read_future(future, time_col, id_col, model.config)
    request = None
    if not fit_only:  # known before the fit: a panel's workers forecast beside their fits
        levels = _levels(level, model.config.forecast.levels) if not quantile or level else []
        request = ForecastRequest(model.config.forecast.horizon, level=tuple(levels),
                                  quantiles=tuple(quantile) if quantile else None,
                                  include_noise=False if latent else None, X_df=future_df)
    started = time.perf_counter()
    with stop_on_sigterm(), unfitted_series_reported_once():
        model.fit(data, time_col=time_col, target_col=target_col, id_col=id_col,
                  noise_col=noise_col, resume=resume,
                  after_fit=request.after_fit() if request is not None else None)
    report_unfitted(err, model.errors)
    if not quiet:
        n = sum(model.series(u).n for u in model.unique_ids)
        _note(
            err,
            f"fitted {len(model.unique_ids)} series ({n} observations, "
            f"{model.config.smc.num_particles} particles) in "
            f"{fit_time(time.perf_counter() - started, model.compile_seconds)}",
        )
    if request is not None:
        forecast = request.assemble(model)
    if explain:
        print_explanation(err, model, top=5)
    if save is not None:
        model.save(save)
    if plot is not None:
        from autogp import plots

        # A fit on a recent window keeps only the window: the plot shows the whole file.
        observed = None
        if any(fit.left_out for fit in model.fits.values()):
            observed = read_panel(data, model.config, time_col, target_col, id_col)[0]
        figure = plots.plot_forecast(model, forecast, observed=observed,
                                     value_name=target_col or model.config.data.target_col)
        plots.save_figure(figure, plot)
    if components is not None:
        from autogp import plots

        plots.save_figure(plots.plot_components(model.decompose(X_df=future_df)), components)
    if not fit_only:
        write_csv(forecast, output)
    if not quiet:
        written = [str(p) for p in (output, plot, components, save) if p is not None]
        if written:
            _note(err, "wrote " + ", ".join(written))


@app.command()
@cli_command
def forecast(
    model_path: Annotated[Path, typer.Argument(metavar="MODEL", help="A saved .autogp model.")],
    horizon: Annotated[
        int | None,
        typer.Option(help="Steps to forecast.", min=1,
                     show_default="the model's forecast.horizon"),
    ] = None,
    output: OutputOption = None,
    plot: PlotOption = None,
    level: LevelOption = None,
    quantile: QuantileOption = None,
    latent: LatentOption = False,
    future: FutureOption = None,
) -> None:
    """Forecast with a saved model."""
    from autogp.forecast.model import load

    model = load(model_path)
    levels = _levels(level, model.config.forecast.levels) if not quantile or level else []
    fc = model.predict(
        horizon,
        level=levels,
        quantiles=quantile or None,
        include_noise=False if latent else None,
        X_df=read_future(future, None, None, model.config),
    )
    if plot is not None:
        from autogp import plots

        plots.save_figure(plots.plot_forecast(model, fc), plot)
    write_csv(fc, output)


@app.command()
@cli_command
def explain(
    model_path: Annotated[Path, typer.Argument(metavar="MODEL", help="A saved .autogp model.")],
    top: Annotated[int, typer.Option(help="Structures shown per series.", min=1)] = 5,
    plot: Annotated[
        Path | None,
        typer.Option(help="Bar chart of the structure posterior.", show_default="no plot"),
    ] = None,
    csv: Annotated[
        Path | None,
        typer.Option(help="Write the full structure table as CSV.", show_default="not written"),
    ] = None,
) -> None:
    """Show the posterior over kernel structures with a plain-English reading."""
    from autogp.forecast.model import load

    model = load(model_path)
    out = _out()
    for uid in model.unique_ids:
        fit = model.fits[uid]
        s = fit.series
        _note(out, f"{uid}: {s.n} observations, {s.axis.describe()}")
    print_explanation(out, model, top)
    if plot is not None:
        from autogp import plots

        plots.save_figure(plots.plot_structures(model.kernels()), plot)
    if csv is not None:
        write_csv(model.kernels(), csv)


@app.command()
@config_command
def run(
    config_path: Annotated[Path, typer.Argument(metavar="CONFIG", help="Experiment TOML file.")],
    limit: Annotated[
        int | None,
        typer.Option(help="A sample of N series (stratified, fixed seed).", min=1,
                     show_default="every series"),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", help="Output folder.",
                     show_default=config_default(DEFAULTS.output.dir, "output.dir")),
    ] = None,
    workers: WorkersOption = None,
    backend: BackendOption = None,
    scheduler: SchedulerOption = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Keep finished series in OUTPUT_DIR/resume as they "
                     "complete, and skip those already there.", show_default="off"),
    ] = False,
    baselines: Annotated[
        bool,
        typer.Option(
            "--baselines/--no-baselines",
            help="Also fit statsforecast's AutoETS, AutoARIMA, AutoTheta, SeasonalNaive, "
            "each with its series' season (needs the bench extra).",
            show_default="off",
        ),
    ] = False,
    holdout: Annotated[
        int | None,
        typer.Option(help="Hold out the last N points of each series.", min=1,
                     show_default="the config's data.split_col"),
    ] = None,
    set_: SetOption = None,
    quiet: QuietOption = False,
) -> None:
    """Run an experiment described by a config file: data, model, horizon, outputs, metrics."""
    from autogp.experiments import run_experiment

    overrides = {**environment_settings(), **parse_overrides(set_ or [])}
    if output_dir is not None:
        overrides["output.dir"] = str(output_dir)
    if workers is not None:
        overrides["smc.workers"] = workers
    if backend is not None:
        overrides["smc.backend"] = backend
    if scheduler is not None:
        overrides["smc.scheduler"] = scheduler
        overrides.setdefault("smc.backend", "dask")
    with stop_on_sigterm(), unfitted_series_reported_once():
        run_experiment(
            config_path,
            overrides=overrides,
            resume=resume,
            limit=limit,
            baselines=baselines,
            holdout=holdout,
            quiet=quiet,
            out=_out(),
            err=_err(),
        )


app.command(name="cv")(cli_command(cv_command))


def entry() -> None:  # pragma: no cover - console-script shim
    app(prog_name="autogp")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
