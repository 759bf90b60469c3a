"""The forecast plot: labelled axes, concise date labels, and a fit on a recent window marked
with the earlier observations still shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import dates as mdates
from typer.testing import CliRunner

from autogp import AutoGP, plots
from autogp.cli.main import app
from autogp.data import from_arrays, from_frame

N, W = 48, 30
T = np.arange(N, dtype=float)
Y = 0.05 * T + np.sin(2 * np.pi * T / 12) + 0.1 * np.random.default_rng(0).normal(size=N)
TEXTS = ["LIN(intercept=0.5; bias=0.2, amp=1.0) + PER(l=1.0, period=0.25; amp=1.0)"]


def _points(ax, label: str) -> tuple[np.ndarray, np.ndarray]:
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_windowed_fit_shows_every_observation_and_marks_its_window():
    model = AutoGP.from_kernels((T, Y), TEXTS, overrides={"data.window": W})
    fig = plots.plot_forecast(model, model.predict(6), observed=[from_arrays(T, Y)])
    ax = fig.axes[0]
    before_t, before_y = _points(ax, "observed, before the fitted window")
    inside_t, inside_y = _points(ax, "observed")
    np.testing.assert_array_equal(before_t, T[: N - W])
    np.testing.assert_array_equal(before_y, Y[: N - W])
    np.testing.assert_array_equal(inside_t, T[N - W:])
    np.testing.assert_array_equal(inside_y, Y[N - W:])
    label = f"fitted on the last {W} of {N} observations"
    assert label in _legend(ax)
    (span,) = [p for p in ax.patches if p.get_label() == label]
    x0, x1 = span.get_x(), span.get_x() + span.get_width()
    assert (x0, x1) == (T[N - W], T[-1])


def test_without_the_full_series_the_mark_says_the_earlier_points_are_not_kept():
    model = AutoGP.from_kernels((T, Y), TEXTS, overrides={"data.window": W})
    ax = plots.plot_forecast(model, model.predict(6)).axes[0]
    np.testing.assert_array_equal(_points(ax, "observed")[0], T[N - W:])
    assert (f"fitted on the last {W} of {N} observations (earlier ones not kept)"
            in _legend(ax))


def test_an_unwindowed_fit_has_no_window_mark_and_labelled_axes():
    model = AutoGP.from_kernels((T, Y), TEXTS)
    ax = plots.plot_forecast(model, model.predict(6), value_name="passengers").axes[0]
    assert not any(t.startswith("fitted on") for t in _legend(ax))
    assert ax.get_xlabel() == "time" and ax.get_ylabel() == "passengers"
    ax = plots.plot_forecast(model, model.predict(6)).axes[0]
    assert ax.get_ylabel() == model.config.data.target_col


def _daily_panel_model(monkeypatch) -> AutoGP:
    from tests.test_forecast import install_fake_smc

    install_fake_smc(monkeypatch)
    days = pd.date_range("2014-01-01", periods=1200, freq="D")
    rng = np.random.default_rng(1)
    frame = pd.concat([pd.DataFrame({"unique_id": uid, "ds": days,
                                     "y": rng.normal(size=days.size).cumsum()})
                       for uid in "abcd"])
    return AutoGP(progress=False, overrides={"data.window": 0}).fit(frame)


def test_panel_date_labels_are_concise_and_do_not_overlap(monkeypatch):
    model = _daily_panel_model(monkeypatch)
    fig = plots.plot_forecast(model, model.predict(30), value_name="sales")
    assert fig.get_supxlabel() == "time" and fig.get_supylabel() == "sales"
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    for ax in fig.axes:
        assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
        boxes = sorted((label.get_window_extent(renderer) for label in ax.get_xticklabels()
                        if label.get_text() and label.get_visible()), key=lambda b: b.x0)
        assert len(boxes) >= 3
        for left, right in zip(boxes, boxes[1:], strict=False):
            assert left.x1 <= right.x0, "tick labels overlap"


def test_fit_plot_on_the_command_line_shows_the_whole_file(monkeypatch, tmp_path):
    from tests.test_forecast import install_fake_smc

    install_fake_smc(monkeypatch)
    frame = pd.DataFrame({"ds": pd.date_range("2000-01-01", periods=N, freq="MS"),
                          "sales": Y})
    path = tmp_path / "sales.csv"
    frame.to_csv(path, index=False)
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, where: figures.append(fig))
    result = CliRunner().invoke(app, ["fit", str(path), "--target-col", "sales", "--horizon",
                                      "3", "--set", f"data.window={W}", "--plot",
                                      str(tmp_path / "p.png"), "--quiet"])
    assert result.exit_code == 0, result.output
    (ax,) = figures[0].axes
    full = from_frame(frame, target_col="sales")
    before = _points(ax, "observed, before the fitted window")[1]
    np.testing.assert_array_equal(before, full.y[: N - W])
    assert ax.get_ylabel() == "sales"


def test_components_plot_labels_time():
    model = AutoGP.from_kernels((T, Y), TEXTS)
    fig = plots.plot_components(model.decompose())
    assert fig.axes[-1].get_xlabel() == "time"
