"""Benchmark revised data (not a test): ``replace_data`` against a refit on the revised data.

For each seed: fit the series, then revise one value (``--index``, multiplied by ``--factor``)
two ways: ``model.replace_data(...)`` (the particles reweighted by their likelihood ratio, then
SMC rounds on the revised data) and ``AutoGP(seed=...).fit(revised data)``. Reports, over the
seeds, both log marginal likelihoods in data units (the SMC's estimate plus the normalisation's
Jacobian, so fits normalised differently compare), the difference of their means against its
Monte Carlo standard error, and the times (revision / refit).

    python scripts/bench_revise.py --seeds 4                      # airline, defaults
    python scripts/bench_revise.py --tiny                         # smoke run
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
AIRLINE = ROOT / "examples" / "data" / "airline.csv"
TINY_SETTINGS = {
    "smc.num_particles": 2, "smc.num_rounds": 2, "smc.structure_moves": 1, "refine.steps": 2,
    "grammar.max_depth": 2,
}


def evidence(model) -> float:
    from autogp.pipeline.fitting import data_log_evidence

    return data_log_evidence(model.fits[model.unique_ids[0]], model.config)


def one_seed(df: pd.DataFrame, revised: pd.DataFrame, settings: dict, seed: int,
             rounds: int) -> dict:
    from autogp import AutoGP

    model = AutoGP(seed=seed, overrides=settings, progress=False).fit(df)
    start = time.perf_counter()
    model.replace_data(revised, rounds=rounds)
    revise_s = time.perf_counter() - start
    full = df.set_index("ds")
    full.loc[revised["ds"], "y"] = revised["y"].to_numpy()
    start = time.perf_counter()
    refit = AutoGP(seed=seed, overrides=settings, progress=False).fit(full.reset_index())
    refit_s = time.perf_counter() - start
    return {"seed": seed, "revise_s": revise_s, "refit_s": refit_s,
            "revise_log_ml": evidence(model), "refit_log_ml": evidence(refit)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=AIRLINE)
    parser.add_argument("--length", type=int, default=120, help="the first LENGTH rows")
    parser.add_argument("--index", type=int, default=60, help="the row revised")
    parser.add_argument("--factor", type=float, default=1.1, help="its value is multiplied by")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="SMC rounds of replace_data")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for both (repeatable)")
    parser.add_argument("--tiny", action="store_true", help="smoke run: 2 seeds, 30 points")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    # The raw values: evidences of fits normalised differently compare in data units.
    settings: dict = {"data.transform": "none"}
    if args.tiny:
        settings.update(TINY_SETTINGS)
        args.seeds, args.length, args.index = 2, 30, 20
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = json.loads(value) if value[:1] in "0123456789-[{tf" else value
    warnings.simplefilter("ignore")
    df = pd.read_csv(args.data)[["ds", "y"]].iloc[: args.length]
    revised = df.iloc[[args.index]].assign(y=lambda f: f["y"] * args.factor)
    one_seed(df, revised, settings, 10_000, args.rounds)  # warm-up: compile (untimed)
    runs = [one_seed(df, revised, settings, seed, args.rounds) for seed in range(args.seeds)]
    frame = pd.DataFrame(runs)
    refit_sd = float(frame["refit_log_ml"].std(ddof=1)) if len(frame) > 1 else float("nan")
    revise_sd = float(frame["revise_log_ml"].std(ddof=1)) if len(frame) > 1 else float("nan")
    difference = float(frame["revise_log_ml"].mean() - frame["refit_log_ml"].mean())
    report = {
        "data": args.data.name, "length": args.length, "index": args.index,
        "factor": args.factor, "seeds": args.seeds, "rounds": args.rounds, "settings": settings,
        "revise_log_ml_mean": float(frame["revise_log_ml"].mean()), "revise_log_ml_sd": revise_sd,
        "refit_log_ml_mean": float(frame["refit_log_ml"].mean()), "refit_log_ml_sd": refit_sd,
        "difference_of_means": difference,
        # The standard error of the difference of two means of independent runs.
        "monte_carlo_se": float(np.sqrt((refit_sd**2 + revise_sd**2) / len(frame))),
        "revise_s_mean": float(frame["revise_s"].mean()),
        "refit_s_mean": float(frame["refit_s"].mean()),
        "ratio_revise_over_refit": float(frame["revise_s"].sum() / frame["refit_s"].sum()),
        "runs": runs,
    }
    print(json.dumps(report, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
