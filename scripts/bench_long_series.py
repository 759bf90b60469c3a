"""The full-resolution stage against the window alone on long real series (not a test).

For each series of a long CSV (``unique_id, ds, y, split``; rows with ``split == test`` held
out) and each method, one fit in its own process under a timeout, scored on the test rows:
MASE (scaled by the in-sample seasonal naive with the series' season, ``bench_scaling``'s
``LONG_SEASONS``: 12, 1, 48, 48, 169), the MASE of seasonal naive itself, the 95% interval's
coverage and the fit's seconds. Methods:

* ``window``: the defaults with ``data.full_resolution = "off"`` (the SMC on the window only),
  searching with the grammar the defaults give the series (``GE``'s prior weight on
  ``data.full_resolution_ge`` where the stage runs: ``ge_weight_to`` in the rows);
* ``full``: the defaults (``data.full_resolution = "auto"``: the window's SMC, then the
  heaviest structures with a state-space form re-fitted on the last
  ``data.full_resolution_points`` points by the Kalman filter), with how many structures the
  stage re-fitted, its state dimension and the weight they carry. Both methods share one SMC
  run on the window (the stage is applied to the window fit, as ``fit`` does), so the rows
  differ by the stage alone.

    python scripts/bench_long_series.py --csv PATH [--series ID ...] [--methods window full]
                                        [--workers 1] [--timeout 900] [--origin K]
                                        [--set KEY=VALUE ...]
                                        [--json PATH]

``--workers`` fits run at once (each a process); on a shared or small machine keep 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pandas as pd  # noqa: E402

from autogp._x64 import x64  # noqa: E402

HERE = Path(__file__).resolve().parent
METHODS = {"window": {"data.full_resolution": "off"}, "full": {}}


def _scaling():
    """``bench_scaling`` (the long series' seasons, rows and scores live there)."""
    spec = importlib.util.spec_from_file_location("bench_scaling", HERE / "bench_scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: str, uid: str | None = None) -> pd.DataFrame:
    """The CSV's rows (of series ``uid``), ``ds`` as numbers where they all are, else dates."""
    frame = pd.read_csv(path)
    if uid is None:
        return frame
    frame = frame[frame["unique_id"] == uid]
    ds = pd.to_numeric(frame["ds"], errors="coerce")
    return frame.assign(ds=ds if ds.notna().all() else pd.to_datetime(frame["ds"]))


def _training_data(train: pd.DataFrame):
    """What ``AutoGP.fit`` gets: the frame, or for numeric stamps a series whose calendar is
    named by the ``freq`` column (fractional years of monthly data: months), as
    ``autogp run`` names it with ``data.freq_col``."""
    from autogp.data import from_arrays
    from autogp.data.seasons import with_frequency

    if not pd.api.types.is_numeric_dtype(train["ds"]):
        return train[["ds", "y"]]
    freq = str(train["freq"].iloc[0]) if "freq" in train else None
    # the window keeps fits small, so no exact-GP point cap (as read_series with a window)
    series = from_arrays(train["ds"].to_numpy(float), train["y"].to_numpy(float),
                         max_points=None)
    return with_frequency(series, freq)


def _scores(bench, model, train, test, season: int) -> dict:
    from autogp.forecast.columns import MODEL_NAME, interval_columns

    start = time.perf_counter()
    fc = model.predict(list(test["ds"]), level=[95])
    lo, hi = (fc[c].to_numpy() for c in interval_columns(MODEL_NAME, 95))
    return {"predict_s": time.perf_counter() - start,
            **bench.scores(train["y"].to_numpy(float), test["y"].to_numpy(float),
                           fc[MODEL_NAME].to_numpy(), lo, hi, season)}


def _structures(model) -> list[dict]:
    table = model.kernels()
    return [{"structure": s, "weight": round(float(w), 4)} for s, w in
            zip(table["structure"][:3], table["weight"][:3], strict=True)]


def child(spec: dict) -> list[dict]:
    """The fits of one series (in a child process): rows of scores, one per method.

    Both methods share the SMC on the window: the window fit is made with the stage off, and
    the ``full`` row applies the stage to that very posterior (``fit_series_posterior`` is
    ``full_resolution_stage(window fit)``), so its fit seconds are the window's plus the
    stage's, and the comparison is of the stage alone, not of two SMC runs."""
    from autogp import AutoGP
    from autogp.forecast.reading import read_series
    from autogp.pipeline.fitting import fitting_window
    from autogp.pipeline.full_resolution import (
        full_resolution_stage,
        ge_weight_to,
        with_ge_weight_to,
    )

    bench = _scaling()
    train, test = bench.long_rows(_read(spec["csv"], spec["unique_id"]), spec["unique_id"],
                                  origin=spec.get("origin", 0))
    data = _training_data(train)
    full = AutoGP(progress=False, seed=spec["seed"],
                  overrides={**spec["overrides"], **METHODS["full"]})
    (series,) = read_series(data, full.config)
    # the search the full fit runs (the stage off cannot tell it the series is long)
    atom = ge_weight_to(series, full.config, fitting_window(series, full.config).left_out)
    model = AutoGP(with_ge_weight_to(full.config.with_overrides(METHODS["window"]), atom),
                   progress=False, seed=spec["seed"])
    start = time.perf_counter()
    model.fit(data)
    window_s = time.perf_counter() - start
    rows = []
    if "window" in spec["methods"]:
        rows.append({"method": "window", "fit_s": window_s, "ge_weight_to": atom,
                     **_scores(bench, model, train, test, spec["season"]),
                     "structures": _structures(model)})
    if "full" in spec["methods"]:
        uid = model.unique_ids[0]
        start = time.perf_counter()
        with x64():
            fit = full_resolution_stage(model.fits[uid], series, full.config)
        stage_s = time.perf_counter() - start
        model._fits[uid] = fit  # the window fit, after the stage
        row = {"method": "full", "fit_s": window_s + stage_s, "stage_s": stage_s,
               "ge_weight_to": atom,
               **_scores(bench, model, train, test, spec["season"]),
               "structures": _structures(model)}
        fr = fit.full_resolution
        if fr is not None:
            w = fit.weights()
            row.update({"stage_points": len(fr.t), "stage_dim": fr.dim,
                        "stage_structures": int(fr.state_space.sum()),
                        "stage_weight": float(w[fr.state_space].sum()),
                        "stage_note": fr.note,
                        "kept_reasons": sorted({int(r) for r in fr.reason[~fr.state_space]})})
        rows.append(row)
    return rows


def run_case(spec: dict, timeout: float) -> list[dict]:
    """``spec`` fitted in a child process under ``timeout`` seconds: its rows (one error row
    per method if it fails)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    start = time.perf_counter()
    error = None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        error = f"timeout after {timeout:.0f} s"
    else:
        lines = [line for line in done.stdout.strip().splitlines() if line.startswith("[")]
        if done.returncode != 0:
            err = done.stderr.strip().splitlines()
            error = err[-1] if err else f"exit status {done.returncode}"
        elif not lines:
            error = "no result rows printed"
    if error is not None:
        return [{"method": m, "error": error} for m in spec["methods"]]
    return [{**row, "wall_s": time.perf_counter() - start} for row in json.loads(lines[-1])]


def _overrides(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set takes KEY=VALUE, got {pair!r}")
        out[key] = json.loads(value) if value[:1] in "0123456789-[{tf" else value
    return out


def markdown(rows: list[dict]) -> str:
    """The report's table: one row per series and method."""
    head = ("| series | method | MASE | naive MASE | 95% cov | fit s | stage |\n"
            "|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['unique_id']} | {r['method']} | {r['error']} | | | | |")
            continue
        stage = "-"
        if "stage_structures" in r:
            stage = (f"{r['stage_structures']} re-fitted, weight {r['stage_weight']:.2f}, "
                     f"D = {r['stage_dim']}, {r['stage_points']} points")
            if r.get("stage_note"):
                stage += f" ({r['stage_note']})"
        lines.append(f"| {r['unique_id']} | {r['method']} | {r['mase']:.3f} | "
                     f"{r['mase_naive']:.3f} | {r['coverage95']:.2f} | {r['fit_s']:.0f} | "
                     f"{stage} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--csv", default=None,
                    help="CSV of long series: unique_id, ds, y, split (required; not shipped)")
    ap.add_argument("--series", nargs="+", default=None, help="ids (default: all in the CSV)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--workers", type=int, default=1, help="fits at once (processes)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--origin", type=int, default=0,
                    help="k >= 1: score the horizon of training rows ending k - 1 horizons "
                         "before the test split (the horizon: the test rows' count), not the "
                         "test split (0)")
    ap.add_argument("--set", dest="set_", nargs="+", default=[], metavar="KEY=VALUE",
                    help="config overrides for every fit (JSON values)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child)), default=float), flush=True)
        return {}
    if args.csv is None:
        ap.error("--csv is required: the long series are not shipped with autogp")
    bench = _scaling()
    ids = args.series or list(dict.fromkeys(_read(args.csv)["unique_id"]))
    common = _overrides(args.set_)
    specs = [{"csv": args.csv, "unique_id": uid, "methods": args.methods, "seed": args.seed,
              "origin": args.origin,
              "season": bench.by_prefix(bench.LONG_SEASONS, uid, 1), "overrides": common}
             for uid in ids]
    def one(spec: dict) -> list[dict]:
        out = run_case(spec, args.timeout)
        for row in out:  # as each series finishes: a long run cut short keeps what it did
            print(json.dumps({"unique_id": spec["unique_id"], **row}, default=float),
                  file=sys.stderr, flush=True)
        return out

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        results = list(pool.map(one, specs))
    rows = [{"unique_id": s["unique_id"], "season": s["season"], **r}
            for s, out in zip(specs, results, strict=True) for r in out]
    report = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "load": os.getloadavg()},
              "overrides": common, "origin": args.origin, "rows": rows}
    print(markdown(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, default=float))
    return report


if __name__ == "__main__":
    main()
