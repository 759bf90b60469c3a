"""How much do results depend on the seed? Run one experiment config under several seeds.

Each seed runs ``autogp run CONFIG`` (the same data, split and settings; only ``seed`` differs)
into its own folder, and the script reports, per seed, the per-series means of MASE, scaled CRPS,
95% coverage and RMSE, then the spread of the mean MASE over seeds ((max - min) / mean) and, per
series, the median over seeds. The test split only reports: nothing here chooses a setting.

    python lab/seed_spread.py configs/dev_panel.toml --seeds 0,1,2,3,4
    python lab/seed_spread.py configs/airline_defaults.toml --seeds 0,1,2,3,4 --holdout 18
    python lab/seed_spread.py --tiny --out /tmp/spread      # smoke run: seconds

``--windows`` reads rolling-origin rows instead (``lab/choose_defaults.py --fit-seed S``, one
file or several, with a ``fit_seed`` column or one seed per file in order) and reports the same
two figures per group of windows (season and horizon), plus the pooled forecasts: the MASE of
the mean of k runs' median forecasts, for every k-subset of the seeds. Pooling k independent
runs is what k times the compute buys without changing the sampler.

    python lab/seed_spread.py --windows RUN/seed0/windows.csv RUN/seed1/windows.csv --pool 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autogp.experiments import run_experiment  # noqa: E402
from autogp.forecast.columns import MODEL_NAME, interval_columns  # noqa: E402

TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "smc.structure_moves": 1,
        "refine.steps": 3, "grammar.max_depth": 2, "smc.workers": 1}


def per_series(run_dir: Path) -> pd.DataFrame:
    """One row per scored series of a run folder: MASE, scaled CRPS and 95% coverage (from
    ``metrics.csv``), RMSE and the count of held-out points inside the 95% interval (from
    ``forecast.csv``)."""
    metrics = pd.read_csv(run_dir / "metrics.csv", dtype={"unique_id": str})
    fc = pd.read_csv(run_dir / "forecast.csv", dtype={"unique_id": str}).dropna(subset=["y"])
    lo, hi = interval_columns(MODEL_NAME, 95)
    fc["sq"] = (fc["y"] - fc[MODEL_NAME]) ** 2
    fc["in95"] = (fc["y"] >= fc[lo]) & (fc["y"] <= fc[hi])
    extra = fc.groupby("unique_id").agg(rmse=("sq", lambda s: float(np.sqrt(s.mean()))),
                                        inside_95=("in95", "sum"), points=("y", "size"))
    keep = ["unique_id", "mase", "crps_mixture_scaled", "coverage_95"]
    return metrics[keep].merge(extra.reset_index(), on="unique_id", how="left")


def spread(values: np.ndarray) -> float:
    """(max - min) / mean."""
    return float((values.max() - values.min()) / values.mean())


def share_doubled(table: pd.DataFrame, factor: float = 2.0) -> float:
    """The share of series (``unique_id``) whose largest MASE over seeds is more than ``factor``
    times their smallest: the seed luck issue 50 bounds at 5%."""
    by_series = table.groupby("unique_id")["mase"]
    return float((by_series.max() > factor * by_series.min()).mean())


def _line(row: dict) -> str:
    """A result row as ``key=value`` pairs, floats to 4 significant digits."""
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


def read_windows(paths: list[Path]) -> pd.DataFrame:
    """Rolling-origin rows of several fit seeds: their ``fit_seed`` column, or the file's
    position in ``paths`` where it has none."""
    frames = []
    for i, path in enumerate(paths):
        frame = pd.read_csv(path, dtype={"unique_id": str})
        if "fit_seed" not in frame:
            frame = frame.assign(fit_seed=i)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def window_forecasts(rows: pd.DataFrame) -> dict[str, tuple]:
    """Per window (``unique_id@origin``): its held-out values, each seed's median forecast and
    its MASE scale. The scale (the training values' naive error, not in the rows) is recovered
    from a seed's own row as mean |y - median| / mase_median; a window that every seed
    forecast exactly has none and is left out."""
    out = {}
    for (uid, origin), group in rows.groupby(["unique_id", "origin"]):
        group = group.set_index("fit_seed")
        y = np.asarray(json.loads(group["y"].iloc[0]), dtype=float)
        medians = {s: np.asarray(json.loads(group.loc[s, "median"]), dtype=float)
                   for s in group.index}
        scale = next((np.mean(np.abs(y - medians[s])) / group.loc[s, "mase_median"]
                      for s in group.index if group.loc[s, "mase_median"] > 0), None)
        if scale is not None:
            out[f"{uid}@{origin}"] = (y, medians, scale)
    return out


def pooled_window_mase(rows: pd.DataFrame | dict, seeds: tuple[int, ...]) -> pd.Series:
    """Per window (``unique_id@origin``): the MASE of the mean of ``seeds``' median forecasts,
    from the rows or their :func:`window_forecasts`."""
    windows = window_forecasts(rows) if isinstance(rows, pd.DataFrame) else rows
    return pd.Series({window: float(np.mean(np.abs(y - np.mean([medians[s] for s in seeds],
                                                                  axis=0))) / scale)
                      for window, (y, medians, scale) in windows.items()}, dtype=float)


def window_spread(rows: pd.DataFrame, pool: int = 1) -> dict:
    """Seed luck on rolling-origin rows of one group of windows. A run is the mean of ``pool``
    seeds' median forecasts (every ``pool``-subset of the seeds; ``pool = 1``: each seed).
    Returns the runs' mean MASE, the spread of their means and the share of windows whose
    largest MASE over the runs is over twice their smallest (at ``pool = 1``, issue 50's two
    figures), and ``pairwise_doubled``: over every two runs with no seed in common, the mean
    share of windows where one run's MASE is over twice the other's (comparable across
    ``pool``, where overlapping subsets would share their luck)."""
    seeds = sorted(int(s) for s in rows["fit_seed"].unique())
    runs = list(itertools.combinations(seeds, pool))
    windows = window_forecasts(rows)
    scores = pd.DataFrame({run: pooled_window_mase(windows, run) for run in runs})
    means = scores.mean().to_numpy()
    long = scores.set_axis(range(len(runs)), axis=1).rename_axis("unique_id").stack()
    table = long.rename("mase").reset_index(level="unique_id")
    pairs = [(a, b) for a, b in itertools.combinations(runs, 2) if not set(a) & set(b)]
    pairwise = [float(np.mean(np.maximum(scores[a], scores[b])
                              > 2.0 * np.minimum(scores[a], scores[b]))) for a, b in pairs]
    return {"pool": pool, "runs": len(runs), "windows": len(scores),
            "mean_mase": float(means.mean()), "mase_spread": spread(means),
            "share_mase_doubled": share_doubled(table),
            "pairwise_doubled": float(np.mean(pairwise)) if pairwise else float("nan")}


def windows_main(args: argparse.Namespace) -> dict:
    """``--windows``: :func:`window_spread` per group of windows (season, horizon) and pool."""
    rows = read_windows(args.windows)
    if "candidate" in rows and rows["candidate"].nunique() > 1:
        names = sorted(rows["candidate"].unique())
        raise SystemExit(f"--windows: rows of several candidates {names}; give one candidate's")
    groups = []
    for (season, h), group in rows.groupby(["season", "h"]):
        for pool in args.pool:
            result = {"season": int(season), "h": int(h), **window_spread(group, pool)}
            groups.append(result)
            print(_line(result), flush=True)
    result = {"windows": [str(p) for p in args.windows], "groups": groups}
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config", type=Path, nargs="?")
    p.add_argument("--seeds", default="0,1,2,3,4")
    p.add_argument("--limit", type=int, default=None,
                   help="a stratified sample of N series (the same for every seed)")
    p.add_argument("--holdout", type=int, default=None,
                   help="score the last N points (for data without a split column)")
    p.add_argument("--set", dest="settings", action="append", default=[],
                   help="config override key=value (repeatable), the same for every seed")
    p.add_argument("--out", type=Path, default=Path("autogp_out/seed_spread"))
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--tiny", action="store_true", help="smoke run: airline, a tiny model")
    p.add_argument("--windows", type=Path, nargs="+", default=None,
                   help="rolling-origin rows (lab/choose_defaults.py) of several fit seeds")
    p.add_argument("--pool", type=int, nargs="+", default=[1],
                   help="with --windows: runs pooled from this many seeds (default 1)")
    args = p.parse_args(argv)
    if args.windows is not None:
        return windows_main(args)
    overrides: dict[str, object] = {}
    if args.tiny:
        args.out.mkdir(parents=True, exist_ok=True)
        args.config = args.out / "tiny.toml"
        airline = (ROOT / "examples" / "data" / "airline.csv").as_posix()
        args.config.write_text(f'[data]\npath = "{airline}"\n[forecast]\nlevels = [80, 95]\n'
                               '[experiment]\nmetrics = ["mase", "coverage"]\n')
        args.holdout = args.holdout or 12
        overrides.update(TINY)
    elif args.config is None:
        p.error("give a config or --tiny")
    for item in args.settings:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value  # a bare string
    seeds = [int(s) for s in args.seeds.split(",")]
    rows, tables = [], []
    for seed in seeds:
        folder = args.out / f"seed{seed}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = run_experiment(args.config, overrides={**overrides, "seed": seed,
                                                             "output.dir": str(folder)},
                                     holdout=args.holdout, limit=args.limit, quiet=True,
                                     out=Console(quiet=True))
        table = per_series(folder).assign(seed=seed)
        tables.append(table)
        rows.append({"seed": seed, "series": len(table), "mase": table["mase"].mean(),
                     "scaled_crps": table["crps_mixture_scaled"].mean(),
                     "coverage_95": table["coverage_95"].mean(),
                     "rmse": table["rmse"].mean(),
                     "inside_95": int(table["inside_95"].sum()),
                     "points": int(table["points"].sum()),
                     "fit_seconds": summary["fit_seconds"]})
        print(_line(rows[-1]), flush=True)
    per_seed = pd.DataFrame(rows)
    every = pd.concat(tables, ignore_index=True)
    result = {
        "config": str(args.config),
        "seeds": seeds,
        "per_seed": per_seed.to_dict(orient="records"),
        "mase_spread": spread(per_seed["mase"].to_numpy()),
        "share_mase_doubled": share_doubled(every),
        "median_over_seeds": {k: float(per_seed[k].median())
                              for k in ("mase", "scaled_crps", "coverage_95", "rmse",
                                        "inside_95")},
        "series_mase_range": (every.groupby("unique_id")["mase"]
                              .agg(lambda s: float(s.max() - s.min())).to_dict()),
    }
    print(f"mean MASE over seeds: {per_seed['mase'].round(4).tolist()}; spread (max - min) / "
          f"mean = {result['mase_spread']:.2%}; series with one seed's MASE over twice another's: "
          f"{result['share_mase_doubled']:.1%}")
    print("medians over seeds: " + ", ".join(f"{k} {v:.4g}"
                                             for k, v in result["median_over_seeds"].items()))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
