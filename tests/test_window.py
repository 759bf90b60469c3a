"""The fitting window (``data.window``): a series longer than the window is fitted on its most
recent points, and every product of the fit (forecasts, explanation, saved model) says so."""

from __future__ import annotations

import numpy as np
import pytest

from autogp import AutoGP, load
from autogp.config import ConfigError, load_config
from autogp.data import DataError, from_arrays
from autogp.forecast import fitting

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
