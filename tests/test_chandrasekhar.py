"""autogp.statespace.chandrasekhar: on a regular grid, time-invariant trees get the dense
Gaussian likelihood (value and gradient) from the Chandrasekhar recursions; trees that are not
time-invariant (change points, a BM starting inside the data, missing points, more moving states
than the rank) are recognised, and a batch holding one is scored by the Kalman filter."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp._x64 import x64
from autogp.kernels.packing import pack
from autogp.kernels.text import parse
from autogp.statespace import chandrasekhar, state_space_log_likelihood, support, time_invariant
from autogp.statespace.filter import Options, model, observed, round_up
from tests.helpers import (
    assert_grads_close,
    dense_gaussian_log_likelihood,
    values_and_sum_grads,
)

INVARIANT = [
    "LIN(intercept=0.4; bias=0.3, amp=0.8) + PER(l=1.2, period=0.21; amp=0.9)"
    " * M32(l=0.4; amp=1.0) + WN(v=0.1)",
    "M52(l=0.1; amp=2.0) + BM(origin=-0.1; amp=1.0) + LIN(intercept=0.6; bias=0.2, amp=1.0)",
    "IBM(origin=-0.05; amp=3.0) + M12(l=0.3; amp=1.2) * M32(l=0.5; amp=0.7)",
    "CONST(c=0.5) + PER(l=1.2, period=0.3; amp=0.5) * M12(l=0.25; amp=1.3) + M72(l=0.3; amp=0.6)",
    "BM(origin=-0.02; amp=0.5) + M12(l=0.2; amp=0.4)",
]
NOT_INVARIANT = [
    "CP(M32(l=0.2; amp=1.0), LIN(intercept=0.5; bias=0.3, amp=1.5); location=0.6, scale=0.05)",
    "BM(origin=0.2; amp=0.5) + M12(l=0.2; amp=2.0)",  # the walk starts inside the data
    "LIN(intercept=0.6; bias=0.2, amp=1.0) * M32(l=0.3; amp=1.0)",  # Q grows with LIN's P(t)
    "LIN(intercept=0.6; bias=0.2, amp=1.0) + BM(origin=-0.1; amp=1.0) + IBM(origin=-0.05; amp=2.0)"
    " + M32(l=0.3; amp=1.0)",  # five moving states
]
DIM = 40


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n)
    return x, np.sin(7 * x) + 0.5 * x + 0.3 * rng.normal(size=n)


def _packed(texts):
    ops, params = pack([parse(t) for t in texts])
    return jnp.asarray(ops), jnp.asarray(params), jnp.full(len(texts), np.log(0.04))


def _options(ops, params, rank):
    return Options(round_up(int(np.max(support(ops, params, dim=DIM).used)), 4), rank=rank)


def _flags(ops, params, noise, x, y, rank=chandrasekhar.RANK):
    """Each tree's :func:`chandrasekhar.time_invariant`."""
    options = _options(ops, params, rank)
    ok = observed(jnp.asarray(y), None)[1]
    return np.asarray(jax.jit(jax.vmap(lambda o, p, s: chandrasekhar.time_invariant(
        model(o, p, s, options), x, ok, rank)))(ops, params, noise))


def _recursions(ops, params, noise, x, y, rank=chandrasekhar.RANK):
    """Each tree's value by the recursions directly, and the gradient."""
    options = _options(ops, params, rank)

    def one(o, p, s):
        return chandrasekhar.log_likelihood(model(o, p, s, options), x, y, options, rank)

    return values_and_sum_grads(lambda p, s: jax.vmap(one)(ops, p, s), params, noise)


def _assert_matches_dense(ops, params, noise, x, y, *, rtol, grad_rtol,
                          rank=chandrasekhar.RANK):
    assert _flags(ops, params, noise, x, y, rank).all()
    values, grads = _recursions(ops, params, noise, x, jnp.asarray(y), rank=rank)
    ref_values, ref_grads = dense_gaussian_log_likelihood(ops, params, noise, x, y)
    np.testing.assert_allclose(values, ref_values, rtol=rtol)
    assert_grads_close(grads, ref_grads, grad_rtol)


@pytest.mark.parametrize("n", [200, 1000])
def test_time_invariant_trees_match_the_dense_likelihood(n):
    with x64():
        x, y = _data(n, seed=n)
        ops, params, noise = _packed(INVARIANT)
        # PER's kernel is truncated at 1e-10 of its amplitude
        _assert_matches_dense(ops, params, noise, x, y, rtol=1e-8, grad_rtol=1e-7)


def test_more_moving_states_need_a_larger_rank():
    with x64():
        x, y = _data(150, seed=4)
        ops, params, noise = _packed(NOT_INVARIANT[3:])
        assert not _flags(ops, params, noise, x, y)[0]
        _assert_matches_dense(ops, params, noise, x, y, rtol=1e-9, grad_rtol=1e-8, rank=6)


def test_trees_that_are_not_time_invariant_are_recognised_and_filtered():
    with x64():
        x, y = _data(120, seed=1)
        ops, params, noise = _packed(NOT_INVARIANT + INVARIANT[1:2])  # 8 states at most
        assert list(_flags(ops, params, noise, x, y)) == [False, False, False, False, True]
        assert list(time_invariant(ops, params, noise, x, y, dim=8)) == [False] * 4 + [True]
        missing = y.copy()
        missing[30] = np.nan
        assert not _flags(ops[4:], params[4:], noise[4:], x, missing)[0]

        def scored(method, ys=y, o=ops, p=params, s=noise):
            return state_space_log_likelihood(o, p, s, x, ys, dim=8, regular_grid=True,
                                              method=method)

        # one tree that is not time-invariant sends the whole batch to the Kalman filter
        np.testing.assert_allclose(scored("auto"), scored("kalman"), rtol=1e-14)
        reference = dense_gaussian_log_likelihood(ops, params, noise, x, y)[0]
        np.testing.assert_allclose(scored("auto"), reference, rtol=1e-9)
        # a batch that is: the recursions, equal to the filter to rounding, gradient too
        o, p, s = ops[4:], params[4:], noise[4:]
        auto, kalman = (
            jax.jit(jax.value_and_grad(lambda p, s, m=m: jnp.sum(scored(m, o=o, p=p, s=s)),
                                       (0, 1)))(p, s)
            for m in ("auto", "kalman"))
        assert float(auto[0]) == pytest.approx(float(kalman[0]), rel=1e-11)
        assert_grads_close(auto[1], kalman[1], 1e-9)
        # a missing point sends it back to the filter, which skips the point
        np.testing.assert_allclose(scored("auto", missing, o, p, s),
                                   scored("kalman", missing, o, p, s), rtol=1e-14)
        with pytest.raises(ValueError, match="method"):
            state_space_log_likelihood(ops, params, noise, x, y, dim=8, method="fast")
