"""Every kind of bad input gets a DataError that says what and where (table-driven), and no
input at all makes the readers raise anything else (property tests)."""

from __future__ import annotations

import gzip
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autogp.data import AutoGPDataWarning, DataError, from_arrays, from_frame, read_csv

M = "ds,y\n2020-01-01,1\n2020-02-01,2\n2020-03-01,3\n"  # a valid body to vary

# (id, file content (str/bytes; None = no file), file name, read_csv kwargs, substrings)
CASES: list[tuple[str, str | bytes | None, str, dict, list[str]]] = [
    ("empty file", "", "s.csv", {}, ["empty"]),
    ("blank lines only", "\n \n\t\n", "s.csv", {}, ["empty"]),
    ("header only", "ds,y\n", "s.csv", {}, ["header", "no data rows", "at least 3"]),
    ("one row", "ds,y\n2020-01-01,1\n", "s.csv", {}, ["only 1 observations", "at least 3"]),
    (
        "two rows",
        "ds,y\n2020-01-01,1\n2020-02-01,2\n",
        "s.csv",
        {},
        ["only 2 observations", "at least 3"],
    ),
    (
        "too few after dropping missing",
        "ds,y\n2020-01-01,1\n2020-02-01,\n2020-03-01,3\n",
        "s.csv",
        {},
        ["only 2 observations", "after dropping 1 missing", "at least 3"],
    ),
    (
        "missing time column",
        "date,y\n2020-01-01,1\n",
        "s.csv",
        {},
        ["no column 'ds'", "time_col", "['date', 'y']", "Did you mean 'date'?"],
    ),
    (
        "misspelled target column",
        "ds,yy\n2020-01-01,1\n",
        "s.csv",
        {},
        ["no column 'y'", "target_col", "['ds', 'yy']", "Did you mean 'yy'?"],
    ),
    (
        "misspelled target_col argument",
        "ds,sales\n2020-01-01,1\n",
        "s.csv",
        {"target_col": "sale"},
        ["no column 'sale'", "Did you mean 'sales'?", "target_col='sales'"],
    ),
    ("column name case", "DS,y\n2020-01-01,1\n", "s.csv", {}, ["'ds'", "Did you mean 'DS'?"]),
    (
        "missing id column",
        M,
        "s.csv",
        {"id_col": "unique_id"},
        ["no column 'unique_id'", "id_col", "['ds', 'y']"],
    ),
    ("missing split column", M, "s.csv", {"split_col": "split"}, ["no column 'split'", "split"]),
    (
        "duplicate header name",
        "ds,y,y\n2020-01-01,1,2\n2020-02-01,1,2\n2020-03-01,1,2\n",
        "s.csv",
        {},
        ["'y'", "more than once"],
    ),
    (
        "non-numeric value",
        "ds,y\n2020-01-01,1\n2020-02-01,abc\n2020-03-01,3\n",
        "s.csv",
        {},
        ["column 'y'", "row 3", "'abc'", "not a number"],
    ),
    (
        "non-numeric value counted",
        "ds,y\n2020-01-01,x\n2020-02-01,abc\n2020-03-01,3\n",
        "s.csv",
        {},
        ["row 2", "'x'", "1 more row"],
    ),
    (
        "decimal comma",
        "ds;y\n2020-01-01;1,5\n2020-02-01;2\n2020-03-01;3\n",
        "s.csv",
        {},
        ["row 2", "'1,5'", "decimal comma"],
    ),
    (
        "thousands separator",
        'ds,y\n2020-01-01,"1,234"\n2020-02-01,2\n2020-03-01,3\n',
        "s.csv",
        {},
        ["row 2", "'1,234'", "thousands"],
    ),
    (
        "unparseable date",
        "ds,y\n2020-01-01,1\n2020-02-01,2\n2020-13-45,3\n",
        "s.csv",
        {},
        ["column 'ds'", "row 4", "'2020-13-45'", "not a date"],
    ),
    (
        "word in a date column",
        "ds,y\n2020-01-01,1\nyesterday,2\n2020-03-01,3\n",
        "s.csv",
        {},
        ["row 3", "'yesterday'", "not a date"],
    ),
    (
        "word in a numeric time column",
        "ds,y\n1,1\n2,2\nx3,3\n4,4\n",
        "s.csv",
        {},
        ["column 'ds'", "row 4", "'x3'", "not a number"],
    ),
    (
        "infinite numeric time",
        "ds,y\n1,1\n2,2\ninf,3\n",
        "s.csv",
        {},
        ["row 4", "'inf'", "finite"],
    ),
    (
        "missing time value",
        "ds,y\n2020-01-01,1\n,2\n2020-03-01,3\n",
        "s.csv",
        {},
        ["column 'ds'", "row 3", "missing"],
    ),
    (
        "missing value under strict",
        "ds,y\n2020-01-01,1\n2020-02-01,NA\n2020-03-01,3\n2020-04-01,4\n",
        "s.csv",
        {"strict": True},
        ["strict", "row 3", "'NA'", "1 row with missing"],
    ),
    (
        "infinite value under strict",
        "ds,y\n2020-01-01,1\n2020-02-01,2\n2020-03-01,-inf\n2020-04-01,4\n",
        "s.csv",
        {"strict": True},
        ["strict", "row 4", "'-inf'", "1 infinite"],
    ),
    (
        "duplicate time stamps",
        "ds,y\n2020-01-01,1\n2020-02-01,2\n2020-02-01,3\n2020-03-01,3\n",
        "s.csv",
        {},
        ["duplicate", "2020-02-01", "rows 3, 4", "aggregate="],
    ),
    (
        "duplicates that are a panel",
        "unique_id,ds,y\nA,1,1\nA,2,2\nA,3,3\nB,1,1\nB,2,2\nB,3,3\n",
        "s.csv",
        {},
        ["duplicate", "rows 2, 5", "id_col='unique_id'"],
    ),
    (
        "unknown aggregate",
        "ds,y\n2020-01-01,1\n2020-01-01,2\n2020-03-01,3\n",
        "s.csv",
        {"aggregate": "avg"},
        ["'avg'", "mean", "sum", "last"],
    ),
    (
        "too few after aggregating",
        "ds,y\n2020-01-01,1\n2020-01-01,2\n2020-03-01,3\n",
        "s.csv",
        {"aggregate": "mean"},
        ["only 2 distinct", "at least 3"],
    ),
    (
        "extra field in a row",
        "ds,y\n2020-01-01,1\n2020-02-01,2,7\n2020-03-01,3\n",
        "s.csv",
        {},
        ["row 3", "3 fields", "header has 2"],
    ),
    (
        "over a configured point limit",
        "ds,y\n" + "".join(f"{i},{i}\n" for i in range(6)),
        "s.csv",
        {"max_points": 5},
        ["6 observations", "exact-GP limit of 5", "ubsample", "aggregate", "max_points"],
    ),
    (
        "over the default point limit",
        "ds,y\n" + "".join(f"{i},{i % 7}\n" for i in range(5001)),
        "s.csv",
        {},
        ["5001 observations", "limit of 5000", "raise the limit"],
    ),
    (
        "panel series too short",
        "unique_id,ds,y\nA,1,1\nA,2,2\nA,3,3\nB,1,1\nB,2,2\n",
        "s.csv",
        {"id_col": "unique_id"},
        ["series 'B'", "only 2 observations", "at least 3"],
    ),
    (
        "panel id missing",
        "unique_id,ds,y\nA,1,1\n,2,2\nA,3,3\n",
        "s.csv",
        {"id_col": "unique_id"},
        ["column 'unique_id'", "row 3", "id is missing"],
    ),
    (
        "same column twice",
        M,
        "s.csv",
        {"target_col": "ds"},
        ["different columns"],
    ),
    (
        "non-UTF-8 under strict",
        b"ds,y\n2020-01-01,1\n2020-02-01,\xff\n2020-03-01,3\n",
        "s.csv",
        {"strict": True},
        ["not UTF-8", "0xff", "offset"],
    ),
    (
        "headerless with three columns",
        "2020-01-01,1,x\n2020-02-01,2,y\n2020-03-01,3,z\n",
        "s.csv",
        {},
        ["no column 'ds'", "first row looks like data", "header row"],
    ),
    ("bad separator argument", M, "s.csv", {"sep": ";;"}, ["sep", "';;'"]),
    ("corrupt gzip", b"not gzip at all", "s.csv.gz", {}, ["cannot read"]),
    ("no such file", None, "missing.csv", {}, ["missing.csv", "not found"]),
]


@pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")
@pytest.mark.parametrize(
    ("content", "name", "kwargs", "substrings"),
    [pytest.param(c, n, k, s, id=i) for i, c, n, k, s in CASES],
)
def test_bad_csv_gives_data_error(tmp_path, content, name, kwargs, substrings):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(DataError) as info:
        read_csv(path, **kwargs)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert name in msg, f"the file is not named in: {msg}"
    for s in substrings:
        assert s in msg, f"{s!r} missing from: {msg}"


def test_error_attributes_name_row_column_value(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("ds,y\n2020-01-01,1\n\n2020-02-01,abc\n2020-03-01,3\n")
    with pytest.raises(DataError) as info:
        read_csv(path)
    err = info.value
    # A blank line still counts: rows are line numbers in the file.
    assert (err.column, err.row, err.value) == ("y", 4, "abc")
    assert err.source == str(path)


def test_latin1_falls_back_with_warning(tmp_path):
    path = tmp_path / "s.csv"
    path.write_bytes("ds,y,note\n1,1,caf\xe9\n2,2,a\n3,3,b\n".encode("latin-1"))
    with pytest.warns(AutoGPDataWarning, match="Latin-1"):
        s = read_csv(path)
    assert s.n == 3


def test_corrupt_gzip_of_valid_name(tmp_path):
    path = tmp_path / "s.csv.gz"
    path.write_bytes(gzip.compress(M.encode())[:-5])  # truncated stream
    with pytest.raises(DataError, match="cannot read"):
        read_csv(path)


FRAME_CASES = [
    ("missing column", pd.DataFrame({"date": [1, 2, 3], "y": [1, 2, 3]}), {}, ["'ds'", "'date'"]),
    ("no rows", pd.DataFrame({"ds": [], "y": []}), {}, ["no rows", "3"]),
    (
        "non-numeric value",
        pd.DataFrame({"ds": [1, 2, 3], "y": [1, "x", 3]}, index=[10, 11, 12]),
        {},
        ["index 11", "'x'", "column 'y'"],
    ),
    (
        "NaT time",
        pd.DataFrame({"ds": pd.to_datetime(["2020-01-01", None, "2020-01-03"]), "y": [1, 2, 3]}),
        {},
        ["index 1", "missing"],
    ),
    (
        "boolean values",
        pd.DataFrame({"ds": [1, 2, 3], "y": [True, False, True]}),
        {},
        ["boolean"],
    ),
]


@pytest.mark.parametrize(
    ("df", "kwargs", "substrings"), [pytest.param(d, k, s, id=i) for i, d, k, s in FRAME_CASES]
)
def test_bad_frame_gives_data_error(df, kwargs, substrings):
    with pytest.raises(DataError) as info:
        from_frame(df, **kwargs)
    for s in substrings:
        assert s in str(info.value), str(info.value)


ARRAY_CASES = [
    ("length mismatch", [1, 2, 3], [1, 2], ["equal length"]),
    ("2-D values", [1, 2, 3], [[1], [2], [3]], ["1-D"]),
    ("too few", [1, 2], [1, 2], ["at least 3"]),
    ("duplicate numeric time", [1, 2, 2], [1, 2, 3], ["duplicate", "positions 1, 2"]),
    ("string value", [1, 2, 3], ["1", "two", "3"], ["position 1", "'two'"]),
    ("numbers and dates", [1, 2, "2020-01-01"], [1, 2, 3], ["position 2", "'2020-01-01'"]),
]


@pytest.mark.parametrize(
    ("t", "y", "substrings"), [pytest.param(t, y, s, id=i) for i, t, y, s in ARRAY_CASES]
)
def test_bad_arrays_give_data_error(t, y, substrings):
    with pytest.raises(DataError) as info:
        from_arrays(t, y)
    for s in substrings:
        assert s in str(info.value), str(info.value)


# ---- properties: nothing but DataError, and what loads is clean --------------------------------
_TMP = Path(tempfile.mkdtemp(prefix="autogp-hyp-"))

_cells = st.one_of(
    st.sampled_from(["", " ", "NA", "nan", "inf", "-inf", "null", "1e400", "1,5", '"', "#"]),
    st.dates(min_value=pd.Timestamp("1700-01-01").date()).map(str),
    st.datetimes().map(lambda d: d.isoformat()),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)
_tables = st.lists(st.lists(_cells, min_size=0, max_size=4), min_size=0, max_size=12)


def _check_clean(result) -> None:
    series = result if isinstance(result, list) else [result]
    for s in series:
        assert s.t.dtype == np.float64 and s.y.dtype == np.float64
        assert s.n >= 3 and np.all(np.isfinite(s.t)) and np.all(np.isfinite(s.y))
        assert np.all(np.diff(s.t) > 0)
        if s.axis.kind == "datetime" and s.n < 200:
            back = s.axis.to_numeric(s.ds)
            assert np.allclose(back, s.t, rtol=1e-9, atol=1e-6)


def _read_quietly(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutoGPDataWarning)
        try:
            return read_csv(path, **kwargs)
        except DataError:
            return None


_kwargs = st.fixed_dictionaries(
    {},
    optional={
        "strict": st.booleans(),
        "aggregate": st.sampled_from([None, "mean", "sum", "last"]),
        "sep": st.sampled_from([None, ",", ";", "\t"]),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300), kwargs=_kwargs)
def test_random_bytes_only_raise_data_error(data, kwargs):
    path = _TMP / "bytes.csv"
    path.write_bytes(data)
    result = _read_quietly(path, **kwargs)
    if result is not None:
        _check_clean(result)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=_tables,
    header=st.sampled_from([["ds", "y"], ["y", "ds"], ["ds", "y", "id"], None]),
    sep=st.sampled_from([",", ";", "\t"]),
    kwargs=_kwargs,
    with_id=st.booleans(),
)
def test_random_cells_only_raise_data_error(rows, header, sep, kwargs, with_id):
    lines = ([sep.join(header)] if header else []) + [sep.join(r) for r in rows]
    path = _TMP / "cells.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    if with_id:
        kwargs = {**kwargs, "id_col": "id"}
    result = _read_quietly(path, **kwargs)
    if result is not None:
        _check_clean(result)


_finite_y = st.floats(-1e12, 1e12).map(repr)
_y_cell = st.one_of(_finite_y, _finite_y, _finite_y, st.sampled_from(["", "NA", "inf", "1e-9"]))


@st.composite
def _plausible_csv(draw) -> tuple[str, str, list[str]]:
    """A mostly valid table of one time kind; returns (kind, text, ds cells)."""
    kind = draw(st.sampled_from(["date", "datetime", "offset", "int", "float", "month"]))
    n = draw(st.integers(0, 15))
    if kind == "date":
        cell = st.dates(min_value=pd.Timestamp("1000-01-01").date()).map(str)
    elif kind == "datetime":
        cell = st.datetimes(min_value=pd.Timestamp("1900-01-01").to_pydatetime()).map(
            lambda d: d.isoformat()
        )
    elif kind == "offset":
        cell = st.tuples(
            st.datetimes(min_value=pd.Timestamp("1900-01-02").to_pydatetime()),
            st.integers(-11, 12),
        ).map(lambda p: p[0].replace(microsecond=0).isoformat() + f"{p[1]:+03d}:00")
    elif kind == "int":
        cell = st.integers(-1000, 1000).map(str)
    elif kind == "float":
        cell = st.floats(-1e6, 1e6).map(repr)
    else:  # month starts or ends on a random set of months
        end = draw(st.booleans())
        cell = st.integers(0, 400).map(
            lambda k: str(
                (pd.Timestamp("1990-01-01") + pd.DateOffset(months=k) + pd.offsets.MonthEnd(0))
                if end
                else pd.Timestamp("1990-01-01") + pd.DateOffset(months=k)
            )[:10]
        )
    ds = draw(st.lists(cell, min_size=n, max_size=n))
    ys = draw(st.lists(_y_cell, min_size=n, max_size=n))
    return kind, "ds,y\n" + "".join(f"{a},{b}\n" for a, b in zip(ds, ys, strict=True)), ds


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_plausible_csv(), aggregate=st.sampled_from(["mean", "last"]))
def test_plausible_tables_load_cleanly_or_raise_data_error(table, aggregate):
    kind, text, ds = table
    path = _TMP / "plausible.csv"
    path.write_text(text)
    result = _read_quietly(path, aggregate=aggregate)
    if result is None:
        return
    _check_clean(result)
    # Every output time stamp is one of the input's (after conversion to UTC for offsets).
    if result.axis.kind == "datetime":
        inputs = set(pd.to_datetime(ds, utc=True, format="mixed").tz_localize(None).as_unit("us"))
    else:
        inputs = {float(v) for v in ds}
    assert set(result.ds) <= inputs


@settings(max_examples=150, deadline=None)
@given(
    t=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=10),
    y=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=10),
)
def test_random_arrays_only_raise_data_error(t, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutoGPDataWarning)
        try:
            s = from_arrays(t, y)
        except DataError:
            return
    _check_clean(s)
