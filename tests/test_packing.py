"""Heap packing of kernel expressions and the parameter transforms behind it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autogp.kernels import (
    GE,
    SE,
    ChangePoint,
    Linear,
    Periodic,
    constrain,
    constrain_np,
    pack,
    pack_one,
    parse,
    spec,
    structure,
    unconstrain,
    unconstrain_np,
    unpack,
    unpack_one,
)
from autogp.kernels.base import nodes
from autogp.kernels.transforms import GAMMA_LOGIT_MAX, preimage_np
from tests.helpers import assert_allclose, random_expression, random_params


def assert_same_up_to_transforms(actual, desired):
    """Same tree shape and classes, parameters equal to float64 rounding of exp/log round trips."""
    assert structure(actual) == structure(desired)
    for a, d in zip(nodes(actual), nodes(desired), strict=True):
        assert type(a) is type(d)
        assert_allclose(np.array(a.params), np.array(d.params), rtol=1e-14, atol=0)


# --- layout ----------------------------------------------------------------------------------


def test_heap_layout_of_a_hand_case():
    left = Linear(0.5, 0.2, 1.1) + Periodic(0.3, 0.1, 1.2)
    expr = ChangePoint(left, GE(0.3, 1.0, 2.0), 0.4, 0.05)
    ops, params = pack_one(expr, max_depth=2)
    assert ops.dtype == np.int32 and params.dtype == np.float64
    assert ops.shape == (7,) and params.shape == (7, spec.MAX_PARAMS)
    assert ops.tolist() == [spec.CP, spec.PLUS, spec.GE, spec.LIN, spec.PER, 0, 0]
    np.testing.assert_array_equal(params[0], [0.4, np.log(0.05), 0.0])  # location is identity
    np.testing.assert_array_equal(params[1], 0.0)  # '+' has no parameters
    np.testing.assert_array_equal(params[2], [np.log(0.3), 0.0, np.log(2.0)])  # logit(1/2) = 0
    np.testing.assert_array_equal(params[3], [0.5, np.log(0.2), np.log(1.1)])
    np.testing.assert_array_equal(params[5:], 0.0)


def test_gamma_two_packs_to_a_finite_value_and_back_to_exactly_two():
    ops, params = pack_one(GE(0.3, 2.0, 1.0), max_depth=0)
    assert params[0, 1] == GAMMA_LOGIT_MAX
    assert unpack_one(ops, params).gamma == 2.0


@pytest.mark.parametrize("max_depth", [3, 5])
def test_pack_unpack_round_trip(max_depth):
    rng = np.random.default_rng(max_depth)
    exprs = [random_expression(rng, max_depth) for _ in range(200)]
    ops, params = pack(exprs, max_depth=max_depth)
    assert ops.shape == (200, spec.num_slots(max_depth))
    assert params.shape == (200, spec.num_slots(max_depth), spec.MAX_PARAMS)
    assert np.all(np.isfinite(params))
    back = unpack(ops, params)
    for a, d in zip(back, exprs, strict=True):
        assert_same_up_to_transforms(a, d)
    ops_again, params_again = pack(back, max_depth=max_depth)
    np.testing.assert_array_equal(ops_again, ops)
    assert params_again.tobytes() == params.tobytes()  # bit-identical


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_depth=st.integers(0, 5))
def test_pack_unpack_pack_is_bit_identical(seed, max_depth):
    expr = random_expression(np.random.default_rng(seed), max_depth)
    ops, params = pack_one(expr, max_depth=5)
    ops_again, params_again = pack_one(unpack_one(ops, params), max_depth=5)
    np.testing.assert_array_equal(ops_again, ops)
    assert params_again.tobytes() == params.tobytes()


def test_shallower_trees_pack_into_deeper_heaps():
    expr = parse("LIN + PER * SE")
    ops3, params3 = pack_one(expr, max_depth=3)
    ops5, _ = pack_one(expr, max_depth=5)
    assert ops5[: len(ops3)].tolist() == ops3.tolist()
    assert not ops5[len(ops3) :].any()
    assert_same_up_to_transforms(unpack_one(ops3, params3), expr)


def test_depth_overflow_is_a_clear_error():
    deep = parse("((LIN + PER) * SE + GE) * RQ")  # depth 4
    pack([deep], max_depth=4)
    with pytest.raises(ValueError, match=r"expression 1 has depth 4 > max_depth=3"):
        pack([SE(), deep], max_depth=3)


def test_unpack_rejects_malformed_arrays():
    ops, params = pack([parse("LIN + SE")], max_depth=2)
    broken = ops.copy()
    broken[0, 2] = spec.EMPTY  # '+' without a right child
    with pytest.raises(ValueError, match="slot 2.*EMPTY"):
        unpack(broken, params)
    leaf_operator = ops.copy()
    leaf_operator[0, 3] = spec.TIMES  # operator in the last level, no room for children
    leaf_operator[0, 1] = spec.PLUS
    with pytest.raises(ValueError, match="leaf slot 3"):
        unpack(leaf_operator, params)
    unknown = ops.copy()
    unknown[0, 0] = 99
    with pytest.raises(ValueError, match="opcodes"):
        unpack(unknown, params)
    with pytest.raises(ValueError, match="expected ops"):
        unpack(ops, params[..., :2])


def test_pack_of_an_empty_batch():
    ops, params = pack([], max_depth=3)
    assert ops.shape == (0, 15) and params.shape == (0, 15, spec.MAX_PARAMS)
    assert unpack(ops, params) == []


# --- transforms ------------------------------------------------------------------------------


def _random_packed_natural(rng, n):
    """Opcodes [n] (all kinds, EMPTY included) with natural values [n, MAX_PARAMS]."""
    ops = rng.integers(0, spec.NUM_OPS, n)
    natural = np.zeros((n, spec.MAX_PARAMS))
    for i, op in enumerate(ops):
        values = random_params(rng, int(op))
        natural[i, : len(values)] = values
    return ops, natural


def test_transforms_by_kind():
    theta = np.array([[0.5, 0.2, 1.5]])  # LIN: identity, log, log
    np.testing.assert_array_equal(unconstrain_np(np.array([spec.LIN]), theta),
                                  [[0.5, np.log(0.2), np.log(1.5)]])  # fmt: skip
    u = np.array([[0.0, 0.0, 0.0]])  # GE: log, gamma, log
    assert_allclose(constrain_np(np.array([spec.GE]), u), [[1.0, 1.0, 1.0]])
    assert_allclose(constrain_np(np.array([spec.GE]), np.array([[0.0, -1000.0, 0.0]]))[0, 1], 0.0)


def test_constrain_unconstrain_round_trip_numpy_and_jax():
    rng = np.random.default_rng(0)
    ops, natural = _random_packed_natural(rng, 2000)
    u = unconstrain_np(ops, natural)
    assert np.all(np.isfinite(u))
    assert_allclose(constrain_np(ops, u), natural, rtol=1e-13, atol=1e-15)
    u_jax = jax.jit(unconstrain)(jnp.asarray(ops), jnp.asarray(natural))
    assert_allclose(u_jax, u, rtol=1e-13, atol=1e-13)
    assert_allclose(jax.jit(constrain)(jnp.asarray(ops), u_jax), natural, rtol=1e-13, atol=1e-15)
    # Unused entries stay zero both ways.
    unused = np.arange(spec.MAX_PARAMS)[None, :] >= spec.NUM_PARAMS[ops][:, None]
    assert not u[unused].any() and not np.asarray(u_jax)[unused].any()


def test_preimage_inverts_unconstrain_exactly():
    rng = np.random.default_rng(1)
    ops, natural = _random_packed_natural(rng, 5000)
    u = unconstrain_np(ops, natural)
    assert unconstrain_np(ops, preimage_np(ops, u)).tobytes() == u.tobytes()


def test_jax_transforms_batch_and_have_finite_gradients():
    # Identity entries far beyond exp's range (a CP location of 1000) and negative natural
    # locations must not leak inf/nan from the unselected log/exp branches into gradients.
    ops = jnp.array([[spec.LIN, spec.GE], [spec.CP, spec.EMPTY]])
    u = jnp.array([[[-900.0, 0.2, 0.3], [0.1, 50.0, -2.0]], [[1000.0, -1.0, 0.0], [5.0, 5.0, 5.0]]])
    theta = constrain(ops, u)
    assert theta.shape == u.shape
    assert bool(jnp.all(jnp.isfinite(jax.grad(lambda x: constrain(ops, x).sum())(u))))
    natural = jnp.array([[[-0.5, 0.2, 1.0], [0.3, 1.5, 1.0]], [[-3.0, 0.1, 0.0], [0.0] * 3]])
    assert bool(jnp.all(jnp.isfinite(jax.grad(lambda x: unconstrain(ops, x).sum())(natural))))
    at_two = natural.at[0, 1, 1].set(2.0)
    assert float(unconstrain(ops, at_two)[0, 1, 1]) == GAMMA_LOGIT_MAX
    assert float(constrain(ops, unconstrain(ops, at_two))[0, 1, 1]) == 2.0


def test_packed_parameters_follow_the_spec_order():
    ops, params = pack_one(SE(0.25, 3.0), max_depth=0)
    assert ops.tolist() == [spec.SE]
    np.testing.assert_array_equal(params[0], [np.log(0.25), np.log(3.0), 0.0])
