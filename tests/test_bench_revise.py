"""Smoke test of scripts/bench_revise.py on tiny inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import load_script

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")


def test_a_tiny_run_compares_the_revision_with_a_refit(tmp_path):
    report = load_script("bench_revise").main(["--tiny", "--json", str(tmp_path / "r.json")])
    runs = report["runs"]
    assert [r["seed"] for r in runs] == [0, 1]
    revise = np.array([r["revise_log_ml"] for r in runs])
    refit = np.array([r["refit_log_ml"] for r in runs])
    assert np.all(np.isfinite(revise)) and np.all(np.isfinite(refit))
    assert report["difference_of_means"] == pytest.approx(revise.mean() - refit.mean())
    se = np.sqrt((revise.var(ddof=1) + refit.var(ddof=1)) / 2)
    assert report["monte_carlo_se"] == pytest.approx(se)
    times = sum(r["revise_s"] for r in runs) / sum(r["refit_s"] for r in runs)
    assert report["ratio_revise_over_refit"] == pytest.approx(times)
