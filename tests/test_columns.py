"""The statsforecast column layout (autogp.forecast.columns): built and read back."""

import numpy as np
import pytest

from autogp.forecast.columns import (
    MODEL_NAME,
    check_levels,
    check_quantiles,
    interval_columns,
    interval_pairs,
    is_interval_column,
    level_columns,
    level_label,
    parse_interval_column,
    point_columns,
    prediction_columns,
    quantile_column,
)


def test_labels():
    assert [level_label(v) for v in (95, 95.0, 97.5, 80)] == ["95", "95", "97.5", "80"]
    assert interval_columns("M", 97.5) == ("M-lo-97.5", "M-hi-97.5")
    assert quantile_column(0.1) == "AutoGP-q-10"
    assert quantile_column(0.025, "M") == "M-q-2.5"


def test_statsforecast_order():
    assert level_columns([80, 95, 80.0]) == ["AutoGP-lo-95", "AutoGP-lo-80", "AutoGP-hi-80",
                                             "AutoGP-hi-95"]  # fmt: skip
    names, probs = prediction_columns(check_levels([95, 80]), check_quantiles([0.9, 0.1]))
    assert names == ["AutoGP-lo-95", "AutoGP-lo-80", "AutoGP-hi-80", "AutoGP-hi-95",
                     "AutoGP-q-10", "AutoGP-q-90"]  # fmt: skip
    np.testing.assert_allclose(probs, [0.025, 0.1, 0.9, 0.975, 0.1, 0.9], rtol=0, atol=1e-15)


def test_checks():
    with pytest.raises(ValueError, match=r"\(0, 100\)"):
        check_levels([100])
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        check_quantiles([0.0])


def test_parsing():
    parsed = parse_interval_column("Auto-ETS-lo-97.5")
    assert parsed == ("Auto-ETS", "lo", "97.5") and parsed.level == 97.5
    assert parse_interval_column("AutoETS-hi-80.0", "AutoETS").level == 80.0
    assert parse_interval_column("AutoETS-hi-80", "AutoGP") is None
    assert parse_interval_column("x-lo-abc") is None and not is_interval_column("AutoGP")
    columns = ["unique_id", "ds", "y", "AutoGP", "AutoGP-lo-95", "AutoGP-lo-80", "AutoGP-hi-80",
               "AutoGP-hi-95", "AutoGP-q-10", "Naive", "Naive-lo-80"]  # fmt: skip
    assert point_columns(columns) == ["AutoGP", "Naive"]
    assert interval_pairs(columns) == [("95", "AutoGP-lo-95", "AutoGP-hi-95"),
                                       ("80", "AutoGP-lo-80", "AutoGP-hi-80")]  # fmt: skip
    assert interval_pairs(columns, "Naive") == []  # no upper bound
    assert MODEL_NAME == "AutoGP"
