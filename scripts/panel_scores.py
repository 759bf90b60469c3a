"""Score an ``autogp run`` folder against forecasts made elsewhere (e.g. statsforecast's).

Usage::

    autogp run configs/dev_panel.toml
    python scripts/panel_scores.py autogp_out/dev_panel \\
        --baselines benchmarks/data/dev_panel_baselines.csv.gz \\
        --freq-data benchmarks/data/dev_panel.csv.gz [--json scores.json]

Reads ``forecast.csv`` (autogp's held-out forecasts with the truth ``y``) and ``train.csv`` from
the run folder, and a baselines file in the statsforecast layout (one row per held-out point, in
time order within each series; its ``ds`` may be written differently from the run's, so rows
are matched by series and position). Every model is scored as the run scores autogp (sMAPE,
MASE with the season of each series' frequency, scaled CRPS, interval coverage and width), and
the script prints per-model means and the series where autogp's MASE is both more than
``--ratio`` times AutoETS's and more than ``--margin`` above it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from autogp.experiments.scoring import score_forecasts, summary_table, to_markdown_table
from autogp.forecast.columns import MODEL_NAME, parse_interval_column, point_columns

#: MASE season by the frequency codes of the development panel (``freq`` column).
SEASON_OF_FREQ = {"YS": 1, "QS": 4, "MS": 12, "W": 52, "D": 7, "B": 5, "30min": 48, "5min": 169}
MODEL = MODEL_NAME


def _models(frame: pd.DataFrame) -> list[str]:
    return point_columns(frame.columns)


def _levels(frame: pd.DataFrame, model: str) -> list[float]:
    parsed = [parse_interval_column(c, model) for c in frame.columns]
    return sorted(p.level for p in parsed if p is not None and p.side == "lo")


def _by_position(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["unique_id"] = out["unique_id"].astype(str)
    out["step"] = out.groupby("unique_id", sort=False).cumcount()
    return out


def score_run(run_dir: Path, baselines: Path | None, freq_data: Path | None, season: int = 1
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-series scores, per-model means) of the run's forecasts and the baselines."""
    fc = _by_position(pd.read_csv(run_dir / "forecast.csv").dropna(subset=["y"]))
    train = pd.read_csv(run_dir / "train.csv")
    train["unique_id"] = train["unique_id"].astype(str)
    models = [MODEL]
    if baselines is not None:
        base = _by_position(pd.read_csv(baselines)).drop(columns=["ds", "y"], errors="ignore")
        models += _models(base.drop(columns=["step"]))
        fc = fc.merge(base, on=["unique_id", "step"], how="left", validate="one_to_one")
        missing = fc[models].isna().any(axis=1)
        if missing.any():
            raise ValueError(f"baselines lack {int(missing.sum())} held-out rows, e.g. series "
                             f"{fc.loc[missing, 'unique_id'].iloc[0]!r}")
    seasons: dict[object, int] | int = season
    if freq_data is not None:
        freq = pd.read_csv(freq_data, usecols=["unique_id", "freq"]).drop_duplicates("unique_id")
        seasons = {str(u): SEASON_OF_FREQ.get(str(f), 1)
                   for u, f in zip(freq["unique_id"], freq["freq"], strict=True)}
    levels = _levels(fc, MODEL)
    scores = score_forecasts(fc.drop(columns=["step"]), train, models, levels, seasons)
    return scores, summary_table(scores, levels)


def worst_series(scores: pd.DataFrame, ratio: float, margin: float) -> pd.DataFrame:
    """Series whose autogp MASE is above ``ratio`` times AutoETS's and ``margin`` above it."""
    wide = scores.pivot(index="unique_id", columns="model", values="mase")
    if "AutoETS" not in wide:
        return wide.iloc[:0]
    bad = (wide[MODEL] > ratio * wide["AutoETS"]) & (wide[MODEL] > wide["AutoETS"] + margin)
    return wide.loc[bad, [MODEL, "AutoETS"]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--baselines", type=Path)
    parser.add_argument("--freq-data", type=Path,
                        help="the panel's data file with a freq column (MASE seasons)")
    parser.add_argument("--season", type=int, default=1,
                        help="MASE season of every series when there is no --freq-data "
                        "(12 for M3 monthly)")
    parser.add_argument("--ratio", type=float, default=2.5)
    parser.add_argument("--margin", type=float, default=0.5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    scores, table = score_run(args.run_dir, args.baselines, args.freq_data, args.season)
    worst = worst_series(scores, args.ratio, args.margin)
    print(f"{scores['unique_id'].nunique()} series; per-series means\n")
    print(to_markdown_table(table, ".4g"))
    print(f"\nseries with autogp MASE > {args.ratio:g} x AutoETS's and > AutoETS + "
          f"{args.margin:g}: {len(worst)}")
    for uid, row in worst.iterrows():
        print(f"  {uid}: {row[MODEL]:.3f} (AutoETS {row['AutoETS']:.3f})")
    if args.json is not None:
        payload = {"means": {str(m): {k: float(v) for k, v in r.items()}
                             for m, r in table.iterrows()},
                   "worst": {str(u): float(r[MODEL]) for u, r in worst.iterrows()}}
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
