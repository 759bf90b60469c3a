"""A model fitted in Box-Cox units reports forecasts, densities and components in data units.

Reference: the same particles fitted (given) on boxcox(y) with no transform, whose Gaussian
forecasts mapped through the inverse transform must be the transformed model's forecasts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import inv_boxcox as scipy_inv_boxcox

from autogp import AutoGP
from autogp.data.transform import boxcox

LAM = 0.5
KERNEL = "LIN(intercept=0.2; bias=0.5, amp=0.4) + GE(l=0.3, gamma=1.5; amp=0.5)"


def series():
    t = np.arange(40.0)
    y = (20 + 0.5 * t + 2.0 * np.sin(2 * np.pi * t / 12)) ** 1.5
    return t, y


def models():
    t, y = series()
    data = pd.DataFrame({"ds": t, "y": y})
    direct = AutoGP.from_kernels(
        data, [KERNEL], noise=0.02, config={"data": {"transform": "boxcox", "boxcox_lambda": LAM}}
    )
    reference = AutoGP.from_kernels(
        pd.DataFrame({"ds": t, "y": boxcox(y, LAM)}), [KERNEL], noise=0.02, log_transform=False
    )
    return direct, reference, t, y


def test_quantiles_are_back_transformed_reference_quantiles():
    direct, reference, _, _ = models()
    q = [0.025, 0.1, 0.5, 0.9, 0.975]
    got = direct.predict(6, quantiles=q)
    ref = reference.predict(6, quantiles=q)
    for p in q:
        col = f"AutoGP-q-{100 * p:.10g}"
        np.testing.assert_allclose(got[col], scipy_inv_boxcox(ref[col].to_numpy(), LAM),
                                   rtol=1e-9)
    # The median point forecast is the back-transformed median.
    med = direct.predict(6, level=[], point="median")["AutoGP"]
    np.testing.assert_allclose(med, scipy_inv_boxcox(ref["AutoGP-q-50"].to_numpy(), LAM),
                               rtol=1e-9)


def test_mean_is_the_mean_of_the_back_transformed_gaussian():
    direct, reference, _, _ = models()
    ref = reference.predict(6, quantiles=[stats.norm.cdf(1.0)])
    mu = reference.predict(6, level=[])["AutoGP"].to_numpy()  # one particle: a Gaussian
    sd = ref.iloc[:, -1].to_numpy() - mu
    # x = (LAM z + 1)^2 with z ~ N(mu, sd^2): E x = (LAM mu + 1)^2 + LAM^2 sd^2.
    expected = (LAM * mu + 1) ** 2 + LAM**2 * sd**2
    np.testing.assert_allclose(direct.predict(6, level=[])["AutoGP"], expected, rtol=1e-8)


def test_density_has_the_jacobian_and_components_are_in_transformed_units():
    direct, reference, t, y = models()
    t_new = np.arange(40.0, 46.0)
    y_new = (20 + 0.5 * t_new) ** 1.5
    got = direct.log_predictive_density(t_new, y_new, pointwise=True)
    ref = reference.log_predictive_density(t_new, boxcox(y_new, LAM), pointwise=True)
    np.testing.assert_allclose(got, ref + (LAM - 1) * np.log(y_new), rtol=1e-10)
    comp, comp_ref = direct.decompose(), reference.decompose()
    assert comp.attrs["units"] == "boxcox"
    np.testing.assert_allclose(comp["y"].to_numpy()[:40], boxcox(y, LAM), rtol=1e-12)
    for col in ("trend", "smooth", "fitted"):
        np.testing.assert_allclose(comp[col], comp_ref[col], rtol=1e-9, atol=1e-9)


def test_explain_names_the_transform_and_why():
    t, y = series()
    model = AutoGP.from_kernels(pd.DataFrame({"ds": t, "y": y}), [KERNEL], log_transform=True)
    text = model.explain()
    assert "log units" in text and "transform = 'log'" in text
    assert model.fits["series"].scaler.log


def test_auto_is_chosen_per_series_in_a_fit(monkeypatch):
    # The fit itself is replaced (speed); the scaler, which carries the choice, is real.
    import autogp.inference.smc as smc_module

    def fake_run_smc(x, y, grammar, settings, *, key, callback=None, debug=False,
                     seasonal_period=None):
        from autogp.inference.smc import SMCResult
        from autogp.kernels import pack, parse

        ops, params = pack([parse("GE(l=0.3, gamma=1.5; amp=0.5)")],
                           max_depth=grammar.max_depth)
        return SMCResult(ops=ops, params=params, noise=np.array([-3.0]),
                         log_weights=np.array([0.0]), log_marginal_likelihood=0.0,
                         history={"count": [[len(x)]]})

    monkeypatch.setattr(smc_module, "run_smc", fake_run_smc)
    from autogp.parallel import panel as panel_module  # the stand-in is not in spawned workers

    monkeypatch.setattr(panel_module, "resolve_workers", lambda configured: configured or 1)
    air = pd.read_csv("examples/data/airline.csv").iloc[:126]
    flat = air.assign(y=np.where(np.arange(126) == 5, 0.0, air["y"]))  # a zero: never logged
    panel = pd.concat([air.assign(unique_id="air"), flat.assign(unique_id="zero")])
    model = AutoGP(progress=False).fit(panel)
    assert model.fits["air"].scaler.log
    assert not model.fits["zero"].scaler.transformed
    assert "Guerrero" in model.explain("air")
    fc = model.predict(3, level=[95])
    assert np.all(fc["AutoGP-lo-95"] < fc["AutoGP"]) and np.all(fc["AutoGP"] < fc["AutoGP-hi-95"])


@pytest.mark.parametrize("keyword,units", [(True, "log"), (False, "data")])
def test_log_transform_keyword_still_works(keyword, units):
    t, y = series()
    model = AutoGP.from_kernels(pd.DataFrame({"ds": t, "y": y}), [KERNEL],
                                log_transform=keyword)
    assert model.fits["series"].scaler.units == units
