"""Forecast the airline passenger series and read off the structures autogp found.

Fits the first 126 months (1949-1960/06), forecasts the last 18 and scores them, prints the
posterior over kernel structures in plain English, and writes a forecast plot and a structure
bar chart to autogp_out/examples/. Runs in about a minute on two CPU cores.

    python examples/forecast_airline.py
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
    df = pd.read_csv(data_path("airline.csv"))
    train, test = df.iloc[:-18], df.iloc[-18:]

    model = autogp.AutoGP(
        particles=8, rounds=6, seed=0, overrides={"smc.structure_moves": 4, "refine.steps": 20}
    )
    model.fit(train)
    forecast = model.predict(18, level=[80, 95])

    y, f = test["y"].to_numpy(), forecast["AutoGP"].to_numpy()
    smape = 200 * np.mean(np.abs(y - f) / (np.abs(y) + np.abs(f)))
    inside = (forecast["AutoGP-lo-95"] <= y) & (y <= forecast["AutoGP-hi-95"])
    lpd = model.log_predictive_density(test["ds"], y) / len(y)
    print(forecast.head().to_string(index=False))
    print(
        f"\nheld-out 18 months: sMAPE {smape:.2f}%, 95% interval coverage {inside.mean():.0%}, "
        f"log predictive density {lpd:.2f} per point\n"
    )
    print(model.explain(top=3))

    OUT.mkdir(parents=True, exist_ok=True)
    plots.save_figure(plots.plot_forecast(model, forecast), OUT / "airline_forecast.png")
    plots.save_figure(plots.plot_structures(model.kernels()), OUT / "airline_structures.png")
    model.save(OUT / "airline.autogp")
    print(f"\nwrote {OUT}/airline_forecast.png, airline_structures.png, airline.autogp")


if __name__ == "__main__":
    main()
