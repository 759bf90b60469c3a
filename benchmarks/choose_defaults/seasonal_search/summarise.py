"""Per series: posterior weight on structures with a PER leaf at the season (4 quarters, within
3%), at a multiple or harmonic of it, or without PER; and the best log likelihood of each kind
(diagnose.py's --out table)."""
import sys

import numpy as np
import pandas as pd


def kind(periods: str) -> str:
    if not isinstance(periods, str) or not periods:
        return "no PER"
    ps = [float(p) for p in periods.split(",")]
    if any(abs(p / 4 - 1) < 0.03 for p in ps):
        return "PER at 4"
    if any(abs(p / (4 * round(p / 4)) - 1) < 0.03 for p in ps if p > 6):
        return "PER at 4k"
    return "PER elsewhere"


rows = []
for path in sys.argv[1:]:
    t = pd.read_csv(path, dtype={"per_quarters": str})
    t["kind"] = t.per_quarters.map(kind)
    for (uid, seed), g in t.groupby(["uid", "seed"]):
        row = {"uid": uid, "seed": seed, "file": path.split("/")[-1]}
        for k in ("PER at 4", "PER at 4k", "PER elsewhere", "no PER"):
            m = g.kind == k
            row[f"w {k}"] = round(float(g.w[m].sum()), 3)
            row[f"ll {k}"] = round(float(g.loglik[m].max()), 1) if m.any() else np.nan
        rows.append(row)
out = pd.DataFrame(rows)
print(out.to_string(index=False))
print(out.drop(columns=["uid", "seed", "file"]).groupby(out.file).mean().round(3).to_string())
