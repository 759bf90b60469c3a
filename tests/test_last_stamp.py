"""Forecasts start after the data's last time stamp, even where the last values are missing.

The expected stamps are built with pandas from the file's own last stamp, independently of
autogp's time axis.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, load
from autogp.cli.main import app
from autogp.data import AutoGPDataWarning, from_frame, read_csv
from tests.test_forecast import FAKE_TEXTS, FAKE_WEIGHTS, install_fake_smc

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")


def quarterly(n: int = 24, missing_at_end: int = 2, uid: str | None = None) -> pd.DataFrame:
    ds = pd.date_range("1990-01-01", periods=n, freq="QS")
    y = 50 + 10 * np.sin(np.arange(n) / 2.0) + np.arange(n)
    if missing_at_end:
        y[-missing_at_end:] = np.nan
    df = pd.DataFrame({"ds": ds, "y": y})
    return df if uid is None else df.assign(unique_id=uid)[["unique_id", "ds", "y"]]


def after(last: pd.Timestamp, h: int) -> list[pd.Timestamp]:
    return list(pd.date_range(last, periods=h + 1, freq="QS")[1:])


def test_a_quarterly_series_with_two_missing_quarters_forecasts_after_the_last_stamp():
    df = quarterly()
    model = AutoGP.from_kernels(df, FAKE_TEXTS, weights=FAKE_WEIGHTS)
    fc = model.predict(4)
    assert list(pd.DatetimeIndex(fc["ds"])) == after(df["ds"].iloc[-1], 4)
    # Not after the last finite value: the two quarters in the file are not forecast again.
    assert not set(fc["ds"]) & set(df["ds"])


def test_series_keep_their_last_stamp_through_reading_windows_and_splits(tmp_path):
    df = quarterly()
    s = from_frame(df, "ds", "y")
    assert s.n == len(df) - 2
    assert s.future_ds(1)[0] == after(df["ds"].iloc[-1], 1)[0]
    assert s.last(5).future_ds(1)[0] == after(df["ds"].iloc[-1], 1)[0]
    # A part without the last observation ends where its own data end.
    head, _ = s.split(3)
    assert head.future_ds(1)[0] == s.ds[-4 + 1]
    path = tmp_path / "q.csv"
    df.to_csv(path, index=False)
    assert read_csv(path).future_ds(2).equals(s.future_ds(2))
    full = from_frame(quarterly(missing_at_end=0), "ds", "y")
    assert full.end_t is None


def test_numeric_time_with_missing_last_values():
    y = np.arange(10.0)
    y[-3:] = np.nan
    s = from_frame(pd.DataFrame({"ds": np.arange(10.0) * 2.0, "y": y}), "ds", "y")
    np.testing.assert_array_equal(np.asarray(s.future_ds(2)), [20.0, 22.0])


def test_panels_forecast_each_series_after_its_own_last_stamp(monkeypatch):
    install_fake_smc(monkeypatch)
    a, b = quarterly(uid="a", missing_at_end=3), quarterly(uid="b", n=20, missing_at_end=0)
    model = AutoGP(particles=2, progress=False).fit(pd.concat([a, b]))
    fc = model.predict(2)
    got = {u: list(pd.DatetimeIndex(g["ds"])) for u, g in fc.groupby("unique_id")}
    assert got == {"a": after(a["ds"].iloc[-1], 2), "b": after(b["ds"].iloc[-1], 2)}


def test_saved_models_and_updates_keep_the_last_stamp(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    df = quarterly()
    model = AutoGP(particles=2).fit(df)
    expected = after(df["ds"].iloc[-1], 3)
    loaded = load(model.save(tmp_path / "m.autogp"))
    assert list(pd.DatetimeIndex(loaded.predict(3)["ds"])) == expected
    # One of the two missing quarters arrives: the forecast still starts after the last stamp.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutoGPDataWarning)
        model.update(df.iloc[[-2]].assign(y=70.0))
    assert list(pd.DatetimeIndex(model.predict(3)["ds"])) == expected
    model.update(pd.DataFrame({"ds": [expected[0]], "y": [71.0]}))
    assert list(pd.DatetimeIndex(model.predict(1)["ds"])) == [expected[1]]


def test_cli_fit_forecasts_the_quarters_after_the_file(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    df = quarterly()
    path = tmp_path / "presidents-like.csv"
    df.to_csv(path, index=False)
    result = CliRunner().invoke(app, ["fit", str(path), "--horizon", "4", "--quiet"])
    assert result.exit_code == 0, result.output
    fc = pd.read_csv(io.StringIO(result.stdout), parse_dates=["ds"])
    assert list(fc["ds"]) == after(df["ds"].iloc[-1], 4)
