"""Daily electricity demand in Victoria, Australia (2014) with two covariates: the day's
maximum temperature and a work-day indicator (fpp2's ``elecdaily``).

Extra numeric columns of the training frame are covariates; their future values come in
``X_df`` at ``predict`` (statsforecast's convention). The script fits January to November,
forecasts December with the known temperatures and work days, compares the error with a fit
that ignores them, and prints how the model reads the covariates. Runs in a few minutes on two
CPU cores.

    python examples/covariates_elecdaily.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import autogp

HERE = Path(__file__).resolve().parent
H = 31  # December


def main() -> None:
    df = pd.read_csv(HERE / "data" / "elecdaily.csv")
    train, test = df.iloc[:-H], df.iloc[-H:]
    settings = {"smc": {"num_particles": 8, "num_rounds": 6}, "seed": 1}

    model = autogp.AutoGP(settings).fit(train)  # columns ds, y, temperature, workday
    forecast = model.predict(H, X_df=test[["ds", "temperature", "workday"]])
    print(model.explain(top=3), "\n")

    plain = autogp.AutoGP(settings).fit(train[["ds", "y"]])
    baseline = plain.predict(H)
    y = test["y"].to_numpy()
    for name, fc in (("with covariates", forecast), ("without", baseline)):
        mae = np.mean(np.abs(fc["AutoGP"].to_numpy() - y))
        print(f"December MAE {name}: {mae:.2f} GW")

    parts = model.decompose(df["ds"].iloc[-60:], X_df=df)  # X_df: every date has covariates
    print(parts[["ds", "trend", "covariates", "fitted"]].tail(5).to_string(index=False))


if __name__ == "__main__":
    main()
