"""The masked GP log marginal likelihood: values against scipy, gradients against finite
differences, one compiled program for every structure and mask, and the robust Cholesky.

Most checks go through one jitted value-and-gradient function with fixed shapes (``_evaluate``),
which is also what the single-trace test counts, so it compiles once for the whole module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax.test_util import check_grads

from autogp.evaluator import (
    gaussian_log_marginal,
    gram,
    log_marginal_likelihood,
    robust_cholesky,
)
from autogp.evaluator.likelihood import BASE_JITTER
from autogp.kernels import (
    GE,
    SE,
    ChangePoint,
    Const,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    WhiteNoise,
    pack,
    spec,
    to_text,
    unpack,
)
from autogp.kernels.transforms import GAMMA_LOGIT_MAX
from tests.helpers import TIME_ATOMS, assert_allclose, random_expression
from tests.reference_numpy import gram_numpy

# --- the shared compiled function -----------------------------------------------------------------

P, DEPTH, N = 4, 3, 32
S = spec.num_slots(DEPTH)
# Normalised time points with exact repeats (t = t' off the diagonal).
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, N))
X[[5, 6, 7]] = X[4]
X[20] = X[21]
Y = np.random.default_rng(1).normal(size=N)
ALL = np.ones(N, bool)

_TRACES = 0


@jax.jit
def _value_and_grad(ops, params, noise, y, mask):
    global _TRACES
    _TRACES += 1

    def total(u, s):
        values = log_marginal_likelihood(ops, u, s, X, y, mask)
        return jnp.sum(values), values

    (_, values), (d_params, d_noise) = jax.value_and_grad(total, argnums=(0, 1), has_aux=True)(
        params, noise
    )
    return values, d_params, d_noise, gram(ops, params, X)


def _evaluate(ops, params, noise, y=Y, mask=ALL):
    """``(log ML [P], d/dparams, d/dnoise, K [P, N, N])`` as numpy, at the module's fixed shapes."""
    args = (
        np.asarray(ops, np.int32),
        np.asarray(params, np.float64),
        np.asarray(noise, np.float64),
        np.asarray(y, np.float64),
        np.asarray(mask, bool),
    )
    assert [a.shape for a in args] == [(P, S), (P, S, spec.MAX_PARAMS), (P,), (N,), (N,)]
    return tuple(np.asarray(a) for a in _value_and_grad(*args))


def _random_batch(rng, count=P, max_depth=DEPTH):
    exprs = [random_expression(rng, max_depth) for _ in range(count)]
    ops, params = pack(exprs, DEPTH)
    return exprs, ops, params


def _reference_logpdf(expr, noise_var, x, y, mask):
    """scipy's log N(y[mask] | 0, K[mask, mask] + noise I), K from the numpy reference.

    The evaluator always applies the first rung of its jitter ladder (``BASE_JITTER`` times the
    mean of the observed diagonal); it is added here too so that the comparison can be tight
    (without it the two differ by up to ~1e-7 relative on these kernels).
    """
    xm = x[mask]
    K = gram_numpy(expr, xm, xm)
    jitter = BASE_JITTER * np.mean(np.diag(K))
    cov = K + (noise_var + jitter) * np.eye(xm.size)
    return scipy.stats.multivariate_normal.logpdf(y[mask], mean=np.zeros(xm.size), cov=cov)


def _masks(rng):
    random_subset = rng.random(N) < 0.6
    random_subset[[0, 4, 5]] = [True, False, True]  # one of a repeated group masked out
    return {"all": ALL, "suffix": np.arange(N) < 23, "subset": random_subset}


# --- values ---------------------------------------------------------------------------------------


def test_log_marginal_likelihood_equals_scipy_logpdf_unmasked_and_masked():
    rng = np.random.default_rng(10)
    masks = _masks(rng)
    seen = set()
    for _ in range(4):
        exprs, ops, params = _random_batch(rng)
        seen |= set(np.unique(ops).tolist())
        noise = rng.uniform(-4.0, -1.0, P)
        for name, mask in masks.items():
            values, *_ = _evaluate(ops, params, noise, mask=mask)
            for p, expr in enumerate(exprs):
                expected = _reference_logpdf(expr, np.exp(noise[p]), X, Y, mask)
                assert_allclose(values[p], expected, err_msg=f"{name}: {to_text(expr)}")
    assert set(TIME_ATOMS) <= seen


def test_masked_points_do_not_matter():
    rng = np.random.default_rng(11)
    _, ops, params = _random_batch(rng)
    noise = np.full(P, -2.0)
    mask = np.arange(N) < 23
    values, d_params, d_noise, _ = _evaluate(ops, params, noise, mask=mask)
    y_changed = Y.copy()
    y_changed[~mask] = rng.normal(size=(~mask).sum()) * 100.0
    changed = _evaluate(ops, params, noise, y=y_changed, mask=mask)
    for a, b in zip((values, d_params, d_noise), changed[:3], strict=True):
        assert_allclose(a, b, rtol=0, atol=0)


def test_per_particle_data_and_masks_and_vjp_matches_finite_differences():
    rng = np.random.default_rng(12)
    count = 12
    exprs = [random_expression(rng, DEPTH) for _ in range(count)]
    ops, params = pack(exprs, DEPTH)
    noise = jnp.asarray(rng.uniform(-3.0, -1.0, count))
    y = rng.normal(size=(count, N))
    mask = rng.random((count, N)) < 0.7
    mask[:, -5:] = False

    @jax.jit
    def likelihood(u, s):
        return log_marginal_likelihood(ops, u, s, X, y, mask)

    values = np.asarray(likelihood(jnp.asarray(params), noise))
    for p, expr in enumerate(exprs):
        expected = _reference_logpdf(expr, np.exp(float(noise[p])), X, y[p], mask[p])
        assert_allclose(values[p], expected, err_msg=to_text(expr))
    check_grads(likelihood, (jnp.asarray(params), noise), order=1, modes=["rev"], eps=1e-5)


# --- one compiled program -------------------------------------------------------------------------


def test_one_trace_for_every_structure_and_mask():
    rng = np.random.default_rng(13)
    masks = [np.arange(N) < n for n in (N, 29, 17, 8, 3)] + [rng.random(N) < 0.5 for _ in range(3)]
    structures = set()
    for i in range(200):
        _, ops, params = _random_batch(rng)
        structures.add(ops.tobytes())
        noise = rng.uniform(-3.0, -1.0, P)
        values, d_params, d_noise, _ = _evaluate(ops, params, noise, mask=masks[i % len(masks)])
        assert np.all(np.isfinite(values)) and np.all(np.isfinite(d_params))
        assert np.all(np.isfinite(d_noise))
    assert len(structures) == 200
    assert _TRACES == 1


# --- gradients at coincident points ---------------------------------------------------------------

# Atoms whose formulas have a kink or a 0 * log(0) at r = 0, and the gamma exponent's boundaries
# (exactly 2 is stored as the clipped logit GAMMA_LOGIT_MAX).
_COINCIDENT_CASES = [
    GE(0.3, 2.0, 1.1),
    GE(0.3, 1.9999999, 1.1),
    GE(0.3, 1.9, 1.1),
    GE(0.3, 0.5, 1.1),
    GE(0.3, 0.02, 1.1),
    GE(0.2, 0.05, 0.8) * Periodic(1.2, 0.25, 1.0),
    Periodic(0.8, 0.3, 1.1),
    Periodic(0.8, 0.13, 1.1),
    Matern12(0.3, 1.1),
    Matern32(0.3, 1.1),
    Matern52(0.3, 1.1),
    ChangePoint(GE(0.3, 2.0, 1.0), Matern12(0.2, 0.5), 0.5, 0.1) + WhiteNoise(0.1),
    Matern32(0.4, 1.0) * Matern52(0.1, 2.0) + GE(0.5, 1.5, 0.3) * Const(0.7),
    GE(0.3, 2.0, 1.0) * Matern52(0.2, 1.0) + Matern32(0.2, 0.5),
    Matern12(0.05, 1.0) + Periodic(0.5, 0.4, 0.3) * GE(0.1, 1.0, 0.5),
    Const(0.2) + GE(0.4, 0.1, 1.0),
]


@pytest.mark.parametrize("batch", range(len(_COINCIDENT_CASES) // P))
def test_gradients_are_finite_and_correct_at_coincident_points(batch):
    exprs = _COINCIDENT_CASES[batch * P : (batch + 1) * P]
    ops, params = pack(exprs, DEPTH)
    noise = np.full(P, np.log(0.05))
    values, d_params, d_noise, _ = _evaluate(ops, params, noise)
    assert np.all(np.isfinite(values))
    assert np.all(np.isfinite(d_params)) and np.all(np.isfinite(d_noise))

    # The gradient is the right one: a central difference along a random direction.
    rng = np.random.default_rng(batch)
    for _ in range(2):
        direction = rng.normal(size=params.shape) * (ops != spec.EMPTY)[..., None]
        eps = 1e-6
        plus, *_ = _evaluate(ops, params + eps * direction, noise)
        minus, *_ = _evaluate(ops, params - eps * direction, noise)
        numerical = (plus - minus) / (2 * eps)
        analytic = np.sum(d_params * direction, axis=(1, 2))
        assert_allclose(analytic, numerical, rtol=1e-6, atol=1e-6)


def test_gradients_at_gamma_two_and_beyond_are_finite_and_zero_in_gamma():
    ops, params = pack([GE(0.3, 2.0, 1.1), GE(0.3, 2.0, 1.1) * Periodic(), Matern12(), SE()], DEPTH)
    noise = np.full(P, np.log(0.05))
    for u_gamma in (GAMMA_LOGIT_MAX, 80.0, 800.0):
        u = params.copy()
        u[0, 0, 1] = u[1, 1, 1] = u_gamma
        values, d_params, d_noise, K = _evaluate(ops, u, noise)
        assert np.all(np.isfinite(values)) and np.all(np.isfinite(d_params))
        assert d_params[0, 0, 1] == 0.0 and d_params[1, 1, 1] == 0.0
        assert d_params[0, 0, 0] != 0.0 and d_params[1, 1, 0] != 0.0
        assert_allclose(K[0], gram_numpy(GE(0.3, 2.0, 1.1), X, X))


# --- robust Cholesky ------------------------------------------------------------------------------


def test_singular_noise_free_kernels_factorise_with_jitter():
    # Rank <= 2 on 32 points (several repeated), with a noise variance of ~1e-304.
    exprs = [Const(0.5) + Linear(0.3, 0.2, 1.0), Linear(0.5, 0.1, 2.0), Const(1.0), SE(5.0, 1.0)]
    ops, params = pack(exprs, DEPTH)
    noise = np.full(P, -700.0)
    values, d_params, d_noise, K = _evaluate(ops, params, noise)
    assert np.all(np.isfinite(values))
    assert np.all(np.isfinite(d_params)) and np.all(np.isfinite(d_noise))
    assert np.linalg.matrix_rank(K[0]) <= 2  # really singular
    L, ok = robust_cholesky(jnp.asarray(K), jnp.exp(jnp.asarray(noise)), jnp.asarray(ALL))
    assert np.all(np.asarray(ok)) and np.all(np.isfinite(np.asarray(L)))


def _spectrum_matrix(rng, eigenvalues):
    q, _ = np.linalg.qr(rng.normal(size=(len(eigenvalues),) * 2))
    return (q * eigenvalues) @ q.T


@jax.jit
def _gaussian_value_and_grad(K, noise_var, y, mask):
    def total(K, s):
        values = gaussian_log_marginal(K, s, y, mask)
        return jnp.sum(values), values

    (_, values), grads = jax.value_and_grad(total, argnums=(0, 1), has_aux=True)(K, noise_var)
    L, ok = robust_cholesky(K, noise_var, mask)
    return values, grads, L, ok


def test_jitter_ladder_nan_and_hopeless_matrices_fail_alone():
    rng = np.random.default_rng(14)
    n = 12
    spectrum = np.linspace(0.5, 2.0, n)
    needs_ladder = spectrum.copy()
    needs_ladder[0] = -3e-7 * np.mean(spectrum)  # rungs 1e-10 .. 1e-7 fail, 1e-6 succeeds
    hopeless = spectrum.copy()
    hopeless[0] = -1.0
    with_nan = _spectrum_matrix(rng, spectrum)
    with_nan[3, 4] = with_nan[4, 3] = np.nan
    K = np.stack(
        [
            _spectrum_matrix(rng, spectrum),
            _spectrum_matrix(rng, needs_ladder),
            with_nan,
            _spectrum_matrix(rng, hopeless),
        ]
    )
    noise_var = np.array([0.0, 0.0, 0.1, 0.0])
    y = rng.normal(size=n)
    mask = np.ones(n, bool)
    values, (d_K, d_noise), L, ok = (
        jax.tree_util.tree_map(np.asarray, out)
        for out in _gaussian_value_and_grad(K, noise_var, y, mask)
    )
    np.testing.assert_array_equal(ok, [True, True, False, False])
    assert values[2] == -np.inf and values[3] == -np.inf
    for p in (2, 3):  # failed: zero gradient (not NaN), identity factor
        np.testing.assert_array_equal(d_K[p], 0.0)
        assert d_noise[p] == 0.0
        np.testing.assert_array_equal(L[p], np.eye(n))
    assert np.all(np.isfinite(d_K)) and np.all(np.isfinite(d_noise))

    # The others are exactly what their own matrices give (the failures do not leak).
    for p in (0, 1):
        scale = np.mean(np.diag(K[p]))
        jitter = (L[p] @ L[p].T - K[p])[np.diag_indices(n)] / scale
        rung = 1e-6 if p == 1 else BASE_JITTER
        assert_allclose(jitter, rung, rtol=1e-3)  # which rung it took
        cov = K[p] + (noise_var[p] + rung * scale) * np.eye(n)
        expected = scipy.stats.multivariate_normal.logpdf(y, cov=cov, allow_singular=False)
        # p = 1 is deliberately ill-conditioned (condition number ~3e6): a looser tolerance.
        assert_allclose(values[p], expected, rtol=1e-7 if p == 1 else 1e-10)


def test_nan_parameters_fail_one_particle_only():
    rng = np.random.default_rng(15)
    _, ops, params = _random_batch(rng)
    noise = np.full(P, -2.0)
    reference = _evaluate(ops, params, noise)
    for bad in (np.nan, 800.0):  # NaN, or an amplitude exp(800) = inf: K is not finite
        ops_bad, u = ops.copy(), params.copy()
        ops_bad[1], u[1] = spec.EMPTY, 0.0
        ops_bad[1, 0], u[1, 0] = spec.SE, [np.log(0.3), bad, 0.0]  # SE(l, amp = exp(bad))
        values, d_params, d_noise, _ = _evaluate(ops_bad, u, noise)
        assert values[1] == -np.inf
        assert d_noise[1] == 0.0
        others = [0, 2, 3]
        assert_allclose(values[others], reference[0][others], rtol=0, atol=0)
        assert_allclose(d_params[others], reference[1][others], rtol=0, atol=0)
        assert_allclose(d_noise[others], reference[2][others], rtol=0, atol=0)


# --- properties -----------------------------------------------------------------------------------

_UNCONSTRAINED = {
    spec.T_LOG: st.floats(-4.0, 2.5),
    spec.T_GAMMA: st.one_of(st.just(GAMMA_LOGIT_MAX), st.floats(-5.0, 8.0)),
    spec.T_IDENTITY: st.floats(-1.0, 2.0),
}
_CHOICES = TIME_ATOMS + spec.OPERATORS


@st.composite
def _packed_tree(draw):
    """One tree of depth <= DEPTH in heap form, drawn node by node with unconstrained params."""
    ops = np.zeros(S, np.int32)
    params = np.zeros((S, spec.MAX_PARAMS))

    def fill(slot, depth):
        op = draw(st.sampled_from(_CHOICES if depth < DEPTH else TIME_ATOMS))
        ops[slot] = op
        for k in range(spec.NUM_PARAMS[op]):
            params[slot, k] = draw(_UNCONSTRAINED[int(spec.TRANSFORMS[op, k])])
        if op in spec.OPERATORS:
            fill(2 * slot + 1, depth + 1)
            fill(2 * slot + 2, depth + 1)

    fill(0, 0)
    return ops, params


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trees=st.lists(_packed_tree(), min_size=P, max_size=P),
    noise=st.lists(st.floats(-12.0, 1.0), min_size=P, max_size=P),
    n_valid=st.integers(1, N),
)
def test_random_trees_give_psd_matrices_finite_likelihoods_and_gradients(trees, noise, n_valid):
    ops = np.stack([t[0] for t in trees])
    params = np.stack([t[1] for t in trees])
    values, d_params, d_noise, K = _evaluate(ops, params, noise, mask=np.arange(N) < n_valid)
    texts = [to_text(e) for e in unpack(ops, params)]
    for p in range(P):
        eig = np.linalg.eigvalsh(0.5 * (K[p] + K[p].T))
        assert eig.min() >= -1e-8 * np.abs(eig).max(), texts[p]
    assert np.all(np.isfinite(values)), texts
    assert np.all(np.isfinite(d_params)) and np.all(np.isfinite(d_noise)), texts
