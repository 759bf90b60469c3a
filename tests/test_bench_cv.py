"""Smoke test of scripts/bench_cv.py on tiny inputs, and its separate design's training data
checked against the cross-validation's own windows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from autogp.data import from_frame
from autogp.forecast.crossval import series_windows
from tests.helpers import load_script

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")


def test_the_separate_fits_train_on_the_windows_of_the_cross_validation():
    bench = load_script("bench_cv")
    ds = pd.date_range("2001-01-01", periods=40, freq="MS")
    df = pd.concat([pd.DataFrame({"unique_id": uid, "ds": ds[:n], "y": np.arange(n) + 1.0})
                    for uid, n in (("a", 40), ("b", 33))], ignore_index=True)
    frames = bench.window_frames(df, 4, 3)
    expected = []
    for series in from_frame(df, id_col="unique_id"):
        for w in series_windows(series, 4, 3, 4, panel=True):
            expected.append((w.unique_id, list(w.train.ds), list(w.train.y)))
    got = [(uid, list(f["ds"]), list(f["y"])) for uid, f in frames]
    assert got == expected


def test_a_tiny_run_reports_both_times_and_their_ratio(tmp_path):
    bench = load_script("bench_cv")
    report = bench.main(["--tiny", "--json", str(tmp_path / "cv.json")])
    assert report == json.loads((tmp_path / "cv.json").read_text())
    assert report["fits"] == report["series"] * report["windows"] == 4
    assert report["cv_s"] > 0 and report["separate_s"] > 0
    # Times are rounded to 0.01 s and the ratio to 0.001; on a tiny run the times' rounding
    # alone moves their quotient by up to 0.005 * (1 + cv/separate) / separate.
    cv, sep = report["cv_s"], report["separate_s"]
    slack = 0.005 * (1 + cv / sep) / (sep - 0.005) + 5e-4
    assert report["ratio_cv_over_separate"] == pytest.approx(cv / sep, abs=slack)
