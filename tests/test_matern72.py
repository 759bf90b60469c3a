"""The Matern 7/2 atom (``M72``), added as one row of the atom table: its covariance against
scipy's general Matern formula, its custom VJP against finite differences, the batched marginal
likelihood against a dense numpy Cholesky, its text form and reading, and that it is off unless
configured (the default grammar's draws do not change)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.special

from autogp.data import TimeAxis
from autogp.evaluator import gram, log_marginal_likelihood
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.forecast import explain
from autogp.inference import grammar as gr
from autogp.kernels import Matern72, pack, parse, spec, structure, to_text, unpack
from tests.helpers import (
    assert_allclose,
    assert_atom_off_by_default_and_on_when_configured,
    assert_atom_vjp_matches_finite_differences,
)
from tests.reference_numpy import gram_numpy

M72 = spec.OPCODE_OF_NAME["M72"]
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, 25))
X[7] = X[6]  # a repeated time point


def matern_scipy(r: np.ndarray, nu: float, l: float, amp: float) -> np.ndarray:
    """The general Matern covariance amp 2^(1-nu) / Gamma(nu) z^nu K_nu(z), z = sqrt(2 nu) r / l
    (Rasmussen & Williams eq. 4.14), with its limit amp at r = 0."""
    z = np.sqrt(2.0 * nu) * np.asarray(r, dtype=float) / l
    safe = np.where(z > 0, z, 1.0)
    k = amp * 2.0 ** (1.0 - nu) / scipy.special.gamma(nu) * safe**nu * scipy.special.kv(nu, safe)
    return np.where(z > 0, k, amp)


def test_m72_is_an_atom_with_an_appended_opcode():
    assert M72 == 15 and M72 in spec.ATOMS and spec.NUM_OPS >= 16
    assert spec.PARAM_NAMES[M72] == ("l", "amp") and M72 in spec.STATIONARY
    assert Matern72.opcode == M72


@pytest.mark.parametrize(("l", "amp"), [(0.05, 1.0), (0.3, 2.5), (2.0, 0.1)])
def test_covariance_equals_scipy_matern_7_2(l, amp):
    expr = Matern72(l=l, amp=amp)
    r = np.abs(X[:, None] - X[None, :])
    expected = matern_scipy(r, 3.5, l, amp)
    ops, params = pack([expr], max_depth=1)
    assert_allclose(gram(ops, params, X)[0], expected, rtol=1e-9, atol=1e-13)
    assert_allclose(gram_numpy(expr, X, X), expected, rtol=1e-9, atol=1e-13)
    assert np.all(expected > 0) and np.all(expected <= amp * (1 + 1e-12))


def test_custom_vjp_matches_finite_differences_of_the_numpy_formula():
    rng = np.random.default_rng(1)
    cot = rng.normal(size=(X.size, X.size))
    u = np.array([math.log(0.2), math.log(1.3)])  # unconstrained (log) l and amp

    def reference(u):
        r = np.abs(X[:, None] - X[None, :])
        return float(np.sum(cot * matern_scipy(r, 3.5, math.exp(u[0]), math.exp(u[1]))))

    assert_atom_vjp_matches_finite_differences(M72, u, X, cot, reference)
    ops = np.array([[M72, spec.EMPTY, spec.EMPTY]], np.int32)
    params = np.zeros((1, 3, spec.MAX_PARAMS))
    params[0, 0, :2] = u
    params = jnp.asarray(params)
    # And on a regular grid (the Toeplitz path).
    grid = np.linspace(0.0, 1.0, 16)
    dense = jax.grad(lambda p: jnp.sum(jnp.cos(gram(ops, p, grid))))(params)
    fast = jax.grad(lambda p: jnp.sum(jnp.cos(gram(ops, p, grid, regular_grid=True))))(params)
    assert_allclose(fast, dense, rtol=1e-9, atol=1e-12)


def dense_log_density(expr, noise_var: float, x: np.ndarray, y: np.ndarray) -> float:
    """log N(y | 0, K + (noise + jitter) I) by a numpy Cholesky, K from the numpy reference
    (with the evaluator's always-applied first jitter rung, as in ``test_likelihood``)."""
    K = gram_numpy(expr, x, x)
    A = K + (noise_var + BASE_JITTER * np.mean(np.diag(K))) * np.eye(x.size)
    L = np.linalg.cholesky(A)
    w = np.linalg.solve(L, y)
    return float(-0.5 * w @ w - np.sum(np.log(np.diag(L))) - 0.5 * x.size * math.log(2 * math.pi))


def test_batched_marginal_likelihood_equals_dense_numpy_cholesky():
    texts = [
        "M72(l=0.2; amp=1.1)",
        "M72(l=0.05; amp=0.7) + PER(l=0.9, period=0.1; amp=0.5)",
        "LIN(intercept=0.4; bias=0.2, amp=1.3) * M72(l=0.6; amp=0.9)",
        "CP(M72(l=0.1; amp=0.4), SE(l=0.3; amp=1.0); location=0.5, scale=0.05)",
    ]
    exprs = [parse(t) for t in texts]
    ops, params = pack(exprs, max_depth=3)
    noise = np.log(np.array([0.1, 0.05, 0.2, 0.01]))
    y = np.random.default_rng(2).normal(size=X.size)
    values = log_marginal_likelihood(ops, params, noise, X, y)
    for p, expr in enumerate(exprs):
        expected = dense_log_density(expr, math.exp(noise[p]), X, y)
        assert_allclose(values[p], expected, rtol=1e-9, err_msg=texts[p])


def test_text_form_round_trips():
    expr = parse("M72(l=0.25; amp=1.5)")
    assert isinstance(expr, Matern72) and expr.params == (0.25, 1.5)
    assert to_text(expr, params=True) == "M72(l=0.25; amp=1.5)"
    assert structure(parse("M72 * PER + LIN")) == "M72 * PER + LIN"
    assert parse(to_text(expr, params=True, precision=None)) == expr
    assert unpack(*pack([expr]))[0].params == pytest.approx(expr.params, rel=1e-15)
    with pytest.raises(ValueError, match="parameter name 'l' of M72"):
        parse("M72(period=0.3; amp=1.0)")


def test_reads_as_smooth_variation_and_scales_like_a_length():
    axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    data = parse("M72(l=0.25; amp=1.5)").in_data_units(12.0, 0.0, 2.0)
    assert data.params == pytest.approx((3.0, 6.0))
    assert explain.describe(data, axis) == f"smooth variation over ~{axis.format_length(3.0)}"
    assert explain.classify_term(data) == "smooth"
    assert explain.classify_term(parse("M72 * PER")) == "seasonal"


def test_off_by_default_and_on_when_configured():
    key, _ = assert_atom_off_by_default_and_on_when_configured("M72")
    assert gr.Grammar.default().weights[M72] == 0.0 and M72 not in gr.DEFAULT_WEIGHTS
    # M72's parameters are drawn from the l and amp priors.
    only = gr.Grammar.default(max_depth=2, weights={"M72": 1.0})
    ops, params, _ = gr.sample_prior(only, 8, key=key)
    assert np.all(np.asarray(ops)[:, 0] == M72)
    mean, std = spec.PARAM_OF_NAME["l"].prior
    assert np.all(np.abs(np.asarray(params)[:, 0, 0] - mean) < 6 * std)


def test_default_grammar_draws_do_not_see_the_new_opcode():
    """The node-type noise of opcodes 0..14 is the block it was before M72 existed."""
    grammar = gr.Grammar.default()
    key_types = jax.random.key(11)
    noise = gr.node_type_noise(key_types, grammar.num_slots, jnp.float64)
    before = jax.random.gumbel(key_types, (grammar.num_slots, 15), jnp.float64)
    np.testing.assert_array_equal(noise[:, :15], before)
    logits = jnp.asarray(grammar.node_log_prob_table)[0, 1]
    assert logits[M72] == -jnp.inf  # never drawn, whatever its noise
