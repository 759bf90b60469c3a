"""The fitting window (``data.window``): a series longer than the window is fitted on its most
recent points, and every product of the fit (forecasts, explanation, saved model) says so."""

from __future__ import annotations

import numpy as np
import pytest

from autogp import AutoGP, load
from autogp.config import ConfigError, load_config
from autogp.data import DataError, from_arrays
from autogp.pipeline import fitting
from tests.test_forecast import install_fake_smc

N, W = 48, 30
T = np.arange(N, dtype=float)
Y = 0.05 * T + np.sin(2 * np.pi * T / 12) + 0.1 * np.random.default_rng(0).normal(size=N)
TEXTS = [
    "LIN(intercept=0.5; bias=0.2, amp=1.0) + PER(l=1.0, period=0.25; amp=1.0)",
    "SE(l=0.2; amp=1.0)",
]


def test_last_keeps_the_most_recent_points():
    s = from_arrays(T, Y)
    tail = s.last(W)
    np.testing.assert_array_equal(tail.t, T[-W:])
    np.testing.assert_array_equal(tail.y, Y[-W:])
    assert s.last(N) is s and s.last(10 * N) is s
    with pytest.raises(ValueError, match="n >= 1"):
        s.last(0)


def test_a_windowed_model_is_the_model_of_the_last_points():
    windowed = AutoGP.from_kernels((T, Y), TEXTS, overrides={"data.window": W})
    by_hand = AutoGP.from_kernels((T[-W:], Y[-W:]), TEXTS, overrides={"data.window": 0})
    fit = windowed.fits[windowed.unique_ids[0]]
    assert (fit.series.n, fit.left_out) == (W, N - W)
    np.testing.assert_array_equal(fit.series.t, T[-W:])
    a, b = windowed.predict(8), by_hand.predict(8)
    for col in a.columns:
        if col.startswith("AutoGP"):
            np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-10,
                                       err_msg=col)
    assert f"the last {W} of {N} observations (data.window)" in windowed.explain()
    assert f"{W} observations" in by_hand.explain()


def test_a_short_series_and_window_zero_use_every_point():
    for window in (0, N, 10 * N):
        model = AutoGP.from_kernels((T, Y), TEXTS, overrides={"data.window": window})
        fit = model.fits[model.unique_ids[0]]
        assert (fit.series.n, fit.left_out) == (N, 0)


def test_the_window_survives_saving(tmp_path):
    model = AutoGP.from_kernels((T, Y), TEXTS, overrides={"data.window": W})
    loaded = load(model.save(tmp_path / "m.autogp"))
    assert loaded.fits[loaded.unique_ids[0]].left_out == N - W
    np.testing.assert_allclose(loaded.predict(6)["AutoGP"], model.predict(6)["AutoGP"],
                               rtol=1e-9)


def test_the_engine_sees_only_the_window(monkeypatch):
    seen = {}

    class Seen(Exception):
        pass

    def record(x, y, *args, **kwargs):
        seen["x"], seen["y"] = np.asarray(x), np.asarray(y)
        raise Seen

    monkeypatch.setattr(fitting.smc, "run_smc", record)
    config = load_config(None, {"data.window": W, "data.transform": "none"})
    with pytest.raises(Seen):
        fitting.fit_series_posterior(from_arrays(T, Y), config, panel=False)
    x, y = seen["x"], seen["y"]
    assert x.shape == y.shape == (W,)
    # normalised over the window's own span, values z-scored on the window's values
    assert x[0] == pytest.approx(0.0) and x[-1] == pytest.approx(1.0)
    scaler = fitting.series_scaler(from_arrays(T[-W:], Y[-W:]), config)
    np.testing.assert_allclose(y, scaler.forward_y(Y[-W:]), rtol=1e-12)


def test_the_point_cap_counts_the_window():
    exact = {"smc.likelihood": "exact", "data.max_points": 40}
    with pytest.raises(DataError, match="max_points"):
        AutoGP.from_kernels((T, Y), TEXTS, overrides={**exact, "data.window": 0})
    model = AutoGP.from_kernels((T, Y), TEXTS, overrides={**exact, "data.window": W})
    assert model.fits[model.unique_ids[0]].series.n == W


@pytest.mark.parametrize("window", [1, 2])
def test_a_window_too_small_to_fit_is_refused(window):
    with pytest.raises(ConfigError, match="data.window"):
        load_config(None, {"data.window": window})


# ---- thinned windows (data.window_seasons): sub-daily series see two cycles of their longest
# season -----------------------------------------------------------------------------------
def _regular(freq: str, n: int):
    import pandas as pd

    ds = pd.date_range("2024-01-01", periods=n, freq=freq)
    rng = np.random.default_rng(1)
    return pd.DataFrame({"ds": ds, "y": 10 + np.sin(np.arange(n) / 7.0) + rng.normal(size=n)})


def test_every_keeps_the_most_recent_point_and_each_stride_th_before_it():
    s = from_arrays(T, Y)
    for stride in (1, 2, 5, 7, N, 2 * N):
        kept = s.every(stride)
        np.testing.assert_array_equal(kept.t, T[::-1][::stride][::-1], err_msg=str(stride))
        np.testing.assert_array_equal(kept.y, Y[::-1][::stride][::-1])
    with pytest.raises(ValueError, match="stride >= 1"):
        s.every(0)


@pytest.mark.parametrize(
    ("freq", "n", "window", "stride"),
    [
        # two weeks of half-hours are 672 points: every 3rd of the last 900 covers them
        ("30min", 1400, 300, 3),
        ("h", 1400, 300, 2),  # 336 hours: every 2nd
        ("5min", 4500, 300, 14),  # 4,032 five-minute steps: ceil(4032 / 300)
        # the cap: a day of half-hours keeps 8 points per cycle (48 // 8 = 6), however short
        # the window
        ("30min", 1400, 30, 6),
        ("30min", 600, 300, 2),  # fewer points than two weeks: all of them, every 2nd
        ("h", 300, 300, 1),  # no longer than the window
        ("D", 1500, 300, 1),  # a week of days has under 16 points: never thinned
        ("MS", 600, 300, 1),
    ],
)
def test_the_stride_spans_two_cycles_of_the_longest_season(freq, n, window, stride):
    from autogp.data import from_frame

    series = from_frame(_regular(freq, n))
    config = load_config(None, {"data.window": window, "data.window_seasons": 2})
    assert fitting.window_stride(series, config) == stride
    off = load_config(None, {"data.window": window, "data.window_seasons": 0})
    assert fitting.window_stride(series, off) == 1
    np.testing.assert_array_equal(fitting.fitting_window(series, off).series.t,
                                  series.t[-window:])
    kept, left_out, kept_stride = fitting.fitting_window(series, config)
    assert (left_out, kept_stride) == (n - kept.n, stride)
    expected = series.t[::-1][:window * stride][::stride][::-1]
    np.testing.assert_array_equal(kept.t, expected)
    assert kept.n == min(window, -(-min(n, window * stride) // stride))


@pytest.mark.parametrize(
    ("freq", "n", "stride"),
    [
        ("30min", 1400, 4),  # three weeks of half-hours, 1,008 points: every 4th
        ("30min", 5000, 4),
        ("h", 1400, 2),  # 504 hours: every 2nd
        ("5min", 4900, 17),  # under three weeks (6,048 steps): all of them, ceil(4900 / 300)
        ("h", 300, 1),  # no longer than the window
        ("D", 1500, 1),  # never thinned
        ("MS", 600, 1),
    ],
)
def test_by_default_sub_daily_windows_span_three_cycles_of_the_longest_season(freq, n, stride):
    from autogp.data import from_frame

    series = from_frame(_regular(freq, n))
    config = load_config(None, {})
    assert config.data.window_seasons == 3
    assert fitting.window_stride(series, config) == stride
    kept = fitting.fitting_window(series, config).series
    assert kept.n == min(300, -(-n // stride))
    if stride > 1:
        from autogp.data.seasons import candidate_periods

        # the smallest stride whose 300 points reach back three weeks (or over every point)
        week = max(candidate_periods(series.axis))  # in the axis' units
        reach = min(3 * week, series.t[-1] - series.t[0])
        assert kept.t[-1] - kept.t[0] >= reach - stride * series.axis.step
        assert 299 * (stride - 1) * series.axis.step < reach


def test_a_thinned_window_reads_saves_and_forecasts_as_the_thinned_points(tmp_path):
    import pandas as pd

    frame = _regular("30min", 1000)
    texts = ["SE(l=0.1; amp=1.0) + PER(l=1.0, period=0.05; amp=1.0)"]
    # The prior mean ("recent") is the mean of the last day: 48 points on the data's grid, the
    # 16 most recent of the thinned window.
    thin = {"data.window": 300, "data.window_seasons": 2}
    recent = AutoGP.from_kernels(frame, texts, overrides=thin)
    scaler = recent.fits[recent.unique_ids[0]].scaler
    assert scaler.value_offset == pytest.approx(frame["y"].iloc[-46::3].mean(), rel=1e-12)
    # (centred on the mean below: the hand-made model's own grid is every 90 minutes)
    model = AutoGP.from_kernels(frame, texts, overrides={**thin, "data.center": "mean"})
    fit = model.fits[model.unique_ids[0]]
    assert (fit.series.n, fit.left_out, fit.stride) == (300, 700, 3)
    # the same model by hand: the thinned points (every 3rd of the last 900), all of them used
    thinned = frame.iloc[::-1].iloc[:900:3].iloc[::-1]
    by_hand = AutoGP.from_kernels(thinned, texts,
                                  overrides={"data.window": 0, "data.center": "mean"})
    a = model.predict(12)
    step = pd.Timedelta(minutes=30)  # forecasts stay on the data's grid, not the stride's
    assert list(a["ds"]) == [frame["ds"].iloc[-1] + k * step for k in range(1, 13)]
    b = by_hand.predict(list(a["ds"]))
    np.testing.assert_allclose(a["AutoGP"], b["AutoGP"], rtol=1e-10)
    reading = "every 3rd of the last 898 of 1000 observations (300 points"
    assert reading in model.explain()
    loaded = load(model.save(tmp_path / "m.autogp"))
    assert loaded.fits[loaded.unique_ids[0]].stride == 3
    assert reading in loaded.explain()


def test_online_updates_of_a_thinned_fit_count_their_new_points_apart(monkeypatch, tmp_path):
    # Updates fit every new observation (only the fit's own window was thinned), so the
    # reading must not stretch the thinned span over them.
    install_fake_smc(monkeypatch)
    frame = _regular("30min", 1010)
    model = AutoGP(progress=False, overrides={"data.window": 300, "data.window_seasons": 2})
    model.fit(frame.iloc[:1000])
    model.update(frame.iloc[1000:1004])
    model.update(frame.iloc[1004:])
    fit = model.fits[model.unique_ids[0]]
    assert (fit.series.n, fit.left_out, fit.stride, fit.added) == (310, 700, 3, 10)
    np.testing.assert_array_equal(fit.series.y[-10:], frame["y"].to_numpy()[-10:])
    reading = ("every 3rd of the last 898 of 1000 observations, then 10 new ones "
               "(310 points: data.window, data.window_seasons)")
    assert reading in model.explain()
    loaded = load(model.save(tmp_path / "m.autogp"))
    assert loaded.fits[loaded.unique_ids[0]].added == 10
    assert reading in loaded.explain()
