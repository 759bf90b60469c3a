"""Smoke test of scripts/bench_scaling.py on tiny inputs: it runs and reports what it claims,
with the sparse bound below the exact likelihood where both run."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_script


def _load():
    return load_script("bench_scaling")


def test_seasonal_naive_scores_one_against_itself():
    bench = _load()
    rng = np.random.default_rng(0)
    y_train = rng.normal(size=50)
    naive = y_train[-12:][np.arange(12) % 12]
    out = bench.scores(y_train, naive + 1.0, naive, naive - 1.0, naive + 1.0, 12)
    assert math.isclose(out["mase_ratio"], 1.0, rel_tol=1e-12)
    assert out["coverage95"] == 1.0


def test_tiny_eval_part(tmp_path):
    bench = _load()
    report = bench.main(["--tiny", "--parts", "eval", "--json", str(tmp_path / "r.json")])
    (row,) = report["eval"]
    assert row["n"] == 40 and row["sparse_s"] > 0 and row["exact_s"] > 0
    assert row["bound_gap_per_point"]["min"] >= -1e-6  # a lower bound
    assert json.loads((tmp_path / "r.json").read_text())["eval"][0]["n"] == 40


def test_tiny_long_part_reads_a_csv(tmp_path):
    bench = _load()
    t = np.arange(80)
    ds = pd.date_range("2014-01-01", periods=t.size, freq="30min")  # half-hourly, as named
    frame = pd.DataFrame({"unique_id": "fpp2.elecdemand", "ds": ds,
                          "y": np.sin(2 * np.pi * t / 12) + 0.01 * t,
                          "split": np.where(t >= 74, "test", "train")})
    path = tmp_path / "long.csv"
    frame.to_csv(path, index=False)
    # window_seasons through --set (a generic config override), window through its own flag
    report = bench.main(["--tiny", "--parts", "long", "--long", str(path), "--window", "30",
                         "--set", "data.window_seasons=2", "--warm"])
    (row,) = report["long"]
    assert "error" not in row, row
    assert row["season"] == 48 and row["num_inducing"] == 0  # short: "auto" stays exact
    # --tiny keeps the last 60 rows (54 training, under two weeks of half-hours): --window 30
    # with window_seasons 2 keeps every 2nd of them (ceil(54 / 30)), 27 points
    assert (row["fitted_points"], row["training_points"]) == (27, 54)
    # --warm: the same fit again in the same process, with the same forecast
    assert row["warm_fit_s"] > 0 and row["warm_same_forecast"] is True
    assert 0.0 <= row["coverage95"] <= 1.0 and np.isfinite(row["mase_ratio"])
    # the posterior's heaviest structures, parseable, weights a share of the posterior
    from autogp.kernels.text import parse

    weights = [s["weight"] for s in row["structures"]]
    assert 1 <= len(weights) <= 5 and weights == sorted(weights, reverse=True)
    assert 0.0 < sum(weights) <= 1.0 + 1e-9
    for s in row["structures"]:
        parse(s["structure"])


def test_an_eval_size_that_runs_out_of_time_is_an_error_row_not_a_stall():
    bench = _load()
    (row,) = bench.eval_costs([40], particles=2, inducing=8, exact_max=40, repeats=1, seed=0,
                              timeout=0.01)
    assert row["n"] == 40 and row["error"].startswith("timeout")
    assert "sparse_s" not in row


def test_long_ids_must_name_series_of_the_csv(tmp_path):
    bench = _load()
    path = tmp_path / "long.csv"
    pd.DataFrame({"unique_id": "a", "ds": [0, 1], "y": [1.0, 2.0],
                  "split": ["train", "test"]}).to_csv(path, index=False)
    with pytest.raises(SystemExit, match=r"\['b'\]"):
        bench.main(["--tiny", "--parts", "long", "--long", str(path), "--long-ids", "b"])
