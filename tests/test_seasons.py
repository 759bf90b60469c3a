"""Calendar seasons per frequency (autogp.data.seasons) and their use in the period proposal."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from autogp.config import load_config
from autogp.data import TimeAxis, from_arrays, read_csv
from autogp.data.seasons import candidate_periods, mase_season, with_frequency
from autogp.forecast.metrics import seasonality
from autogp.inference.periods import MAX_SEASONS, proposal_arrays
from autogp.pipeline.fitting import window_stride

# freq alias -> (candidate periods in the axis' units, MASE season in observations)
EXPECTED = {
    "MS": ((12.0,), 12),
    "ME": ((12.0,), 12),
    "QS": ((4.0,), 4),
    "YS": ((), 1),
    "W": ((365.25 / 7,), 52),
    "D": ((7.0, 365.25), 7),
    "B": ((7.0, 365.25), 5),  # dates skip weekends: a week is still 7 days of time
    "h": ((24.0, 168.0), 24),
    "30min": ((1440.0, 10080.0), 48),  # in minutes: a day is 48 half-hours
    "5min": ((1440.0, 10080.0), 288),
}


@pytest.mark.parametrize("freq", sorted(EXPECTED))
def test_candidates_and_mase_season_per_frequency(freq):
    ds = pd.date_range("2021-01-04", periods=60, freq=freq)
    axis = TimeAxis.infer(ds)
    periods, season = EXPECTED[freq]
    np.testing.assert_allclose(candidate_periods(axis), periods)
    assert mase_season(axis) == season == seasonality(axis)


def test_quarterly_dates_are_a_three_month_step():
    axis = TimeAxis.infer(pd.date_range("1998-01-01", periods=20, freq="QS"))
    assert (axis.unit, axis.step) == ("quarters", 1.0)
    # 4 quarters are one year of time: the period in numeric time is 4 units.
    t = axis.to_numeric(pd.DatetimeIndex(["1998-01-01", "1999-01-01"]))
    assert t[1] - t[0] == pytest.approx(candidate_periods(axis)[0])


def test_trading_day_numbers_get_their_calendar_from_freq():
    series = from_arrays(np.arange(1.0, 201.0), np.linspace(1, 2, 200), unique_id="goog")
    assert candidate_periods(series.axis) == () and mase_season(series.axis) == 1
    named = with_frequency(series, "B")
    assert candidate_periods(named.axis) == (5.0, 252.0)
    assert mase_season(named.axis) == 5
    # Numeric trading days still continue on their own grid.
    np.testing.assert_allclose(named.future_t(3), [201.0, 202.0, 203.0])


def test_fractional_year_stamps_named_monthly_have_a_year_of_one_unit():
    """Monthly values stamped in fractional years (as R's ts): the named frequency says a step is
    a month, so the year is 12 steps, here one time unit, not 12 units (twelve years). A
    monthly window of 300 points then spans 25 years, so it is not thinned."""
    t = 1749.0 + np.arange(3159) / 12.0
    series = with_frequency(from_arrays(t, np.sin(t) + 2.0), "MS")
    assert series.axis.step == pytest.approx(1.0 / 12.0)
    np.testing.assert_allclose(candidate_periods(series.axis), [1.0])
    assert window_stride(series, load_config(None)) == 1
    # the same months stamped 1, 2, 3, ... keep a year of 12 units
    counted = with_frequency(from_arrays(np.arange(1.0, 3160.0), np.sin(t) + 2.0), "MS")
    assert candidate_periods(counted.axis) == (12.0,)


def test_irregular_axis_has_no_mase_season():
    ds = pd.DatetimeIndex(["2020-01-01", "2020-01-02", "2020-01-09", "2020-02-20", "2020-03-01"])
    assert mase_season(TimeAxis.infer(ds)) == 1


def test_proposal_holds_several_seasons_with_equal_shares():
    x = np.arange(400.0)
    rng = np.random.default_rng(0)
    y = np.sin(2 * np.pi * x / 24) + rng.normal(0, 0.1, x.size)
    centers, log_w = proposal_arrays([x, x, x[:60]], [y, y, y[:60]], num=3,
                                     seasonal_periods=[[24.0, 168.0], 24.0, [24.0, 168.0]])
    assert centers.shape == (3, 3 + MAX_SEASONS)
    w = np.exp(log_w)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    # Series 0: two seasons share half the weight equally.
    np.testing.assert_allclose(np.exp(centers[0, 3:]), [24.0, 168.0])
    np.testing.assert_allclose(w[0, 3:], [0.25, 0.25])
    # Series 1: one season (the old single-period form).
    assert w[1, 3] == pytest.approx(0.5) and log_w[1, 4] == -np.inf
    # Series 2 spans 59 steps: 168 is longer than half the span and left out.
    assert math.exp(centers[2, 3]) == pytest.approx(24.0) and log_w[2, 4] == -np.inf


def test_panel_mixing_dates_and_day_numbers_reads(tmp_path):
    path = tmp_path / "panel.csv"
    dates = pd.date_range("2000-01-01", periods=12, freq="MS").strftime("%Y-%m-%d")
    frame = pd.concat([
        pd.DataFrame({"unique_id": "monthly", "ds": dates, "y": np.arange(12.0) + 1}),
        pd.DataFrame({"unique_id": "trading", "ds": [str(i) for i in range(1, 11)],
                      "y": np.arange(10.0) + 5}),
    ])
    frame.to_csv(path, index=False)
    monthly, trading = read_csv(path, id_col="unique_id")
    assert (monthly.axis.kind, monthly.axis.unit) == ("datetime", "months")
    assert trading.axis.kind == "numeric"
    np.testing.assert_allclose(trading.t, np.arange(1.0, 11.0))
