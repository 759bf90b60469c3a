"""The experiment package apart from the ``autogp run`` command (tested in test_cli.py):
sampling a panel and splitting series into training and held-out parts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autogp.data import from_arrays, from_frame
from autogp.experiments import stratified_sample
from autogp.experiments.runner import split_series
from autogp.experiments.sampling import read_strata


def test_limit_draws_a_stratified_reproducible_sample(tmp_path):
    rows = []
    cats = ["A"] * 30 + ["B"] * 60 + ["C"] * 10
    for i, cat in enumerate(cats):
        rows.append({"unique_id": f"s{i:03d}", "category": cat})
    path = tmp_path / "panel.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    series = [from_arrays(np.arange(5.0), np.ones(5), unique_id=r["unique_id"]) for r in rows]
    picked = stratified_sample(series, path, "unique_id", 10, seed=3)
    ids = [s.unique_id for s in picked]
    by_cat = pd.Series([cats[int(u[1:])] for u in ids]).value_counts().to_dict()
    assert by_cat == {"A": 3, "B": 6, "C": 1}  # proportional allocation
    assert ids == sorted(ids)  # file order kept
    again = [s.unique_id for s in stratified_sample(series, path, "unique_id", 10, seed=3)]
    other = [s.unique_id for s in stratified_sample(series, path, "unique_id", 10, seed=4)]
    assert ids == again and ids != other


def test_sample_without_a_category_column_is_a_plain_seeded_draw(tmp_path):
    path = tmp_path / "panel.csv"
    pd.DataFrame({"unique_id": [f"s{i}" for i in range(20)], "y": 1.0}).to_csv(path, index=False)
    series = [from_arrays(np.arange(5.0), np.ones(5), unique_id=f"s{i}") for i in range(20)]
    assert read_strata(path, "unique_id") is None
    picked = stratified_sample(series, path, "unique_id", 7, seed=0)
    assert len(picked) == 7 and len({s.unique_id for s in picked}) == 7
    assert stratified_sample(series, path, "unique_id", 50, seed=0) is series


def test_split_series_takes_the_split_column_then_the_holdout():
    plain = from_arrays(np.arange(10.0), np.arange(10.0))
    assert split_series(plain, None) == (plain, None)
    train, test = split_series(plain, 3)
    assert (train.n, test.n) == (7, 3) and test.t[0] == 7.0
    frame = pd.DataFrame({"ds": np.arange(10.0), "y": np.arange(10.0),
                          "split": ["train"] * 8 + ["test"] * 2})
    marked = from_frame(frame, split_col="split")
    train, test = split_series(marked, 3)  # the split column wins over --holdout
    assert (train.n, test.n) == (8, 2)
