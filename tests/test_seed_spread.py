"""lab/seed_spread.py: its per-series table against hand computation, and a tiny run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import lab.seed_spread as seed_spread


def _script():
    return seed_spread


def test_per_series_rmse_and_inside_count_by_hand(tmp_path):
    pd.DataFrame({"unique_id": ["a", "b"], "mase": [1.5, 0.5],
                  "crps_mixture_scaled": [0.1, 0.2], "coverage_95": [0.5, 1.0]}
                 ).to_csv(tmp_path / "metrics.csv", index=False)
    pd.DataFrame({
        "unique_id": ["a", "a", "b", "b", "b"],
        "y": [1.0, 4.0, 2.0, 2.0, np.nan],  # a row without truth is not scored
        "AutoGP": [2.0, 2.0, 2.0, 3.0, 9.0],
        "AutoGP-lo-95": [0.0, 0.0, 1.0, 2.5, 0.0],
        "AutoGP-hi-95": [3.0, 3.0, 3.0, 4.0, 10.0],
    }).to_csv(tmp_path / "forecast.csv", index=False)
    table = _script().per_series(tmp_path).set_index("unique_id")
    assert table.loc["a", "rmse"] == pytest.approx(np.sqrt((1 + 4) / 2))
    assert table.loc["b", "rmse"] == pytest.approx(np.sqrt((0 + 1) / 2))
    assert table.loc["a", "inside_95"] == 1 and table.loc["b", "inside_95"] == 1
    assert list(table["points"]) == [2, 2]
    assert table.loc["a", "mase"] == 1.5


def test_share_doubled_counts_series_whose_worst_seed_is_over_twice_their_best():
    table = pd.DataFrame({"unique_id": ["a", "a", "a", "b", "b", "c", "c"],
                          "mase": [1.0, 2.0, 1.5, 1.0, 2.01, 0.3, 0.3]})
    assert _script().share_doubled(table) == pytest.approx(1 / 3)  # only b: 2.01 > 2 * 1.0
    assert _script().share_doubled(table, factor=1.5) == pytest.approx(2 / 3)


def test_spread_is_range_over_mean():
    assert _script().spread(np.array([1.0, 1.2, 0.8])) == pytest.approx(0.4)


@pytest.mark.slow
def test_tiny_run_same_seed_same_scores(tmp_path):
    out = tmp_path / "spread.json"
    result = _script().main(["--tiny", "--seeds", "3,3", "--out", str(tmp_path / "runs"),
                             "--json", str(out)])
    first, second = result["per_seed"]
    assert first["points"] == 12 and first["mase"] == second["mase"]
    assert result["mase_spread"] == 0.0 and result["share_mase_doubled"] == 0.0
    assert json.loads(out.read_text())["seeds"] == [3, 3]


def _window_rows():
    """Two windows, three seeds, by hand: window a (y = [1, 2], MASE scale 1) and b (y = [0, 0],
    scale 2); seed 0 forecasts a exactly, so a's scale comes from another seed's row."""
    forecasts = {("a", 0): [1, 2], ("a", 1): [2, 3], ("a", 2): [0, 1],
                 ("b", 0): [2, 2], ("b", 1): [4, 4], ("b", 2): [-2, -2]}
    truth, scale = {"a": [1, 2], "b": [0, 0]}, {"a": 1.0, "b": 2.0}
    return pd.DataFrame([
        {"unique_id": w, "origin": 1, "fit_seed": s, "season": 1, "h": 2,
         "y": json.dumps(truth[w]), "median": json.dumps(f),
         "mase_median": float(np.mean(np.abs(np.subtract(truth[w], f)))) / scale[w]}
        for (w, s), f in forecasts.items()])


def test_pooled_window_mase_scores_the_mean_of_the_seeds_medians():
    rows = _window_rows()
    single = _script().pooled_window_mase(rows, (1,))
    assert single["a@1"] == pytest.approx(1.0) and single["b@1"] == pytest.approx(2.0)
    pooled = _script().pooled_window_mase(rows, (0, 1))  # a: [1.5, 2.5]; b: [3, 3]
    assert pooled["a@1"] == pytest.approx(0.5) and pooled["b@1"] == pytest.approx(1.5)
    assert _script().pooled_window_mase(rows, (1, 2))["a@1"] == pytest.approx(0.0)


def test_window_spread_by_hand():
    one = _script().window_spread(_window_rows(), pool=1)
    # per seed: a 0 / 1 / 1, b 1 / 2 / 1; means 0.5 / 1.5 / 1.0
    assert one["mean_mase"] == pytest.approx(1.0) and one["mase_spread"] == pytest.approx(1.0)
    assert one["share_mase_doubled"] == pytest.approx(0.5)  # a only: b's 2 is not over 2 * 1
    assert one["pairwise_doubled"] == pytest.approx(1 / 3)  # a in (0, 1) and (0, 2)
    two = _script().window_spread(_window_rows(), pool=2)
    # runs (0, 1), (0, 2), (1, 2): a 0.5 / 0.5 / 0, b 1.5 / 0 / 0.5
    assert two["runs"] == 3 and two["mean_mase"] == pytest.approx(0.5)
    assert np.isnan(two["pairwise_doubled"])  # three seeds hold no two disjoint pairs


def test_windows_mode_reports_each_group_and_pool(tmp_path):
    rows = _window_rows()
    paths = []
    for seed in (0, 1, 2):  # one file per seed, no fit_seed column: the order gives it
        paths.append(tmp_path / f"seed{seed}.csv")
        rows[rows["fit_seed"] == seed].drop(columns="fit_seed").to_csv(paths[-1], index=False)
    out = tmp_path / "spread.json"
    result = _script().main(["--windows", *map(str, paths), "--pool", "1", "2",
                             "--json", str(out)])
    assert [g["pool"] for g in result["groups"]] == [1, 2]
    assert result["groups"][0]["mean_mase"] == pytest.approx(1.0)
    assert json.loads(out.read_text())["groups"][1]["mean_mase"] == pytest.approx(0.5)
