"""Smoke test of lab/choose_defaults.py: two short series, a tiny model, one origin; the
table's values are recomputed here from the data file with plain numpy formulas."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lab.choose_defaults as choose_defaults

ROOT = Path(__file__).resolve().parents[1]
PANEL = ROOT / "benchmarks" / "data" / "dev_panel.csv.gz"
main, training_windows = choose_defaults.main, choose_defaults.training_windows
SEASON = {"YS": 1, "QS": 4, "MS": 12, "W": 52, "D": 7, "B": 5}


def test_windows_stay_inside_the_training_part():
    # 40 training values, horizon 6, 3 origins: cutoffs 34, 28, 22; 10 needed to fit.
    assert training_windows(40, 6, 3, 10) == [(34, 1), (28, 2), (22, 3)]
    assert training_windows(40, 6, 3, 25) == [(34, 1), (28, 2)]
    for cutoff, _ in training_windows(100, 18, 4, 12):
        assert cutoff + 18 <= 100


def test_shorter_than_keeps_exactly_the_short_windows():
    series = choose_defaults.load_series(3, 0, 0)
    every = choose_defaults.make_windows(series, 3)
    short = choose_defaults.make_windows(series, 3, shorter_than=30)
    expected = [(w["uid"], w["origin"]) for w in every if w["cutoff"] < 30]
    assert 0 < len(expected) < len(every)
    assert [(w["uid"], w["origin"]) for w in short] == expected
    later = choose_defaults.make_windows(series, 3, first_origin=2)
    assert [(w["uid"], w["origin"], w["cutoff"]) for w in later] == [
        (w["uid"], w["origin"], w["cutoff"]) for w in every if w["origin"] >= 2]
    assert {w["origin"] for w in later} == {2, 3}


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


def test_choose_by_origin_takes_each_series_row_from_its_better_candidate_at_origin_2(tmp_path):
    """Each series' chosen origin-1 row is the candidate with the lower MASE at its origin 2;
    a series with no origin 2 is left out; the rule's mean is recomputed here."""
    rng = np.random.default_rng(1)
    rows = []
    for name in ("defaults", "IBM=6"):
        for uid, origins in (("a", (1, 2)), ("b", (1, 2)), ("c", (1, 2)), ("d", (1,))):
            for origin in origins:
                rows.append({"candidate": name, "unique_id": uid, "origin": origin,
                             "cutoff": 40 - 8 * origin, "mase_median": rng.uniform(),
                             "mase_mean": rng.uniform(), "scaled_crps": rng.uniform(),
                             "coverage_95": rng.uniform(), "fit_seconds_new": 1.0,
                             "y": json.dumps([0.0] * 3), "lo_95": json.dumps([-1.0] * 3),
                             "hi_95": json.dumps([1.0] * 3)})
    table = pd.DataFrame(rows)
    table.to_csv(tmp_path / "w.csv", index=False)
    summary = main(["--choose-by-origin", "defaults", "IBM=6", "--windows",
                    str(tmp_path / "w.csv"), "--out", str(tmp_path / "out")])

    def score(uid, name, origin, metric="mase_median"):
        return table[(table.unique_id == uid) & (table.candidate == name)
                     & (table.origin == origin)][metric].item()

    picks = {u: min(("defaults", "IBM=6"), key=lambda c, u=u: score(u, c, 2)) for u in "abc"}
    assert len(set(picks.values())) == 2  # the draw exercises both sides
    rule = summary[summary["candidate"] == "defaults or IBM=6 by origin 2's mase_median"].iloc[0]
    assert rule["windows"] == 3
    assert rule["mase_median"] == pytest.approx(np.mean([score(u, c, 1) for u, c in picks.items()]))
    assert rule["scaled_crps"] == pytest.approx(
        np.mean([score(u, c, 1, "scaled_crps") for u, c in picks.items()]))
    with pytest.raises(ValueError, match="origin-2 rows"):
        choose_defaults.choose_by_earlier_origin(table[table.origin == 1], "defaults", "IBM=6")


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


def _fake_statsforecast(calls):
    """A stand-in for ``statsforecast_forecasts``: every model forecasts the last value, with
    interval half-widths level / 100 (so the quantiles are known), in the statsforecast layout."""

    def fake(train, h, levels, *, season_length, freq, n_jobs, models):
        calls.append((season_length, sorted(pd.unique(train["unique_id"]))))
        frames = []
        for uid, g in train.groupby("unique_id", sort=False):
            last = g["y"].iloc[-1]
            frame = {"unique_id": uid, "ds": pd.date_range("2100-01-01", periods=h, freq="MS")}
            for name in models:
                frame[name] = np.full(h, last)
                for level in levels:
                    frame[f"{name}-lo-{level}"] = np.full(h, last - level / 100)
                    frame[f"{name}-hi-{level}"] = np.full(h, last + level / 100)
            frames.append(pd.DataFrame(frame))
        return pd.concat(frames, ignore_index=True), dict.fromkeys(models, 0.5)

    return fake


def test_baseline_rows_score_each_model_on_the_same_windows(monkeypatch):
    """--baselines: statsforecast is called once per season with each window's own training
    values, and each model's row is scored from its point forecast and interval bounds
    exactly as the candidates' rows are (recomputed here with numpy)."""
    import autogp.experiments.baselines as baselines

    calls = []
    monkeypatch.setattr(baselines, "statsforecast_forecasts", _fake_statsforecast(calls))
    series = choose_defaults.load_series(0, 0, 0, ids=["fpp2.oil", "fpp2.austourists"])
    windows = choose_defaults.make_windows(series, 2)
    rows = choose_defaults.baseline_rows(windows, models=("AutoETS", "Naive"))
    assert sorted(s for s, _ in calls) == [1, 4]  # yearly and quarterly windows apart
    assert {r["candidate"] for r in rows} == {"baseline:AutoETS", "baseline:Naive"}
    assert len(rows) == 2 * len(windows)
    for row, w in zip(rows[: len(windows)], windows, strict=True):
        y_train, y, m = w["series"].y, w["target"], w["season"]
        assert (row["unique_id"], row["origin"]) == (w["uid"], w["origin"])
        last = y_train[-1]
        scale = np.mean(np.abs(y_train[m:] - y_train[:-m]))
        assert row["mase_median"] == pytest.approx(np.mean(np.abs(y - last)) / scale)
        assert row["coverage_95"] == pytest.approx(np.mean(np.abs(y - last) <= 0.95))
        quantiles = json.loads(row["quantiles"])
        for tau, offset in ((0.025, -0.95), (0.25, -0.5), (0.5, 0.0), (0.9, 0.8)):
            np.testing.assert_allclose(quantiles[str(tau)], last + offset)
        pinball = [np.mean(np.where(y >= last + off, tau * (y - last - off),
                                    (1 - tau) * (last + off - y)))
                   for tau, off in ((0.025, -0.95), (0.05, -0.9), (0.1, -0.8), (0.25, -0.5),
                                    (0.5, 0.0), (0.75, 0.5), (0.9, 0.8), (0.95, 0.9),
                                    (0.975, 0.95))]
        assert row["scaled_crps"] == pytest.approx(2 * np.mean(pinball) / np.mean(np.abs(y)))


def test_baselines_beside_finished_rows_need_every_window(monkeypatch, tmp_path):
    """--windows with --baselines alone: the finished run's rows on exactly the script's
    windows, plus the baselines' rows; a candidate lacking a window is an error naming it."""
    import autogp.experiments.baselines as baselines

    monkeypatch.setattr(baselines, "statsforecast_forecasts", _fake_statsforecast([]))
    series = choose_defaults.load_series(0, 0, 0, ids=["fpp2.oil"])
    windows = choose_defaults.make_windows(series, 2)
    rows = [{"candidate": "defaults", "unique_id": w["uid"], "origin": w["origin"],
             "cutoff": w["cutoff"], "season": w["season"], "mase_median": 1.0 + k,
             "mase_mean": 1.0, "scaled_crps": 0.1, "coverage_95": 1.0,
             "fit_seconds_new": 3.0, "y": json.dumps([0.0]), "lo_95": json.dumps([-1.0]),
             "hi_95": json.dumps([1.0])} for k, w in enumerate(windows)]
    other = dict(rows[0], unique_id="not.in.the.run")  # a window the script does not make
    pd.DataFrame([*rows, other]).to_csv(tmp_path / "w.csv", index=False)
    summary = main(["--ids", "fpp2.oil", "--m3", "0", "--baselines", "--windows",
                    str(tmp_path / "w.csv"), "--out", str(tmp_path / "out")]).set_index("candidate")
    assert summary.loc["defaults", "windows"] == len(windows)
    assert summary.loc["defaults", "mase_median"] == pytest.approx(1.0 + (len(windows) - 1) / 2)
    assert summary.loc["baseline:AutoARIMA", "windows"] == len(windows)
    pd.DataFrame(rows[:1]).to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(ValueError, match="'defaults' has no row for 1 of the 2 windows"):
        main(["--ids", "fpp2.oil", "--m3", "0", "--baselines", "--windows",
              str(tmp_path / "short.csv"), "--out", str(tmp_path / "out2")])


def test_baselines_from_statsforecast_on_two_windows():
    """The real statsforecast (the [bench] extra): every baseline row has finite scores and
    intervals that contain the point forecast."""
    pytest.importorskip("statsforecast")
    series = choose_defaults.load_series(0, 0, 0, ids=["fpp2.austourists"])
    windows = choose_defaults.make_windows(series, 1)
    rows = choose_defaults.baseline_rows(windows, models=("AutoETS", "SeasonalNaive"))
    assert len(rows) == 2
    for row in rows:
        assert np.isfinite([row["mase_median"], row["scaled_crps"]]).all()
        lo, med, hi = (np.asarray(json.loads(row[k])) for k in ("lo_95", "median", "hi_95"))
        assert np.all(lo <= med) and np.all(med <= hi)
    naive = rows[1]
    y_train = windows[0]["series"].y
    np.testing.assert_allclose(json.loads(naive["median"]), np.tile(y_train[-4:], 2))


def test_calibrated_candidates_share_the_defaults_fits_and_only_widen(tmp_path):
    main(["--tiny", "--workers", "1", "--candidates", "defaults,calibrate+prior=0",
          "--out", str(tmp_path)])
    windows = pd.read_csv(tmp_path / "windows.csv")
    plain = windows[windows["candidate"] == "defaults"].set_index("unique_id")
    wide = windows[windows["candidate"] == "calibrate+prior=0"].set_index("unique_id")
    assert (plain["predictive_scale"] == 1.0).all() and (wide["predictive_scale"] >= 1.0).all()
    assert (wide["fit_seconds_new"] == 0.0).all()  # no fits of its own
    for uid in plain.index:
        a, b = plain.loc[uid], wide.loc[uid]
        lo_a, hi_a, lo_b, hi_b = (np.asarray(json.loads(v)) for v in
                                  (a["lo_95"], a["hi_95"], b["lo_95"], b["hi_95"]))
        if b["predictive_scale"] == 1.0:
            np.testing.assert_array_equal(lo_a, lo_b)
            np.testing.assert_array_equal(hi_a, hi_b)
        else:
            assert np.all(hi_b - lo_b > hi_a - lo_a)
        assert a["transform"] == b["transform"]
