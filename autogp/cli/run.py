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

A relative ``data.path`` is looked up in the working directory, then next to the config file,
then (by file name) in ``examples/data/`` and ``../shared/data/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from autogp.config import Config, ConfigError, load_config
from autogp.data import DataError, TimeSeries, read_csv
from autogp.forecast.atomic import atomic_write, atomic_write_text
from autogp.forecast.metrics import coverage, mase, seasonality, smape
from autogp.forecast.model import MODEL_NAME, AutoGP, _fmt_level

SUPPORTED_METRICS = ("smape", "mase", "coverage", "lpd")


def resolve_data_path(config: Config, config_path: Path) -> Path:
    """Where ``data.path`` points (see the module docstring for the search order)."""
    if config.data.path is None:
        raise ConfigError(
            f"{config_path}: data.path must be set for 'autogp run' (the series to fit)",
            key="data.path",
        )
    given = Path(config.data.path).expanduser()
    if given.is_absolute():
        candidates = [given]
    else:
        candidates = [
            Path.cwd() / given,
            config_path.parent / given,
            Path.cwd() / "examples" / "data" / given.name,
            Path.cwd().parent / "shared" / "data" / given.name,
        ]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise DataError(f"data file {str(given)!r} not found (tried {tried})")


def _split(series: TimeSeries, holdout: int | None) -> tuple[TimeSeries, TimeSeries | None]:
    if series.is_test is not None and series.is_test.any():
        return series.train(), series.test()
    if holdout:
        return series.split(holdout)
    return series, None


def _score(
    metrics: tuple[str, ...],
    fc: pd.DataFrame,
    train: TimeSeries,
    test: TimeSeries,
    levels: list[float],
    model: AutoGP,
) -> dict[str, float]:
    y, f = test.y, fc[MODEL_NAME].to_numpy()
    row: dict[str, float] = {}
    for name in metrics:
        if name == "smape":
            row["smape"] = smape(y, f)
        elif name == "mase":
            row["mase"] = mase(y, f, train.y, seasonality(train.axis))
        elif name == "coverage":
            for lv in levels:
                lab = _fmt_level(lv)
                lo = fc[f"{MODEL_NAME}-lo-{lab}"].to_numpy()
                hi = fc[f"{MODEL_NAME}-hi-{lab}"].to_numpy()
                row[f"coverage_{lab}"] = coverage(y, lo, hi)
        elif name == "lpd":
            lpd = model.log_predictive_density(test.ds, y, unique_id=train.unique_id)
            row["lpd_per_point"] = float(lpd) / len(y)
    return row


def run_experiment(
    config_path: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    limit: int | None = None,
    holdout: int | None = None,
    quiet: bool = False,
    out: Console | None = None,
    err: Console | None = None,
) -> dict[str, Any]:
    """Run the experiment of ``config_path``; returns the summary that is also written."""
    out = out or Console()
    err = err or Console(stderr=True)
    config_path = Path(config_path)
    config = load_config(config_path, overrides)
    unknown = [m for m in config.experiment.metrics if m not in SUPPORTED_METRICS]
    if unknown:
        raise ConfigError(
            f"{config_path}: experiment.metrics: unknown {unknown}; supported: "
            f"{list(SUPPORTED_METRICS)}",
            key="experiment.metrics",
        )
    data_path = resolve_data_path(config, config_path)
    loaded = read_csv(data_path, **config.data.read_kwargs())
    all_series = loaded if isinstance(loaded, list) else [loaded]
    if limit is not None:
        all_series = all_series[:limit]
    pairs = [_split(s, holdout) for s in all_series]
    name = config.experiment.name or config_path.stem
    if not quiet:
        n_test = sum(t is not None for _, t in pairs)
        err.print(
            f"experiment {name}: {len(pairs)} series from {data_path}"
            + (f", {n_test} with held-out points" if n_test else ""),
            markup=False,
        )
    started = time.perf_counter()
    model = AutoGP(config, progress=not quiet).fit([train for train, _ in pairs])
    fit_seconds = time.perf_counter() - started
    levels = sorted(set(config.forecast.levels))
    frames, rows = [], []
    for train, test in pairs:
        uid = train.unique_id
        if test is not None:
            fc = model.predict(test.ds, level=levels, unique_id=uid)
            fc["y"] = test.y
            row = {"unique_id": uid, "n_train": train.n, "n_test": test.n}
            row.update(_score(config.experiment.metrics, fc, train, test, levels, model))
            rows.append(row)
        else:
            fc = model.predict(config.forecast.horizon, level=levels, unique_id=uid)
        frames.append(fc)
    forecast = pd.concat(frames, ignore_index=True)
    metrics = pd.DataFrame(rows)
    summary: dict[str, Any] = {
        "experiment": name,
        "config": str(config_path),
        "data": str(data_path),
        "series": len(pairs),
        "scored_series": len(rows),
        "particles": config.smc.num_particles,
        "seed": config.seed,
        "fit_seconds": round(fit_seconds, 3),
        "metrics": {},
    }
    if rows:
        numeric = metrics.drop(columns=["unique_id", "n_train", "n_test"])
        summary["metrics"] = {c: float(np.nanmean(numeric[c])) for c in numeric.columns}
    _write_outputs(config, model, forecast, metrics, summary, quiet, err)
    _print_summary(out, summary)
    return summary


def _write_outputs(
    config: Config,
    model: AutoGP,
    forecast: pd.DataFrame,
    metrics: pd.DataFrame,
    summary: dict[str, Any],
    quiet: bool,
    err: Console,
) -> None:
    o = config.output
    directory = Path(o.dir)
    written = []
    if o.forecast:
        p = directory / o.forecast
        atomic_write(p, lambda fh: forecast.to_csv(fh, index=False))
        written.append(p)
    if len(metrics):
        p = directory / "metrics.csv"
        atomic_write(p, lambda fh: metrics.to_csv(fh, index=False))
        written.append(p)
    p = directory / "summary.json"
    atomic_write_text(p, json.dumps(summary, indent=2) + "\n")
    written.append(p)
    if o.model:
        p = directory / o.model
        model.save(p)
        written.append(p)
    if o.plot:
        from autogp import plots

        p = directory / o.plot
        plots.save_figure(plots.plot_forecast(model, forecast), p)
        written.append(p)
    if not quiet:
        err.print("wrote " + ", ".join(str(p) for p in written), markup=False)


def _print_summary(out: Console, summary: dict[str, Any]) -> None:
    table = Table(title=f"experiment {summary['experiment']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("series", str(summary["series"]))
    table.add_row("scored series", str(summary["scored_series"]))
    table.add_row("fit time (s)", f"{summary['fit_seconds']:.1f}")
    for k, v in summary["metrics"].items():
        table.add_row(k + (" (mean)" if summary["scored_series"] > 1 else ""), f"{v:.4g}")
    out.print(table)


__all__ = ["SUPPORTED_METRICS", "resolve_data_path", "run_experiment"]
