"""Choose default settings by rolling-origin validation inside the training data.

For each series (the development panel and M3 monthly, ``benchmarks/data``) only the TRAIN rows
are read; the test split is never loaded (asserted). Inside the training part, forecast origins
are placed at ``n - k * h`` for k = 1..``--origins`` (``h`` is the series' usual horizon: 6
yearly, 8 quarterly, 18 monthly, 13 weekly, 14 daily), so each window forecasts ``h`` points that
are still training data. Every candidate setting (a set of config overrides on the defaults) is
fitted on every window and scored with MASE (seasonal-naive scale of the window's own training
values, season 1/4/12/52/7/5 by frequency), the scaled CRPS of the quantiles 2.5 ... 97.5%
(``autogp.forecast.scoring.scaled_crps``) and the 95% coverage. ``point=mean`` and
``point=median`` come from the same fit, so both are scored for every candidate.

Writes ``windows.csv`` (one row per candidate and window, with the forecasts), ``summary.csv``
and ``summary.md`` (per-candidate means, and per-window wins against the first candidate) into
``--out`` (default ``benchmarks/choose_defaults``).

    python scripts/choose_defaults.py --dev 12 --m3 4 --workers 2
    python scripts/choose_defaults.py --tiny --out /tmp/cd   # smoke test: 2 short series, seconds
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

from autogp import AutoGP  # noqa: E402
from autogp.data import from_arrays  # noqa: E402
from autogp.data.seasons import with_frequency  # noqa: E402
from autogp.forecast.metrics import coverage, mase, seasonality  # noqa: E402
from autogp.forecast.scoring import scaled_crps  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
HORIZON = {"YS": 6, "QS": 8, "MS": 18, "W": 13, "D": 14, "B": 14}
QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)

#: name -> config overrides on the defaults. The first is the reference for wins.
CANDIDATES: dict[str, dict[str, object]] = {
    "defaults": {},
    "transform=none": {"data.transform": "none"},
    "transform=log": {"data.transform": "log"},  # series with values <= 0: none
    "BM=6": {"grammar.weights.BM": 6.0},
    "posterior_draws=4": {"refine.posterior_draws": 4, "refine.hmc_steps": 3},
    "particles=8": {"smc.num_particles": 8},
}
#: A fast configuration for --tiny (a smoke test, not a setting to choose).
TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "smc.structure_moves": 2,
        "grammar.max_depth": 2, "refine.steps": 5}


def read_train(path: Path, id_col: str = "unique_id") -> pd.DataFrame:
    """The TRAIN rows of a panel with a ``split`` column; test rows are dropped on reading and
    never reach the rest of the script."""
    frame = pd.read_csv(path)
    train = frame[frame["split"] == "train"].drop(columns="split")
    del frame
    assert "split" not in train.columns
    return train


def training_windows(n: int, h: int, origins: int, min_train: int) -> list[tuple[int, int]]:
    """``(cutoff, origin)`` pairs: fit on the first ``cutoff`` training values and forecast the
    next ``h`` (all inside the ``n`` training values); origins k = 1..``origins`` at
    ``n - k h``, those leaving fewer than ``min_train`` values dropped."""
    out = []
    for k in range(1, origins + 1):
        cutoff = n - k * h
        if cutoff >= min_train:
            out.append((cutoff, k))
    return out


def load_series(dev: int, m3: int, seed: int) -> list[dict]:
    """Series as dicts (uid, freq, stamps, values of the TRAIN part): the ``dev`` shortest
    development-panel series with at least 30 training values, and ``m3`` M3 monthly series
    drawn with ``seed``."""
    out = []
    if dev:
        train = read_train(DATA / "dev_panel.csv.gz").dropna(subset=["y"])
        sizes = train.groupby("unique_id").size()
        chosen = sizes[sizes >= 30].sort_values(kind="stable").index[:dev]
        for uid in chosen:
            g = train[train["unique_id"] == uid]
            out.append({"uid": uid, "freq": g["freq"].iloc[0], "ds": g["ds"].to_numpy(),
                        "y": g["y"].to_numpy(dtype=np.float64)})
    if m3:
        train = read_train(DATA / "m3_monthly.csv.gz")
        ids = pd.unique(train["unique_id"])
        rng = np.random.default_rng(seed)
        for uid in sorted(rng.choice(ids, size=min(m3, len(ids)), replace=False)):
            g = train[train["unique_id"] == uid]
            out.append({"uid": uid, "freq": "MS", "ds": g["ds"].to_numpy(),
                        "y": g["y"].to_numpy(dtype=np.float64)})
    return out


def _time(ds: np.ndarray, freq: str) -> np.ndarray | pd.DatetimeIndex:
    return ds.astype(np.float64) if freq == "B" else pd.DatetimeIndex(ds)


def make_windows(series: list[dict], origins: int) -> list[dict]:
    """The forecast windows of every series (training values only)."""
    windows = []
    for s in series:
        h = HORIZON[s["freq"]]
        probe = with_frequency(from_arrays(_time(s["ds"], s["freq"]), s["y"]), s["freq"])
        m = seasonality(probe.axis)
        for cutoff, k in training_windows(len(s["y"]), h, origins, max(10, 2 * m + 4)):
            fit_part = with_frequency(
                from_arrays(_time(s["ds"][:cutoff], s["freq"]), s["y"][:cutoff],
                            unique_id=f"{s['uid']}@{k}"),
                s["freq"],
            )
            windows.append({"series": fit_part, "uid": s["uid"], "origin": k, "cutoff": cutoff,
                            "h": h, "season": m, "target": s["y"][cutoff : cutoff + h]})
    return windows


def evaluate(name: str, overrides: dict, windows: list[dict], seed: int, workers: int,
             extra: dict) -> list[dict]:
    """Fit one candidate on all windows (one panel fit) and score each window."""
    settings = {**overrides, **extra, "smc.workers": workers}
    rows = []
    groups = [windows]
    if overrides.get("data.transform") == "log":
        # log needs positive values: windows with values <= 0 are fitted untransformed.
        positive = [w for w in windows if np.all(w["series"].y > 0)]
        other = [w for w in windows if not np.all(w["series"].y > 0)]
        groups = [g for g in (positive, other) if g]
    started = time.perf_counter()
    for group in groups:
        setting = dict(settings)
        if overrides.get("data.transform") == "log" and not np.all(group[0]["series"].y > 0):
            setting["data.transform"] = "none"
        model = AutoGP(seed=seed, overrides=setting, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit([w["series"] for w in group])
        for w in group:
            uid = w["series"].unique_id
            qs = model.predict(w["h"], quantiles=QUANTILES, level=[], unique_id=uid)
            mean = model.predict(w["h"], level=[], point="mean", unique_id=uid)["AutoGP"]
            q = {tau: qs[f"AutoGP-q-{100 * tau:.10g}"].to_numpy() for tau in QUANTILES}
            y, y_train = w["target"], w["series"].y
            rows.append({
                "candidate": name, "unique_id": w["uid"], "origin": w["origin"],
                "cutoff": w["cutoff"], "h": w["h"], "season": w["season"],
                "transform": model.fits[uid].scaler.units,
                "mase_median": mase(y, q[0.5], y_train, w["season"]),
                "mase_mean": mase(y, mean.to_numpy(), y_train, w["season"]),
                "scaled_crps": scaled_crps(y, q),
                "coverage_95": coverage(y, q[0.025], q[0.975]),
                "y": json.dumps(y.tolist()),
                "median": json.dumps(q[0.5].tolist()),
                "lo_95": json.dumps(q[0.025].tolist()),
                "hi_95": json.dumps(q[0.975].tolist()),
                "quantiles": json.dumps({str(t): v.tolist() for t, v in q.items()}),
            })
    seconds = time.perf_counter() - started
    for r in rows:
        r["fit_seconds_all_windows"] = round(seconds, 1)
    return rows


SCORES = ("mase_median", "mase_mean", "scaled_crps", "coverage_95")


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: mean scores over windows, and windows where it beats the first candidate
    on MASE (point = median) and on scaled CRPS."""
    reference = table["candidate"].iloc[0]
    key = ["unique_id", "origin"]
    ref = table[table["candidate"] == reference].set_index(key)
    rows = []
    for name, g in table.groupby("candidate", sort=False):
        g = g.set_index(key)
        row = {"candidate": name, "windows": len(g)}
        row.update({s: float(np.nanmean(g[s])) for s in SCORES})
        both = g.index.intersection(ref.index)
        row[f"mase_wins_vs_{reference}"] = int(
            (g.loc[both, "mase_median"] < ref.loc[both, "mase_median"]).sum())
        row[f"crps_wins_vs_{reference}"] = int(
            (g.loc[both, "scaled_crps"] < ref.loc[both, "scaled_crps"]).sum())
        row["fit_seconds"] = float(g["fit_seconds_all_windows"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def to_markdown(summary: pd.DataFrame, note: str) -> str:
    cols = list(summary.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in summary.iterrows():
        cells = [f"{v:.4f}" if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return note + "\n\n" + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> pd.DataFrame:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dev", type=int, default=12, help="shortest development-panel series")
    p.add_argument("--m3", type=int, default=4, help="M3 monthly series (seeded draw)")
    p.add_argument("--limit", type=int, default=None, help="at most this many series in all")
    p.add_argument("--origins", type=int, default=2, help="forecast origins per series")
    p.add_argument("--candidates", default=None,
                   help=f"comma-separated subset of {', '.join(CANDIDATES)}")
    p.add_argument("--workers", type=int, default=0, help="processes (0: one per core)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "choose_defaults")
    p.add_argument("--tiny", action="store_true",
                   help="smoke test: 2 short dev series, 1 origin, 2 candidates, a tiny model")
    args = p.parse_args(argv)
    names = list(CANDIDATES) if args.candidates is None else args.candidates.split(",")
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        p.error(f"unknown candidates {unknown}; choose from {list(CANDIDATES)}")
    extra: dict[str, object] = {}
    if args.tiny:
        args.dev, args.m3, args.origins = 2, 0, 1
        names = names if args.candidates else ["defaults", "transform=none"]
        extra = dict(TINY)
    series = load_series(args.dev, args.m3, args.seed)
    if args.limit is not None:
        series = series[: args.limit]
    windows = make_windows(series, args.origins)
    print(f"{len(series)} series, {len(windows)} windows, candidates {names}", flush=True)
    rows = []
    for name in names:
        rows += evaluate(name, CANDIDATES[name], windows, args.seed, args.workers, extra)
        print(f"  {name}: done ({rows[-1]['fit_seconds_all_windows']} s)", flush=True)
    table = pd.DataFrame(rows)
    summary = summarise(table)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "windows.csv", index=False)
    summary.to_csv(args.out / "summary.csv", index=False)
    note = (f"Rolling-origin validation on training data only: {len(series)} series "
            f"({args.dev} development-panel, {args.m3} M3 monthly), {args.origins} origins each, "
            f"{len(windows)} windows; seed {args.seed}. Command: python scripts/choose_defaults.py "
            + " ".join(argv if argv is not None else sys.argv[1:]))
    (args.out / "summary.md").write_text(to_markdown(summary, note))
    print(to_markdown(summary, note))
    return summary


if __name__ == "__main__":
    main()
