"""The sparse (Titsias 2009) likelihood and predictive: values against a numpy/scipy reference
built from the independent numpy kernel evaluator, the bound below the exact likelihood and
tight when the inducing inputs are the data, gradients against finite differences, masks,
failures, and one compiled program for every structure and mask."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from autogp.evaluator import gram, log_marginal_likelihood, posterior_predictive
from autogp.evaluator.gram import gram_pairs
from autogp.evaluator.sparse import (
    DELTA,
    KUU_JITTER,
    sparse_log_marginal_likelihood,
    sparse_posterior_predictive,
    sparse_weights,
)
from autogp.kernels import pack, spec, to_text
from tests.helpers import assert_allclose, random_expression
from tests.reference_numpy import gram_numpy

P, DEPTH, N, M, CHUNK = 4, 3, 48, 16, 16
# Distinct inputs (the data layer merges repeated time stamps).
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, N))
Y = np.sin(9.0 * X) + 0.3 * np.random.default_rng(1).normal(size=N)
ALL = np.ones(N, bool)

_TRACES = 0


@jax.jit
def _value_and_grad(ops, params, noise, y, mask):
    global _TRACES
    _TRACES += 1

    def total(u, s):
        values = sparse_log_marginal_likelihood(
            ops, u, s, X, y, mask, num_inducing=M, chunk=CHUNK
        )
        return jnp.sum(jnp.where(jnp.isfinite(values), values, 0.0)), values

    (_, values), grads = jax.value_and_grad(total, argnums=(0, 1), has_aux=True)(params, noise)
    return values, grads[0], grads[1]


def _evaluate(ops, params, noise, y=Y, mask=ALL):
    out = _value_and_grad(
        np.asarray(ops, np.int32), np.asarray(params, np.float64),
        np.asarray(noise, np.float64), np.asarray(y, np.float64), np.asarray(mask, bool),
    )
    return tuple(np.asarray(a) for a in out)


# Jitted entry points for the tests that call them once each: one program per call instead of
# op-by-op dispatch, where every primitive of the evaluator compiles on its own.
_exact_jit = jax.jit(log_marginal_likelihood)
_bound_jit = jax.jit(sparse_log_marginal_likelihood, static_argnames=("num_inducing",))
_predictive_jit = jax.jit(sparse_posterior_predictive,
                          static_argnames=("full_cov", "observation_noise", "num_inducing"))
_dense_predictive_jit = jax.jit(posterior_predictive, static_argnames=("full_cov",))
_weights_jit = jax.jit(sparse_weights, static_argnames=("num_inducing",))


def _random_batch(rng, count=P):
    exprs = [random_expression(rng, DEPTH) for _ in range(count)]
    ops, params = pack(exprs, DEPTH)
    return exprs, ops, params


def _masks(rng):
    subset = rng.random(N) < 0.6
    subset[[0, N - 1]] = True
    return {"all": ALL, "prefix": np.arange(N) < 21, "subset": subset}


def _grid(x, num):
    """The inducing inputs, written out: M points evenly over [min x, max x], plus DELTA."""
    return np.linspace(x.min(), x.max(), num) + DELTA


def _reference_parts(expr, noise_var, x, num, known=0.0):
    """Titsias' bound from its definition (dense numpy matrices): Kuu, Kuf, per-point noise
    (noise plus the white-noise share of the diagonal plus any known observation variance)
    and the continuous diagonal."""
    z = _grid(x, num)
    Kuu = gram_numpy(expr, z, z + DELTA)
    Kuu = 0.5 * (Kuu + Kuu.T)
    Kuu = Kuu + KUU_JITTER * max(abs(np.mean(np.diag(Kuu))), 1e-300) * np.eye(num)
    Kuf = gram_numpy(expr, z, x)
    k_all = np.diag(gram_numpy(expr, x, x))
    k_cont = np.diag(gram_numpy(expr, x, x + DELTA))
    var = noise_var + np.maximum(k_all - k_cont, 0.0) + known
    return z, Kuu, Kuf, k_cont, var


def _reference_bound(expr, noise_var, x, y, num, known=0.0):
    """log N(y | 0, Qff + diag(var)) - tr(diag(var)^-1 (Kff - Qff)) / 2."""
    _, Kuu, Kuf, k_cont, var = _reference_parts(expr, noise_var, x, num, known)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    Q = 0.5 * (Q + Q.T)
    fit = scipy.stats.multivariate_normal.logpdf(y, np.zeros(x.size), Q + np.diag(var))
    return fit - 0.5 * np.sum((k_cont - np.diag(Q)) / var)


# --- the diagonal ----------------------------------------------------------------------------


def test_gram_pairs_are_the_reference_diagonal_with_the_gram_gradient():
    rng = np.random.default_rng(5)
    exprs, ops, params = _random_batch(rng, 6)
    x2 = X + rng.uniform(-0.1, 0.1, N)
    for second in (None, x2):
        pairs = np.asarray(gram_pairs(ops, params, X, second))
        for p, expr in enumerate(exprs):
            expected = np.diag(gram_numpy(expr, X, X if second is None else x2))
            assert_allclose(pairs[p], expected, err_msg=to_text(expr))
    cot = rng.normal(size=(6, N))

    def via_pairs(u):
        return jnp.sum(cot * gram_pairs(ops, u, X, x2))

    def via_gram(u):  # the full matrix's own VJP, an independent code path
        return jnp.sum(cot * jnp.einsum("pii->pi", gram(ops, u, X, x2)))

    assert_allclose(jax.grad(via_pairs)(params), jax.grad(via_gram)(params))


# --- values ----------------------------------------------------------------------------------


def test_bound_equals_the_numpy_reference_unmasked_and_masked():
    rng = np.random.default_rng(10)
    masks = _masks(rng)
    seen = set()
    for _ in range(3):
        exprs, ops, params = _random_batch(rng)
        seen |= set(np.unique(ops).tolist())
        noise = rng.uniform(-4.0, -1.0, P)
        for name, mask in masks.items():
            values, *_ = _evaluate(ops, params, noise, mask=mask)
            for p, expr in enumerate(exprs):
                expected = _reference_bound(expr, np.exp(noise[p]), X[mask], Y[mask], M)
                assert_allclose(values[p], expected, rtol=1e-7, atol=1e-7,
                                err_msg=f"{name}: {to_text(expr)}")
    assert spec.WN in seen


def test_bound_is_below_the_exact_likelihood_and_tight_at_the_data():
    rng = np.random.default_rng(12)
    n = 40
    x = np.linspace(0.0, 1.0, n)  # the inducing grid with M = n lands on the data (+ DELTA)
    y = np.cos(7.0 * x) + 0.2 * rng.normal(size=n)
    exprs, ops, params = _random_batch(rng, 8)
    noise = np.full(8, np.log(0.1))
    exact = np.asarray(_exact_jit(ops, params, noise, x, y))
    gaps = {}
    for num in (4, 12, n):
        bound = np.asarray(
            _bound_jit(ops, params, noise, x, y, num_inducing=num)
        )
        gaps[num] = exact - bound
        # A lower bound (up to the jitter's and rounding's share).
        assert np.all(bound <= exact + 1e-6 * np.abs(exact)), (num, bound - exact)
    # Inducing inputs on the data: equal up to the jitter of Kuu (relative 1e-6).
    assert np.all(gaps[n] < 2e-3), gaps[n]
    assert np.all(gaps[n] <= gaps[4] + 2e-3)


# --- gradients ------------------------------------------------------------------------------


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(20)
    exprs, ops, params = _random_batch(rng)
    noise = rng.uniform(-3.0, -1.0, P)
    mask = np.arange(N) < 37
    values, d_params, d_noise = _evaluate(ops, params, noise, mask=mask)
    assert np.all(np.isfinite(values))
    eps = 1e-6
    active = np.argwhere(np.arange(spec.MAX_PARAMS) < np.asarray(spec.NUM_PARAMS)[ops][..., None])
    picks = active[rng.choice(len(active), size=min(10, len(active)), replace=False)]
    for p, s, k in picks:
        step = np.zeros_like(params)
        step[p, s, k] = eps
        up = _evaluate(ops, params + step, noise, mask=mask)[0][p]
        down = _evaluate(ops, params - step, noise, mask=mask)[0][p]
        assert_allclose(d_params[p, s, k], (up - down) / (2 * eps), rtol=1e-5, atol=1e-5,
                        err_msg=f"{to_text(exprs[p])} slot {s} param {k}")
    for p in range(P):
        step = np.zeros(P)
        step[p] = eps
        fd = (_evaluate(ops, params, noise + step, mask=mask)[0][p]
              - _evaluate(ops, params, noise - step, mask=mask)[0][p]) / (2 * eps)
        assert_allclose(d_noise[p], fd, rtol=1e-5, atol=1e-5)


# --- masks, failures, compilation -----------------------------------------------------------


def test_masked_points_do_not_matter():
    rng = np.random.default_rng(30)
    _, ops, params = _random_batch(rng)
    noise = np.full(P, -2.0)
    mask = _masks(rng)["subset"]
    before = _evaluate(ops, params, noise, mask=mask)
    y_changed = Y.copy()
    y_changed[~mask] = 100.0 * rng.normal(size=(~mask).sum())
    after = _evaluate(ops, params, noise, y=y_changed, mask=mask)
    for a, b in zip(before, after, strict=True):
        assert_allclose(a, b, rtol=0, atol=0)
    # And the masked batch equals the bound on the kept points alone (other chunking).
    alone = sparse_log_marginal_likelihood(
        ops, params, noise, X[mask], Y[mask], num_inducing=M, chunk=7
    )
    assert_allclose(before[0], np.asarray(alone), rtol=1e-9, atol=1e-9)


def test_failed_particle_gets_minus_inf_and_zero_gradient_without_touching_others():
    rng = np.random.default_rng(40)
    _, ops, params = _random_batch(rng)
    noise = np.full(P, -2.0)
    clean = _evaluate(ops, params, noise)
    broken = params.copy()
    broken[1] = np.nan
    values, d_params, d_noise = _evaluate(ops, broken, noise)
    assert values[1] == -np.inf
    assert np.all(d_params[1] == 0.0) and d_noise[1] == 0.0
    keep = np.array([0, 2, 3])
    assert_allclose(values[keep], clean[0][keep], rtol=0, atol=0)
    assert_allclose(d_params[keep], clean[1][keep], rtol=0, atol=0)


def test_one_compiled_program_for_every_structure_and_mask():
    rng = np.random.default_rng(50)
    _evaluate(*_random_batch(rng)[1:], np.zeros(P))
    start = _TRACES
    for mask in _masks(rng).values():
        _, ops, params = _random_batch(rng)
        _evaluate(ops, params, rng.uniform(-3, -1, P), mask=mask)
    assert _TRACES == start, "the sparse likelihood retraced for new structures or masks"


# --- predictions ------------------------------------------------------------------------------


def test_predictive_equals_the_reference_and_dense_at_the_data():
    rng = np.random.default_rng(60)
    exprs, ops, params = _random_batch(rng)
    noise = rng.uniform(-3.0, -1.0, P)
    mask = np.arange(N) < 40
    x_new = np.array([0.03, 0.5, X[39] + 0.013, 1.1, 1.3])
    mean, var = _predictive_jit(
        ops, params, noise, X, Y, mask, x_new, full_cov=False, num_inducing=M
    )
    mean_c, cov = _predictive_jit(
        ops, params, noise, X, Y, mask, x_new, observation_noise=True, num_inducing=M
    )
    alpha_u, z, ok = _weights_jit(ops, params, noise, X, Y, mask, num_inducing=M)
    assert np.all(np.asarray(ok))
    for p, expr in enumerate(exprs):
        xm, ym = X[mask], Y[mask]
        z_ref, Kuu, Kuf, _, var_f = _reference_parts(expr, np.exp(noise[p]), xm, M)
        Kus = gram_numpy(expr, z_ref, x_new)
        sigma_u = Kuu + Kuf @ (Kuf / var_f).T
        expected_mean = Kus.T @ np.linalg.solve(sigma_u, Kuf @ (ym / var_f))
        expected_cov = (gram_numpy(expr, x_new, x_new) - Kus.T @ np.linalg.solve(Kuu, Kus)
                        + Kus.T @ np.linalg.solve(sigma_u, Kus))
        assert_allclose(mean[p], expected_mean, rtol=1e-6, atol=1e-6, err_msg=to_text(expr))
        assert_allclose(var[p], np.diag(expected_cov), rtol=1e-6, atol=1e-6)
        assert_allclose(cov[p], expected_cov + np.exp(noise[p]) * np.eye(5), rtol=1e-6,
                        atol=1e-6)
        assert_allclose(mean_c[p], mean[p], rtol=1e-9, atol=1e-9)
        # The decomposition's weights give the same mean: K(x*, z) @ alpha_u.
        assert_allclose(gram_numpy(expr, np.asarray(z[p]), x_new).T @ np.asarray(alpha_u[p]),
                        mean[p], rtol=1e-6, atol=1e-6)
    # Inducing inputs on the data: the dense predictive (up to Kuu's jitter).
    n = 32
    x = np.linspace(0.0, 1.0, n)
    y = np.sin(5.0 * x)
    dense_mean, dense_var = _dense_predictive_jit(
        ops, params, noise, x, y, np.ones(n, bool), x_new, full_cov=False
    )
    sparse_mean, sparse_var = _predictive_jit(
        ops, params, noise, x, y, np.ones(n, bool), x_new, full_cov=False, num_inducing=n
    )
    scale = np.sqrt(np.asarray(dense_var))
    assert np.all(np.abs(np.asarray(sparse_mean - dense_mean)) < 0.02 * scale)
    assert np.all(np.abs(np.asarray(sparse_var - dense_var)) < 0.02 * scale**2)
