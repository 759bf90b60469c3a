"""Loading that should work: real data, date round trips, units, cleaning, scaling."""

from __future__ import annotations

import dataclasses
import gzip
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogp.data import (
    AutoGPDataWarning,
    DataError,
    Scaler,
    TimeAxis,
    TimeSeries,
    from_arrays,
    from_frame,
    read_csv,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared data not available")


def write(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def csv_of(ds, y, header: str = "ds,y") -> str:
    return header + "\n" + "".join(f"{a},{b}\n" for a, b in zip(ds, y, strict=True))


# ---- real data ---------------------------------------------------------------------------------
def test_airline_is_monthly_with_unit_steps():
    s = read_csv(EXAMPLES / "airline.csv")
    assert s.n == 144 and s.unique_id == "airline"
    assert s.t.dtype == np.float64 and s.y.dtype == np.float64
    # One unit = one month, exactly, so a yearly period is 12.0.
    np.testing.assert_array_equal(s.t, np.arange(144.0))
    assert np.all(np.diff(s.t) == 1.0)
    assert (s.axis.kind, s.axis.unit, s.axis.freq, s.axis.anchor) == ("datetime", "months", "MS", 1)
    assert s.axis.format_length(12.0) == "12 months"
    assert s.axis.format_length(1.0) == "1 month"
    assert s.y[0] == 112.0 and s.y[-1] == 432.0
    df = pd.read_csv(EXAMPLES / "airline.csv", parse_dates=["ds"])
    assert (s.ds == pd.DatetimeIndex(df["ds"])).all()
    assert (s.axis.to_ds(s.t) == s.ds).all()
    future = s.future_ds(14)
    assert list(future[:3]) == [pd.Timestamp(f"1961-0{m}-01") for m in (1, 2, 3)]
    assert all(d.day == 1 for d in future)
    np.testing.assert_array_equal(s.future_t(3), [144.0, 145.0, 146.0])


@needs_shared
def test_shared_airline_matches_shipped_copy():
    assert (SHARED / "airline.csv").read_bytes() == (EXAMPLES / "airline.csv").read_bytes()


@needs_shared
def test_m1266_month_ends_round_trip():
    s = read_csv(SHARED / "m1266.csv")
    assert s.n == 135 and s.axis.unit == "months" and s.axis.anchor == -1
    assert s.axis.freq == "ME"
    np.testing.assert_array_equal(s.t, np.arange(135.0))
    raw = pd.to_datetime(pd.read_csv(SHARED / "m1266.csv")["ds"])
    assert (s.axis.to_ds(s.t) == pd.DatetimeIndex(raw)).all()
    assert list(s.future_ds(4)) == [
        pd.Timestamp(d) for d in ("1994-04-30", "1994-05-31", "1994-06-30", "1994-07-31")
    ]
    # Month ends stay month ends through February of a leap year.
    later = s.axis.to_ds([s.t[-1] + 11])
    assert later[0] == pd.Timestamp("1995-02-28")
    assert s.axis.to_ds([s.t[-1] + 23])[0] == pd.Timestamp("1996-02-29")


@needs_shared
def test_iclaims_weekly_keeps_sunday():
    s = read_csv(SHARED / "iclaims.csv")
    assert s.n == 443 and s.axis.unit == "weeks" and s.axis.freq == "W-SUN"
    np.testing.assert_array_equal(s.t, np.arange(443.0))
    assert (s.ds.day_of_week == 6).all()
    future = s.future_ds(10)
    assert (future.day_of_week == 6).all()
    assert future[0] == pd.Timestamp("2018-07-01")
    assert s.axis.format_length(52.0) == "52 weeks"


@needs_shared
def test_m3_panel_with_split():
    panel = read_csv(SHARED / "m3_monthly.csv.gz", id_col="unique_id", split_col="split")
    assert isinstance(panel, list) and len(panel) == 1428
    assert len({s.unique_id for s in panel}) == 1428
    for s in panel[::97]:
        assert s.axis.unit == "months" and s.axis.regular
        assert 66 <= s.n <= 144
        assert s.is_test is not None and s.is_test.sum() == 18
        assert not s.is_test[:-18].any()  # the test rows are the last 18
        train, test = s.train(), s.test()
        assert train.n + test.n == s.n and train.t[-1] < test.t[0]
        # Forecasting from the training part continues its grid into the test dates.
        assert (train.future_ds(18) == test.ds).all()


# ---- date round trips and grids ----------------------------------------------------------------
GRIDS = [
    ("month starts", pd.date_range("2001-01-01", periods=30, freq="MS"), "months", "MS"),
    ("month ends", pd.date_range("2001-01-31", periods=30, freq="ME"), "months", "ME"),
    (
        "mid-month",
        pd.date_range("2001-01-01", periods=30, freq="MS") + pd.Timedelta("14D"),
        "months",
        None,
    ),  # fmt: skip
    ("quarter starts", pd.date_range("2001-01-01", periods=12, freq="QS"), "quarters", "QS-JAN"),
    ("year ends", pd.date_range("1990-12-31", periods=12, freq="YE"), "years", "YE-DEC"),
    ("weekly Monday", pd.date_range("2020-01-06", periods=20, freq="W-MON"), "weeks", "W-MON"),
    ("fortnightly", pd.date_range("2020-01-05", periods=20, freq="2W-SUN"), "weeks", "2W-SUN"),
    ("daily", pd.date_range("2020-02-20", periods=20, freq="D"), "days", "D"),
    ("business days", pd.bdate_range("2020-01-01", periods=20), "days", "B"),
    ("hourly", pd.date_range("2020-03-29", periods=48, freq="h"), "hours", "h"),
    ("15 minutes", pd.date_range("2020-01-01", periods=20, freq="15min"), "minutes", "15min"),
    ("seconds", pd.date_range("2020-01-01", periods=20, freq="s"), "seconds", "s"),
]


@pytest.mark.parametrize(
    ("dates", "unit", "freq"), [pytest.param(d, u, f, id=i) for i, d, u, f in GRIDS]
)
def test_regular_grids_round_trip_and_continue(tmp_path, dates, unit, freq):
    y = np.arange(len(dates), dtype=float)
    s = read_csv(write(tmp_path, csv_of(dates.strftime("%Y-%m-%d %H:%M:%S"), y)))
    assert s.axis.unit == unit and s.axis.freq == freq and s.axis.regular
    if freq != "B":
        np.testing.assert_allclose(np.diff(s.t), s.axis.step)
    assert (s.axis.to_ds(s.t) == dates).all()
    np.testing.assert_allclose(s.axis.to_numeric(dates), s.t, rtol=0, atol=1e-12)
    # The next 5 grid points are exactly what pandas' own offset gives.
    if freq is not None:
        expected = pd.date_range(dates[-1], periods=6, freq=freq)[1:]
        assert (s.future_ds(5) == expected).all()
    else:
        assert (s.future_ds(5) == (pd.date_range("2001-01-01", periods=35, freq="MS")
                                   + pd.Timedelta("14D"))[30:]).all()  # fmt: skip
    # Axis survives serialisation.
    axis2 = TimeAxis.from_dict(s.axis.to_dict())
    assert axis2 == s.axis


def test_calendar_axis_is_monotone_between_grid_points():
    s = from_arrays(pd.date_range("2020-01-31", periods=6, freq="ME"), np.arange(6.0))
    days = pd.date_range("2019-12-01", "2020-08-31", freq="D")
    x = s.axis.to_numeric(days)
    assert np.all(np.diff(x) > 0)
    assert (s.axis.to_ds(x) == days).all()  # exact inverse off the grid too


def test_monthly_gaps_keep_month_unit(tmp_path):
    dates = pd.date_range("2000-01-01", periods=24, freq="MS").delete([5, 6, 15])
    s = read_csv(write(tmp_path, csv_of(dates.strftime("%Y-%m-%d"), np.ones(21))))
    assert s.axis.unit == "months" and s.axis.regular and s.axis.step == 1.0
    assert s.t[5] == 7.0  # the gap shows in numeric time
    assert s.future_ds(1)[0] == pd.Timestamp("2002-01-01")


def test_irregular_dates_use_days(tmp_path):
    ds = ["2021-01-01", "2021-01-04", "2021-01-05", "2021-02-11", "2021-02-20", "2021-03-02"]
    s = read_csv(write(tmp_path, csv_of(ds, [1, 2, 3, 4, 5, 6])))
    assert s.axis.unit == "days" and not s.axis.regular and s.axis.freq is None
    np.testing.assert_array_equal(s.t, [0, 3, 4, 41, 50, 60])
    step = float(np.median(np.diff(s.t)))
    assert s.axis.step == step
    assert s.future_ds(2)[0] == pd.Timestamp("2021-03-02") + pd.Timedelta(days=step)


def test_irregular_times_of_day(tmp_path):
    ds = ["2021-01-01 00:00", "2021-01-01 07:13", "2021-01-01 08:00", "2021-01-01 19:45"]
    s = read_csv(write(tmp_path, csv_of(ds, [1, 2, 3, 4])))
    assert s.axis.unit == "hours" and not s.axis.regular
    np.testing.assert_allclose(s.t, [0, 7 + 13 / 60, 8, 19.75])


def test_timezone_aware_converted_to_utc_naive(tmp_path):
    ds = ["2021-03-27T00:00:00+01:00", "2021-03-28T00:00:00+01:00", "2021-03-29T00:00:00+02:00"]
    s = read_csv(write(tmp_path, csv_of(ds, [1, 2, 3])))
    assert s.ds.tz is None
    assert list(s.ds) == [
        pd.Timestamp("2021-03-26 23:00"),
        pd.Timestamp("2021-03-27 23:00"),
        pd.Timestamp("2021-03-28 22:00"),
    ]
    assert s.axis.unit == "hours"  # 24 h and 23 h apart in UTC: an hourly grid with gaps
    np.testing.assert_array_equal(s.t, [0, 24, 47])


def test_timezone_aware_frame_column():
    ds = pd.date_range("2021-01-01", periods=5, freq="D", tz="America/New_York")
    s = from_frame(pd.DataFrame({"ds": ds, "y": np.arange(5.0)}))
    assert s.ds.tz is None and s.ds[0] == pd.Timestamp("2021-01-01 05:00")
    assert s.axis.unit == "days" and s.axis.freq == "D"


def test_numeric_time(tmp_path):
    s = read_csv(write(tmp_path, csv_of([1949, 1950, 1951, 1953], [1, 2, 3, 4])))
    assert (s.axis.kind, s.axis.unit, s.axis.step) == ("numeric", "units", 1.0)
    np.testing.assert_array_equal(s.t, [1949, 1950, 1951, 1953])  # used as they are
    np.testing.assert_array_equal(s.future_t(2), [1954, 1955])
    assert list(s.future_ds(2)) == [1954.0, 1955.0]
    f = read_csv(write(tmp_path, csv_of([0.0, 0.25, 0.5, 0.75], [1, 2, 3, 4]), "f.csv"))
    np.testing.assert_allclose(f.future_t(1), [1.0])


# ---- cleaning ----------------------------------------------------------------------------------
def test_unsorted_rows_are_sorted(tmp_path):
    s = read_csv(write(tmp_path, csv_of(["2020-03-01", "2020-01-01", "2020-02-01"], [3, 1, 2])))
    np.testing.assert_array_equal(s.t, [0, 1, 2])
    np.testing.assert_array_equal(s.y, [1, 2, 3])


def test_missing_and_infinite_values_dropped_with_counted_warning(tmp_path):
    ds = [f"2020-{m:02d}-01" for m in range(1, 8)]
    y = ["1", "", "NaN", "4", "inf", "6", "null"]
    with pytest.warns(AutoGPDataWarning) as record:
        s = read_csv(write(tmp_path, csv_of(ds, y)))
    msg = str(record[0].message)
    assert "dropped 4 rows" in msg and "3 missing, 1 infinite" in msg
    assert "rows 3 ('')" in msg and "6 ('inf')" in msg
    np.testing.assert_array_equal(s.y, [1, 4, 6])
    np.testing.assert_array_equal(s.t, [0, 3, 5])  # months of the kept rows


@pytest.mark.parametrize(
    ("how", "expected"), [("mean", 2.5), ("sum", 5.0), ("last", 3.0), ("first", 2.0)]
)
def test_duplicates_aggregated(tmp_path, how, expected):
    text = csv_of(["2020-01-01", "2020-02-01", "2020-02-01", "2020-03-01"], [1, 2, 3, 4])
    s = read_csv(write(tmp_path, text), aggregate=how)
    np.testing.assert_array_equal(s.y, [1, expected, 4])


def test_headerless_and_separators(tmp_path):
    rows = "2020-01-01{0}1\n2020-02-01{0}2\n2020-03-01{0}3\n"
    for sep in (",", ";", "\t", "|"):
        s = read_csv(write(tmp_path, rows.format(sep)))
        np.testing.assert_array_equal(s.y, [1, 2, 3])
        s = read_csv(write(tmp_path, f"ds{sep}y\n" + rows.format(sep)))
        np.testing.assert_array_equal(s.y, [1, 2, 3])
    s = read_csv(write(tmp_path, "1,10\n2,20\n3,30\n"))
    assert s.axis.kind == "numeric" and list(s.y) == [10, 20, 30]
    panel = read_csv(write(tmp_path, "a,1,5\na,2,6\na,3,7\n"), id_col="id")
    assert panel[0].unique_id == "a" and list(panel[0].y) == [5, 6, 7]


def test_bom_crlf_quotes_comments_and_extra_columns(tmp_path):
    text = (
        "\ufeff# exported 2024\r\n"
        '"ds","y","note"\r\n'
        '"2020-01-01","1","a, b"\r\n'
        "\r\n"
        "2020-02-01, 2 ,\r\n"
        "2020-03-01,3,c\r\n"
    )
    s = read_csv(write(tmp_path, text))
    np.testing.assert_array_equal(s.y, [1, 2, 3])


def test_gzip_and_other_column_names(tmp_path):
    path = tmp_path / "s.csv.gz"
    path.write_bytes(gzip.compress(b"when,amount\n1,5\n2,6\n3,7\n"))
    s = read_csv(path, time_col="when", target_col="amount")
    assert list(s.y) == [5, 6, 7] and s.unique_id == "s"


def test_extreme_and_negative_values_load_exactly(tmp_path):
    y = ["1e-9", "-3.5e-9", "1e12", "-1e12", "0"]
    s = read_csv(write(tmp_path, csv_of(range(5), y)))
    np.testing.assert_array_equal(s.y, [1e-9, -3.5e-9, 1e12, -1e12, 0.0])


def test_limit_can_be_raised_or_removed(tmp_path):
    path = write(tmp_path, csv_of(range(10), range(10)))
    assert read_csv(path, max_points=10).n == 10
    assert read_csv(path, max_points=None).n == 10
    with pytest.raises(DataError, match="limit of 9"):
        read_csv(path, max_points=9)


# ---- frames and arrays -------------------------------------------------------------------------
def test_from_frame_variants():
    dates = pd.date_range("2020-01-01", periods=4, freq="MS")
    s = from_frame(pd.DataFrame({"ds": dates, "y": [1, 2, 3, 4]}), unique_id="demo")
    assert s.unique_id == "demo" and s.axis.unit == "months"
    idx = from_frame(pd.DataFrame({"y": [1.0, 2, 3]}, index=pd.Index(dates[:3], name="ds")))
    np.testing.assert_array_equal(idx.t, [0, 1, 2])
    long = pd.DataFrame({"id": ["b"] * 3 + ["a"] * 3, "ds": [1, 2, 3] * 2, "y": range(6)})
    panel = from_frame(long, id_col="id")
    assert [p.unique_id for p in panel] == ["b", "a"]  # order of first appearance


def test_from_arrays_dates_and_numbers():
    s = from_arrays(["2020-01-05", "2020-01-12", "2020-01-19"], [1, 2, 3], unique_id="w")
    assert s.axis.unit == "weeks" and s.unique_id == "w"
    n = from_arrays(np.array([3.0, 1.0, 2.0]), np.array([30.0, 10.0, 20.0]))
    np.testing.assert_array_equal(n.y, [10, 20, 30])


def test_time_series_is_frozen_and_read_only():
    s = from_arrays([1, 2, 3], [1.0, 2.0, 3.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.y = np.zeros(3)  # type: ignore[misc]
    with pytest.raises(ValueError):
        s.y[0] = 5.0
    with pytest.raises(DataError):
        TimeSeries(np.array([2.0, 1.0, 3.0]), np.zeros(3))  # not increasing


def test_split_and_frame():
    s = from_arrays(pd.date_range("2020-01-01", periods=10, freq="D"), np.arange(10.0))
    train, test = s.split(3)
    assert (train.n, test.n) == (7, 3)
    assert (train.future_ds(3) == test.ds).all()
    df = s.to_frame()
    assert list(df.columns) == ["unique_id", "ds", "y"] and len(df) == 10
    with pytest.raises(DataError):
        s.test()


# ---- scaling -----------------------------------------------------------------------------------
def test_scaler_maps_training_span_to_unit_interval():
    s = read_csv(EXAMPLES / "airline.csv")
    sc = s.scaler()
    u = sc.forward_t(s.t)
    assert u[0] == 0.0 and u[-1] == 1.0
    z = sc.forward_y(s.y)
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1.0) < 1e-12
    assert (sc.time_offset, sc.time_scale) == (0.0, 143.0)
    # A period of 12/143 in normalised time is 12 months.
    assert sc.time_scale * (12 / 143) == pytest.approx(12.0)
    np.testing.assert_allclose(sc.inverse_t(u), s.t, rtol=0, atol=1e-12)
    assert Scaler.from_dict(sc.to_dict()) == sc


@pytest.mark.parametrize("c", [0.0, 1.0, -7.5, 1e-9, 1e12, -1e12])
def test_scaler_constant_series(c):
    y = np.full(20, c)
    sc = Scaler.fit(np.arange(20.0), y)
    assert sc.value_scale > 0 and np.isfinite(sc.value_scale)
    z = sc.forward_y(y)
    assert np.all(np.isfinite(z)) and np.all(z == 0)
    np.testing.assert_array_equal(sc.inverse_y(z), y)


@pytest.mark.parametrize(
    "y",
    [
        np.linspace(1e-9, 5e-9, 50),
        np.linspace(1e12, 1e12 + 5e6, 50),
        np.linspace(-3e12, -1e12, 50),
        np.array([1e-9, 1e12, -1e12, 0.0, 5.0]),
        np.random.default_rng(0).standard_normal(100) * 1e-9 + 1e-9,
        np.geomspace(1e-9, 1e12, 60),
    ],
    ids=["tiny", "huge-offset", "negative", "mixed", "noisy-tiny", "21-decades"],
)
def test_scaler_round_trip_extreme_scales(y):
    t = np.arange(y.size, dtype=float) * 1e6 + 1e9
    sc = Scaler.fit(t, y)
    z = sc.forward_y(y)
    assert abs(z.mean()) < 1e-9 and abs(z.std() - 1.0) < 1e-9
    back = sc.inverse_y(z)
    # Relative to the series' magnitude (float64 cannot do better mixing 1e-9 and 1e12).
    scale = np.max(np.abs(y))
    assert np.max(np.abs(back - y)) <= 1e-12 * scale
    np.testing.assert_allclose(sc.inverse_t(sc.forward_t(t)), t, rtol=1e-12)
    np.testing.assert_allclose(sc.inverse_y_std(np.ones(1)), [sc.value_scale])


def test_scaler_log_transform():
    y = np.geomspace(1e-9, 1e12, 30)
    sc = Scaler.fit(np.arange(30.0), y, log=True)
    np.testing.assert_allclose(sc.inverse_y(sc.forward_y(y)), y, rtol=1e-12)
    with pytest.raises(DataError, match="positive"):
        Scaler.fit(np.arange(3.0), np.array([1.0, 0.0, 2.0]), log=True)


def test_scaler_centred_at_the_recent_level():
    rng = np.random.default_rng(3)
    y = np.linspace(10.0, 50.0, 40) + rng.normal(size=40)
    sc = Scaler.fit(np.arange(40.0), y, center_last=12)
    full = Scaler.fit(np.arange(40.0), y)
    assert sc.value_offset == pytest.approx(np.mean(y[-12:]), rel=1e-12)
    assert sc.value_scale == pytest.approx(np.std(y), rel=1e-12) == full.value_scale
    assert np.mean(sc.forward_y(y[-12:])) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(sc.inverse_y(sc.forward_y(y)), y, rtol=1e-12)
    logged = Scaler.fit(np.arange(40.0), y, log=True, center_last=5)
    assert logged.value_offset == pytest.approx(np.mean(np.log(y[-5:])), rel=1e-12)
    with pytest.raises(ValueError, match="center_last"):
        Scaler.fit(np.arange(40.0), y, center_last=0)


def test_scaler_single_point_and_bad_input():
    sc = Scaler.fit(np.array([5.0]), np.array([2.0]))
    assert sc.time_scale == 1.0 and sc.value_scale == pytest.approx(2e-6)  # constant: 1e-6 |mean|
    with pytest.raises(DataError):
        Scaler.fit(np.array([0.0, np.nan]), np.array([1.0, 2.0]))
    with pytest.raises(DataError):
        Scaler.fit(np.array([]), np.array([]))


def test_no_warning_on_clean_data(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_csv(EXAMPLES / "airline.csv")


def test_time_axis_infer_accepts_common_inputs():
    unsorted = pd.DatetimeIndex(["2020-03-01", "2020-01-01", "2020-02-01", "2020-02-01"])
    assert TimeAxis.infer(unsorted).unit == "months"
    tz = pd.Series(pd.date_range("2020-01-01", periods=5, tz="UTC"))
    assert (TimeAxis.infer(tz).kind, TimeAxis.infer(tz).unit) == ("datetime", "days")
    assert TimeAxis.infer(["2020-01-05", "2020-01-12", "2020-01-19"]).freq == "W-SUN"
    assert TimeAxis.infer([1, 2, 3]).kind == "numeric"
    with pytest.raises(DataError):
        TimeAxis.infer(["2020-01-01", "soon"])
