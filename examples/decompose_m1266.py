"""Decompose M3 series M1266 into trend, seasonal and other components (AutoGP.jl's
decomposition tutorial data).

Each particle's kernel is split at its top-level '+' into terms; each term's posterior mean is
computed and averaged over particles by weight. The components add up to the posterior mean of
the whole model; the script checks that, prints the components at a few dates, and plots them
to autogp_out/examples/m1266_components.png. Runs in about a minute on two CPU cores.

    python examples/decompose_m1266.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import autogp
from autogp import plots

HERE = Path(__file__).resolve().parent
OUT = Path("autogp_out/examples")


def data_path(name: str) -> Path:
    """examples/data/<name> (shipped with the repository)."""
    path = HERE / "data" / name
    if not path.exists():
        raise FileNotFoundError(f"{name} is not in {HERE / 'data'}")
    return path


def main() -> None:
    df = pd.read_csv(data_path("m1266.csv"))
    model = autogp.AutoGP(
        particles=8, rounds=6, seed=1, overrides={"smc.structure_moves": 4, "refine.steps": 20}
    )
    model.fit(df)
    print(model.explain(top=3), "\n")

    parts = model.decompose()  # training dates plus forecast.horizon (12) months ahead
    components = ["trend", "seasonal", "smooth", "changepoint", "noise"]
    total = parts[components].sum(axis=1)
    assert np.allclose(total, parts["fitted"]), "components must add up to the posterior mean"
    shown = parts.iloc[[0, 60, len(df) - 1, len(parts) - 1]]
    columns = ["y", *components, "fitted", "residual"]
    print(shown[["ds", *columns]].round(dict.fromkeys(columns, 1)).to_string(index=False))
    in_sample = parts["residual"].dropna()
    print(f"\nresidual standard deviation {in_sample.std():.1f} (series std {df['y'].std():.1f})")

    OUT.mkdir(parents=True, exist_ok=True)
    plots.save_figure(plots.plot_components(parts), OUT / "m1266_components.png")
    print(f"wrote {OUT}/m1266_components.png")


if __name__ == "__main__":
    main()
