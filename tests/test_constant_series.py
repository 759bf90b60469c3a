"""End to end: a constant series forecasts that constant with a small interval (AutoGP.jl
divides by max - min and fails here)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogp import AutoGP

QUICK = Path(__file__).resolve().parents[1] / "configs" / "quick.toml"


@pytest.mark.parametrize("level", [5.0, -3e9, 0.0])
def test_constant_series_forecasts_the_constant(level):
    df = pd.DataFrame({"ds": pd.date_range("2020-01-01", periods=30, freq="D"), "y": level})
    fc = AutoGP(QUICK, seed=0, progress=False).fit(df).predict(5, level=[95])
    assert np.allclose(fc["AutoGP"], level, rtol=1e-9, atol=1e-9)
    width = (fc["AutoGP-hi-95"] - fc["AutoGP-lo-95"]).to_numpy()
    assert np.all(np.isfinite(width)) and np.all(width > 0)
    assert np.all(width < 1e-3 * max(abs(level), 1.0))
