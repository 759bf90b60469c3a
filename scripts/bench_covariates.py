"""Do covariates help? autogp with and without them against AutoARIMA with the same regressors.

Three public series with a real covariate (``benchmarks/data/covariates/``): daily electricity
demand in Victoria with the temperature and a work-day indicator (``fpp2.elecdaily``), monthly
insurance quotes with TV advertising (``fpp2.insurance``) and quarterly US consumption growth
with income growth (``fpp2.uschange``). Each is fitted on its train rows; the test rows' covariate
values are the known future (``X_df``), as in an ex-post forecast. Reports the test-split MASE
(scaled by the in-sample seasonal naive: seasons 7, 12 and 4), the scaled CRPS and the 95%
coverage of autogp with and without the covariates and of statsforecast's AutoARIMA with and
without the same regressors (and AutoETS, which takes none), side by side in one run.

Distributed lags (``data.covariate_lags``): each candidate set of lags (``--lags``) is fitted
and scored on the test rows too, and one is chosen per series and seed on the training rows
alone (:func:`autogp.forecast.lag_choice.choose_covariate_lags`: rolling-origin
cross-validation, ``--cv-windows`` windows of the test length inside the training rows); the
chosen set's test MASE is the one to compare.

    python scripts/bench_covariates.py [--seeds 0 1 2] [--series fpp2.insurance]
        [--lags 0 0,1 0,1,2,3] [--cv-windows 2] [--tiny] [--json PATH]

``--tiny`` is a smoke test (2 particles, 2 rounds, the shortest series only, lags 0 and 0,1,
one window); its figures say nothing about accuracy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pandas as pd  # noqa: E402

from autogp import AutoGP  # noqa: E402
from autogp.data import AutoGPDataWarning  # noqa: E402
from autogp.experiments.scoring import scaled_crps  # noqa: E402
from autogp.forecast.columns import quantile_column  # noqa: E402
from autogp.forecast.lag_choice import choose_covariate_lags  # noqa: E402
from autogp.forecast.metrics import coverage, mase  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "covariates"
#: series -> (file, season for MASE and the models, statsforecast frequency)
SERIES = {
    "fpp2.elecdaily": ("elecdaily.csv", 7, "D"),
    "fpp2.insurance": ("insurance.csv", 12, "MS"),
    "fpp2.uschange": ("uschange.csv", 4, "QS"),
}
LEVEL = 95


def load(name: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Train rows, test rows and the covariate columns of one series."""
    frame = pd.read_csv(DATA / SERIES[name][0])
    covariates = [c for c in frame.columns if c not in ("unique_id", "ds", "y", "split")]
    train = frame[frame["split"] == "train"].drop(columns="split").reset_index(drop=True)
    test = frame[frame["split"] == "test"].drop(columns="split").reset_index(drop=True)
    return train, test, covariates


def _scores(y, point, lo, hi, y_train, season, quantiles=None) -> dict:
    out = {
        "point": [float(v) for v in point],
        "mase": mase(y, point, y_train, season),
        "coverage_95": coverage(y, lo, hi),
    }
    if quantiles is not None:
        out["scaled_crps"] = scaled_crps(y, quantiles)
    return out


def lag_label(lags) -> str:
    """The report's name of a fit with covariate lags ``lags``."""
    return "autogp+X" if tuple(lags) == (0,) else f"autogp+X lags {','.join(map(str, lags))}"


#: --tiny: the smallest search that still runs every part (compilation dominates it).
TINY_OVERRIDES = {"smc.structure_moves": 1, "refine.steps": 2, "grammar.max_depth": 2}


def _model_kwargs(tiny: bool) -> dict:
    return {"particles": 2, "rounds": 2} if tiny else {}


def _overrides(tiny: bool, lags=(0,)) -> dict:
    return {**(TINY_OVERRIDES if tiny else {}), "data.covariate_lags": list(lags)}


def autogp_scores(train, test, covariates, season, *, use: bool, seed: int, tiny: bool,
                  lags=(0,)) -> dict:
    model = AutoGP(seed=seed, progress=False, overrides=_overrides(tiny, lags),
                   **_model_kwargs(tiny))
    taus = (0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975)
    start = time.perf_counter()
    if use:
        model.fit(train)
        fc = model.predict(len(test), X_df=test[["unique_id", "ds", *covariates]],
                           quantiles=list(taus))
    else:
        model.fit(train.drop(columns=covariates))
        fc = model.predict(len(test), quantiles=list(taus))
    seconds = time.perf_counter() - start
    q = {tau: fc[quantile_column(tau)].to_numpy() for tau in taus}
    y = test["y"].to_numpy()
    out = _scores(y, fc["AutoGP"].to_numpy(), q[0.025], q[0.975], train["y"].to_numpy(), season,
                  quantiles=q)
    out["seconds"] = seconds
    out["structure"] = model.kernels().iloc[0]["structure"]
    return out


def statsforecast_scores(train, test, covariates, season, freq) -> dict:
    from statsforecast import StatsForecast
    from statsforecast.models import AutoARIMA, AutoETS

    train = train.assign(ds=pd.to_datetime(train["ds"]))
    future = test.assign(ds=pd.to_datetime(test["ds"]))
    y, y_train, h = test["y"].to_numpy(), train["y"].to_numpy(), len(test)
    out = {}
    for label, frame, x_df, model in (
        ("AutoARIMA+X", train, future[["unique_id", "ds", *covariates]],
         AutoARIMA(season_length=season)),
        ("AutoARIMA", train.drop(columns=covariates), None, AutoARIMA(season_length=season)),
        ("AutoETS", train.drop(columns=covariates), None, AutoETS(season_length=season)),
    ):
        sf = StatsForecast(models=[model], freq=freq)
        fc = sf.forecast(df=frame, h=h, X_df=x_df, level=[LEVEL])
        name = type(model).__name__
        out[label] = _scores(y, fc[name].to_numpy(), fc[f"{name}-lo-{LEVEL}"].to_numpy(),
                             fc[f"{name}-hi-{LEVEL}"].to_numpy(), y_train, season)
    return out


def lag_choice(train, test, season, candidates, *, seed: int, windows: int, tiny: bool) -> dict:
    """The lags chosen on the training rows alone, and each candidate's cross-validated MASE."""
    start = time.perf_counter()
    with warnings.catch_warnings():  # the lags' left-out first rows, once per window
        warnings.simplefilter("ignore", AutoGPDataWarning)
        choice = choose_covariate_lags(train, candidates, h=len(test), n_windows=windows,
                                       season=season, seed=seed, progress=False,
                                       overrides=_overrides(tiny), **_model_kwargs(tiny))
    return {"lags": list(choice.lags), "label": lag_label(choice.lags),
            "cv_mase": {lag_label(k): v for k, v in choice.scores.items()},
            "seconds": time.perf_counter() - start}


def run(seeds: list[int], tiny: bool, names: list[str] | None = None, candidates=None,
        windows: int = 2) -> dict:
    names = names or (["fpp2.insurance"] if tiny else list(SERIES))
    candidates = candidates or ([(0,), (0, 1)] if tiny else [(0,), (0, 1), (0, 1, 2, 3)])
    windows = 1 if tiny else windows
    report: dict = {"machine": f"{platform.machine()} cpus={os.cpu_count()}",
                    "date": time.strftime("%Y-%m-%d"), "seeds": seeds, "series": {},
                    "lags": [list(c) for c in candidates], "cv_windows": windows}
    for name in names:
        _, season, freq = SERIES[name]
        train, test, covariates = load(name)
        row: dict = {"covariates": covariates, "train": len(train), "test": len(test)}
        for lags in candidates:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AutoGPDataWarning)
                row[lag_label(lags)] = {
                    str(s): autogp_scores(train, test, covariates, season, use=True, seed=s,
                                          tiny=tiny, lags=lags) for s in seeds}
        row["autogp"] = {str(s): autogp_scores(train, test, covariates, season, use=False,
                                               seed=s, tiny=tiny) for s in seeds}
        row["lag choice"] = {str(s): lag_choice(train, test, season, candidates, seed=s,
                                                windows=windows, tiny=tiny) for s in seeds}
        try:
            row.update(statsforecast_scores(train, test, covariates, season, freq))
        except ImportError:
            row["statsforecast"] = "not installed"
        report["series"][name] = row
    return report


def print_report(report: dict) -> None:
    print(f"machine: {report['machine']}  {report['date']}  seeds {report['seeds']}")
    for name, row in report["series"].items():
        print(f"{name}  (covariates {', '.join(row['covariates'])}; "
              f"{row['train']} train / {row['test']} test)")
        labels = [lag_label(c) for c in report["lags"]] + ["autogp"]
        for label in labels:
            for seed, s in row[label].items():
                crps = s.get("scaled_crps", float("nan"))
                print(f"  {label:<22} seed {seed}  MASE {s['mase']:.3f}  CRPS {crps:.4f}  "
                      f"cov95 {s['coverage_95']:.2f}  {s['seconds']:.0f} s  {s['structure']}")
        for seed, c in row["lag choice"].items():
            cv = "  ".join(f"{k.removeprefix('autogp+X').strip() or 'lags 0'} {v:.3f}"
                           for k, v in c["cv_mase"].items())
            chosen = row[c["label"]][seed]["mase"]
            print(f"  chosen on train (CV MASE {cv}; {c['seconds']:.0f} s): seed {seed}  "
                  f"{c['label']}  test MASE {chosen:.3f}")
        for label in ("AutoARIMA+X", "AutoARIMA", "AutoETS"):
            if label in row:
                s = row[label]
                print(f"  {label:<22}         MASE {s['mase']:.3f}  "
                      f"cov95 {s['coverage_95']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--tiny", action="store_true", help="smoke test: toy settings")
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    parser.add_argument("--series", nargs="+", choices=list(SERIES), help="default: all")
    parser.add_argument("--lags", nargs="+", help="candidate lag sets, e.g. 0 0,1 0,1,2,3")
    parser.add_argument("--cv-windows", type=int, default=2,
                        help="rolling-origin windows on the training rows that choose the lags")
    args = parser.parse_args()
    candidates = [tuple(int(k) for k in text.split(",")) for text in args.lags or []]
    report = run(args.seeds, args.tiny, args.series, candidates or None, args.cv_windows)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
