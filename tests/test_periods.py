"""The period proposal's periodogram against a brute-force least-squares reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogp.inference.periods import candidate_periods

ROOT = Path(__file__).resolve().parents[1]


def _least_squares_power(x, y, freqs):
    """Share of the linearly detrended series' sum of squares that the best a cos + b sin
    explains at each frequency, by one ``lstsq`` per frequency."""
    design = np.stack([np.ones_like(x), x], axis=1)
    resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    power = []
    for f in freqs:
        basis = np.stack([np.cos(2 * np.pi * f * x), np.sin(2 * np.pi * f * x)], axis=1)
        fitted = basis @ np.linalg.lstsq(basis, resid, rcond=None)[0]
        power.append(fitted @ fitted / (resid @ resid))
    return np.asarray(power)


def test_candidate_periods_are_the_peaks_of_a_least_squares_periodogram():
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 3, 120))
    y = 0.8 * x + np.sin(2 * np.pi * x / 0.4) + 0.6 * np.cos(2 * np.pi * x / 0.9)
    y += 0.3 * rng.normal(size=x.size)
    log_periods, weights = candidate_periods(x, y, num=3)

    span, step = x.max() - x.min(), np.median(np.diff(x))
    freqs = np.arange(2 / span, 0.5 / step, 1 / (5 * span))
    power = _least_squares_power(x, y, freqs)
    inner = np.arange(1, len(freqs) - 1)
    peaks = inner[(power[inner] > power[inner - 1]) & (power[inner] >= power[inner + 1])]
    top = peaks[np.argsort(power[peaks])[::-1][:3]]
    np.testing.assert_allclose(log_periods, np.log(1 / freqs[top]), rtol=1e-12)
    np.testing.assert_allclose(weights, power[top] / power[top].sum(), rtol=1e-9)
    assert abs(np.exp(log_periods[0]) / 0.4 - 1) < 0.03


def test_airline_has_its_yearly_period_first():
    y = pd.read_csv(ROOT / "examples" / "data" / "airline.csv")["y"].to_numpy(float)
    x = np.linspace(0.0, 1.0, len(y))  # normalised time, as the fit sees it
    for series in (y, np.log(y)):
        log_periods, _ = candidate_periods(x, (series - series.mean()) / series.std())
        months = np.exp(log_periods) * (len(y) - 1)
        assert abs(months[0] - 12) < 0.5, months


def _scipy_power(x, resid, freqs):
    from scipy.signal import lombscargle

    return 2.0 * lombscargle(x, resid, 2.0 * np.pi * freqs, floating_mean=False)


def test_gridded_periodogram_equals_scipys_lomb_scargle_with_gaps():
    # Normalised time on a grid with a third of the steps missing (nights, weekends), as the
    # fits see the bank calls; the FFT sums must give scipy's power to rounding.
    from autogp.inference import periods

    rng = np.random.default_rng(3)
    steps = np.sort(rng.choice(900, 600, replace=False))
    x = steps / 899.0
    resid = np.sin(2 * np.pi * x * 37) + 0.5 * rng.normal(size=x.size)
    resid -= resid.mean()
    step = float(np.median(np.diff(x)))
    freqs = np.arange(2.0, 0.5 / step, 1.0 / 5.0)
    assert periods._grid_steps(x, step) is not None
    gridded = periods._gridded_power(periods._grid_steps(x, step), resid, freqs, step)
    reference = _scipy_power(x, resid, freqs)
    np.testing.assert_allclose(gridded, reference, rtol=0, atol=1e-10 * reference.max())


def test_off_grid_periodogram_streams_blocks_of_frequencies(monkeypatch):
    from autogp.inference import periods

    rng = np.random.default_rng(4)
    x = np.sort(rng.uniform(0, 1, 300))
    resid = np.cos(2 * np.pi * x * 9) + 0.2 * rng.normal(size=x.size)
    freqs = np.arange(2.0, 100.0, 0.2)
    step = float(np.median(np.diff(x)))
    assert periods._grid_steps(x, step) is None
    monkeypatch.setattr(periods, "DIRECT_BLOCK", 300 * 7)  # 7 frequencies per scipy call
    np.testing.assert_allclose(periods.explained_power(x, resid, freqs, step),
                               _scipy_power(x, resid, freqs), rtol=1e-12)


def test_long_gridded_series_never_calls_the_direct_periodogram(monkeypatch):
    # 30,000 half-hours: the direct form would hold ~2.5 n x n doubles (tens of GB; it killed a
    # sparse fit of this length). The day and the week must come out of the FFT form.
    import scipy.signal

    def refuse(*_, **__):
        raise AssertionError("direct periodogram on a gridded series")

    monkeypatch.setattr(scipy.signal, "lombscargle", refuse)  # periods imports it when called
    n = 30_000
    rng = np.random.default_rng(6)
    x = np.arange(n) / (n - 1.0)
    steps = np.arange(n)
    y = (np.sin(2 * np.pi * steps / 48) + np.sin(2 * np.pi * steps / 336)
         + rng.normal(size=n) + 1e-4 * steps)
    log_periods, weights = candidate_periods(x, y, num=2)
    found = sorted(np.exp(log_periods) * (n - 1))
    np.testing.assert_allclose(found, [48.0, 336.0], rtol=0.01)
    assert weights.sum() == pytest.approx(1.0)
