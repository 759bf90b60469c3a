"""Benchmark cross-validation against separate fits, side by side (not a test).

Design ``cv``: ``AutoGP(...).cross_validation(df, h=H, n_windows=K)`` on a panel of N series.
Design ``separate``: for every (series, window) of the same cross-validation, its training data
(the series truncated at the cutoff) fitted alone, ``AutoGP(...).fit(train).predict(H)``: the
N * K fits a user would otherwise run. Both run in this process with the same settings
(``smc.workers = 1`` unless ``--workers`` says otherwise for ``cv``), after an untimed warm-up
of both designs on two series, so the times compare fitting, not compiling; they alternate over
blocks of ``--block`` series (a cross-validation of the block, then its separate fits), so a
change in the machine's load falls on both. Reports both wall times and the ratio
cv / separate (target: at most 1.2).

    python scripts/bench_cv.py --series 40 --windows 3             # M3 monthly, defaults
    python scripts/bench_cv.py --tiny                               # smoke run: tiny settings

The data: M3's monthly series (``benchmarks/data/m3_monthly.csv.gz``, training rows) long
enough for the windows and 24 training points before them, a stratified sample of ``--series``
of them (seed 0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
M3 = ROOT / "benchmarks" / "data" / "m3_monthly.csv.gz"
TINY_SETTINGS = {
    "smc.num_particles": 2, "smc.num_rounds": 2, "smc.structure_moves": 1, "refine.steps": 2,
    "grammar.max_depth": 2, "data.transform": "none",
}


def load_panel(path: Path, limit: int, least: int, seed: int = 0,
               length: int | None = None) -> pd.DataFrame:
    """Training rows of ``limit`` series of ``path`` with at least ``least`` of them
    (stratified by the file's ``category``), each cut to its last ``length`` rows when given."""
    from autogp.data import read_csv
    from autogp.experiments import stratified_sample

    series = [s for s in read_csv(path, id_col="unique_id", split_col="split")
              if s.train().n >= least]
    series = stratified_sample(series, path, "unique_id", limit, seed)
    frames = []
    for s in series:
        train = s.train() if s.is_test is not None and s.is_test.any() else s
        frame = pd.DataFrame({"unique_id": s.unique_id, "ds": train.ds, "y": train.y})
        frames.append(frame if length is None else frame.iloc[-length:])
    return pd.concat(frames, ignore_index=True)


def window_frames(df: pd.DataFrame, h: int, windows: int) -> list[tuple[str, pd.DataFrame]]:
    """The training frame of every (series, window) of the cross-validation: the series' rows
    up to its cutoff (statsforecast's windows on a gap-free grid)."""
    out = []
    for uid, g in df.groupby("unique_id", sort=False):
        g = g.sort_values("ds")
        for i in range(windows):
            cut = len(g) - h - (windows - 1 - i) * h
            out.append((str(uid), g.iloc[:cut][["ds", "y"]].reset_index(drop=True)))
    return out


def run_cv(df: pd.DataFrame, settings: dict, h: int, windows: int, workers: int) -> float:
    from autogp import AutoGP

    model = AutoGP(overrides={**settings, "smc.workers": workers}, progress=False)
    start = time.perf_counter()
    cv = model.cross_validation(df, h=h, n_windows=windows)
    seconds = time.perf_counter() - start
    expected = df["unique_id"].nunique() * windows * h
    if len(cv) != expected or model.errors:
        raise RuntimeError(f"cross-validation gave {len(cv)} rows (expected {expected}), "
                           f"errors {model.errors}")
    return seconds


def run_separate(frames: list[tuple[str, pd.DataFrame]], settings: dict, h: int) -> float:
    from autogp import AutoGP

    start = time.perf_counter()
    for _, train in frames:
        fc = AutoGP(overrides={**settings, "smc.workers": 1}, progress=False).fit(train).predict(h)
        if len(fc) != h or not np.isfinite(fc["AutoGP"]).all():
            raise RuntimeError("a separate fit gave a bad forecast")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=M3)
    parser.add_argument("--series", type=int, default=40)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=18)
    parser.add_argument("--length", type=int, default=None,
                        help="cut each series to its last LENGTH training rows")
    parser.add_argument("--workers", type=int, default=1, help="smc.workers of the cv design")
    parser.add_argument("--block", type=int, default=5,
                        help="series per block; the designs alternate block by block")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for both designs (repeatable)")
    parser.add_argument("--tiny", action="store_true",
                        help="smoke run: 2 series of 30 points, 2 windows of 3, tiny settings")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    settings: dict = {}
    if args.tiny:
        settings.update(TINY_SETTINGS)
        args.series, args.windows, args.horizon, args.length = 2, 2, 3, 30
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = json.loads(value) if value[:1] in "0123456789-[{tf" else value
    warnings.simplefilter("ignore")
    # Long enough for the windows and a first training window of 24 points.
    least = args.windows * args.horizon + 24
    df = load_panel(args.data, args.series, least, length=args.length)
    frames = window_frames(df, args.horizon, args.windows)
    # Warm-up (untimed): compile the programs of both designs, a fit of every padded length
    # the windows have and a cross-validation of the panel's two first series.
    from autogp.inference.padding import padded_length

    lengths = {padded_length(len(train)): (uid, train) for uid, train in frames}
    run_separate(list(lengths.values()), settings, args.horizon)
    first = df[df["unique_id"].isin(df["unique_id"].unique()[:2])]
    run_cv(first, settings, args.horizon, args.windows, 1)
    # The designs alternate over blocks of series, so a change in the machine's load during
    # the run falls on both (--block 0: one cross-validation of the whole panel).
    ids = list(df["unique_id"].unique())
    block = args.block if args.block > 0 else len(ids)
    cv_s = separate_s = 0.0
    for start in range(0, len(ids), block):
        part = df[df["unique_id"].isin(ids[start : start + block])]
        separate_s += run_separate(window_frames(part, args.horizon, args.windows), settings,
                                   args.horizon)
        cv_s += run_cv(part, settings, args.horizon, args.windows, args.workers)
    report = {
        "series": int(df["unique_id"].nunique()), "windows": args.windows,
        "horizon": args.horizon, "fits": len(frames), "settings": settings,
        "cv_workers": args.workers, "block": block, "cv_s": round(cv_s, 2),
        "separate_s": round(separate_s, 2),
        "ratio_cv_over_separate": round(cv_s / separate_s, 3),
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
    }
    print(json.dumps(report, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
