"""Known observation noise (a ``noise_sd`` column): the likelihood and the predictions use
K + diag(sigma^2 + s_i^2); series without the column give the same numbers as before.

References: scipy's multivariate normal and a plain-numpy GP (``tests/reference_numpy.py``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal
from typer.testing import CliRunner

from autogp import AutoGP, parse
from autogp.cli.main import app
from autogp.data import DataError, from_frame
from autogp.evaluator import log_marginal_likelihood, posterior_predictive
from autogp.kernels import pack
from tests.reference_numpy import gram_numpy

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

TEXTS = ("SE(l=0.2; amp=1.3) + LIN", "PER(l=0.9, period=0.3; amp=0.8) * LIN + GE")
NOISE = 0.04


def monthly(n: int = 24) -> pd.DataFrame:
    ds = pd.date_range("2001-01-01", periods=n, freq="MS")
    i = np.arange(n, dtype=np.float64)
    y = 20 + 3 * np.sin(2 * np.pi * i / 12) + 0.1 * i + 0.3 * np.cos(1.7 * i)
    sd = 0.2 + 0.05 * (i % 5)
    return pd.DataFrame({"ds": ds, "y": y, "noise_sd": sd})


def test_the_likelihood_adds_the_known_variances_to_the_diagonal():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 1, 20))
    y = rng.normal(size=20)
    known = rng.uniform(0.0, 0.3, 20) ** 2
    mask = np.arange(20) < 17  # padding is masked out
    exprs = [parse(t) for t in TEXTS]
    ops, params = pack(exprs, max_depth=3)
    noise = np.log(np.full(2, NOISE))
    got = log_marginal_likelihood(jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
                                  jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask),
                                  known_var=jnp.asarray(known))
    plain = log_marginal_likelihood(jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
                                    jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask))
    zero = log_marginal_likelihood(jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
                                   jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask),
                                   known_var=jnp.zeros(20))
    n = 17
    for p, e in enumerate(exprs):
        cov = gram_numpy(e, x[:n], x[:n]) + np.diag(NOISE + known[:n])
        ref = multivariate_normal(np.zeros(n), cov).logpdf(y[:n])
        np.testing.assert_allclose(float(got[p]), ref, rtol=1e-8)
        ref0 = multivariate_normal(np.zeros(n), cov - np.diag(known[:n])).logpdf(y[:n])
        np.testing.assert_allclose(float(plain[p]), ref0, rtol=1e-8)
    # Zero known variances are no known variances, to the bit.
    np.testing.assert_array_equal(np.asarray(zero), np.asarray(plain))

    # The predictive conditions on K + diag(noise + known); new points get the noise alone.
    x_new = np.array([1.05, 1.2])
    mean, var = posterior_predictive(jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise),
                                     jnp.asarray(x), jnp.asarray(y), jnp.asarray(mask),
                                     jnp.asarray(x_new), full_cov=False,
                                     observation_noise=True, known_var=jnp.asarray(known))
    for p, e in enumerate(exprs):
        cov = gram_numpy(e, x[:n], x[:n]) + np.diag(NOISE + known[:n])
        cross = gram_numpy(e, x_new, x[:n])
        np.testing.assert_allclose(np.asarray(mean[p]), cross @ np.linalg.solve(cov, y[:n]),
                                   rtol=1e-7)
        ref_var = (np.diag(gram_numpy(e, x_new, x_new))
                   - np.einsum("mn,nm->m", cross, np.linalg.solve(cov, cross.T)) + NOISE)
        np.testing.assert_allclose(np.asarray(var[p]), ref_var, rtol=1e-7)


def test_bad_noise_values_are_named_by_row():
    df = monthly()
    df.loc[3, "noise_sd"] = -0.5
    with pytest.raises(DataError, match=r"column 'noise_sd', index 3: the known noise standard "
                                        r"deviation is negative \(-0.5\)"):
        from_frame(df, noise_col="noise_sd")
    df.loc[3, "noise_sd"] = np.nan
    with pytest.raises(DataError, match=r"index 3: the known noise standard deviation is "
                                        r"missing"):
        AutoGP().fit(df, noise_col="noise_sd")
    # A row whose value is missing is dropped, and its noise with it.
    df.loc[3, "y"] = np.nan
    series = from_frame(df, noise_col="noise_sd")
    assert series.n == 23 and series.noise_sd.size == 23
    with pytest.raises(DataError, match=r"no column 'sd'|'sd'"):
        from_frame(df, noise_col="sd")


def fixed(df: pd.DataFrame, transform: str = "none") -> AutoGP:
    """One given kernel, the known noise attached to its training series."""
    model = AutoGP.from_kernels(df[["ds", "y"]], [TEXTS[0]], noise=NOISE,
                                config={"data": {"transform": transform}})
    fit = model.fits["series"]
    noisy = from_frame(df, noise_col="noise_sd")
    fit.series = noisy
    return model


@pytest.mark.parametrize("transform", ["none", "log"])
def test_forecasts_condition_on_the_known_noise_by_the_delta_method(transform):
    df = monthly()
    model = fixed(df, transform)
    fit = model.fits["series"]
    s = fit.scaler
    x = fit.x
    z = fit.y
    y = df["y"].to_numpy()
    sd = df["noise_sd"].to_numpy()
    # Known sds in normalised units: / value_scale, and / y first under the log (delta method).
    sd_z = (sd / y if transform == "log" else sd) / s.value_scale
    e = parse(TEXTS[0])
    x_star = s.forward_t(fit.series.future_t(3))
    cov = gram_numpy(e, x, x) + np.diag(NOISE + sd_z**2)
    mean = gram_numpy(e, x_star, x) @ np.linalg.solve(cov, z)
    fc = model.predict(3, level=[80], point="median")
    np.testing.assert_allclose(fc["AutoGP"].to_numpy(), s.inverse_y(mean), rtol=1e-7)


def test_fit_update_and_cross_validation_carry_the_noise(monkeypatch):
    from autogp.inference import smc
    from tests.test_forecast import install_fake_smc

    install_fake_smc(monkeypatch)
    calls = []

    def spying(fake):
        def spy(*args, known_var=None, **kwargs):
            calls.append(known_var)
            return fake(*args, **kwargs)
        return spy

    monkeypatch.setattr(smc, "run_smc", spying(smc.run_smc))
    monkeypatch.setattr(smc, "update_smc", spying(smc.update_smc))
    df = monthly()
    model = AutoGP(particles=2, overrides={"data.transform": "none"}).fit(
        df.iloc[:20], noise_col="noise_sd")
    s = model.fits["series"].scaler
    np.testing.assert_allclose(calls[-1], (df["noise_sd"][:20].to_numpy() / s.value_scale) ** 2,
                               rtol=1e-12)
    with pytest.raises(DataError, match=r"was fitted with known observation noise"):
        model.update(df.iloc[20:22][["ds", "y"]])
    bad = df.iloc[20:22].assign(noise_sd=[0.1, -1.0])
    with pytest.raises(DataError, match=r"row at 2002-10-01.*is -1; it must be"):
        model.update(bad, noise_col="noise_sd")
    model.update(df.iloc[20:22], noise_col="noise_sd")
    # Old points first, then the new ones, in the fit's normalised units.
    np.testing.assert_allclose(calls[-1], (df["noise_sd"][:22].to_numpy() / s.value_scale) ** 2,
                               rtol=1e-12)
    np.testing.assert_array_equal(model.series().noise_sd, df["noise_sd"][:22].to_numpy())
    calls.clear()
    AutoGP(particles=2, overrides={"data.transform": "none"}).cross_validation(
        df, h=2, n_windows=2, noise_col="noise_sd")
    assert [len(c) for c in calls] == [20, 22]


def test_saved_models_keep_the_known_noise(tmp_path):
    from autogp import load

    model = fixed(monthly())
    path = model.save(tmp_path / "m.autogp")
    loaded = load(path)
    np.testing.assert_array_equal(loaded.series().noise_sd, model.series().noise_sd)
    pd.testing.assert_frame_equal(loaded.predict(3), model.predict(3), check_exact=True)


def test_the_cli_takes_a_noise_column(monkeypatch, tmp_path):
    from tests.test_forecast import install_fake_smc

    install_fake_smc(monkeypatch)
    df = monthly()
    df.loc[5, "noise_sd"] = -2.0
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    result = CliRunner().invoke(app, ["fit", str(path), "--noise-col", "noise_sd",
                                      "--particles", "2", "--horizon", "2", "--quiet"])
    assert result.exit_code != 0
    assert "column 'noise_sd', row 7: the known noise standard deviation is negative" in (
        result.output)  # the file's line 7 (the header is line 1)
    df.loc[5, "noise_sd"] = 0.0
    df.to_csv(path, index=False)
    out = tmp_path / "fc.csv"
    result = CliRunner().invoke(app, ["fit", str(path), "--noise-col", "noise_sd", "--particles",
                                      "2", "--horizon", "2", "--quiet", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(out)) == 2
