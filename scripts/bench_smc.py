"""Benchmark the SMC structure search end to end (not a test).

Airline: the first 126 points train, the last 18 are held out; 8 particles, 10 linear rounds,
10 structure moves per round, optax refinement. Reports the wall time of a first fit in this
fresh process (compilation included), of a second fit in the same process (new seed), the number
of compilations of the SMC round, time per round, the log marginal likelihood estimate, the top
structures with weights, and on the held-out points the mean log predictive density, the RMSE in
data units and how many points the 95% interval covers. Then the same for the AutoGP.jl tutorial
configuration (100 synthetic points, 8 particles, 20 rounds, 10 moves per round).

    python scripts/bench_smc.py [--json PATH] [--quick | --tiny]
    python scripts/bench_smc.py --cold-start [--designs a_current ...] [--repeats N] [--json PATH]

``--cold-start`` compares designs of a first run (:data:`DESIGNS`: the current setup, XLA:CPU
options trading run time for compile time, the persistent cache keeping small programs too, the
fit's programs compiled one at a time, each round as one program) on the README's airline command
and on a 300-point daily series: each ``autogp fit`` in a fresh process, from an empty compilation
cache and then from the cache it filled, with wall seconds, the fit's compile seconds (its summary
line), peak resident memory (the child's rusage), ratios against the first design, and whether
every forecast CSV is byte-identical to the first design's.

``--tiny`` is a smoke test: toy configurations (2 particles, 1 round, 1 move, depth 1) on 30
airline points with 6 held out and 30 tutorial points; the in-process fits fill a temporary
compilation cache and only the tutorial fit runs in a fresh process, with that cache (the other
fresh-process figures are null); then the cold-start comparison, on the current design alone,
on those 30 airline points. Its figures say nothing about speed or accuracy.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see bench_evaluator.py
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before jax, as the autogp command does

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

jax.config.update("jax_enable_x64", True)

from autogp import AutoGP  # noqa: E402
from autogp.forecast.columns import MODEL_NAME, interval_columns  # noqa: E402
from autogp.inference import smc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = ROOT / "examples" / "data" / "airline.csv"


def _airline() -> pd.DataFrame:
    return pd.read_csv(AIRLINE)


def _timed_fit(model: AutoGP, train) -> tuple[float, int]:
    before = smc.compilation_counts()["round"]
    start = time.perf_counter()
    model.fit(train)
    return time.perf_counter() - start, smc.compilation_counts()["round"] - before


def _heldout(model: AutoGP, test: pd.DataFrame) -> dict:
    fc = model.predict(len(test), level=[80, 95])
    mean = fc[MODEL_NAME].to_numpy()
    y = test["y"].to_numpy()
    lo, hi = (fc[c].to_numpy() for c in interval_columns(MODEL_NAME, 95))
    lo80, hi80 = (fc[c].to_numpy() for c in interval_columns(MODEL_NAME, 80))
    lpd = model.log_predictive_density(test["ds"], y, pointwise=True)
    return {
        "heldout_rmse": float(np.sqrt(np.mean((mean - y) ** 2))),
        "heldout_mae": float(np.mean(np.abs(mean - y))),
        "heldout_covered95": int(np.sum((y >= lo) & (y <= hi))),
        "heldout_covered80": int(np.sum((y >= lo80) & (y <= hi80))),
        "heldout_points": int(len(y)),
        "heldout_mean_lpd": float(np.mean(lpd)),
    }


def _structures(model: AutoGP, top: int = 5) -> list[dict]:
    table = model.kernels()
    rows = []
    for _, row in table.head(top).iterrows():
        rows.append({k: (float(v) if isinstance(v, np.floating) else v) for k, v in row.items()})
    return rows


AIRLINE_CONFIG = {
    "smc": {"num_particles": 8, "num_rounds": 10, "structure_moves": 10},
    # Airline's seasonal swing grows with its level: multiplicative, i.e. additive in log(y),
    # as configs/airline.toml says. The raw-scale fit is reported too.
    "data": {"log_transform": True},
    "forecast": {"observation_noise": True},
}
TUTORIAL_CONFIG = {"smc": {"num_particles": 8, "num_rounds": 20, "structure_moves": 10}}
TINY_SMC = {
    "grammar": {"max_depth": 1},
    "smc": {"num_particles": 2, "num_rounds": 1, "structure_moves": 1},
    "refine": {"steps": 2},
}
TINY_TRAIN, TINY_TEST = 30, 6


@dataclasses.dataclass(frozen=True)
class Setup:
    """What one benchmark mode fits: configurations, training length, rounds (for s/round)."""

    airline: dict
    tutorial: dict
    train: int
    test: int
    tutorial_points: int
    rounds: int


FULL = Setup(AIRLINE_CONFIG, TUTORIAL_CONFIG, 126, 18, 100, 10)
TINY = Setup(
    {**AIRLINE_CONFIG, **TINY_SMC}, TINY_SMC, TINY_TRAIN, TINY_TEST, TINY_TRAIN, 1
)


def _tutorial_data(n: int = 100):
    rng = np.random.default_rng(0)
    t = np.arange(float(n))
    return t, 0.05 * t + np.sin(2 * np.pi * t / 12) + 0.3 * rng.normal(size=n)


def _fresh_process(what: str, cache_dir: str | None, tiny: bool, jitted: bool = False) -> float:
    """Seconds of one first fit in a new Python process (compilation included); with
    ``cache_dir`` JAX's persistent compilation cache is used (as the command line does);
    ``jitted``: plain ``jax.jit`` rounds, compiled one after another (the design before
    exported rounds compiled side by side)."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["AUTOGP_EXPORTED_ROUNDS"] = "0" if jitted else "1"
    if cache_dir:
        env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "1"
    else:
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    command = [sys.executable, __file__, "--fit-once", what] + (["--tiny"] if tiny else [])
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _fit_once(what: str, setup: Setup) -> None:
    start = time.perf_counter()
    if what == "tutorial":
        AutoGP(setup.tutorial, seed=0, progress=False).fit(_tutorial_data(setup.tutorial_points))
    else:
        AutoGP(setup.airline, seed=0, progress=False).fit(_airline().iloc[: setup.train])
    print(time.perf_counter() - start)


def _use_compilation_cache(cache_dir: str) -> None:
    """This process writes (and reads) JAX's persistent compilation cache in ``cache_dir``."""
    jax.config.update("jax_compilation_cache_dir", cache_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def run(quick: bool, tiny: bool = False) -> dict:
    setup = TINY if tiny else FULL
    with tempfile.TemporaryDirectory() as cache:
        if tiny:  # the in-process fits fill the cache that the fresh processes then read
            _use_compilation_cache(cache)
        out = _run(setup, quick or tiny, tiny, cache)
    return out


def _run(setup: Setup, quick: bool, tiny: bool, cache: str) -> dict:
    out: dict = {
        "machine": f"{platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}",
        "jax": jax.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "tiny": tiny,
    }
    df = _airline()
    train, test = df.iloc[: setup.train], df.iloc[setup.train : setup.train + setup.test]
    model = AutoGP(setup.airline, seed=0, progress=False)
    first, compiles_first = _timed_fit(model, train)
    out["first_fit_s"] = first
    out.update(_heldout(model, test))
    fit = model.fits[model.unique_ids[0]]
    out["log_marginal_likelihood"] = float(fit.log_marginal_likelihood)
    out["top_structures"] = _structures(model)

    model2 = AutoGP(setup.airline, seed=1, progress=False)
    second, compiles_second = _timed_fit(model2, train)
    out["second_fit_s"] = second
    out["round_s"] = second / setup.rounds
    out["compilations"] = compiles_first + compiles_second
    out["second_fit"] = _heldout(model2, test)
    if not quick:
        out["seeds"] = {}
        for seed in range(2, 5):
            m = AutoGP(setup.airline, seed=seed, progress=False)
            m.fit(train)
            out["seeds"][seed] = _heldout(m, test)
    raw = AutoGP({**setup.airline, "data": {"transform": "none"}}, seed=0, progress=False)
    raw.fit(train)
    out["raw_scale"] = _heldout(raw, test)

    # AutoGP.jl tutorial configuration in a fresh process: 100 points, 8 particles, 20 rounds.
    if tiny:  # this process filled the cache: only the tutorial fit, only warm
        out["tutorial_first_fit_s"] = out["first_fit_warm_cache_s"] = None
        out["tutorial_first_fit_empty_cache_s"] = out["tutorial_first_fit_jitted_s"] = None
    else:
        out["tutorial_first_fit_s"] = _fresh_process("tutorial", None, tiny)
        out["tutorial_first_fit_jitted_s"] = _fresh_process("tutorial", None, tiny, jitted=True)
        # The command line's first run: the persistent cache is on but empty, so the rounds are
        # exported and their programs compiled side by side (autogp.inference.exported).
        with tempfile.TemporaryDirectory() as empty:
            out["tutorial_first_fit_empty_cache_s"] = _fresh_process("tutorial", empty, tiny)
        _fresh_process("airline", cache, tiny)  # fills the cache
        out["first_fit_warm_cache_s"] = _fresh_process("airline", cache, tiny)
        _fresh_process("tutorial", cache, tiny)
    out["tutorial_first_fit_warm_cache_s"] = _fresh_process("tutorial", cache, tiny)
    return out


# ---- cold start: the command line in fresh processes, from an empty and from a warm cache ------
#: Designs of a cold start, each an environment for the ``autogp fit`` process: (a) the current
#: setup; (b) XLA:CPU trading run time for compile time; (c) the persistent cache keeping small
#: programs too; (d) the fit's programs compiled one at a time instead of side by side (the
#: current setup compiles them in threads: ``autogp.inference.exported.prepare``); (e) XLA's
#: multi-threaded matrix products.
DESIGNS: dict[str, dict[str, str]] = {
    "a_current": {},
    "b_opt_level_0": {"XLA_FLAGS": "--xla_backend_optimization_level=0"},
    "b_opt_level_1": {"XLA_FLAGS": "--xla_backend_optimization_level=1"},
    "b_no_expensive_llvm": {"XLA_FLAGS": "--xla_llvm_disable_expensive_passes=true"},
    "c_cache_small_programs": {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"},
    "d_one_compile_thread": {"AUTOGP_BENCH_COMPILE_THREADS": "1"},
    # autogp's programs with XLA's default multi-threaded products (autogp._xla) instead of
    # the single-threaded ones that give a panel worker's bits.
    "e_multi_thread_eigen": {"AUTOGP_MULTI_THREAD_EIGEN": "1"},
    # Each round as one program, the structure moves compiled once per round size, instead of
    # the steps split by what depends on the data size (autogp.inference.round_steps).
    "f_fused_rounds": {"AUTOGP_SPLIT_ROUNDS": "0"},
}
TINY_CLI = ["--particles", "2", "--set", "smc.num_rounds=1", "--set", "smc.structure_moves=1",
            "--set", "grammar.max_depth=1", "--set", "refine.steps=2"]
_SUMMARY = re.compile(r"fitted .* in ([0-9.]+) s, ([0-9.]+) s of it compiling")


def _daily_csv(path: Path, n: int = 300) -> Path:
    """``n`` synthetic daily points (trend, weekly season, noise; seed 0)."""
    rng = np.random.default_rng(0)
    t = np.arange(n)
    y = 50 + 0.05 * t + 5 * np.sin(2 * np.pi * t / 7) + rng.normal(size=n)
    ds = pd.date_range("2024-01-01", periods=n, freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"ds": ds, "y": y}).to_csv(path, index=False)
    return path


def _cases(work: Path, tiny: bool) -> dict[str, list[str]]:
    """The commands timed: the README's airline command and a 300-point daily series."""
    if tiny:
        head = work / "airline_tiny.csv"
        _airline().iloc[:TINY_TRAIN].to_csv(head, index=False)
        return {"airline_tiny": ["fit", str(head), "--horizon", "3", *TINY_CLI]}
    return {
        "airline_readme": ["fit", str(AIRLINE), "--horizon", "18", "--plot",
                           str(work / "forecast.png")],
        "daily_300": ["fit", str(_daily_csv(work / "daily.csv")), "--horizon", "14"],
    }


def _cli_process(args: list[str], design: str, cache: Path, forecast: Path,
                 cores: list[int] | None = None) -> dict:
    """One ``autogp`` run in a fresh process under ``design`` with the compilation cache
    ``cache``: its wall seconds, the fit's seconds and compile seconds (its summary line),
    whether it showed the compiling phase, its peak resident memory (the child's rusage) and
    the sha256 of its forecast CSV."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "AUTOGP_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR",
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
    env.update(DESIGNS[design], AUTOGP_CACHE_DIR=str(cache), OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", _CLI_CHILD, *args, "--output", str(forecast)], env=env,
            stdout=subprocess.DEVNULL, stderr=err,
            preexec_fn=None if cores is None else lambda: os.sched_setaffinity(0, cores))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"autogp {' '.join(args)} under {design} failed:\n{text[-3000:]}")
    found = _SUMMARY.search(text)
    return {
        "wall_s": wall,
        "fit_s": float(found.group(1)) if found else None,
        "compile_s": float(found.group(2)) if found else None,
        "compiling_shown": "compiling (first run on this machine only" in text,
        "alarm_shown": "Very slow compile" in text,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "forecast_sha256": hashlib.sha256(forecast.read_bytes()).hexdigest(),
    }


#: The child process of :func:`_cli_process`: the ``autogp`` console script
#: (``autogp_launcher``), with design d's single compile thread.
_CLI_CHILD = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
threads = os.environ.get("AUTOGP_BENCH_COMPILE_THREADS")
if threads:
    from concurrent.futures import ThreadPoolExecutor
    from autogp.inference import exported
    exported._compile_pool = ThreadPoolExecutor(int(threads))
sys.argv = ["autogp", *sys.argv[1:]]
from autogp_launcher import main
main()
"""


def cold_start(designs: list[str], tiny: bool, repeats: int = 1, pinned: int = 0,
               cases: list[str] | None = None) -> dict:
    """Every case under every design, cold (an empty cache) then warm (the cache the cold run
    filled), designs interleaved so that a change in the machine's load spreads over all.
    ``pinned`` > 0: the designs of a case run at the same time, each on its own ``pinned``
    cores (``sched_setaffinity``), on a machine with enough of them."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        commands = {k: v for k, v in _cases(work, tiny).items() if not cases or k in cases}
        runs = {case: {d: [] for d in designs} for case in commands}

        def one(case: str, design: str, r: int, cores: list[int] | None) -> None:
            cache = work / f"cache-{case}-{design}-{r}"
            out = work / f"{case}-{design}-{r}"
            cold = _cli_process(commands[case], design, cache, out.with_suffix(".cold.csv"),
                                cores)
            warm = _cli_process(commands[case], design, cache, out.with_suffix(".warm.csv"),
                                cores)
            runs[case][design].append({"cold": cold, "warm": warm})
            print(f"  {case} {design}: {json.dumps({'cold': cold, 'warm': warm})}",
                  file=sys.stderr, flush=True)  # every figure, should the run be cut short

        for r in range(repeats):
            for case in commands:
                if not pinned:
                    for design in designs:
                        one(case, design, r, None)
                    continue
                with ThreadPoolExecutor(len(designs)) as pool:
                    jobs = [pool.submit(one, case, design, r,
                                        list(range(i * pinned, (i + 1) * pinned)))
                            for i, design in enumerate(designs)]
                    for job in jobs:
                        job.result()
    return {"designs": {d: DESIGNS[d] for d in designs}, "runs": runs, "pinned_cores": pinned,
            "summary": _cold_summary(runs, designs[0])}


def _cold_summary(runs: dict, reference: str) -> dict:
    """Per case and design: median figures over repeats, ratios against ``reference``, and
    whether every forecast equals the reference's byte for byte."""
    out: dict = {}
    for case, by_design in runs.items():
        ref_sha = by_design[reference][0]["cold"]["forecast_sha256"]
        rows = {}
        for design, reps in by_design.items():
            row = {}
            for when in ("cold", "warm"):
                for name in ("wall_s", "fit_s", "compile_s", "peak_rss_mb"):
                    values = [rep[when][name] for rep in reps if rep[when][name] is not None]
                    row[f"{when}_{name}"] = float(np.median(values)) if values else None
            row["identical_forecasts"] = all(rep[w]["forecast_sha256"] == ref_sha
                                             for rep in reps for w in ("cold", "warm"))
            row["compiling_shown_cold"] = all(rep["cold"]["compiling_shown"] for rep in reps)
            row["compiling_shown_warm"] = any(rep["warm"]["compiling_shown"] for rep in reps)
            rows[design] = row
        base = rows[reference]
        for row in rows.values():
            for when in ("cold", "warm"):
                row[f"{when}_wall_ratio"] = row[f"{when}_wall_s"] / base[f"{when}_wall_s"]
        out[case] = rows
    return out


def print_cold_summary(summary: dict) -> None:
    print("cold start: autogp fit in fresh processes; cold = empty compilation cache, warm = "
          "the cache the cold run filled; ratio = wall / a_current's; same = forecast CSV "
          "byte-identical to a_current's")
    header = (f"  {'design':24s} {'cold wall':>9s} {'compile':>7s} {'ratio':>5s} "
              f"{'warm wall':>9s} {'compile':>7s} {'ratio':>5s} {'peak RSS':>8s} same")
    for case, rows in summary.items():
        print(case)
        print(header)
        for design, r in rows.items():
            def num(v, fmt):
                return format(v, fmt) if v is not None else "?"
            print(f"  {design:24s} {num(r['cold_wall_s'], '9.1f')} "
                  f"{num(r['cold_compile_s'], '7.1f')} {r['cold_wall_ratio']:5.2f} "
                  f"{num(r['warm_wall_s'], '9.1f')} {num(r['warm_compile_s'], '7.1f')} "
                  f"{r['warm_wall_ratio']:5.2f} {num(r['cold_peak_rss_mb'], '6.0f')}MB "
                  f"{'yes' if r['identical_forecasts'] else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    parser.add_argument("--quick", action="store_true", help="skip the extra airline seeds")
    parser.add_argument(
        "--tiny", action="store_true", help="smoke test on toy configurations (see above)"
    )
    parser.add_argument("--cold-start", action="store_true",
                        help="only the cold-start designs, side by side (see above)")
    parser.add_argument("--designs", nargs="+", choices=list(DESIGNS), default=list(DESIGNS),
                        help="cold-start designs to compare (the first is the reference)")
    parser.add_argument("--repeats", type=int, default=1, help="cold-start runs per design")
    parser.add_argument("--pinned", type=int, default=0, metavar="CORES",
                        help="cold-start designs at once, each on its own CORES cores")
    parser.add_argument("--cases", nargs="+", choices=["airline_readme", "daily_300"],
                        default=None, help="cold-start commands (default: both)")
    parser.add_argument("--fit-once", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit_once:
        _fit_once(args.fit_once, TINY if args.tiny else FULL)
        return
    if args.cold_start:
        res = {"machine": f"{platform.machine()} cpus={os.cpu_count()}", "jax": jax.__version__,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "load_average_before": os.getloadavg(),
               "cold_start": cold_start(args.designs, args.tiny, args.repeats, args.pinned,
                                        args.cases)}
        res["load_average_after"] = os.getloadavg()
        print(f"machine: {res['machine']}  jax {res['jax']}  {res['date']}  load average "
              f"{res['load_average_before'][0]:.1f} before, {res['load_average_after'][0]:.1f} "
              f"after")
        print_cold_summary(res["cold_start"]["summary"])
        if args.json:
            args.json.write_text(json.dumps(res, indent=2, default=str))
        return
    res = run(args.quick, args.tiny)
    if args.tiny:  # the cold-start comparison's machinery, on the reference design alone
        res["cold_start"] = cold_start(["a_current"], tiny=True)
    print(f"machine: {res['machine']}  jax {res['jax']}  {res['date']}")
    if args.tiny:
        print("TINY smoke run: toy configurations, the figures mean nothing")
    setup = TINY if args.tiny else FULL
    print(
        f"airline ({setup.train} train / {setup.test} held out; "
        + ", ".join(f"{v} {k}" for k, v in setup.airline["smc"].items())
        + ")"
    )
    print(f"  first fit (compile incl.) {res['first_fit_s']:8.2f} s")
    print(
        f"  second fit                {res['second_fit_s']:8.2f} s"
        f"   ({res['round_s']:.2f} s/round)"
    )
    print(f"  compilations of a round   {res['compilations']:8d}")
    print(f"  log marginal likelihood   {res['log_marginal_likelihood']:8.2f}")
    print(f"  held-out RMSE             {res['heldout_rmse']:8.2f} passengers")
    print(f"  held-out 95% covered      {res['heldout_covered95']:5d} / {res['heldout_points']}")
    print(f"  held-out 80% covered      {res['heldout_covered80']:5d} / {res['heldout_points']}")
    print(f"  held-out mean log pred.   {res['heldout_mean_lpd']:8.3f}")
    s2 = res["second_fit"]
    print(f"  (second fit: RMSE {s2['heldout_rmse']:.2f}, 95% covered {s2['heldout_covered95']})")
    print("  top structures:")
    for row in res["top_structures"]:
        print("   ", {k: v for k, v in row.items() if k in ("weight", "structure", "reading")})
    for seed, h in res.get("seeds", {}).items():
        print(f"  (seed {seed}: RMSE {h['heldout_rmse']:.2f}, "
              f"95% covered {h['heldout_covered95']})")
    r = res["raw_scale"]
    print(f"  raw scale (no log), seed 0: RMSE {r['heldout_rmse']:.2f}, "
          f"95% covered {r['heldout_covered95']}")
    warm = res["first_fit_warm_cache_s"]
    if warm is not None:
        print(f"  first fit, fresh process, warm compilation cache {warm:.2f} s")
    cold = res["tutorial_first_fit_s"]
    print(
        f"tutorial config ({setup.tutorial_points} points, "
        + ", ".join(f"{v} {k}" for k, v in setup.tutorial["smc"].items())
        + "), fresh process: first fit "
        + ("(not measured)" if cold is None else f"{cold:.2f} s")
        + f" cold, {res['tutorial_first_fit_warm_cache_s']:.2f} s with a warm compilation cache"
    )
    jitted = res["tutorial_first_fit_jitted_s"]
    if jitted is not None:
        print(f"  cold, plain jax.jit rounds compiled one after another {jitted:.2f} s "
              f"({jitted / cold:.2f}x the exported rounds compiled side by side)")
    empty = res["tutorial_first_fit_empty_cache_s"]
    if empty is not None:
        print(f"  first fit with an empty compilation cache (the command line's first run) "
              f"{empty:.2f} s")
    if "cold_start" in res:
        print_cold_summary(res["cold_start"]["summary"])
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
