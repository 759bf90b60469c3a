"""How much do results depend on the seed? Run one experiment config under several seeds.

Each seed runs ``autogp run CONFIG`` (the same data, split and settings; only ``seed`` differs)
into its own folder, and the script reports, per seed, the per-series means of MASE, scaled CRPS,
95% coverage and RMSE, then the spread of the mean MASE over seeds ((max - min) / mean) and, per
series, the median over seeds. The test split only reports: nothing here chooses a setting.

    python lab/seed_spread.py configs/dev_panel.toml --seeds 0,1,2,3,4
    python lab/seed_spread.py configs/airline_defaults.toml --seeds 0,1,2,3,4 --holdout 18
    python lab/seed_spread.py --tiny --out /tmp/spread      # smoke run: seconds
"""

from __future__ import annotations

import argparse
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
    args = p.parse_args(argv)
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
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in rows[-1].items()), flush=True)
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
