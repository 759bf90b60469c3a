"""The period proposal's periodogram against a brute-force least-squares reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

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
