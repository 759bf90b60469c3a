"""The experiment package apart from the ``autogp run`` command (tested in test_cli.py):
sampling a panel, splitting series into training and held-out parts, and the baselines and
published results an experiment is compared with."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from autogp.data import from_arrays, from_frame
from autogp.experiments import stratified_sample
from autogp.experiments.comparison import baselines_from_file
from autogp.experiments.published import read_reference
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


def _mixed_panel(path):
    """A panel of 40 series, dated (monthly, quarterly) and numbered ("other"), with strata, a
    group column, a missing value and the rows of two series interleaved."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        freq = ["MS", "QS", "other"][i % 3]
        n = 12 + i % 5
        stamps = (np.arange(n) + 1 if freq == "other" else
                  pd.date_range("2001-01-01", periods=n, freq=freq).strftime("%Y-%m-%d"))
        for k, ds in enumerate(stamps):
            y = "" if (i, k) == (7, 3) else f"{rng.normal(100, 5):.3f}"
            rows.append({"unique_id": f"N{i}", "ds": ds, "y": y, "freq": freq,
                         "category": "AB"[i % 2], "split": "test" if k >= n - 2 else "train"})
    rows[5], rows[20] = rows[20], rows[5]  # series N0 and N1 interleave
    pd.DataFrame(rows).to_csv(path, index=False)


@pytest.mark.filterwarnings("ignore:.*dropped 1 row")
@pytest.mark.parametrize(("group", "limit"), [(None, 9), ("QS", None), ("QS", 5),
                                              ("other", 4), ("MS", 100)])
def test_a_run_reads_only_its_series_and_gets_what_a_whole_read_gives(tmp_path, group, limit):
    from autogp.config import load_config
    from autogp.experiments.runner import group_members, series_reader, series_to_read
    from autogp.parallel.inputs import read_series_tolerant

    path = tmp_path / "panel.csv"
    _mixed_panel(path)
    config = load_config({"seed": 3, "data": {"id_col": "unique_id", "split_col": "split"},
                          "experiment": {"group_col": "freq" if group else None,
                                         "group_value": group}})
    # what a run read before: every series, then its group, then the sample
    whole, _ = read_series_tolerant(series_reader(config), path, "unique_id")
    members = group_members(path, config)
    expected = [s for s in whole if members is None or s.unique_id in members]
    if limit is not None:
        expected = stratified_sample(expected, path, "unique_id", limit, seed=3)
    ids = series_to_read(path, config, members, limit)
    assert ids == [s.unique_id for s in expected]
    got, errors = read_series_tolerant(series_reader(config, ids), path, "unique_id", ids=ids)
    assert not errors and [s.unique_id for s in got] == ids
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a.t, b.t)
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.is_test, b.is_test)
        assert a.axis == b.axis and list(a.stamps) == list(b.stamps)


def test_reading_some_series_of_a_csv_names_an_id_that_is_not_there(tmp_path):
    from autogp.data import DataError, read_csv

    path = tmp_path / "panel.csv"
    _mixed_panel(path)
    some = read_csv(path, id_col="unique_id", ids=["N5", "N2"])
    assert [s.unique_id for s in some] == ["N2", "N5"]  # the file's order
    with pytest.raises(DataError, match=r"no rows for the series 'N77', 'N99'"):
        read_csv(path, id_col="unique_id", ids=["N2", "N99", "N77"])
    with pytest.raises(DataError, match="give id_col"):
        read_csv(path, ids=["N2"])


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


def test_baselines_from_file_aligns_steps_and_names_what_is_missing(tmp_path):
    fc = pd.DataFrame({"unique_id": ["a"] * 3, "ds": ["x1", "x2", "x3"],
                       "M": [1.0, 2.0, 3.0], "M-lo-80": [0.0, 1.0, 2.0],
                       "M-hi-80": [2.0, 3.0, 4.0]})
    path = tmp_path / "baselines.csv"
    fc.to_csv(path, index=False)
    scored = pd.DataFrame({"unique_id": ["a", "a"], "ds": [10, 11], "y": [5.0, 6.0]})
    got = baselines_from_file(path, scored, [80])
    assert got["ds"].tolist() == [10, 11] and got["M"].tolist() == [1.0, 2.0]
    assert got["M-hi-80"].tolist() == [2.0, 3.0] and got["y"].tolist() == [5.0, 6.0]
    with pytest.raises(ValueError, match="no column 'M-lo-95' for the 95% interval"):
        baselines_from_file(path, scored, [95])
    with pytest.raises(ValueError, match=r"no forecasts for 1 series, e.g. \['b'\]"):
        baselines_from_file(path, scored.assign(unique_id="b"), [80])


def test_reference_rows_of_one_experiment_and_bad_values(tmp_path):
    path = tmp_path / "published.csv"
    path.write_text("experiment,model,metric,value,source\n"
                    "x,A,mase,0.5,paper\ny,B,mase,0.7,paper\n")
    assert read_reference(path, "x") == [{"model": "A", "metric": "mase", "value": 0.5,
                                          "source": "paper"}]
    assert read_reference(path, "z") == []
    path.write_text("experiment,model,metric,value,source\nx,A,mase,n/a,paper\n")
    with pytest.raises(ValueError, match=r"row 2: value 'n/a' is not a number"):
        read_reference(path, "x")


@pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")
def test_a_panel_read_whole_still_gets_its_group_and_sample(monkeypatch, tmp_path):
    # A row without an id: the ids cannot be chosen before reading (the whole, tolerant read
    # names that row), and the group and the sample are chosen after it, as from a whole read.
    from autogp.config import load_config
    from autogp.experiments.runner import group_members, run_single_experiment, series_to_read
    from tests.test_forecast import install_fake_smc

    install_fake_smc(monkeypatch)
    path = tmp_path / "panel.csv"
    _mixed_panel(path)
    frame = pd.read_csv(path)
    frame.loc[len(frame)] = {"unique_id": None, "ds": "2001-01-01", "y": 1.0, "freq": "QS",
                             "category": "A", "split": "train"}
    frame.to_csv(path, index=False)
    config = tmp_path / "run.toml"
    config.write_text(f"""seed = 3
[data]
path = "{path.name}"
id_col = "unique_id"
split_col = "split"
[smc]
workers = 1
[output]
dir = "{(tmp_path / "out").as_posix()}"
plot = ""
model = ""
[experiment]
group_col = "freq"
group_value = "QS"
""")
    run_config = load_config(config)
    members = group_members(path, run_config)
    assert series_to_read(path, run_config, members, 5) is None
    summary = run_single_experiment(config, limit=5, quiet=True)
    fitted = set(pd.read_csv(tmp_path / "out" / "forecast.csv")["unique_id"])
    quarterly = {f"N{i}" for i in range(40) if i % 3 == 1}
    assert summary["series"] == 5 and len(fitted) == 5 and fitted <= quarterly
    # The report's figures: AutoGP's scores and structure families; without baselines the
    # figure of the series it lost and won most on is left out, and the report says why.
    out, report = tmp_path / "out", (tmp_path / "out" / "report.md").read_text()
    for name in ("metric_by_group.png", "structure_families.png"):
        assert f"]({name})" in report and (out / name).read_bytes()[:4] == b"\x89PNG"
    assert not (out / "lost_and_won.png").exists()
    assert "No figure of the series AutoGP lost and won most: the run has no baselines" in report
    scores = pd.read_csv(out / "scores.csv")
    assert set(scores["unique_id"]) == fitted and set(scores["model"]) == {"AutoGP"}
