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
