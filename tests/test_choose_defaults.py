"""Smoke test of scripts/choose_defaults.py: two short series, a tiny model, one origin; the
table's values are recomputed here from the data file with plain numpy formulas."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
PANEL = ROOT / "benchmarks" / "data" / "dev_panel.csv.gz"
choose_defaults = load_script("choose_defaults")
main, training_windows = choose_defaults.main, choose_defaults.training_windows
SEASON = {"YS": 1, "QS": 4, "MS": 12, "W": 52, "D": 7, "B": 5}


def test_windows_stay_inside_the_training_part():
    # 40 training values, horizon 6, 3 origins: cutoffs 34, 28, 22; 10 needed to fit.
    assert training_windows(40, 6, 3, 10) == [(34, 1), (28, 2), (22, 3)]
    assert training_windows(40, 6, 3, 25) == [(34, 1), (28, 2)]
    for cutoff, _ in training_windows(100, 18, 4, 12):
        assert cutoff + 18 <= 100


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("choose")
    summary = main(["--tiny", "--workers", "1", "--out", str(out)])
    return summary, pd.read_csv(out / "windows.csv"), out


def test_table_values_match_independent_recomputation(run):
    summary, windows, out = run
    assert set(windows["candidate"]) == {"defaults", "transform=none"}
    assert (out / "summary.md").read_text().count("|") > 10
    panel = pd.read_csv(PANEL)
    for _, row in windows.iterrows():
        g = panel[(panel["unique_id"] == row["unique_id"]) & (panel["split"] == "train")]
        y_all = g["y"].dropna().to_numpy(dtype=float)
        cutoff, h = int(row["cutoff"]), int(row["h"])
        assert cutoff + h <= y_all.size  # the window's targets are training values
        y_train, y = y_all[:cutoff], y_all[cutoff : cutoff + h]
        np.testing.assert_allclose(json.loads(row["y"]), y)
        m = SEASON[g["freq"].iloc[0]]
        assert row["season"] == m
        median = np.asarray(json.loads(row["median"]))
        scale = np.mean(np.abs(y_train[m:] - y_train[:-m]))
        assert row["mase_median"] == pytest.approx(np.mean(np.abs(y - median)) / scale)
        lo, hi = np.asarray(json.loads(row["lo_95"])), np.asarray(json.loads(row["hi_95"]))
        assert row["coverage_95"] == pytest.approx(np.mean((lo <= y) & (y <= hi)))
        quantiles = {float(k): np.asarray(v) for k, v in json.loads(row["quantiles"]).items()}
        pinball = [np.mean(np.where(y >= q, tau * (y - q), (1 - tau) * (q - y)))
                   for tau, q in quantiles.items()]
        assert row["scaled_crps"] == pytest.approx(2 * np.mean(pinball) / np.mean(np.abs(y)))
    for _, s in summary.iterrows():
        rows = windows[windows["candidate"] == s["candidate"]]
        assert s["mase_median"] == pytest.approx(rows["mase_median"].mean())
        assert s["coverage_95"] == pytest.approx(rows["coverage_95"].mean())


def test_coverage_by_third_pools_steps_over_windows():
    # Window 1 (6 steps): misses steps 1 and 6; window 2 (3 steps): misses step 2.
    frame = pd.DataFrame({
        "y": [json.dumps([5, 0, 0, 0, 0, 5]), json.dumps([0, 5, 0])],
        "lo_95": [json.dumps([-1] * 6), json.dumps([-1] * 3)],
        "hi_95": [json.dumps([1] * 6), json.dumps([1] * 3)],
    })
    cov = choose_defaults.coverage_by_third(frame)
    # thirds: w1 steps (1,2) (3,4) (5,6), w2 steps (1) (2) (3)
    assert cov["coverage_95_first_third"] == pytest.approx(2 / 3)
    assert cov["coverage_95_middle_third"] == pytest.approx(2 / 3)
    assert cov["coverage_95_last_third"] == pytest.approx(2 / 3)
    frame.loc[1, "y"] = json.dumps([0, 0, 5])
    assert choose_defaults.coverage_by_third(frame)["coverage_95_middle_third"] == 1.0


def test_splice_takes_each_window_from_the_candidate_its_length_picks(tmp_path):
    """The spliced rule's row of a window is the ABOVE candidate's row when the window has at
    least N training values, the BELOW candidate's otherwise; its mean is recomputed here."""
    rng = np.random.default_rng(0)
    rows = []
    for name in ("defaults", "power=0.5"):
        for uid, cutoff in (("a", 30), ("b", 59), ("c", 60), ("d", 120)):
            y = rng.normal(size=3).tolist()
            rows.append({"candidate": name, "unique_id": uid, "origin": 1, "cutoff": cutoff,
                         "mase_median": rng.uniform(), "mase_mean": rng.uniform(),
                         "scaled_crps": rng.uniform(), "coverage_95": rng.uniform(),
                         "fit_seconds_new": 1.0, "y": json.dumps(y),
                         "lo_95": json.dumps([-9.0] * 3), "hi_95": json.dumps([9.0] * 3)})
    pd.DataFrame(rows).to_csv(tmp_path / "w.csv", index=False)
    summary = main(["--splice", "defaults", "power=0.5", "60", "--windows",
                    str(tmp_path / "w.csv"), "--out", str(tmp_path / "out")])
    table = pd.DataFrame(rows)
    pick = [(uid, "defaults" if c < 60 else "power=0.5") for uid, c in
            (("a", 30), ("b", 59), ("c", 60), ("d", 120))]
    expected = np.mean([table[(table.unique_id == u) & (table.candidate == c)]
                        ["mase_median"].item() for u, c in pick])
    rule = summary[summary["candidate"] == "power=0.5 from 60 points, defaults below"].iloc[0]
    assert rule["windows"] == 4
    assert rule["mase_median"] == pytest.approx(expected)
    assert rule["coverage_95_last_third"] == 1.0  # every y inside [-9, 9]


def test_longest_series_and_the_window_candidates():
    """--dev-longest picks the longest development series; a window candidate's values are
    the last data.window training values (0: all), as the fit sees them."""
    train = pd.read_csv(PANEL)
    sizes = train[train["split"] == "train"].dropna(subset=["y"]).groupby("unique_id").size()
    series = choose_defaults.load_series(0, 0, 0, longest=2)
    assert sorted(len(s["y"]) for s in series) == sorted(sizes.nlargest(2).tolist())
    from autogp.config import DataConfig
    from autogp.data import from_arrays

    y = np.arange(float(sizes.max()))
    window = {"series": from_arrays(y, y)}
    fitted = choose_defaults._fitted_values
    np.testing.assert_array_equal(fitted(window, {}), y[-DataConfig().window:])
    np.testing.assert_array_equal(fitted(window, {"data.window": 500}), y[-500:])
    np.testing.assert_array_equal(fitted(window, {"data.window": 0}), y)


def test_ids_pick_the_named_series_with_their_training_values():
    """--ids loads exactly the named development series, train rows only, in the given order;
    an unknown name is an error that names it."""
    panel = pd.read_csv(PANEL)
    names = ["fpp3.canadian_gas", "datasets.airmiles"]
    series = choose_defaults.load_series(0, 0, 0, ids=names)
    assert [s["uid"] for s in series] == names
    for s in series:
        rows = panel[(panel["unique_id"] == s["uid"]) & (panel["split"] == "train")]
        np.testing.assert_array_equal(s["y"], rows["y"].dropna().to_numpy())
    with pytest.raises(ValueError, match="no.such.series"):
        choose_defaults.load_series(0, 0, 0, ids=["no.such.series"])


def test_seasonal_log_swaps_only_seasonal_windows_left_in_data_units(tmp_path):
    """The rule's row of a window is LOG's where the window is seasonal, BASE fitted it in data
    units and LOG in log units; BASE's everywhere else. Its mean is recomputed here."""
    rng = np.random.default_rng(1)
    # (id, season, base's units, log candidate's units): only "b" is swapped
    cases = (("a", 1, "data", "log"), ("b", 12, "data", "log"), ("c", 12, "log", "log"),
             ("d", 4, "data", "data"), ("e", 4, "boxcox", "log"))
    rows = []
    for name in ("defaults", "transform=log"):
        for uid, season, base_units, log_units in cases:
            rows.append({"candidate": name, "unique_id": uid, "origin": 1, "cutoff": 40,
                         "season": season,
                         "transform": base_units if name == "defaults" else log_units,
                         "mase_median": rng.uniform(), "mase_mean": rng.uniform(),
                         "scaled_crps": rng.uniform(), "coverage_95": rng.uniform(),
                         "fit_seconds_new": 1.0, "y": json.dumps([0.0]),
                         "lo_95": json.dumps([-1.0]), "hi_95": json.dumps([1.0])})
    pd.DataFrame(rows).to_csv(tmp_path / "w.csv", index=False)
    summary = main(["--seasonal-log", "defaults", "transform=log", "--windows",
                    str(tmp_path / "w.csv"), "--out", str(tmp_path / "out")])
    table = pd.DataFrame(rows)
    pick = [(uid, "transform=log" if uid == "b" else "defaults") for uid, *_ in cases]
    expected = np.mean([table[(table.unique_id == u) & (table.candidate == c)]
                        ["scaled_crps"].item() for u, c in pick])
    rule = summary[summary["candidate"] == "defaults, seasonal in log units"].iloc[0]
    assert rule["windows"] == 5
    assert rule["scaled_crps"] == pytest.approx(expected)


def test_rescore_takes_each_window_from_the_fit_the_current_rule_makes(monkeypatch):
    """Under the current auto rule a window's defaults row is the none fit's, the log fit's, or
    (Box-Cox lambda in (0, 1)) the run's own Box-Cox defaults row; a Box-Cox window whose old
    row was not a Box-Cox fit is left out. The old rows stay as "defaults before"."""
    cd = choose_defaults
    lam_of = {"a": None, "b": 0.0, "c": 0.4, "d": 0.4}
    old_units = {"a": "log", "b": "data", "c": "boxcox", "d": "data"}
    rows = []
    for name in ("defaults", "transform=none", "transform=log"):
        for uid in lam_of:
            units = {"defaults": old_units[uid], "transform=none": "data",
                     "transform=log": "log"}[name]
            rows.append({"candidate": name, "unique_id": uid, "origin": 1, "transform": units,
                         "scaled_crps": len(rows), "fit_seconds_new": 5.0})
    table = pd.DataFrame(rows)
    monkeypatch.setattr(cd, "_resolved_transform", lambda w, overrides: lam_of[w["uid"]])
    out = cd.rescore_defaults(table, [{"uid": uid, "origin": 1} for uid in lam_of])
    new = out[out["candidate"] == "defaults"].set_index("unique_id")
    assert sorted(new.index) == ["a", "b", "c"]
    source = {"a": "transform=none", "b": "transform=log", "c": "defaults"}
    for uid, name in source.items():
        expected = table[(table.candidate == name) & (table.unique_id == uid)]
        assert new.loc[uid, "scaled_crps"] == expected["scaled_crps"].item()
    assert (new["fit_seconds_new"] == 0.0).all()
    before = out[out["candidate"] == "defaults before"]
    assert list(before["scaled_crps"]) == list(table[table.candidate == "defaults"]["scaled_crps"])
