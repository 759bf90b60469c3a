"""Known observation noise in the sparse likelihood: per-point known variances are per-point
noise of Titsias' bound (heteroscedastic SGPR), in the bound, its predictive, the SMC's
likelihood and a fitted model's forecasts.

Reference: the bound and the optimal q(u)'s predictive written out with dense numpy matrices
and a diagonal noise ``s + d_i + known_i`` (``d_i``: the white-noise share of the diagonal).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from autogp import AutoGP
from autogp.evaluator import log_marginal_likelihood
from autogp.evaluator.sparse import (
    sparse_log_marginal_likelihood,
    sparse_posterior_predictive,
)
from autogp.inference.padding import make_data
from autogp.inference.smc_round import likelihood_fn
from autogp.kernels import pack, parse, to_text
from tests.helpers import assert_allclose, random_expression
from tests.reference_numpy import gram_numpy
from tests.test_sparse import _reference_bound as sparse_reference_bound
from tests.test_sparse import _reference_parts as sparse_reference_parts

P, DEPTH, N, M = 4, 3, 40, 12
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, N))
Y = np.sin(9.0 * X) + 0.3 * np.random.default_rng(1).normal(size=N)
# Known variances that differ by two orders of magnitude from point to point.
KNOWN = np.random.default_rng(2).uniform(0.0, 1.0, N) ** 2 * 0.5

_bound_jit = jax.jit(sparse_log_marginal_likelihood, static_argnames=("num_inducing", "chunk"))
_predictive_jit = jax.jit(sparse_posterior_predictive,
                          static_argnames=("full_cov", "observation_noise", "num_inducing"))


def _reference_parts(expr, noise_var, x, known, num):
    return sparse_reference_parts(expr, noise_var, x, num, known)


def _reference_bound(expr, noise_var, x, y, known, num):
    return sparse_reference_bound(expr, noise_var, x, y, num, known)


def _batch(seed, count=P):
    rng = np.random.default_rng(seed)
    exprs = [random_expression(rng, DEPTH) for _ in range(count)]
    ops, params = pack(exprs, DEPTH)
    return rng, exprs, ops, params


def test_the_bound_takes_per_point_known_variances_numpy_reference():
    rng, exprs, ops, params = _batch(10)
    noise = rng.uniform(-4.0, -1.0, P)
    subset = rng.random(N) < 0.6
    subset[[0, N - 1]] = True
    # Chunks of 16 points: the known variances are streamed with the data.
    for mask in (np.ones(N, bool), subset):
        values = np.asarray(_bound_jit(ops, params, noise, X, Y, mask, num_inducing=M, chunk=16,
                                       known_var=KNOWN))
        plain = np.asarray(_bound_jit(ops, params, noise, X, Y, mask, num_inducing=M, chunk=16))
        for p, expr in enumerate(exprs):
            expected = _reference_bound(expr, np.exp(noise[p]), X[mask], Y[mask], KNOWN[mask], M)
            assert_allclose(values[p], expected, rtol=1e-7, atol=1e-7, err_msg=to_text(expr))
            without = _reference_bound(expr, np.exp(noise[p]), X[mask], Y[mask], 0.0, M)
            assert_allclose(plain[p], without, rtol=1e-7, atol=1e-7)
        # The known variances change the value (they are not dropped on the way).
        assert np.all(np.abs(values - plain) > 1e-3)
    # Zero known variances are no known variances, exactly.
    zero = _bound_jit(ops, params, noise, X, Y, num_inducing=M, chunk=16, known_var=np.zeros(N))
    np.testing.assert_array_equal(np.asarray(zero), np.asarray(
        _bound_jit(ops, params, noise, X, Y, num_inducing=M, chunk=16)))


def test_the_bound_with_known_noise_is_tight_at_the_data_and_has_its_gradient():
    n = 30
    x = np.linspace(0.0, 1.0, n)  # with M = n the inducing grid lands on the data (+ DELTA)
    y = np.cos(7.0 * x)
    known = KNOWN[:n]
    ops, params = pack([parse("SE(l=0.2; amp=1.0) + LIN")], DEPTH)
    noise = np.array([np.log(0.05)])
    exact = float(jax.jit(log_marginal_likelihood)(ops, params, noise, x, y,
                                                   known_var=known)[0])
    bound = float(_bound_jit(ops, params, noise, x, y, num_inducing=n, known_var=known)[0])
    assert exact - 2e-3 < bound <= exact + 1e-9 * abs(exact)

    def f(p, s):
        return jnp.sum(sparse_log_marginal_likelihood(ops, p, s, x, y, num_inducing=8,
                                                      known_var=known))

    g_params, g_noise = jax.jit(jax.grad(f, argnums=(0, 1)))(jnp.asarray(params),
                                                             jnp.asarray(noise))
    value = jax.jit(f)
    eps = 1e-6
    fd = (float(value(jnp.asarray(params), jnp.asarray(noise + eps)))
          - float(value(jnp.asarray(params), jnp.asarray(noise - eps)))) / (2 * eps)
    assert_allclose(float(g_noise[0]), fd, rtol=1e-5, atol=1e-7)
    assert np.all(np.isfinite(np.asarray(g_params)))


def test_the_sparse_predictive_conditions_on_the_known_variances():
    rng, exprs, ops, params = _batch(60)
    noise = rng.uniform(-3.0, -1.0, P)
    mask = np.arange(N) < 34
    x_new = np.array([0.03, 0.5, X[33] + 0.013, 1.1])
    mean, cov = _predictive_jit(ops, params, noise, X, Y, mask, x_new, observation_noise=True,
                                num_inducing=M, known_var=KNOWN)
    for p, expr in enumerate(exprs):
        xm, ym = X[mask], Y[mask]
        z, Kuu, Kuf, _, var_f = _reference_parts(expr, np.exp(noise[p]), xm, KNOWN[mask], M)
        Kus = gram_numpy(expr, z, x_new)
        sigma_u = Kuu + Kuf @ (Kuf / var_f).T
        expected_mean = Kus.T @ np.linalg.solve(sigma_u, Kuf @ (ym / var_f))
        # New observations get the learned noise only: their measurement error is not known.
        expected_cov = (gram_numpy(expr, x_new, x_new) - Kus.T @ np.linalg.solve(Kuu, Kus)
                        + Kus.T @ np.linalg.solve(sigma_u, Kus) + np.exp(noise[p]) * np.eye(4))
        assert_allclose(mean[p], expected_mean, rtol=1e-6, atol=1e-6, err_msg=to_text(expr))
        assert_allclose(cov[p], expected_cov, rtol=1e-6, atol=1e-6)


def test_the_smc_likelihood_of_a_long_series_takes_its_known_noise():
    _, exprs, ops, params = _batch(30, count=2)
    noise = np.log(np.array([0.05, 0.2]))
    data = make_data([X], [Y], power=[1.0], known_vars=[KNOWN])
    count = jnp.asarray([25])  # a round on the first 25 points of the data's order
    values = np.asarray(likelihood_fn(data, count, 2, num_inducing=M)(
        jnp.asarray(ops), jnp.asarray(params), jnp.asarray(noise)))
    seen = np.asarray(data.rank[0] < 25)[: N]
    for p, expr in enumerate(exprs):
        expected = _reference_bound(expr, np.exp(noise[p]), X[seen], Y[seen], KNOWN[seen], M)
        assert_allclose(values[p], expected, rtol=1e-7, atol=1e-7, err_msg=to_text(expr))


def test_a_model_on_the_sparse_likelihood_forecasts_with_the_known_noise():
    n = 36
    ds = pd.date_range("2001-01-01", periods=n, freq="MS")
    i = np.arange(n, dtype=np.float64)
    sd = 0.2 + 1.5 * (i % 5 == 0)  # a few imprecise points
    df = pd.DataFrame({"ds": ds, "y": 10 + np.sin(i / 2.0) + 0.05 * i, "noise_sd": sd})
    config = {"data": {"transform": "none", "noise_col": "noise_sd"},
              "smc": {"likelihood": "sparse", "inducing_points": 10}}
    kernel = "SE(l=0.15; amp=1.0) + LIN(intercept=0.5; bias=0.5, amp=0.5)"
    model = AutoGP.from_kernels(df, [kernel], noise=0.02, config=config)
    fit = model.fits["series"]
    assert fit.num_inducing == 10
    s = fit.scaler
    x, z = fit.x, fit.y
    known = (sd / s.value_scale) ** 2
    expr = parse(kernel)
    zz, Kuu, Kuf, _, var_f = _reference_parts(expr, 0.02, x, known, 10)
    x_new = s.forward_t(fit.series.future_t(4))
    Kus = gram_numpy(expr, zz, x_new)
    mean = Kus.T @ np.linalg.solve(Kuu + Kuf @ (Kuf / var_f).T, Kuf @ (z / var_f))
    np.testing.assert_allclose(model.predict(4)["AutoGP"].to_numpy(),
                               s.value_offset + s.value_scale * mean, rtol=1e-8)
    # The imprecise points weigh less: without the column the forecast differs.
    plain = AutoGP.from_kernels(df[["ds", "y"]], [kernel], noise=0.02,
                                config={**config, "data": {"transform": "none"}})
    assert np.max(np.abs(plain.predict(4)["AutoGP"].to_numpy()
                         - model.predict(4)["AutoGP"].to_numpy())) > 1e-3
