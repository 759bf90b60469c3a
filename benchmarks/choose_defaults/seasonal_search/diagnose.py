"""Diagnose why PER structures lose on seasonal M3 quarterly series (TRAINING rows only).

For each series: fit with the given overrides (seeds), then for every particle print its
structure, SMC weight, log p(T), log p(theta | T), log p(noise), the exact log likelihood at its
refined parameters on all training points, and the periods of its PER leaves in quarters.

    PYTHONPATH=. python benchmarks/choose_defaults/seasonal_search/diagnose.py N1102 N1085 \
        --seeds 0 1 [--set smc.init_seasonal=0.5]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from autogp import AutoGP  # noqa: E402
from autogp.config import engine_settings  # noqa: E402
from autogp.evaluator import log_marginal_likelihood  # noqa: E402
from autogp.inference import grammar as gr  # noqa: E402
from autogp.kernels import spec  # noqa: E402
from autogp.kernels.packing import unpack_one  # noqa: E402
from autogp.kernels.printing import structure  # noqa: E402

PERIOD = spec.PARAM_NAMES[spec.PER].index("period")


def train_rows(uid: str) -> pd.DataFrame:
    df = pd.read_csv(ROOT / "benchmarks/data/m3_other.csv.gz")
    df = df[(df.unique_id == uid) & (df.split == "train")]  # never the test rows
    return df[["unique_id", "ds", "y"]].assign(ds=lambda d: pd.to_datetime(d.ds))


def report(uid: str, seed: int, overrides: dict) -> pd.DataFrame:
    model = AutoGP(seed=seed, overrides=overrides).fit(train_rows(uid))
    fit = model.fits[uid]
    grammar, settings = engine_settings(model.config)
    x = jnp.asarray(fit.scaler.forward_t(fit.series.t))
    y = jnp.asarray(fit.scaler.forward_y(fit.series.y))
    ops, params, noise = (jnp.asarray(a) for a in (fit.ops, fit.params, fit.noise))
    ll = np.asarray(log_marginal_likelihood(ops, params, noise, x, y))
    lps = np.asarray(gr.log_prior_structure(grammar, ops))
    lpp = np.asarray(gr.log_prior_params(grammar, ops, params))
    lpn = np.asarray(gr.log_prior_noise(grammar, noise))
    w = np.exp(fit.log_weights - np.logaddexp.reduce(fit.log_weights))
    quarters = fit.scaler.time_scale  # the axis counts quarters: normalised time -> quarters
    rows = []
    for i in range(len(w)):
        o = np.asarray(fit.ops[i])
        per = [float(np.exp(fit.params[i, s, PERIOD]) * quarters)
               for s in np.flatnonzero(o == spec.PER)]
        rows.append({"uid": uid, "seed": seed, "structure": structure(unpack_one(o, fit.params[i])),
                     "w": w[i], "logp_T": lps[i], "logp_theta": lpp[i], "logp_noise": lpn[i],
                     "loglik": ll[i], "noise_sd": float(np.exp(0.5 * fit.noise[i])),
                     "per_quarters": ",".join(f"{p:.3f}" for p in per)})
    out = pd.DataFrame(rows).sort_values("w", ascending=False)
    print(f"== {uid} seed {seed}: n={fit.series.n}, time_scale={fit.scaler.time_scale:.0f}, "
          f"4 quarters = {4 / quarters:.4f} normalised; log Z = {fit.log_marginal_likelihood:.2f}")
    print(out.drop(columns=["uid", "seed"]).round(3).to_string(index=False))
    print(model.kernels()[["structure", "weight"]].head(5).to_string(index=False))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("ids", nargs="+")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--set", nargs="*", default=[])
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    overrides = {}
    for item in args.set:
        k, _, v = item.partition("=")
        overrides[k] = float(v) if v.replace(".", "").isdigit() else v
    tables = [report(u, s, overrides) for u in args.ids for s in args.seeds]
    if args.out:
        pd.concat(tables).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
