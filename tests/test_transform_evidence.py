"""``data.transform = "evidence"``: a positive series is fitted in data and in log units and the
fit with the higher evidence in data units is kept.

References: the Jacobian of the normalisation by central differences of the scaler itself (not
the closed form the code uses), and the same fits run separately with each transform fixed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from autogp import AutoGP
from autogp.config import load_config
from autogp.pipeline.fitting import choose_by_evidence, data_log_evidence, evidence_transforms

KERNEL = "LIN(intercept=0.2; bias=0.5, amp=0.4) + GE(l=0.3, gamma=1.5; amp=0.5)"
TINY = {
    "grammar": {"max_depth": 1},
    "smc": {"num_particles": 2, "num_rounds": 1, "structure_moves": 1, "workers": 1},
    "refine": {"steps": 2},
}


def _series(n: int = 40):
    t = np.arange(float(n))
    return t, (20 + 0.5 * t + 2.0 * np.sin(2 * np.pi * t / 12)) ** 1.5


def _posterior(transform: str, log_marginal_likelihood: float):
    t, y = _series()
    model = AutoGP.from_kernels(pd.DataFrame({"ds": t, "y": y}), [KERNEL], noise=0.02,
                                config={"data": {"transform": transform}})
    fit = model.fits["series"]
    return dataclasses.replace(fit, log_marginal_likelihood=log_marginal_likelihood)


def _numerical_log_jacobian(scaler, y):
    step = 1e-6 * y
    slope = (scaler.forward_y(y + step) - scaler.forward_y(y - step)) / (2 * step)
    return float(np.sum(np.log(np.abs(slope))))


@pytest.mark.parametrize("transform", ["none", "log"])
@pytest.mark.parametrize("power_from,eta", [(60, 1.0), (0, 0.5)])
def test_data_evidence_adds_the_normalisations_log_jacobian(transform, power_from, eta):
    fit = _posterior(transform, 5.0)
    config = load_config(None, {"smc.power_from": power_from, "smc.likelihood_power": 0.5})
    expected = 5.0 + eta * _numerical_log_jacobian(fit.scaler, fit.series.y)
    assert data_log_evidence(fit, config) == pytest.approx(expected, rel=1e-7)


def test_the_higher_data_evidence_is_kept_and_explained():
    config = load_config(None, {})
    none, log = _posterior("none", -10.0), _posterior("log", -10.0)
    score_none, score_log = data_log_evidence(none, config), data_log_evidence(log, config)
    # Shift the log fit's evidence to either side of the raw one's.
    for margin, winner in ((3.0, "log"), (-3.0, "data")):
        shifted = dataclasses.replace(
            log, log_marginal_likelihood=-10.0 + score_none - score_log + margin)
        kept = choose_by_evidence({"none": none, "log": shifted}, config)
        assert kept.scaler.units == winner
        other = "data" if winner == "log" else "log"
        assert kept.scaler.transform_reason.startswith(f"fitted in {winner} units")
        assert f"fitted in {other} units: " in kept.scaler.transform_reason
        assert "transform = 'evidence'" in kept.scaler.transform_reason
    failed = dataclasses.replace(none, log_marginal_likelihood=float("nan"))
    assert choose_by_evidence({"none": failed, "log": log}, config).scaler.log


def test_only_positive_varying_series_are_compared():
    config = load_config(None, {"data.transform": "evidence"})
    fit = _posterior("none", 0.0)
    assert evidence_transforms(fit.series, config) == ("none", "log")
    zero = dataclasses.replace(fit.series, y=np.where(np.arange(40) == 3, 0.0, fit.series.y))
    assert evidence_transforms(zero, config) == ()
    assert evidence_transforms(fit.series, load_config(None, {})) == ()


def test_an_evidence_fit_is_the_better_of_the_two_fixed_fits():
    air = pd.read_csv("examples/data/airline.csv").iloc[:60]
    zero = air.assign(y=np.where(np.arange(60) == 5, 0.0, air["y"]))
    panel = pd.concat([air.assign(unique_id="air"), zero.assign(unique_id="zero")])

    # log needs positive values: its panel swaps the zero series for a twin (keys are per id)
    positive = pd.concat([air.assign(unique_id="air"), air.assign(unique_id="twin")])

    def fit(transform):
        model = AutoGP({**TINY, "data": {"transform": transform}}, seed=3, progress=False)
        return model.fit(positive if transform == "log" else panel)

    both, raw, logged = fit("evidence"), fit("none"), fit("log")
    config = both.config
    scores = {"data": data_log_evidence(raw.fits["air"], config),
              "log": data_log_evidence(logged.fits["air"], config)}
    winner = raw if scores["data"] >= scores["log"] else logged
    kept = both.fits["air"]
    assert kept.scaler.units == max(scores, key=scores.get)
    np.testing.assert_array_equal(kept.ops, winner.fits["air"].ops)
    np.testing.assert_array_equal(kept.params, winner.fits["air"].params)
    pd.testing.assert_frame_equal(both.predict(4, unique_id="air"),
                                  winner.predict(4, unique_id="air"))
    assert np.isfinite(kept.log_marginal_likelihood)
    assert "transform = 'evidence'" in both.explain("air")
    # A series with a zero is never logged: fitted once, in data units, as auto would.
    assert not both.fits["zero"].scaler.transformed
    assert "values <= 0" in both.fits["zero"].scaler.transform_reason
    np.testing.assert_array_equal(both.fits["zero"].params, raw.fits["zero"].params)
