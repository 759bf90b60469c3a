"""Online forecasting of weekly unemployment claims: fit, then update as new weeks arrive.

Fits 2014-2016 on the log scale (log_transform: the yearly swing is multiplicative), then feeds
the next quarter with ``update`` (the SMC continues from its particles instead of starting
over). It scores each coming quarter with the model of the moment, so you can watch the
forecasts being checked and revised. Runs in under two minutes on two CPU cores.

    python examples/online_iclaims.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import autogp

HERE = Path(__file__).resolve().parent


def data_path(name: str) -> Path:
    """examples/data/<name> (shipped with the repository)."""
    path = HERE / "data" / name
    if not path.exists():
        raise FileNotFoundError(f"{name} is not in {HERE / 'data'}")
    return path


def main() -> None:
    df = pd.read_csv(data_path("iclaims.csv"))
    df = df[pd.to_datetime(df["ds"]) >= "2014-01-01"].reset_index(drop=True)  # a 3-year window
    start = int((pd.to_datetime(df["ds"]) < "2017-01-01").sum())
    batch = 13  # a quarter of weekly data

    model = autogp.AutoGP(
        particles=8,
        rounds=5,
        seed=0,
        log_transform=True,
        overrides={"smc.structure_moves": 3, "refine.steps": 15},
    )
    model.fit(df.iloc[:start])
    print(f"fitted {start} weeks up to {df['ds'].iloc[start - 1]}")
    print(model.explain(top=2), "\n")

    def score(new: pd.DataFrame) -> None:
        fc = model.predict(len(new), level=[90])
        y = new["y"].to_numpy()
        mape = 100 * np.mean(np.abs(fc["AutoGP"].to_numpy() - y) / y)
        covered = np.mean((fc["AutoGP-lo-90"] <= y) & (y <= fc["AutoGP-hi-90"]))
        lpd = model.log_predictive_density(new["ds"], y) / len(y)
        print(
            f"quarter from {new['ds'].iloc[0]}: MAPE {mape:.1f}%, 90% coverage {covered:.0%}, "
            f"log predictive density {lpd:.2f} per week"
        )

    first = df.iloc[start : start + batch]
    second = df.iloc[start + batch : start + 2 * batch]
    score(first)
    model.update(first, rounds=2)  # continue the SMC with the new quarter, no refit
    top = model.kernels().iloc[0]
    print(
        f"  updated with {len(first)} weeks; leading structure {top['structure']} "
        f"({100 * top['weight']:.0f}%): {top['reading']}"
    )
    score(second)

    print("\nnext 4 weeks:")
    print(
        model.predict(4, level=[90])
        .round({"AutoGP": 0, "AutoGP-lo-90": 0, "AutoGP-hi-90": 0})
        .to_string(index=False)
    )


if __name__ == "__main__":
    main()
