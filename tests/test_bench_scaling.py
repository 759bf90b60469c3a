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


def _half_hourly_csv(tmp_path, n: int, test: int):
    t = np.arange(n)
    frame = pd.DataFrame({"unique_id": "forecast.taylor",
                          "ds": pd.date_range("2000-06-05", periods=n, freq="30min"),
                          "y": 10 + np.sin(2 * np.pi * t / 48) + 0.3 * np.sin(2 * np.pi * t / 336),
                          "split": np.where(t >= n - test, "test", "train")})
    path = tmp_path / "long.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_baselines_part_scores_each_model_on_both_contexts(tmp_path):
    """A stand-in forecaster that returns seasonal naive as "Naive48" and the training mean as
    "Mean": the first scores exactly 1 against seasonal naive; the contexts are three weeks
    and the last BASELINE_CONTEXT points (here the whole training series), each handed over
    as the series' last points."""
    bench = _load()
    path, frame = _half_hourly_csv(tmp_path, 1200, 48)
    y_train = frame["y"].to_numpy()[:-48]
    seen = []

    def fake(y, h, season, cycles):
        seen.append((y.size, h, season, cycles))
        np.testing.assert_allclose(y, y_train[-y.size:], rtol=1e-15)  # CSV round trip
        naive = y[-season:][np.arange(h) % season]
        mean = np.full(h, y.mean())
        return {"Naive48": (naive, naive - 1.0, naive + 1.0), "Mean": (mean, mean, mean)}

    rows = bench.long_baselines(pd.read_csv(path), "forecast.taylor", 48, forecaster=fake)
    assert seen == [(1008, 48, 48, (48, 336)), (1152, 48, 48, (48, 336))]
    by = {(r["context"], r["model"]): r for r in rows}
    assert set(by) == {(c, m) for c in (1008, 1152) for m in ("Naive48", "Mean")}
    for c in (1008, 1152):
        assert by[c, "Naive48"]["mase_ratio"] == pytest.approx(1.0, rel=1e-12)
        assert by[c, "Naive48"]["coverage95"] == 1.0
        # the mean of a seasonal series misses the daily swing
        assert by[c, "Mean"]["mase_ratio"] > 2.0 and by[c, "Mean"]["coverage95"] < 0.5


def test_baselines_from_statsforecast_on_a_tiny_series(tmp_path):
    """The real statsforecast (the [bench] extra): every model's row is finite, and MSTL over
    the day and the week forecasts a noiseless day-plus-week series better than seasonal
    naive, which repeats yesterday."""
    pytest.importorskip("statsforecast")
    bench = _load()
    path, _ = _half_hourly_csv(tmp_path, 1200, 48)
    report = bench.main(["--parts", "baselines", "--long", str(path)])
    by = {(r["context"], r["model"]): r for r in report["baselines"]}
    assert {m for _, m in by} == {"SeasonalNaive", "AutoETS", "AutoTheta", "MSTL"}
    assert all(np.isfinite(r["mase_ratio"]) for r in by.values())
    assert by[1008, "SeasonalNaive"]["mase_ratio"] == pytest.approx(1.0, rel=1e-9)
    assert by[1008, "MSTL"]["mase_ratio"] < 0.5


def test_long_part_on_a_rolling_origin_forecasts_training_rows(tmp_path):
    """--origins 2: the training rows end two horizons before the test split, the next horizon
    of training rows is forecast, and no test value enters the scores (the test rows here are
    NaN, which would make any score NaN)."""
    bench = _load()
    path, frame = _half_hourly_csv(tmp_path, 80, 6)
    rng = np.random.default_rng(1)
    frame["y"] += 0.05 * rng.normal(size=len(frame))
    frame.loc[frame["split"] == "test", "y"] = np.nan
    frame.to_csv(path, index=False)
    report = bench.main(["--tiny", "--parts", "long", "--long", str(path), "--window", "0",
                         "--origins", "2"])
    (row,) = report["long"]
    assert "error" not in row, row
    # --tiny keeps the last 60 rows: 54 training rows; origin 2 fits the first 54 - 12 of them
    y = frame["y"].to_numpy()[-60:]
    assert row["origin"] == 2 and row["training_points"] == 42
    y_train, y_next = y[:42], y[42:48]
    # 42 points are under one season of 48: naive repeats the last value, MASE's scale is one step
    naive, scale = y_train[-1], np.mean(np.abs(np.diff(y_train)))
    assert row["mase_naive"] == pytest.approx(np.mean(np.abs(y_next - naive)) / scale, rel=1e-9)
    assert np.isfinite(row["mase"]) and 0.0 <= row["coverage95"] <= 1.0


def test_a_warm_refit_that_runs_out_of_time_keeps_the_cold_row(monkeypatch):
    # The child prints the cold fit's row before the warm refit; a timeout then cuts the
    # second row short. The cold figures must survive, marked as missing their warm part.
    import subprocess

    bench = _load()

    def stop(cmd, **_):
        raise subprocess.TimeoutExpired(cmd, 5, output=b'{"fit_s": 2.0, "mase": 0.5}\n{"fit_')

    monkeypatch.setattr(bench.subprocess, "run", stop)
    assert bench.run_case({"kind": "synthetic"}, 5) == {
        "fit_s": 2.0, "mase": 0.5, "warm_error": "timeout after 5 s"}

    def silent(cmd, **_):
        raise subprocess.TimeoutExpired(cmd, 5, output=None)

    monkeypatch.setattr(bench.subprocess, "run", silent)
    assert bench.run_case({"kind": "synthetic"}, 5) == {"error": "timeout after 5 s"}


def test_a_child_killed_by_a_signal_says_which(monkeypatch):
    # The kernel's OOM killer leaves no stderr; the row must name the signal, not "failed".
    import subprocess

    bench = _load()
    monkeypatch.setattr(bench.subprocess, "run",
                        lambda cmd, **_: subprocess.CompletedProcess(cmd, -9, "", ""))
    assert bench.run_case({"kind": "synthetic"}, 5) == {"error": "killed by SIGKILL"}


def test_a_child_that_prints_no_row_is_an_error_row(monkeypatch):
    # A clean exit without the JSON row must not become a row of timings alone.
    import subprocess

    bench = _load()
    monkeypatch.setattr(bench.subprocess, "run",
                        lambda cmd, **_: subprocess.CompletedProcess(cmd, 0, "warning\n", ""))
    assert bench.run_case({"kind": "synthetic"}, 5) == {"error": "no result row printed"}
