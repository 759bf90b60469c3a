"""autogp.statespace: the Kalman-filter likelihood equals the dense Gaussian likelihood (the
package's dense evaluator, and a plain jitter-free Cholesky reference) in value and gradient, on
every exact atom and on sums, products and change points of them; PER within its stated
truncation error; unsupported trees reported; missing values skipped; the smoother's posterior
equals the dense GP posterior."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ive
from scipy.stats import multivariate_normal

from autogp._x64 import x64
from autogp.evaluator import gram, log_marginal_likelihood, posterior_predictive
from autogp.kernels.packing import pack
from autogp.kernels.text import parse
from autogp.statespace import (
    REASONS,
    per_truncation_error,
    state_space_log_likelihood,
    state_space_posterior,
    support,
)
from autogp.statespace.models import per_order, per_weights
from tests.helpers import (
    assert_grads_close,
    dense_gaussian_log_likelihood,
    values_and_sum_grads,
)

DIM = 24
PER_DIM = 56

EXACT = [
    "CONST(c=0.5)",
    "LIN(intercept=0.3; bias=0.4, amp=2.0)",
    "BM(origin=-0.1; amp=1.5)",
    "IBM(origin=-0.05; amp=3.0)",
    "M12(l=0.3; amp=1.2)",
    "M32(l=0.2; amp=0.8)",
    "M52(l=0.15; amp=0.7)",
    "M72(l=0.25; amp=1.3)",
    "M12(l=0.5; amp=0.3) + M52(l=0.1; amp=1.0)",
    "LIN(intercept=0.6; bias=0.2, amp=1.0) * M32(l=0.3; amp=1.0)",
    "BM(origin=0.2; amp=0.5) * M12(l=0.2; amp=2.0) + IBM(origin=-0.1; amp=0.4)",
    "CP(M32(l=0.2; amp=1.0), LIN(intercept=0.5; bias=0.3, amp=1.5); location=0.6, scale=0.05)",
    "CP(WN(v=0.3), M12(l=0.4; amp=0.6); location=0.4, scale=0.1) + WN(v=0.05)",
    "(CONST(c=0.7) + M12(l=0.3; amp=0.4))"
    " * (M32(l=0.5; amp=1.0) + LIN(intercept=0.1; bias=0.5, amp=0.3))",
]
PER_TREES = [
    "PER(l=1.0, period=0.13; amp=1.1)",
    "LIN(intercept=0.4; bias=0.3, amp=0.8) + PER(l=0.8, period=0.21; amp=0.9)"
    " * M32(l=0.4; amp=1.0) + WN(v=0.1)",
]


def _data(n, seed=0, regular=False):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n) if regular else np.sort(rng.uniform(0.0, 1.0, n))
    y = np.sin(7 * x) + 0.5 * x + 0.3 * rng.normal(size=n)
    return x, y


def _packed(texts):
    ops, params = pack([parse(t) for t in texts])
    return ops, params, jnp.full(len(texts), np.log(0.04))


def _state_space(ops, params, noise, x, y, dim=DIM, **kw):
    return values_and_sum_grads(
        lambda p, s: state_space_log_likelihood(ops, p, s, x, y, dim=dim, **kw), params, noise)


def test_exact_atoms_sums_products_and_change_points_match_the_dense_likelihood():
    with x64():
        x, y = _data(200)
        ops, params, noise = _packed(EXACT)
        reason, n, used, _ = support(ops, params, dim=DIM)
        assert np.all(reason == 0)
        assert list(n[:8]) == [1, 2, 1, 2, 1, 2, 3, 4]
        assert n[-1] == 2 * 4  # (1 + 1) kron (2 + 2)
        values, grads = _state_space(ops, params, noise, x, y)
        ref_values, ref_grads = dense_gaussian_log_likelihood(ops, params, noise, x, y)
        np.testing.assert_allclose(values, ref_values, rtol=1e-8)
        assert_grads_close(grads, ref_grads, 1e-8)
        # the package's dense evaluator adds a relative jitter of 1e-10 to the diagonal
        np.testing.assert_allclose(values, log_marginal_likelihood(ops, params, noise, x, y),
                                   rtol=1e-8)
        # an independent density for one of them
        K = np.asarray(gram(ops[5:6], params[5:6], x))[0] + 0.04 * np.eye(len(x))
        assert values[5] == pytest.approx(multivariate_normal(np.zeros(len(x)), K).logpdf(y),
                                          rel=1e-9)


def test_per_weights_are_the_bessel_expansion_and_the_order_meets_the_tolerance():
    with x64():
        for l in (0.3, 0.7, 1.0, 3.0):
            q, tails = per_weights(jnp.asarray(l), 24)
            z = 1 / l**2
            ref = np.array([ive(0, z)] + [2 * ive(j, z) for j in range(1, 25)])
            np.testing.assert_allclose(q, ref, rtol=1e-12, atol=1e-300)
            order = int(per_order(jnp.asarray(l), 1e-10, 24))
            tail = 2 * sum(ive(j, z) for j in range(order + 1, 200))
            assert tail <= 1e-10 and float(tails[order]) == pytest.approx(tail, rel=1e-6)
            assert order == 0 or 2 * sum(ive(j, z) for j in range(order, 200)) > 1e-10
            assert float(per_truncation_error(jnp.asarray(l))) == pytest.approx(tail, rel=1e-6)


def test_per_within_its_truncation_error():
    with x64():
        x, y = _data(200, seed=1)
        ops, params, noise = _packed(PER_TREES)
        reason, n, _, _ = support(ops, params, dim=PER_DIM)
        assert list(reason) == [0, 0] and list(n) == [21, 2 + 2 * 23]  # J = 10 and 11
        values, grads = _state_space(ops, params, noise, x, y, dim=PER_DIM)
        ref_values, ref_grads = dense_gaussian_log_likelihood(ops, params, noise, x, y)
        # the kernel is off by at most amp * 1e-10 per entry
        np.testing.assert_allclose(values, ref_values, rtol=1e-8)
        assert_grads_close(grads, ref_grads, 1e-7)


def test_long_series_on_a_regular_grid():
    with x64():
        x, y = _data(1000, seed=2, regular=True)
        ops, params, noise = _packed([PER_TREES[1], EXACT[10]])
        # the filter's one-transition path (the recursions, which "auto" may take for these
        # trees, are tests/test_chandrasekhar.py's)
        values, grads = _state_space(ops, params, noise, x, y, dim=PER_DIM, regular_grid=True,
                                     method="kalman")
        irregular = state_space_log_likelihood(ops, params, noise, x, y, dim=PER_DIM)
        np.testing.assert_allclose(values, irregular, rtol=1e-12)
        ref_values, ref_grads = dense_gaussian_log_likelihood(ops, params, noise, x, y)
        np.testing.assert_allclose(values, ref_values, rtol=1e-8)
        assert_grads_close(grads, ref_grads, 1e-7)


@pytest.mark.parametrize(("text", "reason", "dim", "block"), [
    ("SE + M12", 1, DIM, 4), ("RQ", 1, DIM, 4), ("GE * LIN", 1, DIM, 4), ("IOU", 1, DIM, 4),
    ("WN * M12 + LIN", 2, DIM, 4),
    ("PER(l=0.05, period=0.1; amp=1.0)", 3, DIM, 4),
    ("((CONST * CONST) * (CONST * CONST)) * CONST", 4, DIM, 4),
    ("M72 * M72", 5, 8, 8), ("M72 * M72", 6, DIM, 4), ("M72 * M72", 0, 16, 16),
])
def test_unsupported_trees_are_reported_and_score_minus_infinity(text, reason, dim, block):
    with x64():
        x, y = _data(30)
        ops, params, noise = _packed([text, "M32"])
        got, n, _, biggest = support(ops, params, dim=dim, block=block)
        assert list(got) == [reason, 0], REASONS[int(got[0])]
        if reason == 5:
            assert n[0] == dim + 1
        if text == "M72 * M72" and reason != 5:
            assert biggest[0] == 16
        def supported_total(p):
            ll = state_space_log_likelihood(ops, p, noise, x, y, dim=dim, block=block)
            return jnp.sum(jnp.where(jnp.arange(2) == 1, ll, 0.0)), ll

        (_, ll), grads = jax.value_and_grad(supported_total, has_aux=True)(params)
        assert (ll[0] == -np.inf) == (reason != 0) and np.isfinite(ll[1])
        assert np.all(np.isfinite(grads))


def test_adjoint_gradient_equals_reverse_mode_through_the_scan():
    with x64():
        x, y = _data(100, seed=5)
        y[[0, 17, 18, 99]] = np.nan
        texts = [PER_TREES[1], "CP(M32, LIN) + BM + CP(WN(v=0.2), CONST)", "IBM * M52 + M72 + WN"]
        ops, params, noise = _packed(texts)
        for grid in (False, True):
            xs = np.linspace(0.0, 1.0, len(x)) if grid else x
            out = {}
            for gradient in ("adjoint", "autodiff"):
                def total(p, s, g=gradient, xs=xs, grid=grid):
                    return jnp.sum(state_space_log_likelihood(
                        ops, p, s, xs, y, dim=PER_DIM, block=8, regular_grid=grid, gradient=g,
                        method="kalman"))

                out[gradient] = jax.jit(jax.value_and_grad(total, argnums=(0, 1)))(params, noise)
            value, reference = float(out["adjoint"][0]), float(out["autodiff"][0])
            assert np.isfinite(value) and value == pytest.approx(reference, rel=1e-12)
            assert_grads_close(out["adjoint"][1], out["autodiff"][1], 1e-10)


def test_missing_values_are_skipped():
    with x64():
        x, y = _data(120, seed=3)
        ops, params, noise = _packed(EXACT[10:12])
        keep = np.ones(len(x), bool)
        keep[[0, 5, 6, 7, 50, 119]] = False
        y_nan = np.where(keep, y, np.nan)
        by_nan = state_space_log_likelihood(ops, params, noise, x, y_nan, dim=DIM)
        by_mask = state_space_log_likelihood(ops, params, noise, x, y, keep, dim=DIM)
        subset = log_marginal_likelihood(ops, params, noise, x[keep], y[keep])
        masked = log_marginal_likelihood(ops, params, noise, x, y, jnp.asarray(keep))
        np.testing.assert_allclose(by_nan, subset, rtol=1e-8)
        np.testing.assert_allclose(by_mask, masked, rtol=1e-8)


def test_smoother_equals_the_dense_posterior():
    with x64():
        x, y = _data(80, seed=4)
        texts = [EXACT[10], EXACT[11], PER_TREES[1].replace(" + WN(v=0.1)", "")]
        ops, params, noise = _packed(texts)
        x_new = np.concatenate([x[::9], [0.333, 0.5], 1.0 + np.array([0.01, 0.2, 0.5])])
        mean, var, comp_mean, comp_var = state_space_posterior(
            ops, params, noise, x, y, None, x_new, dim=PER_DIM)
        ref_mean, ref_var = posterior_predictive(ops, params, noise, x, y, jnp.ones(len(x), bool),
                                                 x_new, full_cov=False)
        np.testing.assert_allclose(mean, ref_mean, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(var, ref_var, rtol=1e-7, atol=1e-8)
        # components: the top-level summands, each K_c(x_new, x) (K + s I)^-1 y
        np.testing.assert_allclose(np.sum(comp_mean, axis=1), mean, atol=1e-10)
        C = np.asarray(gram(ops, params, x)) + 0.04 * np.eye(len(x))
        alpha = np.linalg.solve(C, np.broadcast_to(y, (3, len(y)))[..., None])[..., 0]
        for p, text in enumerate(texts):
            terms = [t for t in text.split(" + ")] if "CP" not in text else [text]
            for c, term in enumerate(terms):
                o, q = pack([parse(term)])
                cross = np.asarray(gram(o, q, x_new, x))[0]
                np.testing.assert_allclose(comp_mean[p, c], cross @ alpha[p], rtol=1e-7,
                                           atol=1e-8)
                prior = np.diagonal(np.asarray(gram(o, q, x_new))[0])
                expected = prior - np.einsum("mi,im->m", cross, np.linalg.solve(C[p], cross.T))
                np.testing.assert_allclose(comp_var[p, c], expected, rtol=1e-7, atol=1e-8)
