"""Cost versus series length: exact and sparse likelihoods side by side (not a test).

Three parts, each optional:

* ``eval``: seconds per value-and-gradient of the batched log likelihood (P particles from the
  grammar's prior, one compiled call) for the exact GP and the sparse bound at several N, next
  to the *dense floor* (batched Cholesky of the same K + s I plus the inverse the exact gradient
  needs), and the bound's error against the exact log likelihood where both run;
* ``fit``: a fit per N and method of a synthetic series (trend + seasons 24 and 168 + noise),
  each in its own subprocess: fit time, peak memory (max RSS of the process), and on the next 24
  points MASE over the seasonal-naive MASE (< 1: better than seasonal naive) and the 95%
  interval's coverage. Methods: ``window`` (the defaults: the last ``data.window`` points with
  the exact likelihood), ``exact`` and ``sparse`` (every point, with that likelihood);
* ``long``: the same for the real long series in a CSV (``unique_id, ds, y, split``; rows with
  ``split == test`` held out), with defaults (``--window`` sets ``data.window``,
  ``--window-seasons`` sets ``data.window_seasons``; ``--origins 1 2 3`` forecasts rolling
  origins inside the training rows instead of the test split, for choosing settings);
* ``baselines``: statsforecast's SeasonalNaive, AutoETS, AutoTheta and, for the sub-daily series,
  MSTL over the day and the week, on the same long series, scored the same way, each on two
  contexts: three cycles of the longest season (300 points where there is none) and the last
  5,000 points. What the long targets ask of autogp, measured on standard models (needs the
  ``[bench]`` extra).

The machine's load matters: run on an idle machine for numbers to compare.

    python scripts/bench_scaling.py [--tiny] [--sizes 100 300 ...] [--long PATH]
                                    [--long-ids ID ...] [--json PATH] [--parts eval fit long]
                                    [--warm]

``--warm`` fits each series a second time in the same process and reports that fit's time too
(``warm_fit_s``): issue 15's "warm" figures, with every program already compiled.

Every measurement runs in its own process under a timeout (``--timeout`` per fit,
``--eval-timeout`` per N of the eval part) and is reported as an error row when it runs out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

jax.config.update("jax_enable_x64", True)

SEASON = 24
HORIZON = 24
#: The fit part's methods: config overrides on the defaults.
METHODS = {
    "window": {},  # the defaults: the last data.window points, exact likelihood
    "exact": {"data.window": 0, "smc.likelihood": "exact"},
    "sparse": {"data.window": 0, "smc.likelihood": "sparse"},
    "late": {"refine.late_steps": 0},  # the window, no optimiser in the late rounds
    # The window with the optimiser's exact gradient (the defaults use 16 random probes in
    # rounds on >= 256 columns).
    "exact_gradient": {"refine.probes": 0},
}
#: Cycles (in observations) that MSTL decomposes in the ``baselines`` part: a day and a week
#: (the bank calls: 169 five-minute steps of opening hours a day, five days a week).
LONG_CYCLES = {"forecast.taylor": (48, 336), "fpp2.elecdemand": (48, 336),
               "fpp3.bank_calls": (169, 845)}
#: The longer of the ``baselines`` part's two contexts (the shorter: three longest cycles).
BASELINE_CONTEXT = 5000
#: Season (for MASE and seasonal naive) and horizon of the bundled long series, by id prefix.
LONG_SEASONS = {
    "datasets.sunspot": 12, "datasets.treering": 1, "forecast.taylor": 48,
    "fpp2.elecdemand": 48, "fpp3.bank_calls": 169,
}


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n + HORIZON`` hourly points: trend, daily and weekly seasons, noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n + HORIZON, dtype=float)
    y = (0.002 * t + np.sin(2 * np.pi * t / SEASON) + 0.5 * np.sin(2 * np.pi * t / 168.0)
         + 0.3 * rng.normal(size=t.size))
    return t, y


def scores(y_train, y_test, mean, lo, hi, season: int) -> dict:
    from autogp.forecast.metrics import coverage, mase

    m = season if y_train.size > season else 1
    naive = y_train[-m:][np.arange(y_test.size) % m]
    ours, base = mase(y_test, mean, y_train, m), mase(y_test, naive, y_train, m)
    return {"mase": ours, "mase_naive": base, "mase_ratio": ours / base,
            "coverage95": coverage(y_test, lo, hi)}


def by_prefix(table: dict, uid: str, default):
    """The entry of ``table`` (LONG_SEASONS, LONG_CYCLES) whose key begins ``uid``."""
    return next((v for k, v in table.items() if uid.startswith(k)), default)


def long_rows(frame: pd.DataFrame, uid: str, *, last: int = 0,
              origin: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The training rows of series ``uid`` of a long CSV and the rows it forecasts: its test
    split, or with ``origin`` k the horizon of training rows that ends k - 1 horizons before
    the test split (the test rows then give only the horizon). ``last``: only its last rows."""
    rows = frame[frame["unique_id"] == uid]
    if last:
        rows = rows.iloc[-last:]
    is_test = rows["split"].eq("test").to_numpy()
    train, test = rows.loc[~is_test], rows.loc[is_test]
    if origin:
        h = len(test)
        end = len(train) - (origin - 1) * h
        train, test = train.iloc[: end - h], train.iloc[end - h: end]
    return train, test


# --- statsforecast on the long series (the baselines part) -------------------------------------
def statsforecast_long(y: np.ndarray, h: int, season: int, cycles: tuple[int, ...]) -> dict:
    """``{model: (mean, lo95, hi95)}`` of statsforecast's models fitted to ``y``. AutoETS and
    AutoTheta get the MASE season where statsforecast's ETS takes it (at most 24), else none."""
    from statsforecast import StatsForecast
    from statsforecast.models import MSTL, AutoETS, AutoTheta, SeasonalNaive

    from autogp.forecast.columns import interval_columns

    plain = season if season <= 24 else 1
    models = {"SeasonalNaive": SeasonalNaive(season_length=season),
              "AutoETS": AutoETS(season_length=plain), "AutoTheta": AutoTheta(season_length=plain)}
    if cycles:
        models["MSTL"] = MSTL(season_length=list(cycles), trend_forecaster=AutoETS(model="ZZN"))
    frame = pd.DataFrame({"unique_id": "series", "ds": np.arange(y.size), "y": y})
    fc = StatsForecast(models=list(models.values()), freq=1).forecast(df=frame, h=h, level=[95])
    return {m: tuple(fc[c].to_numpy(float) for c in (m, *interval_columns(m, 95)))
            for m in models}


def long_baselines(frame: pd.DataFrame, uid: str, season: int, *, last: int = 0,
                   forecaster=statsforecast_long) -> list[dict]:
    """Rows ``{unique_id, context, model, mase, mase_ratio, coverage95}`` of ``forecaster`` on
    series ``uid`` of the long CSV ``frame``, for both contexts of the ``baselines`` part."""
    train, test = long_rows(frame, uid, last=last)
    y_train, y_test = train["y"].to_numpy(float), test["y"].to_numpy(float)
    cycles = by_prefix(LONG_CYCLES, uid, ())
    rows = []
    for context in sorted({min(y_train.size, 3 * max(cycles) if cycles else 300),
                           min(y_train.size, BASELINE_CONTEXT)}):
        start = time.perf_counter()
        out = forecaster(y_train[-context:], y_test.size, season, cycles)
        seconds = time.perf_counter() - start
        for model, (mean, lo, hi) in out.items():
            rows.append({"unique_id": uid, "context": context, "model": model,
                         "seconds": seconds, **scores(y_train, y_test, mean, lo, hi, season)})
    return rows


# --- one fit (runs in a child process) -----------------------------------------------------
def _child(spec: dict) -> dict:
    if spec["kind"] == "eval":
        return eval_row(spec["n"], spec["particles"], spec["inducing"], spec["exact_max"],
                        spec["repeats"], spec["seed"])
    from autogp import AutoGP
    from autogp.forecast.columns import MODEL_NAME, interval_columns

    overrides = dict(spec["overrides"])
    if spec["kind"] == "synthetic":
        t, y = synthetic(spec["n"], spec["seed"])
        n = spec["n"]
        train, test_t, y_test = (t[:n], y[:n]), t[n:], y[n:]
        y_train = y[:n]
    else:
        frame = pd.read_csv(spec["path"])
        ds = pd.to_numeric(frame["ds"], errors="coerce")
        frame = frame.assign(ds=ds if ds.notna().all() else pd.to_datetime(frame["ds"]))
        train, test = long_rows(frame, spec["unique_id"], last=spec.get("last", 0),
                                origin=spec.get("origin", 0))
        train = train[["ds", "y"]]
        test_t, y_test = test["ds"], test["y"].to_numpy(float)
        y_train = train["y"].to_numpy(float)
    model = AutoGP(progress=False, seed=spec["seed"], overrides=overrides)
    start = time.perf_counter()
    model.fit(train)
    fit_s = time.perf_counter() - start
    fc = model.predict(list(test_t), level=[95])
    predict_s = time.perf_counter() - start - fit_s
    fit = model.fits[model.unique_ids[0]]
    out = {"fit_s": fit_s, "predict_s": predict_s, "num_inducing": fit.num_inducing,
           "fitted_points": fit.series.n, "training_points": fit.series.n + fit.left_out,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    lo, hi = (fc[c].to_numpy() for c in interval_columns(MODEL_NAME, 95))
    out.update(scores(y_train, y_test, fc[MODEL_NAME].to_numpy(), lo, hi, spec["season"]))
    # What the search found (the posterior's heaviest structures), e.g. for the state
    # dimension that scripts/bench_statespace.py reads from such rows.
    table = model.kernels()
    out["structures"] = [{"structure": s, "weight": float(w)} for s, w in
                         zip(table["structure"][:5], table["weight"][:5], strict=True)]
    if spec.get("warm"):
        # The cold row first, so that it survives a timeout of the second fit (run_case).
        print(json.dumps(out), flush=True)
        # The same fit again in this process: every program is compiled, so this is the cost
        # of a fit with a warm cache (the same seed gives the same forecast).
        again = AutoGP(progress=False, seed=spec["seed"], overrides=overrides)
        start = time.perf_counter()
        again.fit(train)
        out["warm_fit_s"] = time.perf_counter() - start
        out["warm_same_forecast"] = bool(np.array_equal(
            again.predict(list(test_t), level=[95])[MODEL_NAME].to_numpy(),
            fc[MODEL_NAME].to_numpy()))
    return out


def run_case(spec: dict, timeout: float) -> dict:
    """Run one case in a child process under ``timeout`` seconds. A child that runs out of
    time after its cold fit (``--warm``: the second fit is the one cut short) keeps the cold
    fit's row, with ``warm_error`` saying why the warm figures are missing."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as stopped:
        error = f"timeout after {timeout:.0f} s"
        cold = _last_row(stopped.stdout)
        return {**cold, "warm_error": error} if cold else {"error": error}
    if done.returncode != 0:
        if done.returncode < 0:  # killed by a signal: SIGKILL is usually the kernel's OOM killer
            return {"error": f"killed by {signal.Signals(-done.returncode).name}"}
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    out = _last_row(done.stdout)
    if not out:  # a child that exits cleanly without its row must not pass as a result
        return {"error": "no result row printed"}
    out["wall_s"] = time.perf_counter() - start
    return out


def _last_row(stdout: str | bytes | None) -> dict:
    """The last complete JSON row a child printed (``{}`` if none)."""
    if isinstance(stdout, bytes):
        stdout = stdout.decode(errors="replace")
    for line in reversed((stdout or "").strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return {}


# --- per-evaluation cost ----------------------------------------------------------------------
def _timed(fn, *args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))  # compile
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


@jax.jit
def dense_floor(K, log_noise):
    """The dense floor: batched Cholesky factors of ``K + exp(log_noise) I`` ``[P, N, N]`` and
    the inverse that the exact gradient needs, by two batched triangular solves against the
    identity. Of the batched forms that cannot stall (each LAPACK call waits for the last) it
    is the fastest: ``bench_evaluator.py`` times the one used until 2026-12-04 (``L^-1``, then
    ``W^T W``) beside it. The evaluator's blocked inverse has independent solves, which stall
    as batched calls (``autogp/evaluator/linalg.py``)."""
    eye = jnp.eye(K.shape[-1], dtype=K.dtype)
    L = jnp.linalg.cholesky(K + jnp.exp(log_noise)[:, None, None] * eye)
    return jax.scipy.linalg.cho_solve((L, True), jnp.broadcast_to(eye, L.shape))


def eval_costs(sizes, particles: int, inducing: int, exact_max: int, repeats: int,
               seed: int, timeout: float) -> list[dict]:
    """One row per N, each measured in its own process under ``timeout`` seconds: with
    jaxlib 0.10.2 on CPU some batched programs here stall at random (every XLA thread idle,
    see the benchmark page), and a stalled size must not stop the rest."""
    rows = []
    for n in sizes:
        spec = {"kind": "eval", "n": n, "particles": particles, "inducing": inducing,
                "exact_max": exact_max, "repeats": repeats, "seed": seed}
        row = {"n": n, "particles": particles, "inducing": inducing, **run_case(spec, timeout)}
        row.pop("wall_s", None)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def eval_row(n: int, particles: int, inducing: int, exact_max: int, repeats: int,
             seed: int) -> dict:
    """Seconds per value-and-gradient at one N (exact, sparse, dense floor) and the bound's gap."""
    from autogp.evaluator import gram, log_marginal_likelihood
    from autogp.evaluator.sparse import sparse_log_marginal_likelihood
    from autogp.inference import grammar as gr

    grammar = gr.Grammar.default(max_depth=3)
    ops, params, _ = gr.sample_prior(grammar, particles, key=jax.random.key(seed))
    noise = jnp.full((particles,), np.log(0.1))
    t, y = synthetic(n, seed)
    x = jnp.asarray(t[:n] / n)
    yy = jnp.asarray((y[:n] - y[:n].mean()) / y[:n].std())
    row = {}  # the parent (eval_costs) adds n, particles and inducing

    def value_and_grad(loglik):
        def total(p, s):
            v = loglik(p, s)
            return jnp.sum(jnp.where(jnp.isfinite(v), v, 0.0)), v

        return jax.jit(jax.value_and_grad(total, argnums=(0, 1), has_aux=True))

    def sparse(p, s, x=x, yy=yy):
        return sparse_log_marginal_likelihood(ops, p, s, x, yy, num_inducing=inducing)

    row["sparse_s"] = _timed(value_and_grad(sparse), params, noise, repeats=repeats)
    if n <= exact_max:
        def exact(p, s, x=x, yy=yy):
            return log_marginal_likelihood(ops, p, s, x, yy)

        row["exact_s"] = _timed(value_and_grad(exact), params, noise, repeats=repeats)

        K = jax.jit(gram)(ops, params, x)
        row["dense_floor_s"] = _timed(dense_floor, K, noise, repeats=repeats)
        row["exact_over_floor"] = row["exact_s"] / row["dense_floor_s"]
        row["sparse_over_floor"] = row["sparse_s"] / row["dense_floor_s"]
        ex = np.asarray(jax.jit(exact)(params, noise))
        sp = np.asarray(jax.jit(sparse)(params, noise))
        ok = np.isfinite(ex) & np.isfinite(sp)
        gap = (ex - sp)[ok] / n  # per data point, nats
        row["bound_gap_per_point"] = {
            "median": float(np.median(gap)), "max": float(np.max(gap)),
            "min": float(np.min(gap)),
        }
    return row


def _long_ids(args) -> list[str]:
    """The series of ``--long`` that the long and baselines parts run: ``--long-ids`` (each
    must be in the CSV), else all of them."""
    ids = list(pd.read_csv(args.long, usecols=["unique_id"])["unique_id"].unique())
    if not args.long_ids:
        return ids
    missing = sorted(set(args.long_ids) - set(ids))
    if missing:
        raise SystemExit(f"--long-ids: not in {args.long}: {missing}")
    return [u for u in ids if u in args.long_ids]


# --- main -----------------------------------------------------------------------------------------
def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--parts", nargs="+", default=["eval", "fit", "long"],
                    choices=("eval", "fit", "long", "baselines"))
    ap.add_argument("--sizes", nargs="+", type=int,
                    default=[100, 300, 1000, 3000, 10000, 30000])
    ap.add_argument("--eval-sizes", nargs="+", type=int, default=[300, 1000, 3000, 10000, 30000])
    ap.add_argument("--methods", nargs="+", default=["window", "exact", "sparse"],
                    choices=tuple(METHODS),
                    help="window: the defaults (the last data.window points, exact); exact, "
                    "sparse: every point with that likelihood; late: the window with "
                    "refine.late_steps = 0; exact_gradient: the window with refine.probes = 0")
    ap.add_argument("--exact-max", type=int, default=3000,
                    help="largest N fitted/evaluated with the exact likelihood")
    ap.add_argument("--inducing", type=int, default=0, help="inducing points (0: default)")
    ap.add_argument("--particles", type=int, default=8, help="particles in the eval part")
    ap.add_argument("--long", type=Path, default=None, help="CSV of long series (long part)")
    ap.add_argument("--long-ids", nargs="+", default=None,
                    help="fit only these series of the long CSV (default: all)")
    ap.add_argument("--long-last", type=int, default=0,
                    help="use only the last points of each long series (0: all)")
    ap.add_argument("--window", type=int, default=None,
                    help="data.window of the long part's fits (default: the package's)")
    ap.add_argument("--window-seasons", type=int, default=None,
                    help="data.window_seasons of the long part's fits (default: the package's)")
    ap.add_argument("--set", dest="set_", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for the fit and long parts (repeatable), e.g. "
                         "refine.late_steps=0")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    ap.add_argument("--eval-timeout", type=float, default=600.0,
                    help="seconds per N in the eval part (its own process)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--origins", nargs="+", type=int, default=None,
                    help="long part: validate on rolling origins inside the training rows "
                         "instead of the test split (k: forecast the horizon that ends k "
                         "horizons before the test rows; only the test rows' count is read)")
    ap.add_argument("--warm", action="store_true",
                    help="fit each series twice in its process and report the second fit's "
                         "time too (warm_fit_s: every program already compiled)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child is not None:
        print(json.dumps(_child(json.loads(args.child))))
        return {}

    from autogp.config import parse_overrides
    from autogp.evaluator.sparse import DEFAULT_INDUCING

    inducing = args.inducing or DEFAULT_INDUCING
    overrides = parse_overrides(args.set_)
    if args.inducing:
        overrides["smc.inducing_points"] = args.inducing
    if args.tiny:
        args.sizes, args.eval_sizes, args.exact_max = [40], [40], 40
        args.particles, inducing = 2, 8
        overrides.update({
            "smc.num_particles": 2, "smc.num_rounds": 2, "smc.structure_moves": 1,
            "refine.steps": 2, "grammar.max_depth": 2, "smc.inducing_points": 8,
        })
        args.long_last = args.long_last or 60
    report: dict = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                    "inducing": inducing, "tiny": args.tiny}

    if "eval" in args.parts:
        report["eval"] = eval_costs(args.eval_sizes, args.particles, inducing, args.exact_max,
                                    repeats=1 if args.tiny else 3, seed=args.seed,
                                    timeout=args.eval_timeout)
    if "fit" in args.parts:
        report["fit"] = []
        for n in args.sizes:
            for method in args.methods:
                if method == "exact" and n > args.exact_max:
                    continue
                spec = {"kind": "synthetic", "n": n, "seed": args.seed, "season": SEASON,
                        "overrides": {**overrides, **METHODS[method]}, "warm": args.warm}
                row = {"n": n, "method": method, **run_case(spec, args.timeout)}
                report["fit"].append(row)
                print(json.dumps(row), flush=True)
    if "long" in args.parts and args.long is not None:
        report["long"] = []
        ids = _long_ids(args)
        long_overrides = dict(overrides)
        if args.window is not None:
            long_overrides["data.window"] = args.window
        if args.window_seasons is not None:
            long_overrides["data.window_seasons"] = args.window_seasons
        for uid in ids:
            season = by_prefix(LONG_SEASONS, uid, 1)
            for origin in args.origins or [0]:
                spec = {"kind": "csv", "path": str(args.long), "unique_id": uid,
                        "seed": args.seed, "season": season, "last": args.long_last,
                        "overrides": long_overrides, "warm": args.warm, "origin": origin}
                row = {"unique_id": uid, "season": season, "origin": origin,
                       **run_case(spec, args.timeout)}
                report["long"].append(row)
                print(json.dumps(row), flush=True)
    if "baselines" in args.parts and args.long is not None:
        report["baselines"] = []
        frame = pd.read_csv(args.long)
        for uid in _long_ids(args):
            season = by_prefix(LONG_SEASONS, uid, 1)
            for row in long_baselines(frame, uid, season, last=args.long_last):
                report["baselines"].append(row)
                print(json.dumps(row), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
