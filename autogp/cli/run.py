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
looked up in the working directory, then (by file name) in ``examples/data/``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from autogp.config import Config, ConfigError, load_config
from autogp.data import DataError, TimeSeries, from_frame, read_csv
from autogp.forecast.atomic import atomic_write, atomic_write_text
from autogp.forecast.columns import MODEL_NAME, interval_columns, level_label, point_columns
from autogp.forecast.metrics import coverage, mase, seasonality, smape
from autogp.forecast.model import AutoGP
from autogp.parallel import read_series_tolerant, resolve_workers

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
    from autogp.data.seasons import with_frequency

    d = config.data
    columns = [d.freq_col] + ([d.id_col] if d.id_col else [])
    try:
        frame = pd.read_csv(data_path, usecols=columns, sep=d.sep,
                            engine="c" if d.sep else "python")
    except ValueError as exc:
        raise DataError(f"{data_path}: data.freq_col = {d.freq_col!r}: {exc}") from None
    if d.id_col is None:
        values = frame[d.freq_col].dropna().astype(str).unique()
        freq = {series[0].unique_id: values[0]} if len(values) else {}
    else:
        frame = frame.dropna().drop_duplicates(d.id_col)
        freq = dict(zip(frame[d.id_col].astype(str), frame[d.freq_col].astype(str), strict=True))
    return [with_frequency(s, freq.get(s.unique_id)) for s in series]


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
                lo, hi = (fc[c].to_numpy() for c in interval_columns(MODEL_NAME, lv))
                row[f"coverage_{level_label(lv)}"] = coverage(y, lo, hi)
        elif name == "lpd":
            if model.fits[train.unique_id].scaler.transformed and np.any(y <= 0):
                # A log-normal forecast gives no density to y <= 0 (M3's N2786 has one such
                # held-out value): -inf, reported as NaN so the panel mean stays readable.
                row["lpd_per_point"] = float("nan")
                row["note"] = "held-out y <= 0 under a log/Box-Cox transform: lpd not defined"
                continue
            lpd = model.log_predictive_density(test.ds, y, unique_id=train.unique_id)
            row["lpd_per_point"] = float(lpd) / len(y)
    return row


def stratified_sample(
    series: list[TimeSeries], data_path: Path, id_col: str | None, limit: int, seed: int
) -> list[TimeSeries]:
    """``limit`` series drawn without replacement, stratified by the file's ``category`` column
    when it has one (proportional allocation, largest remainders), with a fixed seed; the
    chosen series keep the file's order."""
    if limit >= len(series):
        return series
    rng = np.random.default_rng(seed)
    ids = [s.unique_id for s in series]
    category = None
    if id_col is not None:
        head = pd.read_csv(data_path, nrows=0).columns
        if "category" in head:
            frame = pd.read_csv(data_path, usecols=[id_col, "category"]).drop_duplicates(id_col)
            category = dict(zip(frame[id_col].astype(str), frame["category"].astype(str),
                                strict=True))
    if category is None:
        chosen = set(rng.choice(len(ids), size=limit, replace=False).tolist())
        return [s for i, s in enumerate(series) if i in chosen]
    groups: dict[str, list[int]] = {}
    for i, uid in enumerate(ids):
        groups.setdefault(category.get(uid, "?"), []).append(i)
    names = sorted(groups)
    exact = np.array([limit * len(groups[g]) / len(ids) for g in names])
    take = np.floor(exact).astype(int)
    for j in np.argsort(-(exact - take))[: limit - take.sum()]:
        take[j] += 1
    chosen = set()
    for g, k in zip(names, take, strict=True):
        chosen.update(rng.choice(groups[g], size=min(k, len(groups[g])), replace=False).tolist())
    return [s for i, s in enumerate(series) if i in chosen]


def run_experiment(
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
    """Run the experiment of ``config_path``; returns the summary that is also written.

    ``resume``: keep each finished chunk of series in ``<output.dir>/resume`` as it completes
    and load the series already there instead of fitting them again (the outputs are the same
    as those of an uninterrupted run). Series that cannot be read or fitted are listed in
    ``errors.csv`` (``unique_id``, ``error``) and every other series is still forecast.
    """
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
    all_series, read_errors = read_series_tolerant(
        _reader(config), data_path, config.data.id_col, sep=config.data.sep
    )
    if config.data.freq_col is not None:
        all_series = apply_freq_column(all_series, data_path, config)
    if limit is not None:
        all_series = stratified_sample(all_series, data_path, config.data.id_col, limit,
                                       config.seed)
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
    resume_dir = Path(config.output.dir) / "resume" if resume else None
    model = AutoGP(config, progress=not quiet).fit([train for train, _ in pairs],
                                                    resume=resume_dir)
    fit_seconds = time.perf_counter() - started
    errors = {**read_errors, **model.errors}
    if errors:  # shown even under --quiet: these series are missing from the outputs
        for uid, message in errors.items():
            err.print(f"warning: series {uid!r} was not fitted: {message}", markup=False,
                      soft_wrap=True)
        err.print(f"{len(errors)} series could not be fitted (listed in errors.csv)",
                  markup=False)
    levels = sorted(set(config.forecast.levels))
    frames, rows = [], []
    for train, test in pairs:
        uid = train.unique_id
        if uid not in model.fits:
            continue
        if test is not None:
            fc = model.predict(test.ds, level=levels, unique_id=uid)
            fc["y"] = test.y
            row = {"unique_id": uid, "n_train": train.n, "n_test": test.n}
            row.update(_score(config.experiment.metrics, fc, train, test, levels, model))
            row["crps_mixture_scaled"] = _mixture_crps(model, uid, test)
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
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": _machine(),
        "command": "autogp " + " ".join(sys.argv[1:]) if sys.argv[1:] else str(config_path),
        "series": len(pairs),
        "scored_series": len(rows),
        "failed_series": len(errors),
        "particles": config.smc.num_particles,
        "workers": min(resolve_workers(config.smc.workers), len(pairs)),
        "seed": config.seed,
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
    baseline_fc = None
    if rows:
        scored = forecast.dropna(subset=["y"]) if "y" in forecast else forecast
        if baselines:
            baseline_fc = _run_baselines(train_frame, scored, levels, summary, err, quiet)
        seasons = {t.unique_id: seasonality(t.axis) for t, _ in pairs}
        summary["comparison"] = _comparison(scored, baseline_fc, train_frame, levels, seasons)
    _write_outputs(config, model, forecast, metrics, summary, quiet, err,
                   train=train_frame, baselines=baseline_fc, errors=errors)
    _print_summary(out, summary)
    return summary


def _reader(config: Config) -> Any:
    """Read a CSV path or (one series' rows of) a frame with the config's ``[data]`` settings."""
    kwargs = config.data.read_kwargs()

    def read(source: Any) -> list[TimeSeries]:
        if isinstance(source, pd.DataFrame):
            res = from_frame(source, **{k: v for k, v in kwargs.items() if k != "sep"})
        else:
            res = read_csv(source, **kwargs)
        return res if isinstance(res, list) else [res]

    return read


def _machine() -> str:
    import os
    import platform

    return f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores"


def _mixture_crps(model: AutoGP, uid: str, test: TimeSeries) -> float:
    """CRPS of the particle mixture over mean |y|: closed form for the Gaussian mixture; under
    a log or Box-Cox transform (a log-normal or Box-Cox-normal mixture) the integral of
    (F(x) - 1{x >= y})^2, taken on a fine grid in log units (``boxcox_mixture_crps``)."""
    from autogp.forecast.scoring import boxcox_mixture_crps, mixture_crps

    fit = model.fits[uid]
    mix = fit.mixture(fit.series.axis.to_numeric(test.ds), include_noise=True)
    s = fit.scaler
    y = np.asarray(test.y, float)
    if not s.transformed:
        y_norm = (y - s.value_offset) / s.value_scale
        crps = s.value_scale * mixture_crps(mix.weights, mix.means, mix.sds, y_norm)
        return float(np.mean(crps) / np.mean(np.abs(y)))
    mu = s.to_transformed(mix.means)  # [P, M] in transformed units
    crps = boxcox_mixture_crps(mix.weights, mu, s.value_scale * mix.sds, y, s.boxcox_lambda)
    return float(np.mean(crps) / np.mean(np.abs(y)))


def _run_baselines(train_frame, scored, levels, summary, err, quiet) -> pd.DataFrame:
    from autogp.forecast.baselines import statsforecast_forecasts

    if not quiet:
        err.print("fitting statsforecast baselines (AutoETS, AutoARIMA, AutoTheta, "
                  "SeasonalNaive) on the same split", markup=False)
    h = int(scored.groupby("unique_id").size().max())
    # statsforecast forks its workers; forking a process whose JAX runtime is running can
    # deadlock, so the baselines run in a fresh spawned process.
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        fc, seconds = pool.submit(statsforecast_forecasts, train_frame, h, levels).result()
    summary["baseline_seconds"] = seconds
    # Align on the held-out stamps (series with fewer test points use the first ones).
    fc = fc.copy()
    fc["step"] = fc.groupby("unique_id").cumcount()
    truth = scored[["unique_id", "ds", "y"]].copy()
    truth["step"] = truth.groupby("unique_id").cumcount()
    merged = truth.merge(fc.drop(columns=["ds"]), on=["unique_id", "step"], how="left")
    return merged.drop(columns=["step"])


def _comparison(scored, baseline_fc, train_frame, levels, seasons
                ) -> dict[str, dict[str, float]]:
    from autogp.forecast.scoring import score_forecasts, summary_table

    frame = scored
    models = [MODEL_NAME]
    if baseline_fc is not None:
        frame = scored.merge(baseline_fc.drop(columns=["y"]), on=["unique_id", "ds"], how="left",
                             suffixes=("", "_baseline"))
        models += point_columns(baseline_fc.columns)
    scores = score_forecasts(frame, train_frame, models, levels, seasons)
    table = summary_table(scores, levels)
    return {str(m): {k: float(v) for k, v in row.items()} for m, row in table.iterrows()}


def _write_outputs(
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
) -> None:
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


__all__ = ["SUPPORTED_METRICS", "resolve_data_path", "run_experiment"]
