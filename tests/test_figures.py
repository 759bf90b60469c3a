"""The figures of an experiment's report (autogp.experiments.figures), drawn from small
synthetic tables: labelled axes, a legend naming each model, dates on date axes, tick labels
that do not overlap, and the numbers behind the bars and the chosen series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib import dates as mdates
from matplotlib.ticker import MaxNLocator

from autogp.experiments import figures

MODELS = ("AutoGP", "AutoETS", "AutoTheta")
H = 6


def _panel(groups=("m3_monthly", "m3_yearly"), n=8, dated=True, seed=0):
    """(scores, train, forecast, baselines) of ``n`` series per group: AutoGP and two
    baselines, with levels 80 and 95."""
    rng = np.random.default_rng(seed)
    scores, train, forecast, baselines = [], [], [], []
    for g in groups:
        for i in range(n):
            uid = f"{g}-{i}"
            scores += [{"unique_id": uid, "model": m, "group": g, "mase": rng.gamma(2, 0.5),
                        "scaled_crps": rng.gamma(2, 0.05)} for m in MODELS]
            ds = (pd.date_range("2000-01-01", periods=40 + H, freq="MS") if dated
                  else np.arange(1.0, 41 + H))
            y = 50 + rng.normal(size=40 + H).cumsum()
            train.append(pd.DataFrame({"unique_id": uid, "ds": ds[:40], "y": y[:40]}))
            fc = pd.DataFrame({"unique_id": uid, "ds": ds[40:], "y": y[40:], "AutoGP": y[39]})
            for level, width in ((80, 1.3), (95, 2.0)):
                fc[f"AutoGP-lo-{level}"] = fc["AutoGP"] - width
                fc[f"AutoGP-hi-{level}"] = fc["AutoGP"] + width
            forecast.append(fc)
            base = fc[["unique_id", "ds", "y"]].copy()
            for m in MODELS[1:]:
                base[m] = y[38] + rng.normal()
            baselines.append(base)
    return (pd.DataFrame(scores), pd.concat(train, ignore_index=True),
            pd.concat(forecast, ignore_index=True), pd.concat(baselines, ignore_index=True))


def _no_overlap(fig) -> None:
    """Every axis' visible tick labels, x and y, sit apart once drawn."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for labels, start, end in ((ax.get_xticklabels(), "x0", "x1"),
                                   (ax.get_yticklabels(), "y0", "y1")):
            boxes = sorted((t.get_window_extent(renderer) for t in labels
                            if t.get_text() and t.get_visible()),
                           key=lambda b: getattr(b, start))
            for a, b in zip(boxes, boxes[1:], strict=False):
                assert getattr(a, end) <= getattr(b, start), "tick labels overlap"


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


# ---- metric by group -------------------------------------------------------------------------
def test_bootstrap_interval_is_the_numpy_percentile_bootstrap_with_the_same_seed():
    x = np.random.default_rng(5).gamma(2.0, 1.0, size=37)
    values = np.append(x, np.nan)  # missing scores are left out
    mean, lo, hi = figures.bootstrap_interval(values, seed=11, n_boot=500)
    means = x[np.random.default_rng(11).integers(0, x.size, size=(500, x.size))].mean(axis=1)
    assert mean == pytest.approx(x.mean())
    assert (lo, hi) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert lo < mean < hi
    assert np.isnan(figures.bootstrap_interval([np.nan])).all()


def test_metric_figure_bars_are_the_group_means_with_their_intervals():
    scores, *_ = _panel()
    table = figures.metric_intervals(scores, ["mase"], seed=3, n_boot=400)
    assert list(pd.unique(table["group"])) == ["m3_monthly", "m3_yearly"]
    for _, row in table.iterrows():
        cell = scores[(scores["group"] == row["group"]) & (scores["model"] == row["model"])]
        expected = figures.bootstrap_interval(cell["mase"], seed=3, n_boot=400)
        assert (row["mean"], row["lo"], row["hi"]) == pytest.approx(expected)
        assert row["lo"] <= row["mean"] <= row["hi"] and row["series"] == 8
    fig = figures.plot_metric_by_group(scores, seed=3, n_boot=400)
    top, bottom = fig.axes
    assert "MASE" in top.get_ylabel() and "÷" in top.get_ylabel()  # a ratio: its unit said
    assert "scaled CRPS" in bottom.get_ylabel() and bottom.get_xlabel() == "group of series"
    assert _legend_texts(fig) == list(MODELS)
    heights = [p.get_height() for p in top.patches][:2]  # AutoGP's bars, group by group
    means = table[(table["model"] == "AutoGP")]["mean"].to_numpy()
    np.testing.assert_allclose(heights, means)
    assert [t.get_text() for t in top.get_xticklabels()] == ["m3_monthly\n(8 series)",
                                                            "m3_yearly\n(8 series)"]
    _no_overlap(fig)


def test_many_numeric_groups_keep_their_tick_labels_apart():
    scores, *_ = _panel(groups=tuple(range(1, 25)), n=3)
    fig = figures.plot_metric_by_group(scores, ["mase"], group_label="forecast step")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:3] == ["1", "3", "5"]  # every second of 24 steps
    _no_overlap(fig)


# ---- where AutoGP lost and won most ----------------------------------------------------------
def test_lost_and_won_are_the_largest_and_smallest_ratios_to_the_best_baseline():
    rows = []
    for i, (ours, ets, theta) in enumerate([(2.0, 1.0, 4.0), (1.0, 2.0, 2.0), (3.0, 1.0, 0.5),
                                            (1.0, np.nan, 1.0), (1.0, 0.0, 5.0)]):
        rows += [{"unique_id": f"s{i}", "model": m, "mase": v}
                 for m, v in zip(MODELS, (ours, ets, theta), strict=True)]
    chosen = figures.lost_and_won(pd.DataFrame(rows), k=2)
    # Ratios: s0 2/1, s1 1/2, s2 3/0.5, s3 1/1; s4's best baseline has MASE 0: left out.
    assert chosen["unique_id"].tolist() == ["s2", "s0", "s1", "s3"]
    assert chosen["kind"].tolist() == ["lost", "lost", "won", "won"]
    assert chosen["baseline"].tolist() == ["AutoTheta", "AutoETS", "AutoETS", "AutoTheta"]
    np.testing.assert_allclose(chosen["ratio"], [6.0, 2.0, 0.5, 1.0])
    only_ours = pd.DataFrame(rows).query("model == 'AutoGP'")
    assert figures.lost_and_won(only_ours).empty


@pytest.mark.parametrize("dated", [True, False])
def test_lost_and_won_figure_has_each_series_and_model_on_a_labelled_time_axis(dated):
    scores, train, forecast, baselines = _panel(groups=("g",), dated=dated)
    chosen = figures.lost_and_won(scores)
    fig = figures.plot_lost_and_won(chosen, train, forecast, baselines)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 6
    titles = [ax.get_title() for ax in shown]
    assert all(uid in title for uid, title in zip(chosen["unique_id"], titles, strict=True))
    assert fig.get_supylabel() == "value (each series in its own units)"
    assert fig.get_supxlabel() == ("date" if dated else
                                   "time step (the series' own unit: a year, a quarter, ...)")
    legend = _legend_texts(fig)
    assert {"AutoGP", "AutoGP 80% interval", "AutoGP 95% interval", "history",
            "held out"} <= set(legend)
    assert set(chosen["baseline"]) <= set(legend)  # each best baseline is named
    for ax in shown:
        formatter, locator = ax.xaxis.get_major_formatter(), ax.xaxis.get_major_locator()
        if dated:
            assert isinstance(formatter, mdates.ConciseDateFormatter)
        else:
            assert isinstance(locator, MaxNLocator)
    first = shown[0]
    uid = chosen["unique_id"].iloc[0]
    (line,) = [ln for ln in first.get_lines() if ln.get_label() == "AutoGP"]
    np.testing.assert_allclose(line.get_ydata(), forecast.loc[forecast["unique_id"] == uid,
                                                              "AutoGP"])
    _no_overlap(fig)


# ---- structure families ----------------------------------------------------------------------
def test_a_family_is_the_set_of_atoms_of_a_structure():
    assert figures.family_of("LIN + GE") == figures.family_of("GE + LIN") == "LIN, GE"
    assert figures.family_of("GE * LIN + GE") == "LIN, GE"
    assert figures.family_of("CP(LIN, PER * GE)") == "LIN, GE, PER"
    assert figures.family_of("LIN[temp] + PER") == "PER, LIN[temp]"


def test_family_figure_counts_the_heaviest_structure_of_each_series():
    structures = pd.DataFrame({
        "unique_id": ["a", "a", "b", "c", "d", "e"],
        "group": ["x", "x", "x", "y", "y", "y"],
        "structure": ["PER", "LIN + GE", "GE + LIN", "LIN + PER * GE", "CP(LIN, GE)", "PER"],
        "weight": [0.4, 0.6, 1.0, 1.0, 1.0, 1.0],
    })
    fams = figures.structure_families(structures)
    assert dict(zip(fams["unique_id"], fams["family"], strict=True)) == {
        "a": "LIN, GE", "b": "LIN, GE", "c": "LIN, GE, PER", "d": "LIN, GE", "e": "PER"}
    fig = figures.plot_families(fams)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "LIN, GE"  # most often, on top
    assert ax.get_xlabel().endswith("(count)") and ax.get_ylabel()
    assert _legend_texts(fig) == ["x", "y"]
    widths = [p.get_width() for p in ax.patches]  # group x, then group y, bottom to top
    assert widths == [0, 0, 2, 1, 1, 1]
    _no_overlap(fig)


# ---- the figures of a run --------------------------------------------------------------------
def test_a_run_without_baselines_draws_autogp_alone_and_says_why_a_figure_is_missing(tmp_path):
    scores, train, forecast, _ = _panel(groups=("g",))
    ours = scores[scores["model"] == "AutoGP"]
    structures = pd.DataFrame({"unique_id": ours["unique_id"], "structure": "LIN + PER",
                               "weight": 1.0})
    out = figures.write_experiment_figures(tmp_path, scores=ours, structures=structures,
                                           train=train, forecast=forecast)
    assert [f for f, _ in out.written] == [figures.METRIC_FIGURE, figures.FAMILY_FIGURE]
    assert all((tmp_path / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f, _ in out.written)
    assert not (tmp_path / figures.LOST_WON_FIGURE).exists()
    (note,) = out.notes
    assert "no baselines" in note and "--baselines" in note
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no temporary file left


def test_cv_figure_has_a_bar_per_step_and_model(tmp_path):
    rows = [{"model": m, "unique_id": u, "cutoff": c, "step": s, "scaled_crps": 0.1,
             "mase": 1.0 + (0 if s == "all" else s / 10)}
            for m in ("AutoGP", "Naive") for u in "ab" for c in (1, 2) for s in ("all", 1, 2, 3)]
    fig = figures.plot_cv_scores(pd.DataFrame(rows))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]
    assert fig.axes[-1].get_xlabel() == "forecast step (steps after the cutoff)"
    assert "windows" in ax.get_title() and _legend_texts(fig) == ["AutoGP", "Naive"]
    np.testing.assert_allclose([p.get_height() for p in ax.patches][:3], [1.1, 1.2, 1.3])
    assert figures.cv_figure_path(tmp_path / "m.csv") == tmp_path / "m_by_step.png"
