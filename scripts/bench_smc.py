"""Benchmark the SMC structure search end to end (not a test).

Airline: the first 126 points train, the last 18 are held out; 8 particles, 10 linear rounds,
10 structure moves per round, optax refinement. Reports the wall time of a first fit in this
fresh process (compilation included), of a second fit in the same process (new seed), the number
of compilations of the SMC round, time per round, the log marginal likelihood estimate, the top
structures with weights, and on the held-out points the mean log predictive density, the RMSE in
data units and how many points the 95% interval covers. Then the same for the AutoGP.jl tutorial
configuration (100 synthetic points, 8 particles, 20 rounds, 10 moves per round).

    python scripts/bench_smc.py [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import jax
import numpy as np
import pandas as pd

jax.config.update("jax_enable_x64", True)

from autogp import AutoGP  # noqa: E402
from autogp.inference import smc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = [
    ROOT / "examples" / "data" / "airline.csv",
    ROOT.parent / "shared" / "data" / "airline.csv",
]


def _airline() -> pd.DataFrame:
    for path in AIRLINE:
        if path.exists():
            return pd.read_csv(path)
    raise FileNotFoundError("airline.csv not found in examples/data or ../shared/data")


def _timed_fit(model: AutoGP, train) -> tuple[float, int]:
    before = smc.TRACE_COUNT["round"]
    start = time.perf_counter()
    model.fit(train)
    return time.perf_counter() - start, smc.TRACE_COUNT["round"] - before


def _heldout(model: AutoGP, test: pd.DataFrame) -> dict:
    fc = model.predict(len(test), level=[80, 95])
    mean = fc["AutoGP"].to_numpy()
    y = test["y"].to_numpy()
    lo, hi = fc["AutoGP-lo-95"].to_numpy(), fc["AutoGP-hi-95"].to_numpy()
    lpd = model.log_predictive_density(test["ds"], y, pointwise=True)
    return {
        "heldout_rmse": float(np.sqrt(np.mean((mean - y) ** 2))),
        "heldout_mae": float(np.mean(np.abs(mean - y))),
        "heldout_covered95": int(np.sum((y >= lo) & (y <= hi))),
        "heldout_covered80": int(
            np.sum((y >= fc["AutoGP-lo-80"].to_numpy()) & (y <= fc["AutoGP-hi-80"].to_numpy()))
        ),
        "heldout_points": int(len(y)),
        "heldout_mean_lpd": float(np.mean(lpd)),
    }


def _structures(model: AutoGP, top: int = 5) -> list[dict]:
    table = model.kernels()
    rows = []
    for _, row in table.head(top).iterrows():
        rows.append({k: (float(v) if isinstance(v, np.floating) else v) for k, v in row.items()})
    return rows


def run(quick: bool) -> dict:
    out: dict = {
        "machine": f"{platform.machine()} {platform.processor() or ''} cpus={jax.device_count()}",
        "jax": jax.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    df = _airline()
    train, test = df.iloc[:126], df.iloc[126:]
    config = {
        "smc": {"num_particles": 8, "num_rounds": 10, "structure_moves": 10},
        "forecast": {"observation_noise": True},
    }
    model = AutoGP(config, seed=0, progress=False)
    first, compiles_first = _timed_fit(model, train)
    out["first_fit_s"] = first
    out.update(_heldout(model, test))
    fit = model.fits[model.unique_ids[0]]
    out["log_marginal_likelihood"] = float(fit.log_marginal_likelihood)
    out["top_structures"] = _structures(model)

    model2 = AutoGP(config, seed=1, progress=False)
    second, compiles_second = _timed_fit(model2, train)
    out["second_fit_s"] = second
    out["round_s"] = second / 10
    out["compilations"] = compiles_first + compiles_second
    out["second_fit"] = _heldout(model2, test)

    # AutoGP.jl tutorial configuration: 100 points, 8 particles, 20 rounds, 10 moves per round.
    rng = np.random.default_rng(0)
    t = np.arange(100.0)
    y = 0.05 * t + np.sin(2 * np.pi * t / 12) + 0.3 * rng.normal(size=100)
    tutorial = AutoGP(
        {"smc": {"num_particles": 8, "num_rounds": 20 if not quick else 10, "structure_moves": 10}},
        seed=0,
        progress=False,
    )
    start = time.perf_counter()
    tutorial.fit((t, y))
    out["tutorial_first_fit_s"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    parser.add_argument("--quick", action="store_true", help="tutorial with 10 rounds")
    args = parser.parse_args()
    res = run(args.quick)
    print(f"machine: {res['machine']}  jax {res['jax']}  {res['date']}")
    print("airline (126 train / 18 held out; 8 particles, 10 rounds, 10 moves/round)")
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
    print(
        "tutorial config (100 points, 8 particles): "
        f"first fit {res['tutorial_first_fit_s']:.2f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    main()
