"""Benchmark panel backends side by side (not a test): the same panel fitted with
``--backend local --workers 1``, ``local --workers 2``, ``dask`` with 1 and 2 workers (a
LocalCluster), then a resume experiment (a run stopped with SIGTERM at about half way and
resumed). ``--phases`` adds what limits a worker's throughput (:func:`worker_phases`).
``local2pfc`` is ``local2`` with the forecasts made in the calling process after the workers
have fitted every series (:func:`parent_forecast_cli`), where ``autogp fit`` has each worker
forecast its series right after fitting it.

Every design runs ``autogp fit`` in a fresh process on the same training CSV and settings and
writes its forecast; the script reports the fit time (as printed by autogp: reading the data,
starting a cluster, fitting and the workers' forecasts, not the Python start-up), for
``local2pfc`` also the forecast time after it, the wall time of the process, series fitted and
forecast per second, the ratios dask2/local2, 2 workers/1 worker and local2pfc/local2, and
whether all forecasts are byte-identical (``local1`` fits in the calling process, whose XLA
is multi-threaded: it agrees to rounding). All designs share one fresh JAX compilation cache;
by default it is warmed first (untimed runs of each kind of process on the same panel), so
the times compare fitting, not compiling (``--cold`` skips the warm-up).

    python scripts/bench_panel.py benchmarks/data/m3_monthly.csv.gz --limit 40 \\
        --config configs/m3_monthly.toml
    python scripts/bench_panel.py --tiny            # smoke run: 4 short series, tiny settings
    python scripts/bench_panel.py benchmarks/data/m3_monthly.csv.gz --limit 30 \\
        --designs local2 --no-resume --phases      # series/s with defaults, and what limits it
    python scripts/bench_panel.py benchmarks/data/m3_monthly.csv.gz --limit 20 \\
        --designs local2pfc,local2 --no-resume     # forecasts in the parent against the workers

The data: a long CSV with ``unique_id``, ``ds``, ``y`` and optionally ``split`` (rows marked
``test`` are left out) and ``category`` (``--limit N`` then draws a stratified sample).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = ROOT / "examples" / "data" / "airline.csv"
TINY_SETTINGS = [
    "smc.num_particles=2", "smc.num_rounds=2", "smc.structure_moves=1", "refine.steps=2",
    "grammar.max_depth=2", "forecast.horizon=4",
]
DESIGNS = {
    "local1": ("local", 1),
    "local2": ("local", 2),
    "dask1": ("dask", 1),
    "dask2": ("dask", 2),
    "local2pfc": ("local", 2),
}
# Designs whose workers only fit, this process forecasting every series after them (the
# design before the workers forecast beside each fit).
PARENT_FORECAST = {"local2pfc"}
FITTED = re.compile(r"fitted (\d+) series .* in ([0-9.]+) s")
FORECAST_HERE = re.compile(r"forecast (\d+) series in this process in ([0-9.]+) s")


def tiny_panel() -> pd.DataFrame:
    """Four 16-point windows of the airline series (one padded length)."""
    df = pd.read_csv(AIRLINE)
    parts = [df.iloc[i : i + 16].assign(unique_id=f"w{k}") for k, i in enumerate(range(0, 64, 16))]
    return pd.concat(parts, ignore_index=True)[["unique_id", "ds", "y"]]


def load_panel(path: Path, limit: int | None, seed: int) -> pd.DataFrame:
    """The training rows of the panel at ``path`` (a stratified sample of ``limit`` series)."""
    from autogp.data import read_csv
    from autogp.experiments import stratified_sample

    head = pd.read_csv(path, nrows=0).columns
    split = "split" if "split" in head else None
    series = read_csv(path, id_col="unique_id", split_col=split)
    if limit is not None:
        series = stratified_sample(series, path, "unique_id", limit, seed)
    frames = []
    for s in series:
        train = s.train() if s.is_test is not None and s.is_test.any() else s
        frames.append(pd.DataFrame({"unique_id": s.unique_id, "ds": train.ds, "y": train.y}))
    return pd.concat(frames, ignore_index=True)


def compare(outputs: dict[str, Path]) -> dict:
    """Forecast agreement: byte-identical files among the designs that fit in worker
    processes (single-threaded XLA), and the largest relative difference of ``local1``, which
    fits in the calling process (XLA multi-threaded there, so sums may round differently)."""
    workers = [n for n in outputs if n != "local1"]
    out: dict = {}
    if workers:
        first = outputs[workers[0]].read_bytes()
        out["worker_designs_byte_identical"] = all(
            outputs[n].read_bytes() == first for n in workers
        )
        if not out["worker_designs_byte_identical"]:
            out["worker_designs_max_relative_difference"] = max(
                largest_relative_difference(outputs[n], outputs[workers[0]])
                for n in workers[1:])
    if "local1" in outputs and workers:
        out["local1_byte_identical"] = outputs["local1"].read_bytes() == first
        out["local1_max_relative_difference"] = largest_relative_difference(
            outputs["local1"], outputs[workers[0]])
    return out


def largest_relative_difference(path: Path, reference: Path) -> float:
    """The largest relative difference between two forecast files' ``AutoGP`` columns."""
    a, b = pd.read_csv(path), pd.read_csv(reference)
    cols = [c for c in a.columns if c.startswith("AutoGP")]
    diff = (a[cols] - b[cols]).abs() / b[cols].abs().clip(lower=1e-300)
    return float(diff.to_numpy().max())


def keep_for_scoring(folder: Path, forecast: Path, panel: pd.DataFrame, data: Path | None
                     ) -> None:
    """``folder/forecast.csv`` (the forecast with each series' held-out ``y``, matched by
    position: the forecast starts right after the training rows) and ``folder/train.csv``."""
    folder.mkdir(parents=True, exist_ok=True)
    fc = pd.read_csv(forecast)
    fc["unique_id"] = fc["unique_id"].astype(str)
    fc["step"] = fc.groupby("unique_id", sort=False).cumcount()
    if data is not None and "split" in pd.read_csv(data, nrows=0).columns:
        test = pd.read_csv(data, usecols=["unique_id", "split", "y"])
        test = test[test["split"] == "test"].drop(columns="split")
        test["unique_id"] = test["unique_id"].astype(str)
        test["step"] = test.groupby("unique_id", sort=False).cumcount()
        fc = fc.merge(test, on=["unique_id", "step"], how="left", validate="one_to_one")
    fc.drop(columns="step").to_csv(folder / "forecast.csv", index=False)
    panel.to_csv(folder / "train.csv", index=False)


def fit_command(data: Path, out: Path, backend: str, workers: int, args: argparse.Namespace,
                resume: Path | None = None, parent_forecast: bool = False) -> list[str]:
    """``autogp fit`` of the panel in a fresh process (``parent_forecast``: through
    :func:`parent_forecast_cli`)."""
    start = ([sys.executable, str(Path(__file__).resolve()), "--parent-forecast-cli"]
             if parent_forecast else [sys.executable, "-m", "autogp.cli.main"])
    cmd = [*start, "fit", str(data), "--id-col", "unique_id",
           "--backend", backend, "--workers", str(workers), "--output", str(out)]
    if args.config:
        cmd += ["--config", str(args.config)]
    for item in args.settings:
        cmd += ["--set", item]
    if resume is not None:
        cmd += ["--resume", str(resume)]
    return cmd


def run_fit(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    match = FITTED.search(done.stderr)
    fit = float(match.group(2)) if match else float("nan")
    out = {"wall_seconds": round(wall, 2), "fit_seconds": fit}
    here = FORECAST_HERE.search(done.stderr)
    if here:  # a design whose workers only fit: the forecasts came after, in this process
        out["forecast_here_seconds"] = float(here.group(2))
    out["fit_and_forecast_seconds"] = round(fit + out.get("forecast_here_seconds", 0.0), 2)
    return out


def parent_forecast_cli(argv: list[str]) -> None:
    """``autogp fit`` (arguments ``argv``) as it ran before a panel's workers forecast beside
    their fits: the workers only fit, then this process forecasts every series, timed and
    reported on stderr. The same functions make the same forecast frames either way."""
    from autogp.cli.main import app
    from autogp.forecast.known_horizon import ForecastRequest

    assemble = ForecastRequest.assemble

    def no_work_after_fit(self: ForecastRequest) -> None:
        return None

    def all_here(self: ForecastRequest, model, done=None):  # noqa: ANN001, ANN202
        started = time.perf_counter()
        frame = assemble(self, model, {})
        print(f"forecast {len(model.unique_ids)} series in this process in "
              f"{time.perf_counter() - started:.2f} s", file=sys.stderr, flush=True)
        return frame

    ForecastRequest.after_fit = no_work_after_fit  # type: ignore[method-assign]
    ForecastRequest.assemble = all_here  # type: ignore[method-assign]
    app(argv, prog_name="autogp")


def resume_experiment(data: Path, work: Path, env: dict[str, str], args: argparse.Namespace,
                      n_series: int, full: dict[str, float], reference: Path) -> dict:
    """Stop a ``local 2`` run with SIGTERM half way through (at half the uninterrupted run's
    wall time), resume it, compare the forecast with the uninterrupted one and the resumed
    part's time with a full run's.

    Half way is measured in time, not in series: with chunks handed out longest first,
    alternating with the shortest, half the series is not exactly half the work."""
    from autogp.pipeline.saveload import load_model

    folder = work / "resume"
    out = work / "resumed.csv"
    cmd = fit_command(data, out, "local", 2, args, resume=folder)

    def saved() -> int:
        count = 0
        for p in folder.glob("chunk-*.autogp"):
            try:
                count += len(load_model(p).fits)
            except Exception:  # noqa: BLE001 - a file being replaced
                pass
        return count

    started = time.perf_counter()
    log = open(work / "stopped.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
    while proc.poll() is None and time.perf_counter() - started < full["wall_seconds"] / 2:
        time.sleep(0.5)
    stopped_after = time.perf_counter() - started
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    log.close()
    kept = saved()
    second = run_fit(cmd, env)
    return {
        "stopped_after_seconds": round(stopped_after, 2),
        "stopped_at_fraction_of_full_wall": round(stopped_after / full["wall_seconds"], 3),
        "exit_code_when_stopped": proc.returncode,
        "series_kept": kept,
        "series": n_series,
        "resumed_fit_seconds": second["fit_seconds"],
        "resumed_wall_seconds": second["wall_seconds"],
        "resumed_over_full_fit": round(second["fit_seconds"] / full["fit_seconds"], 3),
        "identical_to_uninterrupted": out.read_bytes() == reference.read_bytes(),
    }


def profile_worker(data: Path, args: argparse.Namespace) -> dict:
    """Fit every series of ``data`` in this process, one after another as a pool worker does
    (the caller gives it the workers' single-threaded environment), then forecast them as the
    parent process does, and split the time: waiting for compilation (or for loading compiled
    programs from the cache), running each compiled program (synchronised, by program name),
    and the rest of the fit (Python and eager JAX between programs)."""
    import jax

    from autogp.config import parse_overrides
    from autogp.forecast.model import AutoGP
    from autogp.inference import exported
    from autogp.parallel.work import enable_compilation_cache, quiet_xla_logs

    quiet_xla_logs()
    enable_compilation_cache()
    running: dict[str, float] = {}
    calls: dict[str, int] = {}

    def count(name: str, seconds: float) -> None:
        running[name] = running.get(name, 0.0) + seconds
        calls[name] = calls.get(name, 0) + 1

    compiled, jitted = exported._compiled, exported.call_jitted

    def timed_compiled(key: str):
        program = compiled(key)  # waits for its compilation first (counted as compiling)

        def run(*leaves):
            started = time.perf_counter()
            out = jax.block_until_ready(program(*leaves))
            count(key.rsplit("-", 1)[0], time.perf_counter() - started)
            return out
        return run

    def timed_jitted(program, out_treedef):
        before, started = exported.compile_seconds(), time.perf_counter()
        out = jax.block_until_ready(jitted(program, out_treedef))
        count(program.name, time.perf_counter() - started - (exported.compile_seconds() - before))
        return out

    exported._compiled, exported.call_jitted = timed_compiled, timed_jitted
    overrides = parse_overrides(args.settings)
    overrides.update({"smc.workers": 1, "smc.backend": "local"})
    model = AutoGP(args.config, overrides=overrides)
    before, started = exported.compile_seconds(), time.perf_counter()
    model.fit(str(data), id_col="unique_id")
    fit = time.perf_counter() - started
    compiling = exported.compile_seconds() - before
    started = time.perf_counter()
    model.predict(model.config.forecast.horizon)
    predict = time.perf_counter() - started
    n = len(model.unique_ids)
    programs = sum(running.values())
    return {
        "series": n,
        "fit_seconds": round(fit, 3),
        "series_per_second": float(f"{n / fit:.6g}"),
        "compiling_seconds": round(compiling, 3),
        "programs_seconds": {k: round(v, 3) for k, v in sorted(running.items())},
        "program_calls": dict(sorted(calls.items())),
        "rest_of_fit_seconds": round(fit - compiling - programs, 3),
        "rest_of_fit_seconds_per_series": round((fit - compiling - programs) / n, 4),
        "forecast_seconds": round(predict, 3),
        "peak_resident_mb": peak_resident_mb(),
        "shares_of_fit": {
            "compiling": round(compiling / fit, 3),
            "programs": round(programs / fit, 3),
            "rest": round((fit - compiling - programs) / fit, 3),
        },
    }


def peak_resident_mb() -> float | None:
    """This process's peak resident memory (Linux's ``VmHWM``), None where it cannot be read."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else None


def worker_phases(data: Path, env: dict[str, str], args: argparse.Namespace) -> dict:
    """:func:`profile_worker` in a fresh process with a pool worker's environment and the
    benchmark's compilation cache (warm unless ``--cold``)."""
    from autogp.parallel.work import single_thread_env

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "phases.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--profile-worker", str(data),
               "--json", str(out)]
        if args.config:
            cmd += ["--config", str(args.config)]
        for item in args.settings:
            cmd += ["--set", item]
        done = subprocess.run(cmd, env=dict(env, **single_thread_env(env)), cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"worker profile failed: {done.stderr[-3000:]}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--parent-forecast-cli"]:  # the process a parent-forecast design starts
        parent_forecast_cli(argv[1:])
        return {}
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, help="long CSV: unique_id, ds, y[, split]")
    parser.add_argument("--limit", type=int, default=None, help="a stratified sample of N series")
    parser.add_argument("--config", type=Path, default=None, help="autogp TOML config")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        help="config override key=value (repeatable)")
    parser.add_argument("--designs", default=",".join(DESIGNS),
                        help=f"comma-separated subset of {list(DESIGNS)}")
    parser.add_argument("--no-resume", action="store_true", help="skip the resume experiment")
    parser.add_argument("--cold", action="store_true", help="no warm-up of the compile cache")
    parser.add_argument("--tiny", action="store_true", help="smoke run: 4 short series")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--warm-limit", type=int, default=None,
                        help="warm the compile cache on a stratified sample of N series only "
                        "(series of every length bucket; a full-panel warm-up triples the time)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run the designs in turn N times; each design's median run counts")
    parser.add_argument("--phases", action="store_true",
                        help="also profile one worker: compiling, compiled programs, the rest")
    parser.add_argument("--profile-worker", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, default=None,
                        help="write a scoring folder here: the first design's forecast with the "
                        "held-out y (forecast.csv) and train.csv, for scripts/panel_scores.py")
    args = parser.parse_args(argv)
    if args.profile_worker is not None:  # the process worker_phases starts
        phases = profile_worker(args.profile_worker, args)
        if args.json is not None:
            args.json.write_text(json.dumps(phases, indent=2) + "\n")
        return phases
    if args.tiny:
        panel = tiny_panel()
        args.settings = TINY_SETTINGS + args.settings
    elif args.data is None:
        parser.error("give a data file or --tiny")
    else:
        panel = load_panel(args.data, args.limit, seed=0)
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        parser.error(f"unknown designs {unknown}; choose from {list(DESIGNS)}")
    n_series = panel["unique_id"].nunique()
    results: dict = {
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
        "series": n_series,
        "observations": len(panel),
        "settings": {"config": str(args.config) if args.config else None, "set": args.settings},
        "designs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "panel.csv"
        panel.to_csv(data, index=False)
        env = dict(os.environ, AUTOGP_CACHE_DIR=str(work / "jax-cache"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        if not args.cold:
            # Every shape the panel needs, compiled once by each kind of process: this one
            # (local1), the pool's (shared cache) and each Dask worker (its own cache).
            # A design that forecasts here compiles the forecast's programs in this process.
            kinds = [("local", 1, False)] if "local1" in designs else []
            kinds += [("local", 2, False)] if ({"local2"} & set(designs) or not args.no_resume
                                               or args.phases) else []
            kinds += [("local", 2, True)] if PARENT_FORECAST & set(designs) else []
            kinds += [("dask", 2, False)] if {"dask1", "dask2"} & set(designs) else []
            warm = data
            if args.warm_limit is not None and args.data is not None:
                warm = work / "warm-panel.csv"
                load_panel(args.data, args.warm_limit, seed=0).to_csv(warm, index=False)
            for backend, workers, here in kinds:
                run_fit(fit_command(warm, work / "warm-fc.csv", backend, workers, args,
                                    parent_forecast=here), env)
        outputs = {}
        runs: dict[str, list[dict]] = {name: [] for name in designs}
        for repeat in range(args.repeats):  # the designs in turn, so load drifts hit each
            for name in designs:
                backend, workers = DESIGNS[name]
                outputs[name] = work / f"{name}.csv"
                timing = run_fit(fit_command(data, outputs[name], backend, workers, args,
                                             parent_forecast=name in PARENT_FORECAST), env)
                # Series fitted and forecast per second (autogp's fit time holds the
                # forecasts its workers make beside the fits; a parent-forecast design adds
                # its own). Six significant figures: on a loaded machine throughput can drop
                # below 0.01/s.
                timing["series_per_second"] = float(
                    f"{n_series / timing['fit_and_forecast_seconds']:.6g}")
                runs[name].append(timing)
                here = (f" + forecast here {timing['forecast_here_seconds']:.1f} s"
                        if "forecast_here_seconds" in timing else "")
                print(f"{name:9s} fit {timing['fit_seconds']:8.1f} s{here}  "
                      f"wall {timing['wall_seconds']:8.1f} s  "
                      f"{timing['series_per_second']:.3f} series/s"
                      + (f"  (run {repeat + 1})" if args.repeats > 1 else ""), flush=True)
        for name, timings in runs.items():  # the median run of each design
            ordered = sorted(timings, key=lambda t: t["fit_and_forecast_seconds"])
            results["designs"][name] = dict(ordered[len(ordered) // 2])
            if len(timings) > 1:
                results["designs"][name]["runs"] = timings
        fit = {k: v["fit_and_forecast_seconds"] for k, v in results["designs"].items()}
        wall = {k: v["wall_seconds"] for k, v in results["designs"].items()}
        ratios = {}
        for a, b in (("dask2", "local2"), ("local2", "local1"), ("dask2", "dask1")):
            if a in fit and b in fit:
                ratios[f"{a}/{b} fit time"] = round(fit[a] / fit[b], 3)
        for a, b in (("local1", "local2"), ("dask1", "dask2"), ("local2pfc", "local2")):
            if a in fit and b in fit:
                ratios[f"speed-up {b} over {a}"] = round(fit[a] / fit[b], 3)
        if "local2pfc" in wall and "local2" in wall:
            ratios["speed-up local2 over local2pfc, wall"] = round(
                wall["local2pfc"] / wall["local2"], 3)
        results["ratios"] = ratios
        results["forecasts"] = compare(outputs)
        if args.keep is not None and outputs:
            keep_for_scoring(args.keep, outputs[designs[0]], panel, args.data)
        if args.phases:
            results["worker_phases"] = phases = worker_phases(data, env, args)
            print(f"one worker: {phases['series_per_second']:.3f} series/s; of its "
                  f"{phases['fit_seconds']:.1f} s fit, compiling {phases['compiling_seconds']} s"
                  f", compiled programs {sum(phases['programs_seconds'].values()):.1f} s, the "
                  f"rest {phases['rest_of_fit_seconds']} s; forecast "
                  f"{phases['forecast_seconds']} s; peak memory {phases['peak_resident_mb']} MB",
                  flush=True)
        if not args.no_resume and "local2" in outputs:
            results["resume"] = resume_experiment(data, work, env, args, n_series,
                                                  results["designs"]["local2"], outputs["local2"])
    for k, v in ratios.items():
        print(f"{k}: {v}")
    for k, v in results["forecasts"].items():
        print(f"{k}: {v}")
    if "resume" in results:
        r = results["resume"]
        print(f"resume: stopped after {r['stopped_after_seconds']} s with {r['series_kept']}/"
              f"{r['series']} series kept; resumed fit {r['resumed_fit_seconds']} s = "
              f"{r['resumed_over_full_fit']} x the full local2 fit; identical output: "
              f"{r['identical_to_uninterrupted']}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
