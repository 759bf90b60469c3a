"""The sparse likelihood in use: which fits get it, the point cap of the exact path, and
forecasts and decompositions of sparse fits against the exact ones when the inducing inputs
are the data (where the two must agree)."""

from __future__ import annotations

import numpy as np
import pytest

from autogp import AutoGP
from autogp.config import engine_settings, load_config
from autogp.data import DataError
from autogp.evaluator.sparse import DEFAULT_INDUCING, inducing_points_for

N = 48
T = np.arange(N, dtype=float)
Y = 0.05 * T + np.sin(2 * np.pi * T / 12) + 0.1 * np.random.default_rng(0).normal(size=N)
TEXTS = [
    "LIN(intercept=0.5; bias=0.2, amp=1.0) + PER(l=1.0, period=0.25; amp=1.0)",
    "SE(l=0.2; amp=1.0)",
]


def test_choice_of_likelihood():
    assert inducing_points_for(5000, "auto", 0, 2000) == DEFAULT_INDUCING
    assert inducing_points_for(1500, "auto", 0, 2000) == 0
    assert inducing_points_for(5000, "exact", 64, 2000) == 0
    assert inducing_points_for(100, "sparse", 0, 2000) == min(100, DEFAULT_INDUCING)
    assert inducing_points_for(100, "sparse", 40, 2000) == 40
    with pytest.raises(ValueError, match="likelihood"):
        inducing_points_for(100, "dense", 0, 2000)
    config = load_config(None, {"smc.likelihood": "sparse", "smc.inducing_points": 32})
    assert engine_settings(config).smc.num_inducing(500) == 32
    assert engine_settings(load_config(None, {})).smc.num_inducing(500) == 0


def _models(**extra):
    exact = AutoGP.from_kernels((T, Y), TEXTS, overrides={"smc.likelihood": "exact", **extra})
    sparse = AutoGP.from_kernels(
        (T, Y), TEXTS,
        overrides={"smc.likelihood": "sparse", "smc.inducing_points": N, **extra},
    )
    return exact, sparse


def test_sparse_forecasts_and_decomposition_match_exact_with_inducing_points_on_the_data():
    exact, sparse = _models()
    assert exact.fits[exact.unique_ids[0]].num_inducing == 0
    assert sparse.fits[sparse.unique_ids[0]].num_inducing == N
    f_exact, f_sparse = exact.predict(10), sparse.predict(10)
    width = (f_exact["AutoGP-hi-95"] - f_exact["AutoGP-lo-95"]).to_numpy()
    for col in f_exact.columns:
        if col.startswith("AutoGP"):
            diff = np.abs(f_sparse[col].to_numpy() - f_exact[col].to_numpy())
            assert np.all(diff < 0.01 * width), col
    d_exact, d_sparse = exact.decompose(), sparse.decompose()
    scale = np.std(Y)
    for col in ("trend", "seasonal", "fitted"):
        assert np.all(np.abs(d_sparse[col] - d_exact[col]) < 0.01 * scale), col


def test_point_cap_applies_to_the_exact_likelihood_only():
    with pytest.raises(DataError, match="max_points"):
        _models(**{"data.max_points": 40})
    sparse = AutoGP.from_kernels(
        (T, Y), TEXTS, overrides={"smc.likelihood": "sparse", "data.max_points": 40}
    )
    assert sparse.fits[sparse.unique_ids[0]].series.n == N


def test_the_setting_survives_saving(tmp_path):
    from autogp import load

    _, sparse = _models()
    before = sparse.predict(6)
    loaded = load(sparse.save(tmp_path / "m.autogp"))
    assert loaded.fits[loaded.unique_ids[0]].num_inducing == N
    np.testing.assert_allclose(loaded.predict(6)["AutoGP"], before["AutoGP"], rtol=1e-9)
