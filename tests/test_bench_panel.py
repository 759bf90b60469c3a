"""Smoke test of scripts/bench_panel.py on tiny inputs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def _script():
    return load_script("bench_panel")


def test_compare_reports_byte_identity_and_the_in_process_difference(tmp_path):
    bench = _script()
    base = pd.DataFrame({"unique_id": ["a", "a"], "ds": [1, 2], "AutoGP": [10.0, 20.0],
                         "AutoGP-lo-80": [8.0, 15.0]})
    paths = {}
    for name in ("local2", "dask2"):
        paths[name] = tmp_path / f"{name}.csv"
        base.to_csv(paths[name], index=False)
    off = base.copy()
    off.loc[1, "AutoGP-lo-80"] = 15.0 * (1 + 3e-12)
    paths["local1"] = tmp_path / "local1.csv"
    off.to_csv(paths["local1"], index=False)
    out = bench.compare(paths)
    assert out["worker_designs_byte_identical"] is True
    assert out["local1_byte_identical"] is False
    expected = abs(float(pd.read_csv(paths["local1"])["AutoGP-lo-80"][1]) - 15.0) / 15.0
    assert out["local1_max_relative_difference"] == pytest.approx(expected, rel=1e-6)
    base.assign(AutoGP=[10.0, 21.0]).to_csv(paths["dask2"], index=False)
    out = bench.compare(paths)
    assert out["worker_designs_byte_identical"] is False
    assert out["worker_designs_max_relative_difference"] == pytest.approx(1 / 20)  # vs local2


def test_run_fit_reads_the_fit_time_and_a_forecast_made_after_it():
    bench = _script()
    lines = ["fitted 4 series (64 observations, 2 particles) in 3.5 s, 1.0 s of it compiling",
             "forecast 4 series in this process in 1.25 s"]
    code = "import sys; sys.stderr.write(" + repr("\n".join(lines) + "\n") + ")"
    timing = bench.run_fit([sys.executable, "-c", code], dict(os.environ))
    assert timing["fit_seconds"] == 3.5 and timing["forecast_here_seconds"] == 1.25
    assert timing["fit_and_forecast_seconds"] == 4.75
    code = "import sys; sys.stderr.write(" + repr(lines[0] + "\n") + ")"
    timing = bench.run_fit([sys.executable, "-c", code], dict(os.environ))
    assert "forecast_here_seconds" not in timing and timing["fit_and_forecast_seconds"] == 3.5


def test_tiny_panel_has_four_series_of_one_length():
    panel = _script().tiny_panel()
    sizes = panel.groupby("unique_id").size()
    assert list(sizes.index) == ["w0", "w1", "w2", "w3"] and set(sizes) == {16}
    airline = pd.read_csv(ROOT / "examples" / "data" / "airline.csv")
    np.testing.assert_array_equal(panel["y"].to_numpy(), airline["y"].to_numpy()[:64])


@pytest.mark.slow
def test_bench_runs_end_to_end_on_the_tiny_panel(tmp_path):
    out = tmp_path / "bench.json"
    _script().main(["--tiny", "--designs", "local1,local2pfc", "--cold", "--no-resume",
                    "--phases", "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["series"] == 4 and set(result["designs"]) == {"local1", "local2pfc"}
    timing = result["designs"]["local1"]
    assert 0 < timing["fit_seconds"] <= timing["wall_seconds"]
    assert timing["series_per_second"] == pytest.approx(4 / timing["fit_seconds"], rel=1e-3)
    # the design that forecasts after its workers reports that time apart, within its wall
    parent = result["designs"]["local2pfc"]
    assert 0 < parent["forecast_here_seconds"]
    assert parent["fit_and_forecast_seconds"] == pytest.approx(
        parent["fit_seconds"] + parent["forecast_here_seconds"], abs=0.011)
    assert parent["fit_and_forecast_seconds"] <= parent["wall_seconds"]
    # one worker's profile: every series runs each of its rounds (2 in the tiny settings)
    # through the reweighting and the optimiser once and its one move's proposal, and the
    # three parts add up to the fit's time
    phases = result["worker_phases"]
    assert phases["series"] == 4
    calls = phases["program_calls"]
    assert calls["round_resample"] == calls["round_refine"] == calls["round_propose"] == 4 * 2
    assert calls["round_score"] == 4 * 2 * 2  # the reweighting's and the proposal's
    assert phases["program_calls"]["init_proposal"] == 4
    parts = (phases["compiling_seconds"] + sum(phases["programs_seconds"].values())
             + phases["rest_of_fit_seconds"])
    assert parts == pytest.approx(phases["fit_seconds"], abs=0.01)
    assert phases["compiling_seconds"] > 0  # a fresh process loads or compiles its programs


def test_keep_for_scoring_matches_held_out_rows_by_position(tmp_path):
    bench = _script()
    data = tmp_path / "panel.csv"
    pd.DataFrame({
        "unique_id": ["a"] * 4 + ["b"] * 3,
        "ds": [1, 2, 3, 4, 1, 2, 3],
        "y": [1.0, 2.0, 30.0, 40.0, 5.0, 6.0, 70.0],
        "split": ["train", "train", "test", "test", "train", "train", "test"],
    }).to_csv(data, index=False)
    fc = tmp_path / "fc.csv"  # autogp's stamps need not equal the file's
    pd.DataFrame({"unique_id": ["b", "a", "a"], "ds": [9, 7, 8],
                  "AutoGP": [71.0, 31.0, 41.0]}).to_csv(fc, index=False)
    panel = pd.DataFrame({"unique_id": ["a", "a", "b", "b"], "ds": [1, 2, 1, 2],
                          "y": [1.0, 2.0, 5.0, 6.0]})
    bench.keep_for_scoring(tmp_path / "kept", fc, panel, data)
    kept = pd.read_csv(tmp_path / "kept" / "forecast.csv")
    assert list(kept["y"]) == [70.0, 30.0, 40.0]
    assert list(kept["AutoGP"]) == [71.0, 31.0, 41.0]
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "kept" / "train.csv"), panel)
