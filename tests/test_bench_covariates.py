"""Smoke test of ``scripts/bench_covariates.py`` on tiny settings, with its MASE recomputed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "covariates"


@pytest.mark.parametrize(("name", "covariates", "test_rows"), [
    ("elecdaily.csv", ["temperature", "workday"], 14),
    ("insurance.csv", ["tv_advert"], 6),
    ("uschange.csv", ["income"], 8),
])
def test_shipped_series_hold_their_covariates_and_test_rows(name, covariates, test_rows):
    frame = pd.read_csv(DATA / name)
    assert [c for c in frame.columns if c not in ("unique_id", "ds", "y", "split")] == covariates
    assert (frame["split"] == "test").sum() == test_rows
    assert (frame["split"].iloc[-test_rows:] == "test").all()
    assert frame[covariates + ["y"]].notna().all().all()


def _mase(y, f, y_train, m):
    scale = np.mean(np.abs(y_train[m:] - y_train[:-m]))
    return float(np.mean(np.abs(np.asarray(y) - np.asarray(f))) / scale)


def test_tiny_run_scores_every_model_as_numpy_does(tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_covariates.py"), "--tiny", "--json",
         str(out)], capture_output=True, text=True, env=env, timeout=900, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    row = report["series"]["fpp2.insurance"]
    frame = pd.read_csv(DATA / "insurance.csv")
    y = frame.loc[frame["split"] == "test", "y"].to_numpy()
    y_train = frame.loc[frame["split"] == "train", "y"].to_numpy()
    labels = ["autogp+X", "autogp+X lags 0,1", "autogp"]
    # The lags are chosen on the training rows: the candidate with the lowest CV MASE.
    choice = row["lag choice"]["0"]
    assert choice["label"] in labels and choice["cv_mase"][choice["label"]] == min(
        choice["cv_mase"].values())
    scored = [row[label]["0"] for label in labels]
    if "statsforecast" not in row:  # statsforecast is in the test extra
        scored += [row[label] for label in ("AutoARIMA+X", "AutoARIMA", "AutoETS")]
    for s in scored:
        assert len(s["point"]) == len(y)
        assert s["mase"] == pytest.approx(_mase(y, s["point"], y_train, 12), rel=1e-12)
        assert 0.0 <= s["coverage_95"] <= 1.0
    assert "fpp2.insurance" in proc.stdout
