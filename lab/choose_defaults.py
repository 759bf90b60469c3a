"""Choose default settings by rolling-origin validation inside the training data.

For each series (the development panel and M3 monthly, ``benchmarks/data``) only the TRAIN rows
are read; the test split is never loaded (asserted). Inside the training part, forecast origins
are placed at ``n - k * h`` for k = 1..``--origins`` (``h`` is the series' usual horizon: 6
yearly, 8 quarterly, 18 monthly, 13 weekly, 14 daily), so each window forecasts ``h`` points that
are still training data. Every candidate setting (a set of config overrides on the defaults) is
fitted on every window and scored with MASE (seasonal-naive scale of the window's own training
values, season 1/4/12/52/7/5 by frequency), the scaled CRPS of the quantiles 2.5 ... 97.5%
(``autogp.experiments.scoring.scaled_crps``) and the 95% coverage. ``point=mean`` and
``point=median`` come from the same fit, so both are scored for every candidate.

``--baselines`` scores statsforecast's AutoETS, AutoARIMA, AutoTheta and SeasonalNaive on the
same windows beside the candidates (rows ``baseline:<model>``; the ``[bench]`` extra), so that a
candidate is compared with what it must beat on the training windows, not only on a test split;
with ``--windows`` and no fits, beside a finished run's rows.

Writes ``windows.csv`` (one row per candidate and window, with the forecasts), ``summary.csv``
and ``summary.md`` (per-candidate means, and per-window wins against the first candidate) into
``--out`` (default ``benchmarks/choose_defaults``).

    python lab/choose_defaults.py --dev 12 --m3 4 --workers 2
    python lab/choose_defaults.py --dev 0 --m3 100 --baselines --windows RUN/windows.csv
    python lab/choose_defaults.py --tiny --out /tmp/cd   # smoke test: 2 short series, seconds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autogp import AutoGP  # noqa: E402
from autogp.config import engine_settings, load_config  # noqa: E402
from autogp.data import from_arrays  # noqa: E402
from autogp.data.seasons import with_frequency  # noqa: E402
from autogp.data.transform import choose_transform  # noqa: E402
from autogp.experiments.scoring import quantiles_from_frame, scaled_crps  # noqa: E402
from autogp.forecast.columns import MODEL_NAME, quantile_column  # noqa: E402
from autogp.forecast.metrics import coverage, mase, seasonality  # noqa: E402
from autogp.inference.calibration import predictive_scale  # noqa: E402
from autogp.pipeline.fitting import (  # noqa: E402
    data_log_evidence,
    evidence_transforms,
    fitting_window,
)

DATA = ROOT / "benchmarks" / "data"
HORIZON = {"YS": 6, "QS": 8, "MS": 18, "W": 13, "D": 14, "B": 14, "other": 8}
#: Numeric time axes: trading-day numbers, and M3's "other" series (step numbers, no calendar).
NUMERIC_FREQS = ("B", "other")
QUANTILES = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)

LIGHT = {"smc.num_particles": 8, "smc.num_rounds": 8, "smc.structure_moves": 15,
         "refine.steps": 30}
#: name -> config overrides on the defaults. The first is the reference for wins.
CANDIDATES: dict[str, dict[str, object]] = {
    "defaults": {},
    "transform=none": {"data.transform": "none"},
    "transform=log": {"data.transform": "log"},  # series with values <= 0: none
    # Each positive window in data and in log units, keeping the higher evidence in data units.
    "transform=evidence": {"data.transform": "evidence"},
    "BM=6": {"grammar.weights.BM": 6.0},
    # The GP's prior mean at the mean of all training values instead of the recent level.
    "center=mean": {"data.center": "mean"},
    # Integrated Brownian motion (a trend whose slope wanders; forecast variance ~ h^3).
    "IBM=6": {"grammar.weights.IBM": 6.0},
    "IBM=3": {"grammar.weights.IBM": 3.0},
    "IOU=6": {"grammar.weights.IOU": 6.0},
    "posterior_draws=4": {"refine.posterior_draws": 4, "refine.hmc_steps": 3},
    "particles=8": {"smc.num_particles": 8},
    "particles=32": {"smc.num_particles": 32},
    # Four times the particles: the posterior of a short series with less Monte Carlo error
    # (spliced below 60 points with --splice, where a fit costs little more).
    "particles=64": {"smc.num_particles": 64},
    # A power posterior (SafeBayes learning rate): flatter weights over structures, on every
    # series (power_from = 0); power60=...: on series of at least 60 points (smc.power_from).
    # The defaults are power60=0.5; eta=1 is the Bayesian posterior.
    "eta=1": {"smc.likelihood_power": 1.0},
    "power=0.5": {"smc.likelihood_power": 0.5, "smc.power_from": 0},
    "power=0.25": {"smc.likelihood_power": 0.25, "smc.power_from": 0},
    "power60=0.25": {"smc.likelihood_power": 0.25},  # 0.25 from 60 points
    # The same compute as the defaults' 16 particles, as two independent runs pooled by evidence.
    "restarts=2": {"smc.restarts": 2, "smc.num_particles": 8},
    # A quarter of the defaults' compute (8 particles, 8 rounds, 30 optimiser steps; 15 structure
    # moves): the budget that fits all 1,428 M3 series in an hour on 2 cores.
    "budget": LIGHT,
    "budget+BM=6": {**LIGHT, "grammar.weights.BM": 6.0},
    "budget+BM=6+draws=4": {**LIGHT, "grammar.weights.BM": 6.0, "refine.posterior_draws": 4,
                            "refine.hmc_steps": 3},
    # The fitting window (data.window, 300 by default): every training point instead (the
    # sparse bound above smc.sparse_above points), or the last 500.
    "window=0": {"data.window": 0},
    "window=500": {"data.window": 500},
    # No optimiser steps in the rounds on more than half of the data (refine.late_steps).
    "late_steps=0": {"refine.late_steps": 0},
    "late_steps=10": {"refine.late_steps": 10},
    "late_steps=20": {"refine.late_steps": 20},
    # The optimiser's gradient from 16 Rademacher probes in rounds on >= 256 columns (the
    # default), or the exact one.
    "probes=16": {"refine.probes": 16},
    "probes=0": {"refine.probes": 0},
    # Final structure weights from the Laplace evidence of the particles' modes instead of the
    # SMC's importance weights (smc.structure_weights; inference/evidence.py).
    "weights=laplace": {"smc.structure_weights": "laplace"},
    # The same, each mode weighed by p(T) p(y | T)^0.5: flatter over structures.
    "laplace_power=0.5": {"smc.structure_weights": "laplace", "smc.evidence_power": 0.5},
    # Nearly the structure prior alone over the modes found: how much hedging over them buys.
    "laplace_power=0.01": {"smc.structure_weights": "laplace", "smc.evidence_power": 0.01},
    # Lower-variance resampling (one uniform for all draws): the same expected particle
    # counts as multinomial with less Monte Carlo noise in them.
    "resampling=systematic": {"smc.resampling": "systematic"},
    # Each mode weighed by its one-step-ahead predictive log density over the second half of
    # the window at its parameters: deterministic, like the SMC's incremental weights.
    "weights=prequential": {"smc.structure_weights": "prequential"},
    # A quarter (half) of the initial particles drawn as S + PER at the periodogram's or the
    # calendar's period, with importance weights (smc.seasonal_start; the defaults: none).
    "seasonal_start=0.25": {"smc.seasonal_start": 0.25},
    "seasonal_start=0.5": {"smc.seasonal_start": 0.5},
    # Proposed periods closer to the periodogram's and calendar's (sd of the log period 0.01
    # instead of 0.05): refinement from 10% off the season drifts away from it.
    "period_spread=0.01": {"smc.period_spread": 0.01},
    "seasonal_start=0.25+spread=0.01": {"smc.seasonal_start": 0.25, "smc.period_spread": 0.01},
    # The optimiser's step for PER periods a fifth of the others' (refine.period_step), alone
    # and with proposals nearer the season.
    "period_step=0.2": {"refine.period_step": 0.2},
    "period_step=0.2+spread=0.01": {"refine.period_step": 0.2, "smc.period_spread": 0.01},
    # Forecast sds beyond the data widened by a per-series factor from the rounds' own
    # held-out forecasts (smc.calibrate; the particles are the defaults' own).
    "calibrate": {"smc.calibrate": True},
    "calibrate+prior=0": {"smc.calibrate": True, "smc.calibration_prior": 0.0},
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


def load_series(dev: int, m3: int, seed: int, longest: int = 0,
                ids: Sequence[str] = (), m3_other: dict[str, int] | None = None) -> list[dict]:
    """Series as dicts (uid, freq, stamps, values of the TRAIN part): the ``dev`` shortest
    development-panel series with at least 30 training values (the ``longest`` longest
    instead, when given, or the series named in ``ids``), ``m3`` M3 monthly series drawn
    with ``seed``, and ``m3_other[freq]`` M3 series of each other group (``YS``, ``QS``,
    ``other``) drawn with ``seed``."""
    out = []
    if dev or longest or ids:
        train = read_train(DATA / "dev_panel.csv.gz").dropna(subset=["y"])
        sizes = train.groupby("unique_id").size().sort_values(kind="stable")
        unknown = sorted(set(ids) - set(sizes.index))
        if unknown:
            raise ValueError(f"--ids: no development-panel series named {unknown}")
        chosen = (list(ids) if ids else sizes.index[-longest:] if longest
                  else sizes[sizes >= 30].index[:dev])
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
    if m3_other:
        train = read_train(DATA / "m3_other.csv.gz")
        rng = np.random.default_rng(seed)
        for freq, count in m3_other.items():
            group = train[train["freq"] == freq]
            if group.empty:
                raise ValueError(f"--m3-other: no M3 group {freq!r}; choose YS, QS or other")
            ids = pd.unique(group["unique_id"])
            for uid in sorted(rng.choice(ids, size=min(count, len(ids)), replace=False)):
                g = group[group["unique_id"] == uid]
                out.append({"uid": uid, "freq": freq, "ds": g["ds"].to_numpy(),
                            "y": g["y"].to_numpy(dtype=np.float64)})
    return out


def _time(ds: np.ndarray, freq: str) -> np.ndarray | pd.DatetimeIndex:
    return ds.astype(np.float64) if freq in NUMERIC_FREQS else pd.DatetimeIndex(ds)


def _calendar(freq: str) -> str | None:
    """The frequency a numeric axis is named with (M3's "other" series have no calendar)."""
    return None if freq == "other" else freq


def make_windows(series: list[dict], origins: int, shorter_than: int | None = None,
                 first_origin: int = 1) -> list[dict]:
    """The forecast windows of every series (training values only); with ``shorter_than``,
    only those of fewer training values; origins before ``first_origin`` left out."""
    windows = []
    for s in series:
        h = HORIZON[s["freq"]]
        probe = with_frequency(from_arrays(_time(s["ds"], s["freq"]), s["y"]),
                               _calendar(s["freq"]))
        m = seasonality(probe.axis)
        for cutoff, k in training_windows(len(s["y"]), h, origins, max(10, 2 * m + 4)):
            if (shorter_than is not None and cutoff >= shorter_than) or k < first_origin:
                continue
            fit_part = with_frequency(
                from_arrays(_time(s["ds"][:cutoff], s["freq"]), s["y"][:cutoff],
                            unique_id=f"{s['uid']}@{k}"),
                _calendar(s["freq"]),
            )
            windows.append({"series": fit_part, "uid": s["uid"], "origin": k, "cutoff": cutoff,
                            "h": h, "season": m, "target": s["y"][cutoff : cutoff + h]})
    return windows


def second_half_log_evidence(fit, config) -> float:
    """The part of a fit's data-unit evidence earned on the second half of its points: the
    SMC's log evidence after the last round on at most half of them subtracted from the final
    one (the rounds' predictive scores of the later points, each block forecast by particles
    fitted to the points before it), plus eta times the log Jacobian over those points. NaN
    where no round had at most half the points."""
    counts = [c[0] for c in fit.history.get("count", [])]
    log_z = [z[0] for z in fit.history.get("log_evidence", [])]
    n = fit.series.n
    early = [i for i, c in enumerate(counts) if c <= n / 2]
    if not early or len(log_z) != len(counts):
        return float("nan")
    r = early[-1]
    jacobian = float(np.sum(fit.scaler.forward_y_log_jacobian(fit.series.y[counts[r]:])))
    eta = engine_settings(config)[1].power_for(n)
    return float(fit.log_marginal_likelihood - log_z[r] + eta * jacobian)


def _fitted_transforms(window: dict, overrides: dict) -> list[float | None]:
    """The Box-Cox lambdas (None: none, 0: log) a candidate fits this window with: one, decided
    from the window's training values as the model decides it, or under ``transform =
    "evidence"`` both scales of a positive window (the model keeps the higher evidence)."""
    if str(overrides.get("data.transform")) == "evidence":
        config = load_config(None, overrides)
        modes = evidence_transforms(fitting_window(window["series"], config).series, config)
        if modes:
            return [_lambda_of(m) for m in modes]
        return [None]
    return [_resolved_transform(window, overrides)]


def _lambda_of(mode: str) -> float | None:
    return {"none": None, "log": 0.0}[mode]


def _resolved_transform(window: dict, overrides: dict) -> float | None:
    """The Box-Cox lambda (None: none, 0: log) a candidate fits this window with, decided from
    the window's training values as the model decides it."""
    mode = str(overrides.get("data.transform", "auto"))
    y = _fitted_values(window, overrides)
    if mode == "log" and not np.all(y > 0):
        return None  # log needs positive values: such windows are fitted untransformed
    lam = overrides.get("data.boxcox_lambda")
    return choose_transform(y, window["season"], mode, None if lam is None else float(lam)).lam


def _fitted_values(window: dict, overrides: dict) -> np.ndarray:
    """The training values of a window that the candidate's fit sees (its ``data.window``, cut
    as the package cuts it)."""
    return fitting_window(window["series"], load_config(None, overrides)).series.y


def _transform_settings(lam: float | None) -> dict[str, object]:
    if lam is None:
        return {"data.transform": "none"}
    if lam == 0.0:
        return {"data.transform": "log"}
    return {"data.transform": "boxcox", "data.boxcox_lambda": float(lam)}


def evaluate(name: str, overrides: dict, windows: list[dict], seed: int, workers: int,
             extra: dict, cache: dict) -> list[dict]:
    """Fit one candidate on all windows and score each window.

    Windows are grouped by the transform the candidate resolves to (``auto`` picks per window),
    and each group is fitted as one panel with that transform fixed. Forecasts are cached by
    (other settings, transform, window), so ``defaults`` (auto) reuses the ``transform=none``
    and ``transform=log`` fits of the windows where it picks none or log: the same settings,
    hence the same model."""
    # data.transform is resolved per window below; other data keys go to the fit as given.
    # Every fit records its held-out scores (smc.calibrate leaves the particles as they are),
    # and each candidate's forecast scale is set from them: candidates that differ only in
    # the calibration share their fits.
    other = {k: v for k, v in overrides.items()
             if k not in ("data.transform", "data.boxcox_lambda", *CALIBRATION_KEYS)}
    engine = engine_settings(load_config(None, {k: v for k, v in overrides.items()
                                                if k in CALIBRATION_KEYS}))[1]
    base_key = json.dumps(sorted(other.items()), default=str)
    groups: dict[float | None, list[dict]] = {}
    fitted: dict[str, list[float | None]] = {}
    for w in windows:
        fitted[w["series"].unique_id] = _fitted_transforms(w, overrides)
        for lam in fitted[w["series"].unique_id]:
            groups.setdefault(lam, []).append(w)
    started = time.perf_counter()
    for lam, group in groups.items():
        todo = [w for w in group if (base_key, lam, w["series"].unique_id) not in cache]
        if not todo:
            continue
        setting = {**other, **extra, **_transform_settings(lam), "smc.workers": workers,
                   "smc.calibrate": True}
        model = AutoGP(seed=seed, overrides=setting, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit([w["series"] for w in todo])
        for w in todo:
            uid = w["series"].unique_id
            cache[(base_key, lam, uid)] = {
                "model": model,
                "units": model.fits[uid].scaler.units,
                "evidence": data_log_evidence(model.fits[uid], model.config),
                "evidence_second_half": second_half_log_evidence(model.fits[uid],
                                                                 model.config),
            }
    seconds = time.perf_counter() - started
    rows = []
    for w in windows:
        # the fit the model keeps: the only one, or the higher evidence (ties: the first)
        hits = [_forecast(cache[(base_key, lam, w["series"].unique_id)], w, engine)
                for lam in fitted[w["series"].unique_id]]
        hit = max(hits, key=lambda h: h["evidence"] if np.isfinite(h["evidence"]) else -np.inf)
        rows.append(window_row(name, w, hit["q"], hit["mean"], seconds) | {
            "transform": hit["units"],
            "predictive_scale": hit["scale"],
            "log_evidence": hit["evidence"],
            "log_evidence_by_units": json.dumps({h["units"]: h["evidence"] for h in hits}),
            "second_half_by_units": json.dumps(
                {h["units"]: h["evidence_second_half"] for h in hits}),
        })
    return rows


#: Settings that change a fit's forecast scale only (autogp.inference.calibration).
CALIBRATION_KEYS = ("smc.calibrate", "smc.calibration_prior")


def _forecast(hit: dict, w: dict, engine) -> dict:
    """A cached fit's forecast of window ``w`` under the calibration of ``engine`` (the
    candidate's SMC settings): its quantiles and mean, added to ``hit``."""
    model, uid = hit["model"], w["series"].unique_id
    history = model.fits[uid].history
    history["predictive_scale"] = [
        predictive_scale(history["held_out_mean_squares"], engine.calibration_prior)
        if engine.calibrate else 1.0]
    qs = model.predict(w["h"], quantiles=QUANTILES, level=[], unique_id=uid)
    mean = model.predict(w["h"], level=[], point="mean", unique_id=uid)[MODEL_NAME]
    return hit | {"q": {tau: qs[quantile_column(tau)].to_numpy() for tau in QUANTILES},
                  "mean": mean.to_numpy(), "scale": history["predictive_scale"][0]}


def window_row(name: str, w: dict, q: dict[float, np.ndarray], mean: np.ndarray,
               seconds: float) -> dict:
    """One window's scores and forecasts (quantiles ``q`` by level, the mean forecast)."""
    y, y_train = w["target"], w["series"].y
    return {
        "candidate": name, "unique_id": w["uid"], "origin": w["origin"],
        "cutoff": w["cutoff"], "h": w["h"], "season": w["season"],
        "mase_median": mase(y, q[0.5], y_train, w["season"]),
        "mase_mean": mase(y, mean, y_train, w["season"]),
        "scaled_crps": scaled_crps(y, q),
        "coverage_95": coverage(y, q[0.025], q[0.975]),
        "fit_seconds_new": round(seconds, 1),
        "y": json.dumps(y.tolist()),
        "median": json.dumps(q[0.5].tolist()),
        "lo_95": json.dumps(q[0.025].tolist()),
        "hi_95": json.dumps(q[0.975].tolist()),
        "quantiles": json.dumps({str(t): v.tolist() for t, v in q.items()}),
    }


#: statsforecast models scored beside the candidates with ``--baselines`` (reference rows).
BASELINES = ("AutoETS", "AutoARIMA", "AutoTheta", "SeasonalNaive")
#: Central interval levels whose bounds are QUANTILES (with the point forecast as the median).
BASELINE_LEVELS = (50, 80, 90, 95)


def baseline_rows(windows: list[dict], workers: int = 1,
                  models: Sequence[str] = BASELINES) -> list[dict]:
    """statsforecast's ``models`` fitted on each window's training values and scored as the
    candidates are, as rows of candidate ``"baseline:<model>"``: what the candidates must beat
    on the same windows. Windows are fitted in one call per season (``season_length``). The
    dates handed to statsforecast are placeholders (consecutive month starts): its models see
    only the values' order and the season. Their point forecast (the mean of a Gaussian
    predictive) is the median quantile. Needs the optional ``statsforecast``
    (``pip install -e ".[bench]"``)."""
    from autogp.experiments.baselines import statsforecast_forecasts

    by_season: dict[int, list[dict]] = {}
    for w in windows:
        by_season.setdefault(int(w["season"]), []).append(w)
    forecasts: dict[str, pd.DataFrame] = {}
    seconds = dict.fromkeys(models, 0.0)
    for m, group in by_season.items():
        train = pd.concat([
            pd.DataFrame({"unique_id": w["series"].unique_id,
                          "ds": pd.date_range("2000-01-01", periods=w["cutoff"], freq="MS"),
                          "y": w["series"].y})
            for w in group], ignore_index=True)
        fc, took = statsforecast_forecasts(train, max(w["h"] for w in group), BASELINE_LEVELS,
                                           season_length=m, freq="MS", n_jobs=max(1, workers),
                                           models=models)
        for name in models:
            seconds[name] += took[name]
        for uid, g in fc.groupby("unique_id", sort=False):
            forecasts[str(uid)] = g.sort_values("ds")
    rows = []
    for name in models:
        for w in windows:
            g = forecasts[w["series"].unique_id].iloc[: w["h"]]
            q = quantiles_from_frame(g, name, BASELINE_LEVELS)
            q = {tau: q[tau] for tau in QUANTILES}
            rows.append(window_row(f"baseline:{name}", w, q, q[0.5], seconds[name])
                        | {"transform": "", "log_evidence": float("nan")})
    return rows


SCORES = ("mase_median", "mase_mean", "scaled_crps", "coverage_95")


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: mean scores over windows, and windows where it beats ``defaults`` (else
    the first candidate) on MASE (point = median) and on scaled CRPS."""
    reference = "defaults" if "defaults" in set(table["candidate"]) else table["candidate"].iloc[0]
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
        row.update(coverage_by_third(g))
        row["new_fit_seconds"] = float(g["fit_seconds_new"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def coverage_by_third(windows: pd.DataFrame) -> dict[str, float]:
    """95% coverage over the first, middle and last third of each window's horizon (steps
    1-6, 7-12 and 13-18 of a monthly window), pooled over windows: where intervals fail."""
    hits: list[list[np.ndarray]] = [[], [], []]
    for y, lo, hi in zip(windows["y"], windows["lo_95"], windows["hi_95"], strict=True):
        y, lo, hi = (np.asarray(json.loads(v), dtype=float) for v in (y, lo, hi))
        inside = (y >= lo) & (y <= hi)
        for part, idx in zip(hits, np.array_split(np.arange(y.size), 3), strict=True):
            part.append(inside[idx])
    names = ("coverage_95_first_third", "coverage_95_middle_third", "coverage_95_last_third")
    return {name: float(np.mean(np.concatenate(part))) if part else float("nan")
            for name, part in zip(names, hits, strict=True)}


def to_markdown(summary: pd.DataFrame, note: str) -> str:
    cols = list(summary.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in summary.iterrows():
        cells = [f"{v:.4f}" if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return note + "\n\n" + "\n".join(lines) + "\n"


def rescore_defaults(table: pd.DataFrame, windows: list[dict]) -> pd.DataFrame:
    """Rebuild the ``defaults`` rows of a finished run under the current ``auto`` rule, from its
    ``transform=none`` and ``transform=log`` rows (exact: with the other settings equal, auto's
    fit of a window is the none or the log fit). A window where auto picks a Box-Cox lambda in
    (0, 1) keeps the run's own defaults row if that was a Box-Cox fit too (Guerrero's lambda
    is a function of the window's values), else it needs a fit of its own and is left out
    (counted in the note). The run's old defaults rows stay beside them, as candidate
    ``"defaults before"``."""
    old = table[table["candidate"] == "defaults"]
    keep = table[table["candidate"] != "defaults"]
    rows = []
    for w in windows:
        lam = _resolved_transform(w, {})
        source = {None: "transform=none", 0.0: "transform=log"}.get(lam, "defaults")
        pool = old[old["transform"] == "boxcox"] if source == "defaults" else keep
        match = pool[(pool["candidate"] == source) & (pool["unique_id"] == w["uid"])
                     & (pool["origin"] == w["origin"])]
        if match.empty:
            continue
        rows.append(match.iloc[0].to_dict() | {"candidate": "defaults", "fit_seconds_new": 0.0})
    before = old.assign(candidate="defaults before", fit_seconds_new=0.0)
    return pd.concat([pd.DataFrame(rows), keep, before], ignore_index=True)


def _rule_rows(table: pd.DataFrame, first: str, second: str, name: str,
               take_second) -> pd.DataFrame:
    """Rows of candidates ``first`` and ``second`` on the windows both have, and beside them a
    rule ``name``: ``second``'s row where ``take_second(first_rows, second_rows)`` (a bool
    mask over those windows) holds, ``first``'s elsewhere. Exact without fits: with the other
    settings equal, the rule's fit of a window is one of the two."""
    key = ["unique_id", "origin"]
    a = table[table["candidate"] == first].set_index(key)
    b = table[table["candidate"] == second].set_index(key)
    both = a.index.intersection(b.index)
    if both.empty:
        raise ValueError(f"no window has rows of both {first!r} and {second!r}")
    a, b = a.loc[both], b.loc[both]
    swap = np.asarray(take_second(a, b), dtype=bool)
    rule = a.copy()
    rule.loc[swap] = b.loc[swap].to_numpy()
    rule["candidate"] = name
    rule["fit_seconds_new"] = 0.0
    return pd.concat([a, b, rule]).reset_index()


def splice(table: pd.DataFrame, below: str, above: str, n: int) -> pd.DataFrame:
    """A length rule from finished runs, without fits: candidate ``above``'s row on windows of
    at least ``n`` training values and ``below``'s elsewhere, as candidate
    ``"<above> from <n> points, <below> below"`` beside both (as for ``smc.power_from``)."""
    return _rule_rows(table, below, above, f"{above} from {n} points, {below} below",
                      lambda a, b: a["cutoff"] >= n)


def seasonal_log(table: pd.DataFrame, base: str, logged: str) -> pd.DataFrame:
    """A transform rule from finished runs, without fits: candidate ``logged``'s row on
    seasonal windows (season > 1) that ``base`` fitted in data units and ``logged`` in log
    units, ``base``'s row elsewhere, as candidate ``"<base>, seasonal in log units"``."""
    return _rule_rows(table, base, logged, f"{base}, seasonal in log units",
                      lambda a, b: (a["season"] > 1) & (a["transform"] == "data")
                      & (b["transform"] == "log"))


def choose_by_earlier_origin(table: pd.DataFrame, first: str, second: str,
                             metric: str = "mase_median") -> pd.DataFrame:
    """A per-series choice from finished runs, without fits (SafeBayes proper, by one rolling
    origin): on each series' origin-1 window, ``second``'s row where ``second`` scored a lower
    ``metric`` than ``first`` at the series' origin 2 (the earlier one, inside the same
    training values), ``first``'s elsewhere. Series with no origin-2 rows of both are left out:
    the rule could not choose for them."""
    inner = table[table["origin"] == 2].pivot_table(index="unique_id", columns="candidate",
                                                    values=metric)
    if not {first, second} <= set(inner.columns):
        raise ValueError(f"no origin-2 rows of both {first!r} and {second!r}")
    inner = inner[[first, second]].dropna()
    better = inner[second] < inner[first]
    outer = table[(table["origin"] == 1) & table["unique_id"].isin(inner.index)]
    return _rule_rows(outer, first, second, f"{first} or {second} by origin 2's {metric}",
                      lambda a, b: better.loc[a.index.get_level_values("unique_id")].to_numpy())


def finished_rows(files: Sequence[Path], windows: list[dict]) -> pd.DataFrame:
    """The rows of finished runs (``windows.csv`` files) on exactly ``windows``: every
    candidate there must have a row for each window (a ``ValueError`` names what is missing),
    so that baselines scored on ``windows`` compare like with like."""
    table = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    table = table[~table["candidate"].astype(str).str.startswith("baseline:")]
    wanted = {(w["uid"], int(w["origin"])) for w in windows}
    keys = list(zip(table["unique_id"].astype(str), table["origin"].astype(int), strict=True))
    table = table[[k in wanted for k in keys]].reset_index(drop=True)
    for name, g in table.groupby("candidate", sort=False):
        missing = wanted - set(zip(g["unique_id"].astype(str), g["origin"].astype(int),
                                   strict=True))
        if missing:
            raise ValueError(f"--windows: candidate {name!r} has no row for {len(missing)} of "
                             f"the {len(wanted)} windows, e.g. {sorted(missing)[0]}")
    return table


def write_summary(out: Path, summary: pd.DataFrame, note: str) -> None:
    """``summary.csv`` and ``summary.md`` (the table under ``note``) in ``out``; printed too."""
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    (out / "summary.md").write_text(to_markdown(summary, note))
    print(to_markdown(summary, note))


def main(argv: list[str] | None = None) -> pd.DataFrame:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dev", type=int, default=12, help="shortest development-panel series")
    p.add_argument("--dev-longest", type=int, default=0,
                   help="the longest development-panel series instead of the shortest")
    p.add_argument("--ids", nargs="+", default=(),
                   help="these development-panel series instead of the shortest or longest")
    p.add_argument("--m3", type=int, default=4, help="M3 monthly series (seeded draw)")
    p.add_argument("--m3-other", nargs="+", default=(), metavar="GROUP:N",
                   help="N M3 series of each other group, YS, QS or other (seeded draw), "
                   "e.g. QS:40 YS:40 other:20")
    p.add_argument("--only-freq", nargs="+", default=(), metavar="FREQ",
                   help="after the draws, keep only the series of these frequencies (e.g. "
                   "other YS): a subset of a run's windows, for a candidate on part of them")
    p.add_argument("--limit", type=int, default=None, help="at most this many series in all")
    p.add_argument("--shorter-than", type=int, default=None, metavar="N",
                   help="keep only the windows of fewer than N training values: a length "
                   "rule's short side, for a candidate on part of a run's windows")
    p.add_argument("--origins", type=int, default=2, help="forecast origins per series")
    p.add_argument("--first-origin", type=int, default=1, metavar="K",
                   help="leave out the origins before K (a run that adds earlier origins to a "
                   "finished run's windows)")
    p.add_argument("--candidates", default=None,
                   help=f"comma-separated subset of {', '.join(CANDIDATES)}, or "
                   "prior=<grammar.prior> (learned, or a prior file)")
    p.add_argument("--workers", type=int, default=0, help="processes (0: one per core)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fit-seed", type=int, default=None,
                   help="the fits' seed (default --seed, which also draws the series)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "choose_defaults")
    p.add_argument("--rescore", action="store_true",
                   help="no fits: rebuild the defaults rows of --out's windows.csv (a run with "
                   "transform=none and transform=log, same series) under the current auto rule")
    p.add_argument("--splice", nargs=3, metavar=("BELOW", "ABOVE", "N"), default=None,
                   help="no fits: the length rule 'ABOVE on windows of at least N training "
                   "values, BELOW elsewhere' from the rows of finished runs (--windows files)")
    p.add_argument("--seasonal-log", nargs=2, metavar=("BASE", "LOG"), default=None,
                   help="no fits: BASE, except seasonal windows BASE fits in data units, which "
                   "take LOG's log-unit row (from the rows of finished runs, --windows files)")
    p.add_argument("--choose-by-origin", nargs=2, metavar=("FIRST", "SECOND"), default=None,
                   help="no fits: each series' origin-1 row of whichever of FIRST and SECOND "
                   "scored the lower MASE at its origin 2 (from the rows of finished runs, "
                   "--windows files; series without origin 2 left out)")
    p.add_argument("--windows", nargs="+", type=Path, default=(),
                   help="windows.csv files of finished runs, for --splice, --seasonal-log and "
                   "--choose-by-origin; "
                   "otherwise their rows on this run's windows instead of fits (e.g. beside "
                   "--baselines)")
    p.add_argument("--baselines", action="store_true",
                   help="also score statsforecast's AutoETS, AutoARIMA, AutoTheta and "
                   "SeasonalNaive on the same windows (needs the [bench] extra)")
    p.add_argument("--tiny", action="store_true",
                   help="smoke test: 2 short dev series, 1 origin, 2 candidates, a tiny model")
    args = p.parse_args(argv)
    command = "python lab/choose_defaults.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    names = list(CANDIDATES) if args.candidates is None else args.candidates.split(",")
    for name in names:  # prior=learned, prior=panel, prior=<prior file>: grammar.prior
        if name.startswith("prior="):
            CANDIDATES[name] = {"grammar.prior": name.partition("=")[2]}
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        p.error(f"unknown candidates {unknown}; choose from {list(CANDIDATES)}")
    extra: dict[str, object] = {}
    if args.tiny:
        args.dev, args.m3, args.origins = 2, 0, 1
        names = names if args.candidates else ["defaults", "transform=none"]
        extra = dict(TINY)
    # Rules built from the rows of finished runs, without fits (no windows.csv is written: the
    # rows are the finished runs' own).
    rules = {
        "splice": (lambda t, below, above, n: splice(t, below, above, int(n)),
                   "Length rule spliced from finished runs"),
        "choose_by_origin": (choose_by_earlier_origin,
                             "Per-series choice by origin 2 from finished runs"),
        "seasonal_log": (seasonal_log, "Transform rule from finished runs"),
    }
    for key, (rule, title) in rules.items():
        if getattr(args, key) is not None:
            finished = pd.concat([pd.read_csv(f) for f in args.windows], ignore_index=True)
            summary = summarise(rule(finished, *getattr(args, key)))
            write_summary(args.out, summary, f"{title} (no fits). Command: {command}")
            return summary
    m3_other = {}
    for item in args.m3_other:
        group, _, count = item.partition(":")
        if not count.isdigit():
            p.error(f"--m3-other {item!r}: expected GROUP:N, e.g. QS:40")
        m3_other[group] = int(count)
    series = load_series(args.dev, args.m3, args.seed, args.dev_longest, args.ids, m3_other)
    if args.only_freq:
        series = [s for s in series if s["freq"] in args.only_freq]
    if args.limit is not None:
        series = series[: args.limit]
    windows = make_windows(series, args.origins, args.shorter_than, args.first_origin)
    source = "the rows of --windows" if args.windows else f"candidates {names}"
    print(f"{len(series)} series, {len(windows)} windows, {source}", flush=True)
    if args.rescore:
        table = rescore_defaults(pd.read_csv(args.out / "windows.csv"), windows)
    elif args.windows:
        table = finished_rows(args.windows, windows)
    else:
        rows: list[dict] = []
        cache: dict = {}
        for name in names:
            fit_seed = args.seed if args.fit_seed is None else args.fit_seed
            rows += evaluate(name, CANDIDATES[name], windows, fit_seed, args.workers, extra,
                             cache)
            print(f"  {name}: done ({rows[-1]['fit_seconds_new']} s of new fits)", flush=True)
        table = pd.DataFrame(rows)
    if args.baselines:
        table = pd.concat([table, pd.DataFrame(baseline_rows(windows, args.workers))],
                          ignore_index=True)
    summary = summarise(table)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "windows.csv", index=False)
    dev = (", ".join(args.ids) if args.ids else
           f"the {args.dev_longest} longest" if args.dev_longest else str(args.dev))
    note = (f"Rolling-origin validation on training data only: {len(series)} series "
            f"({dev} development-panel, {args.m3} M3 monthly, M3 other groups "
            f"{m3_other or 'none'}), {args.origins} origins each, "
            f"{len(windows)} windows; seed {args.seed}"
            + ("" if args.fit_seed is None else f", fits seeded {args.fit_seed}")
            + f". Command: {command}")
    if args.rescore:
        n = int((table["candidate"] == "defaults").sum())
        note += (f"\n\n`defaults` rebuilt from the none/log fits under the current auto rule "
                 f"({n} of {len(windows)} windows; the rest would need a Box-Cox fit).")
    write_summary(args.out, summary, note)
    return summary


if __name__ == "__main__":
    main()
