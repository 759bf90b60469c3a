"""The evaluator's batched linear algebra: the same results as scipy, and on CPU no LAPACK call
with a batch (jaxlib's batched CPU kernels can deadlock when two run at once)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from autogp.evaluator import linalg
from autogp.evaluator.likelihood import gaussian_log_marginal
from tests.helpers import assert_allclose


def _spd(rng, batch, n):
    X = rng.normal(size=batch + (n, n + 2))
    return X @ np.swapaxes(X, -1, -2) + n * np.eye(n)


def test_cholesky_and_solves_match_scipy_matrix_by_matrix():
    rng = np.random.default_rng(0)
    A = _spd(rng, (2, 3), 5)
    B = rng.normal(size=(2, 3, 5, 4))
    L = np.asarray(linalg.cholesky(jnp.asarray(A)))
    for i in np.ndindex(2, 3):
        ref = scipy.linalg.cholesky(A[i], lower=True)
        assert_allclose(L[i], ref)
        assert_allclose(np.asarray(linalg.solve_triangular(L, B))[i],
                        scipy.linalg.solve_triangular(ref, B[i], lower=True))
        assert_allclose(np.asarray(linalg.solve_triangular(L, B, trans=1))[i],
                        scipy.linalg.solve_triangular(ref, B[i], lower=True, trans=1))
        assert_allclose(np.asarray(linalg.cho_solve(L, B))[i], np.linalg.solve(A[i], B[i]),
                        rtol=1e-9)


def test_unbatched_and_broadcast_right_hand_sides():
    rng = np.random.default_rng(1)
    A = _spd(rng, (), 4)
    L = linalg.cholesky(jnp.asarray(A))
    assert_allclose(np.asarray(L), scipy.linalg.cholesky(A, lower=True))
    Ls = jnp.stack([L, 2.0 * L])
    eye = jnp.eye(4)  # one right-hand side for the whole batch
    inv = np.asarray(linalg.solve_triangular(Ls, eye))
    assert_allclose(inv[1], np.linalg.inv(2.0 * np.asarray(L)), rtol=1e-9)


@pytest.mark.parametrize("n", [1, 5, 64, 65, 130, 203])
def test_inverse_from_cholesky_matches_numpy_across_block_levels(n):
    # 64 is the largest unsplit size; 65, 130 and 203 take one, two and two uneven levels
    rng = np.random.default_rng(n)
    A = _spd(rng, (2,), n)
    inv = np.asarray(linalg.inverse_from_cholesky(linalg.cholesky(jnp.asarray(A))))
    for i in range(2):
        assert_allclose(inv[i], np.linalg.inv(A[i]), rtol=1e-9, atol=1e-12)
    assert_allclose(inv, np.swapaxes(inv, -1, -2), rtol=1e-12, atol=1e-15)


def test_inverse_matches_numpy_matrix_by_matrix_and_its_gradient_jax():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(2, 3, 6, 6)) + 6 * np.eye(6)  # not symmetric
    inv = np.asarray(linalg.inverse(jnp.asarray(A)))
    for i in np.ndindex(2, 3):
        assert_allclose(inv[i], np.linalg.inv(A[i]), rtol=1e-9, atol=1e-12)
    W = jnp.asarray(rng.normal(size=A.shape))
    ours, ref = (jax.grad(lambda a, f=f: jnp.sum(W * f(a)))(jnp.asarray(A))
                 for f in (linalg.inverse, jnp.linalg.inv))
    assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-9, atol=1e-11)


def test_not_positive_definite_gives_nan_like_numpy_semantics():
    A = jnp.stack([jnp.eye(3), -jnp.eye(3)])
    L = np.asarray(linalg.cholesky(A))
    assert np.all(np.isfinite(L[0])) and not np.all(np.isfinite(L[1]))


def test_gradients_match_jax_batched_linear_algebra():
    rng = np.random.default_rng(2)
    A = jnp.asarray(_spd(rng, (3,), 6))
    B = jnp.asarray(rng.normal(size=(3, 6, 2)))

    def loss(chol, solve, A, B):
        L = chol(A)
        return jnp.sum(jnp.sin(solve(L, B))) + jnp.sum(jnp.log(jnp.diagonal(L, 0, -2, -1)))

    ours = jax.grad(loss, argnums=(2, 3))(
        linalg.cholesky, lambda L, B: linalg.solve_triangular(L, B), A, B)
    ref = jax.grad(loss, argnums=(2, 3))(
        jnp.linalg.cholesky, lambda L, B: jax.scipy.linalg.solve_triangular(L, B, lower=True),
        A, B)
    for a, b in zip(ours, ref, strict=True):
        assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)


def _lapack_operand_shapes(hlo: str) -> list[str]:
    lines = [ln for ln in hlo.splitlines() if re.search(r'custom_call_target="lapack_', ln)]
    return [re.search(r"operand_layout_constraints=\{([^}]*)\}", ln).group(1) for ln in lines]


def _assert_no_batched_lapack(compiled_text: str) -> None:
    shapes = _lapack_operand_shapes(compiled_text)
    assert shapes, "expected LAPACK calls in the compiled program"
    for operands in shapes:  # e.g. "f64[12,12]{1,0}": rank 2, no batch dimension
        for dims in re.findall(r"f64\[([\d,]*)\]", operands):
            assert dims.count(",") == 1, f"batched LAPACK call: {operands}"


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the looped form is CPU-only")
@pytest.mark.parametrize("n", [12, 70])  # 70: the inverse by blocks
def test_the_likelihood_gradient_makes_no_batched_lapack_call_on_cpu(n):
    rng = np.random.default_rng(3)
    K = jnp.asarray(_spd(rng, (4,), n))
    y = jnp.asarray(rng.normal(size=n))

    def total(K, s):
        return jnp.sum(gaussian_log_marginal(K, jnp.exp(s), y))

    hlo = jax.jit(jax.grad(total, argnums=(0, 1))).lower(K, jnp.zeros(4)).compile().as_text()
    _assert_no_batched_lapack(hlo)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the looped form is CPU-only")
def test_the_tests_dense_reference_and_the_inverse_make_no_batched_lapack_call_on_cpu(
        monkeypatch):
    """The programs that hung the suite once (two batched LAPACK calls at a time, every
    pool thread waiting in ``ParallelBatchMap``) now call LAPACK one matrix at a time: the
    state-space tests' dense reference with its gradient, and the batched inverse that
    ``scripts/bench_statespace.py``'s associative scan combines its elements with."""
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from tests import helpers

    ops, params = pack([parse("LIN + PER * M32"), parse("M52 + PER")])
    x = jnp.linspace(0.0, 1.0, 20)
    y = jnp.sin(6.0 * x)
    captured = {}
    real_jit = jax.jit

    def capturing_jit(fn, *args, **kwargs):
        program = real_jit(fn, *args, **kwargs)
        captured["text"] = program.lower(params, jnp.zeros(2)).compile().as_text()
        return program

    monkeypatch.setattr(jax, "jit", capturing_jit)
    helpers.dense_gaussian_log_likelihood(jnp.asarray(ops), params, jnp.zeros(2), x, y)
    monkeypatch.undo()
    _assert_no_batched_lapack(captured["text"])

    rng = np.random.default_rng(5)
    A = jnp.asarray(rng.normal(size=(8, 5, 5)) + 5 * np.eye(5))
    B = jnp.asarray(rng.normal(size=(8, 5, 5)) + 5 * np.eye(5))
    both = jax.jit(lambda a, b: (linalg.inverse(a), linalg.inverse(b)))  # independent calls
    _assert_no_batched_lapack(both.lower(A, B).compile().as_text())
