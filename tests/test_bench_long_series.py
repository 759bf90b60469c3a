"""Smoke test of scripts/bench_long_series.py on a tiny long series: both methods run, the
stage reports what it did, and seasonal naive's MASE is what numpy says."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tests.helpers import load_script

TINY = ["smc.num_particles=2", "smc.num_rounds=2", "smc.structure_moves=1", "refine.steps=2",
        "grammar.max_depth=2", "data.window=60", "data.window_seasons=0",
        "data.full_resolution_points=90", "data.full_resolution_steps=2",
        "data.transform=none", "data.full_resolution_from=0"]


def test_tiny_long_series(tmp_path):
    bench = load_script("bench_long_series")
    t = np.arange(200)
    y = np.sin(2 * np.pi * t / 48) + 0.01 * t + 0.1 * np.random.default_rng(0).normal(size=200)
    frame = pd.DataFrame({"unique_id": "forecast.taylor",
                          "ds": pd.date_range("2000-06-05", periods=200, freq="30min"),
                          "y": y, "split": np.where(t >= 190, "test", "train")})
    csv = tmp_path / "long.csv"
    frame.to_csv(csv, index=False)
    report = bench.main(["--csv", str(csv), "--timeout", "600", "--json",
                         str(tmp_path / "r.json"), "--set", *TINY])
    window, full = report["rows"]
    assert (window["method"], full["method"]) == ("window", "full")
    assert "error" not in window and "error" not in full, (window, full)
    assert "stage_points" not in window and full["stage_points"] == 90
    assert full["fit_s"] == window["fit_s"] + full["stage_s"]  # one SMC, then the stage
    # both rows searched as the defaults search a series the stage takes: GE's weight on M32
    for row in (window, full):
        assert row["ge_weight_to"] == "M32"
        assert not any("GE" in s["structure"] for s in row["structures"])
    # seasonal naive (season 48) scaled by its own in-sample errors
    y_train, y_test = y[:190], y[190:]
    naive = y_train[-48:][np.arange(10)]
    scale = np.mean(np.abs(y_train[48:] - y_train[:-48]))
    expected = np.mean(np.abs(y_test - naive)) / scale
    for row in (window, full):
        assert abs(row["mase_naive"] - expected) < 1e-12
        assert row["mase"] > 0 and 0 <= row["coverage95"] <= 1
    assert json.loads((tmp_path / "r.json").read_text())["rows"][1]["stage_points"] == 90
    assert "| forecast.taylor | full |" in bench.markdown(report["rows"])


def test_origin_scores_training_rows(tmp_path, monkeypatch):
    """--origin 1: each child gets the origin, whose rows are the last horizon of training
    rows (the test split dropped); the report records it."""
    bench = load_script("bench_long_series")
    t = np.arange(100)
    frame = pd.DataFrame({"unique_id": "s", "ds": t, "y": t * 1.0,
                          "split": np.where(t >= 90, "test", "train")})
    csv = tmp_path / "long.csv"
    frame.to_csv(csv, index=False)
    specs = []
    monkeypatch.setattr(bench, "run_case", lambda spec, timeout: specs.append(spec) or [
        {"method": m, "error": "not fitted"} for m in spec["methods"]])
    report = bench.main(["--csv", str(csv), "--origin", "1"])
    assert [s["origin"] for s in specs] == [1] and report["origin"] == 1
    train, test = bench._scaling().long_rows(bench._read(str(csv), "s"), "s",
                                             origin=specs[0]["origin"])
    assert train["ds"].tolist() == list(range(80)) and test["ds"].tolist() == list(range(80, 90))
