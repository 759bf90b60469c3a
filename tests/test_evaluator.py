"""The compiled evaluator's covariance matrices: values against the numpy reference, gradients
against finite differences, and positive semi-definiteness.

The checks share one jitted ``gram`` at a few fixed shapes (``_BATCHES``), so each shape compiles
once; gradients at coincident points and the likelihood are in ``test_likelihood.py``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from autogp.evaluator import gram, is_regular_grid
from autogp.evaluator.gram import constrain as gram_constrain
from autogp.kernels import GE, SE, Const, WhiteNoise, pack, spec, to_text
from autogp.kernels import constrain as kernels_constrain
from autogp.kernels.transforms import GAMMA_LOGIT_MAX
from tests.helpers import TIME_ATOMS, assert_allclose, random_expression
from tests.reference_numpy import gram_numpy

GRAM = jax.jit(gram)
GRID_GRAM = jax.jit(functools.partial(gram, regular_grid=True))
N1, N2 = 25, 15

# Finite-difference step for check_grads: the default 1e-4 leaves an O(eps^2) truncation error of
# a few 1e-5 (relative) with short length scales and periods, above check_grads' float64
# tolerance; 1e-5 brings it below 1e-6 while round-off (~1e-16 / 1e-5) stays far smaller.
FD_EPS = 1e-5


def _points(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unsorted points on roughly the unit interval, with a few exact repeats."""
    x = rng.uniform(-0.2, 1.2, n)
    x[n // 2] = x[1]
    x[n - 1] = x[n // 3]
    return x


def _cross_points(rng: np.random.Generator, x1: np.ndarray) -> np.ndarray:
    """N2 other points, three of them exactly equal to points of x1 (white noise shows there)."""
    return np.concatenate([rng.uniform(-0.2, 1.2, N2 - 3), x1[[0, 1, 7]]])


def _batch(max_depth: int):
    """A fixed random batch: depth 3 with shared inputs, depth 5 with per-particle inputs."""
    rng = np.random.default_rng(100 + max_depth)
    count = {3: 64, 5: 32}[max_depth]
    exprs = [random_expression(rng, max_depth) for _ in range(count)]
    ops, params = pack(exprs, max_depth)
    if max_depth == 3:
        x1 = _points(rng, N1)
        x2 = _cross_points(rng, x1)
    else:
        x1 = np.stack([_points(rng, N1) for _ in exprs])
        x2 = np.stack([_cross_points(rng, row) for row in x1])
    return exprs, ops, params, x1, x2


_BATCHES = {depth: _batch(depth) for depth in (3, 5)}


def _grids(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    """``[count, n]`` evenly spaced, each row with its own start and step."""
    start = rng.uniform(-0.3, 0.3, (count, 1))
    step = rng.uniform(0.01, 0.08, (count, 1))
    return start + step * np.arange(n)


def _row(x: np.ndarray, p: int) -> np.ndarray:
    return x if x.ndim == 1 else x[p]


def _gram_small(exprs, x1, x2):
    """Gram matrices of a few expressions through the depth-3 program's compiled shapes: the batch
    is padded with CONST, the points with far-away ones, and the result cut back."""
    count = len(_BATCHES[3][0])
    ops, params = pack(list(exprs) + [Const()] * (count - len(exprs)), 3)
    pad1 = np.concatenate([x1, np.full(N1 - len(x1), 9.0)])
    pad2 = np.concatenate([x2, np.full(N2 - len(x2), -9.0)])
    return np.asarray(GRAM(ops, params, pad1, pad2))[: len(exprs), : len(x1), : len(x2)]


# --- values against the numpy reference ---------------------------------------------------------


@pytest.mark.parametrize("max_depth", [3, 5])
def test_gram_equals_numpy_reference_for_random_trees(max_depth):
    exprs, ops, params, x1, x2 = _BATCHES[max_depth]
    # The sample exercises every atom and operator, and the boundary gamma = 2 (packed clipped).
    assert set(TIME_ATOMS) | set(spec.OPERATORS) <= set(np.unique(ops).tolist())
    gammas = np.asarray(kernels_constrain(jnp.asarray(ops), jnp.asarray(params)))[..., 1]
    assert np.any(gammas[ops == spec.GE] == 2.0)
    assert np.any(params[ops == spec.GE][:, 1] == GAMMA_LOGIT_MAX)

    K_square = np.asarray(GRAM(ops, params, x1, x1))
    K_cross = np.asarray(GRAM(ops, params, x1, x2))
    assert K_square.shape == (len(exprs), N1, N1) and K_cross.shape == (len(exprs), N1, N2)
    for p, expr in enumerate(exprs):
        a, b = _row(x1, p), _row(x2, p)
        assert_allclose(K_square[p], gram_numpy(expr, a, a), err_msg=to_text(expr))
        assert_allclose(K_cross[p], gram_numpy(expr, a, b), err_msg=to_text(expr))


def test_white_noise_is_exact_equality_of_times_also_across_inputs():
    x1 = np.array([0.0, 0.5, 0.5, 1.0, 0.25])
    x2 = np.array([0.5, 0.2, 1.0, 0.5 + 1e-15])
    K = _gram_small([WhiteNoise(0.7)], x1, x2)[0]
    assert_allclose(K, 0.7 * (x1[:, None] == x2[None, :]))
    assert K[1, 0] == K[2, 0] == 0.7 and K[1, 3] == 0.0 and K[3, 2] == 0.7
    K = _gram_small([WhiteNoise(0.7)], x1, x1)[0]
    assert K[1, 2] == K[2, 1] == 0.7  # repeated training points are correlated too


def test_ge_with_gamma_exactly_two_is_se_with_scaled_length():
    exprs = [GE(0.3, 2.0, 1.4), SE(0.3 / np.sqrt(2.0), 1.4)]
    ops, params = pack(exprs, 3)
    assert params[0, 0, 1] == GAMMA_LOGIT_MAX
    assert float(gram_constrain(jnp.asarray(ops), jnp.asarray(params))[0, 0, 1]) == 2.0
    x1 = np.array([0.0, 0.1, 0.1, 0.4, 0.95])
    x2 = np.array([0.1, 0.3, 1.2])
    for a, b in [(x1, x1), (x1, x2)]:
        K = _gram_small(exprs, a, b)
        assert_allclose(K[0], K[1], rtol=1e-13)
        assert_allclose(K[0], gram_numpy(exprs[0], a, b))


def test_gram_module_reexports_the_guarded_transform():
    assert gram_constrain is kernels_constrain
    # Guarded: an unselected exp() overflowing does not poison gradients with 0 * inf.
    ops = jnp.array([spec.CP, spec.LIN])
    u = jnp.array([[800.0, 0.0, 0.0], [800.0, 0.0, 0.0]])  # locations/intercepts: identity
    g = jax.grad(lambda u: jnp.sum(gram_constrain(ops, u)))(u)
    assert np.all(np.isfinite(np.asarray(g)))


def test_regular_grid_path_equals_numpy_reference():
    exprs, ops, params, _, _ = _BATCHES[3]
    x = _grids(np.random.default_rng(400), len(exprs), N1)
    assert is_regular_grid(x)
    K = np.asarray(GRID_GRAM(ops, params, x))
    for p, expr in enumerate(exprs):
        assert_allclose(K[p], gram_numpy(expr, x[p], x[p]), err_msg=to_text(expr))


def test_is_regular_grid_and_the_grid_flag_needs_a_square_matrix():
    assert is_regular_grid(np.linspace(0.0, 1.0, 11)) and is_regular_grid(np.array([0.3]))
    assert is_regular_grid(_grids(np.random.default_rng(0), 3, 9))  # rows with their own steps
    assert not is_regular_grid(np.array([0.0, 0.1, 0.3]))  # uneven
    assert not is_regular_grid(np.array([0.0, 0.1, 0.1, 0.2]))  # repeated point
    assert not is_regular_grid(np.array([0.2, 0.1, 0.0]))  # descending
    rows = np.stack([np.linspace(0.0, 1.0, 5), np.array([0.0, 0.2, 0.4, 0.6, 0.9])])
    assert not is_regular_grid(rows)
    ops, params = pack([SE()], 3)
    with pytest.raises(ValueError, match="square"):
        gram(ops, params, np.linspace(0, 1, 4), np.linspace(0, 1, 3), regular_grid=True)


# --- gradients ------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_depth, count", [(3, 25), (5, 6)])  # 25: every atom drawn
def test_gram_vjp_matches_finite_differences(max_depth, count):
    rng = np.random.default_rng(200 + max_depth)
    exprs = [random_expression(rng, max_depth) for _ in range(count)]
    ops, params = pack(exprs, max_depth)
    if max_depth == 3:
        assert set(TIME_ATOMS) | set(spec.OPERATORS) <= set(np.unique(ops).tolist())
    x1 = np.sort(_points(rng, 20))  # with repeated points: r = 0 off the diagonal
    x2 = rng.uniform(-0.1, 1.1, 13)
    weights = jnp.asarray(rng.normal(size=(count, 20, 13)))

    @jax.jit
    def objective(u):  # a nonlinear scalar function of every entry, one output per particle
        return jnp.sum(jnp.tanh(gram(ops, u, x1, x2)) * weights, axis=(1, 2))

    check_grads(objective, (jnp.asarray(params),), order=1, modes=["rev"], eps=FD_EPS)


def test_regular_grid_vjp_matches_finite_differences():
    rng = np.random.default_rng(250)
    count = 24
    exprs = [random_expression(rng, 3) for _ in range(count)]
    ops, params = pack(exprs, 3)
    x = _grids(rng, count, 20)
    weights = jnp.asarray(rng.normal(size=(count, 20, 20)))  # not symmetric: both lag halves

    @jax.jit
    def objective(u):
        return jnp.sum(jnp.tanh(gram(ops, u, x, regular_grid=True)) * weights, axis=(1, 2))

    check_grads(objective, (jnp.asarray(params),), order=1, modes=["rev"], eps=FD_EPS)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 33])
def test_toeplitz_expansion_and_lag_sums_are_adjoint_brute_force(n):
    """``_toeplitz(f)[i, j] = f[|i - j|]`` and ``_lag_sums(A)[l]`` sums A over |i - j| = l (an
    unsymmetric A: both triangles count), by loops; together <toeplitz(f), A> = <f, lag_sums(A)>."""
    from autogp.evaluator.gram_values import lag_sums as _lag_sums
    from autogp.evaluator.gram_values import toeplitz as _toeplitz

    rng = np.random.default_rng(n)
    f, A = rng.normal(size=n), rng.normal(size=(n, n))
    expected_T, expected_a = np.zeros((n, n)), np.zeros(n)
    for i in range(n):
        for j in range(n):
            expected_T[i, j] = f[abs(i - j)]
            expected_a[abs(i - j)] += A[i, j]
    assert_allclose(_toeplitz(jnp.asarray(f)), expected_T)
    assert_allclose(_lag_sums(jnp.asarray(A)), expected_a)
    assert_allclose(jnp.vdot(_toeplitz(jnp.asarray(f)), A), jnp.vdot(f, _lag_sums(jnp.asarray(A))))


def test_regular_grid_lag_space_equals_the_general_path_on_stationary_subtrees():
    """On a grid, stationary subtrees are carried as lag vectors and expanded only below a
    non-stationary parent or at the root; values and gradients equal the general path's."""
    from autogp.evaluator.gram_values import matrix_nodes as _matrix_nodes
    from autogp.evaluator.gram_values import stationary_nodes as _stationary_nodes

    rng = np.random.default_rng(270)
    mostly_stationary = list(spec.STATIONARY) * 4 + [spec.LIN, spec.BM]
    exprs = [random_expression(rng, 4, atoms=mostly_stationary) for _ in range(21)]
    # Wholly stationary trees (the whole matrix from one lag vector), e.g. GE + PER.
    exprs += [random_expression(rng, 3, atoms=spec.STATIONARY, ops=(spec.PLUS, spec.TIMES))
              for _ in range(3)]
    ops, params = pack(exprs, 4)
    stationary = np.asarray(_stationary_nodes(jnp.asarray(ops)))
    matrix = np.asarray(_matrix_nodes(jnp.asarray(ops), jnp.asarray(stationary)))
    operator = np.isin(ops, spec.OPERATORS)
    parent = np.concatenate([ops[:, :1], ops[:, (np.arange(1, ops.shape[1]) - 1) // 2]], axis=1)
    # The batch covers every case: stationary sums and products inside a subtree (no matrix),
    # stationary subtree roots below products, sums and change points, and stationary roots.
    inner = stationary & ~matrix & operator
    assert set(ops[inner].tolist()) == {spec.PLUS, spec.TIMES}
    boundary = stationary & matrix & operator
    assert {spec.PLUS, spec.TIMES, spec.CP} <= set(parent[:, 1:][boundary[:, 1:]].tolist())
    assert boundary[:, 0].any() and (~stationary[:, 0]).any()

    x = _grids(rng, len(exprs), 30)
    weights = jnp.asarray(rng.normal(size=(len(exprs), 30, 30)))

    def objective(u, grid):
        K = gram(ops, u, x, regular_grid=grid) if grid else gram(ops, u, x, x)
        return jnp.sum(jnp.tanh(K) * weights)

    u = jnp.asarray(params)
    value_grid, grad_grid = jax.jit(jax.value_and_grad(lambda u: objective(u, True)))(u)
    value, grad = jax.jit(jax.value_and_grad(lambda u: objective(u, False)))(u)
    assert_allclose(value_grid, value)
    assert_allclose(grad_grid, grad)


# --- positive semi-definiteness -------------------------------------------------------------------


@pytest.mark.parametrize("max_depth", [3, 5])
def test_gram_is_symmetric_positive_semidefinite(max_depth):
    exprs, ops, params, x1, _ = _BATCHES[max_depth]
    K = np.asarray(GRAM(ops, params, x1, x1))
    for p, expr in enumerate(exprs):
        assert_allclose(K[p], K[p].T, rtol=1e-12, atol=1e-14, err_msg=to_text(expr))
        eig = np.linalg.eigvalsh(0.5 * (K[p] + K[p].T))
        assert eig.min() >= -1e-8 * np.abs(eig).max(), (to_text(expr), eig.min(), eig.max())
