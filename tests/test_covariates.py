"""Covariates (exogenous regressors): atoms on covariate inputs, their prior, predictions with
future values (``X_df``) against a numpy GP, decompositions, errors, files and the command line.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, load
from autogp.cli.main import app
from autogp.data import DataError
from autogp.evaluator import gram
from autogp.inference import grammar as gr
from autogp.kernels import covariates, pack, parse, spec, to_text
from tests.helpers import temperature_frame


# ---- the atoms and the evaluator --------------------------------------------------------------
def _inputs(n, C, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([np.linspace(0, 1, n), rng.standard_normal((n, C))])


def test_covariate_atoms_read_their_column_numpy_reference():
    x = _inputs(9, 2)
    x2 = _inputs(5, 2, seed=1)
    expr = parse("LIN(intercept=0.3; bias=0.2, amp=0.7) * SE[2](l=0.8; amp=1.3) + LIN[1](amp=2.5)")
    ops, params = pack([expr])
    K = np.asarray(gram(ops, params, x[None], x2[None]))[0]
    t, s = x[:, 0], x2[:, 0]
    lin = 0.2 + 0.7 * np.outer(t - 0.3, s - 0.3)
    se2 = 1.3 * np.exp(-0.5 * (x[:, 2][:, None] - x2[:, 2][None, :]) ** 2 / 0.8**2)
    lin1 = 2.5 * np.outer(x[:, 1], x2[:, 1])
    np.testing.assert_allclose(K, lin * se2 + lin1, rtol=1e-12, atol=1e-12)


def test_change_point_reads_time_with_covariates():
    x = _inputs(7, 1)
    expr = parse("CP(SE(l=0.2; amp=1.0), LIN[1](amp=0.4); location=0.5, scale=0.05)")
    ops, params = pack([expr])
    K = np.asarray(gram(ops, params, x[None]))[0]
    t, z = x[:, 0], x[:, 1]
    s = 0.5 * (1 + np.tanh((0.5 - t) / 0.05))
    se = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2 / 0.2**2)
    ref = np.outer(s, s) * se + np.outer(1 - s, 1 - s) * 0.4 * np.outer(z, z)
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12)


def test_covariate_gradients_match_finite_differences():
    x = jnp.asarray(_inputs(8, 2)[None])
    ops, params = pack([parse("LIN[1](amp=0.9) + SE[2](l=0.7; amp=1.1) * GE")])
    w = jnp.asarray(np.random.default_rng(3).standard_normal((8, 8)))

    def f(p):
        return jnp.sum(w * gram(ops, p, x))

    g = np.asarray(jax.grad(f)(jnp.asarray(params)))
    eps = 1e-6
    for slot, k in [(1, 0), (3, 0), (3, 1), (4, 0), (4, 2)]:
        up = params.copy()
        up[0, slot, k] += eps
        down = params.copy()
        down[0, slot, k] -= eps
        fd = (float(f(jnp.asarray(up))) - float(f(jnp.asarray(down)))) / (2 * eps)
        assert g[0, slot, k] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_text_form_names_covariates():
    expr = parse("LIN + LIN[temp] * SE[rain]", covariates=["temp", "rain"])
    assert expr.children[1].children[0].opcode == covariates.linear_opcode(1)
    assert expr.children[1].children[1].opcode == covariates.smooth_opcode(2)
    assert to_text(expr) == "LIN + LIN[1] * SE[2]"
    assert to_text(expr, covariates=["temp", "rain"]) == "LIN + LIN[temp] * SE[rain]"
    with pytest.raises(ValueError, match="kernel name"):
        parse("LIN[wind]", covariates=["temp"])


# ---- the structure prior ----------------------------------------------------------------------
def test_grammar_draws_covariate_atoms_only_with_covariates():
    base = gr.Grammar.default()
    ops, _ = pack([parse("LIN + LIN[1]")])
    assert float(gr.log_prior_structure(base, jnp.asarray(ops))[0]) == -np.inf
    assert gr.with_covariates(base, 0, 6.0) is base
    two = gr.with_covariates(base, 2, 6.0)
    w = np.asarray(two.weights)
    assert w[covariates.linear_opcode(2)] == 4.0 and w[covariates.smooth_opcode(2)] == 2.0
    assert w[covariates.linear_opcode(3)] == 0.0
    # shares: covariate k's atoms get its share of the weight, still 2:1
    split = np.asarray(gr.with_covariates(base, 2, 6.0, shares=(0.5, 0.25)).weights)
    assert split[covariates.linear_opcode(1)] == 2.0 and split[covariates.smooth_opcode(1)] == 1.0
    assert split[covariates.linear_opcode(2)] == 1.0 and split[covariates.smooth_opcode(2)] == 0.5
    with pytest.raises(ValueError, match="shares"):
        gr.with_covariates(base, 2, 6.0, shares=(1.0,))
    # Exact prior: the product of the production probabilities, written out (a CP may sit at
    # the root only, so the children's choices leave it out).
    root_total, child_total = w.sum(), w.sum() - w[spec.CP]
    expected = (np.log(w[spec.PLUS] / root_total) + np.log(w[spec.LIN] / child_total)
                + np.log(w[covariates.linear_opcode(1)] / child_total))
    assert float(gr.log_prior_structure(two, jnp.asarray(ops))[0]) == pytest.approx(expected)
    drawn, _, _ = gr.sample_prior(two, 400, key=jax.random.key(0))
    used = np.isin(np.asarray(drawn), spec.COVARIATE_ATOMS)
    assert used.any()
    assert not np.isin(np.asarray(drawn), [covariates.linear_opcode(3),
                                           covariates.smooth_opcode(3)]).any()


def test_no_covariates_draws_as_before():
    base = gr.Grammar.default()
    a = gr.sample_prior(base, 16, key=jax.random.key(5))
    b = gr.sample_prior(gr.with_covariates(base, 0, 6.0), 16, key=jax.random.key(5))
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    assert not np.isin(np.asarray(a[0]), spec.COVARIATE_ATOMS).any()


# ---- predictions against a numpy GP --------------------------------------------------------------
N, H = 40, 6


def _frame(n=N + H, seed=0):
    return temperature_frame(n, seed)


KERNEL = "LIN(intercept=0.5; bias=1.0, amp=1.0) + LIN[temp](amp=1.0)"
NOISE = 0.05


@pytest.fixture(scope="module")
def kernel_model():
    df = _frame()
    model = AutoGP.from_kernels(df.iloc[:N], [KERNEL], noise=NOISE,
                                config={"data": {"transform": "none"}})
    return model, df


def _numpy_reference(df, t_idx_new, temp_new):
    """The GP posterior mean in data units, from the normalisation written out by hand."""
    train = df.iloc[:N]
    y = train["y"].to_numpy()
    t = np.arange(N, dtype=float)
    tn = (t - t[0]) / (t[-1] - t[0])
    z = train["temp"].to_numpy()
    zm, zs = z.mean(), z.std()
    zn = (z - zm) / zs
    t_new = (np.asarray(t_idx_new, float) - t[0]) / (t[-1] - t[0])
    z_new = (np.asarray(temp_new) - zm) / zs

    def k(a, za, b, zb):
        return 1.0 + 1.0 * np.outer(a - 0.5, b - 0.5) + np.outer(za, zb)

    return k, (tn, zn, t_new, z_new, y)


def test_predict_with_future_covariates_matches_numpy_gp(kernel_model):
    model, df = kernel_model
    future = df.iloc[N:][["ds", "temp"]]
    fc = model.predict(H, X_df=future)
    post = model.fits["series"]
    s = post.scaler
    k, (tn, zn, t_new, z_new, y) = _numpy_reference(df, np.arange(N, N + H),
                                                   future["temp"].to_numpy())
    yn = (y - s.value_offset) / s.value_scale
    K = k(tn, zn, tn, zn) + NOISE * np.eye(N)
    mean = k(t_new, z_new, tn, zn) @ np.linalg.solve(K, yn)
    np.testing.assert_allclose(fc["AutoGP"].to_numpy(), s.value_offset + s.value_scale * mean,
                               rtol=1e-8)
    # The covariate moves the forecast: another future temperature, another forecast.
    warmer = future.assign(temp=future["temp"] + 1.0)
    shift = model.predict(H, X_df=warmer)["AutoGP"].to_numpy() - fc["AutoGP"].to_numpy()
    assert np.all(shift > 0)


def test_decompose_covariate_component_sums_to_fit(kernel_model):
    model, df = kernel_model
    future = df.iloc[N:][["ds", "temp"]]
    dec = model.decompose(df["ds"], X_df=future)
    assert "covariates" in dec.columns and len(dec) == N + H
    parts = dec[["trend", "seasonal", "smooth", "changepoint", "noise", "covariates"]].sum(axis=1)
    np.testing.assert_allclose(parts.to_numpy(), dec["fitted"].to_numpy(), rtol=1e-10)
    post = model.fits["series"]
    s = post.scaler
    k, (tn, zn, t_new, z_new, y) = _numpy_reference(df, np.arange(N + H),
                                                   df["temp"].to_numpy())
    yn = (y - s.value_offset) / s.value_scale
    alpha = np.linalg.solve(k(tn, zn, tn, zn) + NOISE * np.eye(N), yn)
    cov_part = np.outer(z_new, zn) @ alpha
    np.testing.assert_allclose(dec["covariates"].to_numpy(), s.value_scale * cov_part,
                               rtol=1e-8, atol=1e-8)
    assert np.all(np.isnan(dec["y"].to_numpy()[N:]))


def test_explain_reads_the_covariate_in_data_units(kernel_model):
    model, df = kernel_model
    post = model.fits["series"]
    s = post.scaler
    k, (tn, zn, *_rest, y) = _numpy_reference(df, [0], [0.0])
    yn = (y - s.value_offset) / s.value_scale
    alpha = np.linalg.solve(k(tn, zn, tn, zn) + NOISE * np.eye(N), yn)
    z = df["temp"].to_numpy()[:N]
    slope = s.value_scale * (zn @ alpha) / z.std()  # posterior mean of beta, data units
    text = model.explain()
    found = re.search(r"temp: y rises ([0-9.]+) per unit of temp", text)
    assert found, text
    assert float(found.group(1)) == pytest.approx(slope, rel=1e-3)
    assert "linear effect of temp" in model.kernels()["reading"].iloc[0]
    assert "LIN[temp]" in model.kernels()["structure"].iloc[0]


def test_saved_model_keeps_covariates(kernel_model, tmp_path):
    model, df = kernel_model
    future = df.iloc[N:][["ds", "temp"]]
    again = load(model.save(tmp_path / "cov.autogp"))
    np.testing.assert_array_equal(again.predict(H, X_df=future)["AutoGP"].to_numpy(),
                                  model.predict(H, X_df=future)["AutoGP"].to_numpy())


# ---- bad future values ---------------------------------------------------------------------------
def test_bad_future_covariates_name_column_and_date(kernel_model):
    model, df = kernel_model
    future = df.iloc[N:][["ds", "temp"]].reset_index(drop=True)
    first = future["ds"].iloc[0].strftime("%Y-%m-%d")
    with pytest.raises(DataError, match="needs their future values.*X_df"):
        model.predict(H)
    with pytest.raises(DataError, match="covariate 'temp' is missing.*known only in the past"):
        model.predict(H, X_df=future[["ds"]])
    with pytest.raises(DataError, match=f"no row for {first}.*'temp'"):
        model.predict(H, X_df=future.iloc[1:])
    shifted = future.assign(ds=future["ds"] + pd.Timedelta(hours=12))  # misaligned dates
    with pytest.raises(DataError, match=f"no row for {first}.*'temp'"):
        model.predict(H, X_df=shifted)
    text = future.astype({"temp": object})
    text.loc[2, "temp"] = "warm"
    third = future["ds"].iloc[2].strftime("%Y-%m-%d")
    with pytest.raises(DataError, match=f"covariate 'temp' at {third}.*'warm'"):
        model.predict(H, X_df=text)
    gap = future.copy()
    gap.loc[3, "temp"] = np.nan
    with pytest.raises(DataError, match="covariate 'temp' at .* not a finite number"):
        model.predict(H, X_df=gap)
    with pytest.raises(DataError, match="twice"):
        model.predict(H, X_df=pd.concat([future, future.iloc[:1]]))


def test_bad_training_covariates_are_refused():
    df = _frame(30)
    with pytest.raises(DataError, match="column 'city' is not numeric.*'Oslo'"):
        AutoGP.from_kernels(df.assign(city=["Oslo", "Bergen"] * 15), ["LIN"])
    # Labels constant within a series (a frequency, a category) and constant numbers are no
    # covariates: nothing to learn from them.
    plain = AutoGP.from_kernels(df[["ds", "y"]].assign(freq="D", horizon=7), ["LIN"])
    assert plain.fits["series"].covariates == ()
    assert len(plain.predict(3)) == 3
    gap = df.copy()
    gap.loc[4, "temp"] = np.nan
    with pytest.raises(DataError,
                       match="covariate 'temp' at 2020-01-05 is not a finite number .nan in the"):
        AutoGP.from_kernels(gap, ["LIN"])


# ---- the SMC finds the covariate -----------------------------------------------------------------
SMC = {"smc": {"num_particles": 8, "num_rounds": 4}, "seed": 0, "data": {"transform": "none"}}
FIT_N, FIT_H = 60, 12


def _synthetic(seed=1):
    """y = trend + 3 x + noise with a known covariate x (a random walk plus a cycle)."""
    rng = np.random.default_rng(seed)
    n = FIT_N + FIT_H
    t = np.arange(n)
    x = rng.standard_normal(n).cumsum() * 0.3 + np.sin(t / 3.0)
    y = 0.05 * t + 3.0 * x + 0.3 * rng.standard_normal(n)
    return pd.DataFrame({"ds": pd.date_range("2000-01-01", periods=n, freq="D"), "y": y,
                         "x": x})


@pytest.fixture(scope="module")
def smc_fits():
    df = _synthetic()
    train, _test = df.iloc[:FIT_N], df.iloc[FIT_N:]
    with_x = AutoGP(config=SMC, progress=False).fit(train)
    without = AutoGP(config=SMC, progress=False).fit(train[["ds", "y"]])
    return df, with_x, without


def test_smc_finds_the_covariate_and_forecasts_better(smc_fits):
    df, with_x, without = smc_fits
    test = df.iloc[FIT_N:]
    table = with_x.kernels()
    share = table.loc[table["structure"].str.contains(r"LIN\[x\]"), "weight"].sum()
    assert share > 0.5, table
    fc = with_x.predict(FIT_H, X_df=test[["ds", "x"]])
    mae = np.mean(np.abs(fc["AutoGP"].to_numpy() - test["y"].to_numpy()))
    mae0 = np.mean(np.abs(without.predict(FIT_H)["AutoGP"].to_numpy() - test["y"].to_numpy()))
    assert mae < 0.5 * mae0
    # The slope explain reads against least squares of y on (1, t, x): the true value is 3.
    train = df.iloc[:FIT_N]
    design = np.column_stack([np.ones(FIT_N), np.arange(FIT_N), train["x"].to_numpy()])
    beta = np.linalg.lstsq(design, train["y"].to_numpy(), rcond=None)[0]
    found = re.search(r"x: y rises ([0-9.]+) per unit of x", with_x.explain())
    assert found and float(found.group(1)) == pytest.approx(beta[2], rel=0.25)
    assert beta[2] == pytest.approx(3.0, rel=0.1)


def test_cli_fit_with_future(smc_fits, tmp_path):
    df, with_x, _ = smc_fits
    data, future = tmp_path / "data.csv", tmp_path / "future.csv"
    df.iloc[:FIT_N].to_csv(data, index=False)
    df.iloc[FIT_N:][["ds", "x"]].to_csv(future, index=False)
    out = tmp_path / "fc.csv"
    args = ["fit", str(data), "--horizon", str(FIT_H), "--particles", "8", "--seed", "0",
            "--set", "smc.num_rounds=4", "--set", "data.transform=none", "--quiet",
            "--output", str(out)]
    result = CliRunner().invoke(app, [*args, "--future", str(future)])
    assert result.exit_code == 0, result.output
    cli = pd.read_csv(out)
    api = with_x.predict(FIT_H, X_df=df.iloc[FIT_N:][["ds", "x"]])
    np.testing.assert_allclose(cli["AutoGP"].to_numpy(), api["AutoGP"].to_numpy(), rtol=1e-9)
    missing = CliRunner().invoke(app, args)
    assert missing.exit_code != 0
    assert "future values" in missing.output and "--future" in missing.output


def test_cross_validation_takes_future_covariates_from_the_frame(smc_fits):
    df, with_x, _ = smc_fits
    cv = AutoGP(config=SMC, progress=False).cross_validation(df, h=FIT_H, n_windows=1)
    test = df.iloc[FIT_N:]
    # The window's fit is the fit of the truncated frame (same seed), forecast with the
    # frame's own covariates after the cutoff.
    separate = with_x.predict(FIT_H, X_df=test[["ds", "x"]])
    np.testing.assert_array_equal(cv["AutoGP"].to_numpy(), separate["AutoGP"].to_numpy())
    np.testing.assert_array_equal(cv["y"].to_numpy(), test["y"].to_numpy())


def test_a_dask_frame_brings_its_covariate_columns():
    dd = pytest.importorskip("dask.dataframe")
    from autogp.config import load_config
    from autogp.forecast.reading import read_panel

    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"unique_id": uid, "ds": np.arange(20.0),
                            "y": rng.normal(size=20), "price": rng.normal(size=20),
                            "label": "shop"}) for uid in ("a", "b")]
    panel = pd.concat(frames, ignore_index=True)
    series, errors = read_panel(dd.from_pandas(panel, npartitions=2), load_config(None))
    assert not errors
    assert [s.unique_id for s in series] == ["a", "b"]
    for s, frame in zip(series, frames, strict=True):
        assert list(s.covariates.columns) == ["price"]
        np.testing.assert_array_equal(s.covariates["price"].to_numpy(), frame["price"].to_numpy())
