"""The structure prior on packed trees against brute-force enumeration and Python references."""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from autogp.inference import grammar as gr
from autogp.inference import heap as heaps
from autogp.kernels import spec
from tests.enumerate_trees import (
    enumerate_subtrees,
    enumerate_trees,
    heap_code,
    size,
    to_heap,
)

# A tiny grammar with a change-point (398 trees at depth 2).
TINY = {spec.LIN: 6, spec.PER: 3, spec.PLUS: 5, spec.TIMES: 4, spec.CP: 2}
TINY_NO_CP = {spec.SE: 1, spec.LIN: 2, spec.PLUS: 1, spec.TIMES: 3}
CP_HEAVY = {spec.LIN: 1, spec.PER: 2, spec.PLUS: 1, spec.CP: 3}


sample_prior = jax.jit(gr.sample_prior, static_argnums=(0, 1))


def heaps_of(trees, max_depth: int) -> np.ndarray:
    return np.array([to_heap(tree, max_depth) for tree, _ in trees], dtype=np.int32)


def codes_of(ops) -> np.ndarray:
    ops = np.asarray(ops, dtype=np.int64)
    return (ops * 16 ** np.arange(ops.shape[-1], dtype=np.int64)).sum(-1)


def total_variation(sampled_codes, codes, probs) -> float:
    index = {int(c): i for i, c in enumerate(codes)}
    freq = np.zeros(len(codes))
    unknown = 0
    values, counts = np.unique(np.asarray(sampled_codes), return_counts=True)
    for value, count in zip(values, counts, strict=True):
        if int(value) in index:
            freq[index[int(value)]] = count
        else:
            unknown += count
    n = counts.sum()
    return 0.5 * (np.abs(freq / n - probs).sum() + unknown / n)


# --- Grammar ---------------------------------------------------------------------------------
def test_default_grammar_matches_autogp_jl():
    g = gr.Grammar.default(max_depth=3)
    w = np.asarray(g.weights)
    assert w[spec.LIN] == w[spec.GE] == w[spec.PER] == 6
    assert w[spec.PLUS] == w[spec.TIMES] == 5
    assert w[spec.CP] == 2
    others = [op for op in range(spec.NUM_OPS) if op not in gr.DEFAULT_WEIGHTS]
    assert np.all(w[others] == 0)
    mean, std = spec.default_prior_table()
    np.testing.assert_array_equal(g.prior_mean_table, mean)
    np.testing.assert_array_equal(g.prior_std_table, std)
    assert g.noise_prior == spec.DEFAULT_NOISE_PRIOR
    assert g.num_slots == 15


def test_grammar_is_hashable_static_and_configurable():
    a = gr.Grammar.default(max_depth=2, weights={"LIN": 1, "+": 2, spec.SE: 3})
    b = gr.Grammar.default(max_depth=2, weights={spec.LIN: 1, spec.PLUS: 2, spec.SE: 3})
    assert a == b and hash(a) == hash(b)
    assert a.weights[spec.SE] == 3 and a.weights[spec.PER] == 0
    assert jax.tree_util.tree_leaves(a) == []
    # A plain (non-static) jit argument: the grammar is static pytree metadata.
    out = jax.jit(gr.log_prior_structure)(a, jnp.asarray(to_heap((spec.LIN,), 2)))
    assert np.isclose(out, math.log(1 / 6))
    c = gr.Grammar.default(
        max_depth=2, param_priors={("PER", "period"): (0.0, 0.1)}, noise_prior=(-3.0, 2.0)
    )
    assert c.prior_mean_table[spec.PER, 1] == 0.0 and c.prior_std_table[spec.PER, 1] == 0.1
    assert c.noise_prior == (-3.0, 2.0)
    assert c != gr.Grammar.default(max_depth=2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_depth": 0},
        {"max_depth": 6},
        {"weights": {spec.LIN: -1.0, spec.SE: 1.0}},
        {"weights": {spec.PLUS: 1.0}},
        {"weights": {"NOPE": 1.0}},
        {"param_priors": {("LIN", "period"): (0.0, 1.0)}},
        {"param_priors": {("LIN", "amp"): (0.0, 0.0)}},
        {"noise_prior": (0.0, -1.0)},
    ],
)
def test_grammar_rejects_bad_configuration(kwargs):
    with pytest.raises(ValueError):
        gr.Grammar.default(**kwargs)


def test_node_distribution_rules():
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    ndist = jax.jit(gr.node_distribution)
    for slot in range(g.num_slots):
        for parent in (spec.PLUS, spec.TIMES, spec.CP):
            logp = np.asarray(ndist(g, slot, parent))
            assert np.isclose(np.exp(logp).sum(), 1.0)
            p = np.exp(logp)
            depth = spec.slot_depth(slot)
            if depth == 2:
                assert p[list(spec.OPERATORS)].sum() == 0
                assert np.isclose(p[spec.LIN], 6 / 9)
            cp_ok = slot == 0 or parent == spec.CP
            assert (p[spec.CP] > 0) == (cp_ok and depth < 2)
            zero = [op for op in range(spec.NUM_OPS) if op not in TINY]
            assert np.all(p[zero] == 0)
    root = np.exp(np.asarray(ndist(g, 0, spec.EMPTY)))
    np.testing.assert_allclose(
        root[[spec.LIN, spec.PER, spec.PLUS, spec.TIMES, spec.CP]], np.array([6, 3, 5, 4, 2]) / 20
    )
    under_plus = np.exp(np.asarray(ndist(g, 1, spec.PLUS)))
    np.testing.assert_allclose(
        under_plus[[spec.LIN, spec.PER, spec.PLUS, spec.TIMES]], np.array([6, 3, 5, 4]) / 18
    )


# --- exact prior against enumeration ---------------------------------------------------------
@pytest.mark.parametrize(
    "weights, max_depth",
    [(TINY, 2), (TINY_NO_CP, 2), (CP_HEAVY, 3), (gr.DEFAULT_WEIGHTS, 1), (TINY, 1)],
)
def test_log_prior_structure_matches_enumeration(weights, max_depth):
    g = gr.Grammar.default(max_depth=max_depth, weights=weights)
    trees = enumerate_trees(weights, max_depth)
    assert sum(p for _, p in trees) == Fraction(1)
    heaps = heaps_of(trees, max_depth)
    assert len(set(map(tuple, heaps))) == len(trees)
    log_p = np.asarray(jax.jit(gr.log_prior_structure)(g, jnp.asarray(heaps)))
    expected = np.log([float(p) for _, p in trees])
    np.testing.assert_allclose(log_p, expected, rtol=1e-12, atol=1e-12)
    assert math.isclose(np.exp(log_p).sum(), 1.0, rel_tol=1e-12)


def test_log_prior_structure_is_minus_inf_off_the_grammar():
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    E, L, P, PL, T, C = spec.EMPTY, spec.LIN, spec.PER, spec.PLUS, spec.TIMES, spec.CP
    bad = [
        [E, E, E, E, E, E, E],  # empty
        [L, P, E, E, E, E, E],  # a leaf with a child
        [PL, L, E, E, E, E, E],  # an operator missing a child
        [PL, C, L, L, L, E, E],  # CP under +
        [PL, PL, L, T, L, E, E],  # operator at depth D (its children fall off the heap)
        [spec.SE, E, E, E, E, E, E],  # zero-weight atom
        [99, E, E, E, E, E, E],  # not an opcode
        [L, E, E, L, E, E, E],  # a node under an empty slot
    ]
    assert np.all(np.isneginf(np.asarray(gr.log_prior_structure(g, jnp.asarray(bad)))))
    good = [C, C, L, L, P, E, E]  # CP under CP is fine
    assert np.isfinite(gr.log_prior_structure(g, jnp.asarray(good)))


def test_log_prior_subtree_matches_enumerated_subtrees():
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    for root_op, cp_ok in ((spec.CP, True), (spec.PLUS, False)):
        subtrees = enumerate_subtrees(TINY, 2, depth=1, cp_ok=cp_ok)
        heaps = []
        for tree, _ in subtrees:
            heap = list(to_heap(tree, 2, root_slot=1))
            heap[0], heap[2] = root_op, spec.PER
            heaps.append(heap)
        log_p = gr.log_prior_subtree_structure(g, jnp.asarray(heaps, jnp.int32), 1)
        expected = np.log([float(p) for _, p in subtrees])
        np.testing.assert_allclose(np.asarray(log_p), expected, rtol=1e-12)
    # The subtree at slot 2 of a full tree, and an empty slot.
    heap = jnp.asarray([spec.PLUS, spec.LIN, spec.PER, 0, 0, 0, 0])
    assert np.isclose(gr.log_prior_subtree_structure(g, heap, 2), math.log(3 / 18))
    assert np.isneginf(gr.log_prior_subtree_structure(g, heap, 3))


def test_log_prior_params_and_noise_match_scipy():
    g = gr.Grammar.default(max_depth=3)
    draws = [sample_prior(g, 8, key=jax.random.key(i)) for i in range(6)]
    ops, params, noise = (jnp.concatenate(x) for x in zip(*draws, strict=True))
    params = params + 0.3  # off the sampled values, including unused entries
    mean, std = g.prior_mean_table, g.prior_std_table
    expected = []
    for tree_ops, tree_params in zip(np.asarray(ops), np.asarray(params), strict=True):
        total = 0.0
        for slot, op in enumerate(tree_ops):
            for k in range(spec.NUM_PARAMS[op]):
                total += stats.norm.logpdf(tree_params[slot, k], mean[op, k], std[op, k])
        expected.append(total)
    np.testing.assert_allclose(gr.log_prior_params(g, ops, params), expected, rtol=1e-12)
    np.testing.assert_allclose(
        gr.log_prior_noise(g, noise), stats.norm.logpdf(noise, -1.5, 1.0), rtol=1e-12
    )
    np.testing.assert_allclose(
        gr.log_prior(g, ops, params, noise),
        gr.log_prior_structure(g, ops) + np.array(expected) + stats.norm.logpdf(noise, -1.5, 1),
        rtol=1e-12,
    )


# --- sampling --------------------------------------------------------------------------------
def test_sample_prior_frequencies_match_enumeration():
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    trees = enumerate_trees(TINY, 2)
    codes = codes_of(heaps_of(trees, 2))
    probs = np.array([float(p) for _, p in trees])
    ops, _, _ = sample_prior(g, 200_000, key=jax.random.key(0))
    tv = total_variation(codes_of(ops), codes, probs)
    assert tv < 0.03, tv


def test_sample_prior_parameters_follow_their_priors():
    g = gr.Grammar.default(max_depth=2, param_priors={("PER", "period"): (1.0, 0.2)})
    ops, params, noise = sample_prior(g, 40_000, key=jax.random.key(1))
    ops, params = np.asarray(ops), np.asarray(params)
    for op in (spec.LIN, spec.GE, spec.PER, spec.CP):
        values = params[ops == op]  # [n, MAX_PARAMS]
        assert len(values) > 1000
        k = spec.NUM_PARAMS[op]
        np.testing.assert_allclose(values[:, :k].mean(0), g.prior_mean_table[op, :k], atol=0.05)
        np.testing.assert_allclose(values[:, :k].std(0), g.prior_std_table[op, :k], rtol=0.05)
        assert np.all(values[:, k:] == 0)
    assert np.all(params[ops == spec.EMPTY] == 0)
    assert np.all(params[(ops == spec.PLUS) | (ops == spec.TIMES)] == 0)
    assert abs(np.mean(noise) + 1.5) < 0.03 and abs(np.std(noise) - 1.0) < 0.03


@pytest.mark.parametrize("root_op, cp_ok", [(spec.CP, True), (spec.PLUS, False)])
def test_sample_subtree_draws_from_the_prior_at_its_position(root_op, cp_ok):
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    subtrees = enumerate_subtrees(TINY, 2, depth=1, cp_ok=cp_ok)
    context = np.array([root_op, 0, spec.PER, 0, 0, 0, 0], dtype=np.int32)
    codes, probs = [], []
    for tree, p in subtrees:
        heap = np.array(to_heap(tree, 2, root_slot=1))
        heap[0], heap[2] = root_op, spec.PER
        codes.append(heap_code(heap))
        probs.append(float(p))
    # Junk in the slots being replaced must be cleared.
    base_ops = jnp.asarray(context).at[1].set(spec.TIMES).at[3].set(spec.LIN).at[4].set(spec.CP)
    base_params = jax.random.normal(jax.random.key(9), (7, spec.MAX_PARAMS))
    keys = jax.random.split(jax.random.key(2), 100_000)
    draw = jax.jit(jax.vmap(lambda k: gr.sample_subtree(g, base_ops, base_params, 1, key=k)))
    ops, params, log_prob = draw(keys)
    assert total_variation(codes_of(ops), np.array(codes), np.array(probs)) < 0.03
    # Outside the subtree nothing changes.
    outside = ~heaps.heap_tables(2).subtree[1]
    np.testing.assert_array_equal(
        np.asarray(ops)[:, outside], np.broadcast_to(np.asarray(base_ops)[outside], (100_000, 4))
    )
    np.testing.assert_array_equal(
        np.asarray(params)[:, outside], np.broadcast_to(base_params[outside], (100_000, 4, 3))
    )
    # The returned log-probability is the subtree's structure + parameter prior.
    expected = gr.log_prior_subtree_structure(g, ops, 1) + gr.log_prior_subtree_params(
        g, ops, params, 1
    )
    np.testing.assert_allclose(log_prob, expected, rtol=1e-12)
    by_code = dict(zip(codes, np.log(probs), strict=True))
    structure = np.array([by_code[c] for c in codes_of(ops[:200])])
    param_part = log_prob[:200] - structure
    direct = [
        sum(
            stats.norm.logpdf(params[i, s, k], g.prior_mean_table[o, k], g.prior_std_table[o, k])
            for s in (1, 3, 4)
            for o in [int(ops[i, s])]
            for k in range(spec.NUM_PARAMS[o])
        )
        for i in range(200)
    ]
    np.testing.assert_allclose(param_part, direct, rtol=1e-10, atol=1e-10)


# --- heap helpers ----------------------------------------------------------------------------
def reference_move(ops: list, params: list, src: int, dst: int, max_depth: int):
    num = 2 ** (max_depth + 1) - 1
    new_ops, new_params = list(ops), [list(p) for p in params]
    for level in range(max_depth + 1):
        for offset in range(2**level):
            d = (dst + 1) * 2**level - 1 + offset
            if d >= num:
                continue
            s = (src + 1) * 2**level - 1 + offset
            new_ops[d] = ops[s] if s < num else 0
            new_params[d] = list(params[s]) if s < num else [0.0] * spec.MAX_PARAMS
    return new_ops, new_params


_jit_move = jax.jit(heaps.move_subtree)


@settings(max_examples=60, deadline=None)
@given(
    max_depth=st.integers(1, 4),
    data=st.data(),
)
def test_move_subtree_matches_index_map(max_depth, data):
    num = spec.num_slots(max_depth)
    ops = data.draw(st.lists(st.integers(0, spec.NUM_OPS - 1), min_size=num, max_size=num))
    src = data.draw(st.integers(0, num - 1))
    dst = data.draw(st.integers(0, num - 1))
    params = np.arange(num * spec.MAX_PARAMS, dtype=float).reshape(num, spec.MAX_PARAMS) + 1
    new_ops, new_params = _jit_move(jnp.asarray(ops, jnp.int32), jnp.asarray(params), src, dst)
    ref_ops, ref_params = reference_move(ops, params.tolist(), src, dst, max_depth)
    assert np.asarray(new_ops).tolist() == ref_ops
    np.testing.assert_array_equal(new_params, ref_params)
    assert new_ops.dtype == jnp.int32


def test_subtree_helpers_on_enumerated_trees():
    trees = enumerate_trees(CP_HEAVY, 3)[::97]
    tables = heaps.heap_tables(3)
    for slot in range(tables.num_slots):
        expected = [
            s
            for s in range(tables.num_slots)
            if any((slot + 1) * 2**k - 1 <= s < (slot + 2) * 2**k - 1 for k in range(4))
        ]
        assert np.nonzero(tables.subtree[slot])[0].tolist() == expected
    for tree, _ in trees:
        ops = jnp.asarray(to_heap(tree, 3))
        assert int(heaps.node_count(ops)) == size(tree)
        assert int(heaps.subtree_size(ops, 0)) == size(tree)
        for child, slot in ((tree[1], 1), (tree[2], 2)) if len(tree) == 3 else ():
            assert int(heaps.subtree_size(ops, slot)) == size(child)
            expected = jnp.asarray(to_heap(child, 3, slot)) != 0
            assert bool(jnp.all(heaps.subtree_mask(ops, slot) == expected))

        def height(t):
            return 0 if len(t) == 1 else 1 + max(height(t[1]), height(t[2]))

        assert int(heaps.subtree_height(ops, 0)) == height(tree) == int(heaps.tree_height(ops))
    empty = jnp.zeros(15, jnp.int32)
    assert int(heaps.subtree_height(empty, 0)) == -1 and int(heaps.node_count(empty)) == 0
    cleared, cleared_params = heaps.clear_subtree(
        jnp.asarray(to_heap(trees[-1][0], 3)), jnp.ones((15, 3)), 1
    )
    assert not np.any(np.asarray(cleared)[tables.subtree[1]])
    assert np.all(np.asarray(cleared_params)[tables.subtree[1]] == 0)
    assert np.all(np.asarray(cleared_params)[~tables.subtree[1]] == 1)
    assert heaps.max_depth_of(63) == 5
    with pytest.raises(ValueError):
        heaps.max_depth_of(10)


# --- shapes, determinism, tracing, vmap ------------------------------------------------------
def test_shapes_dtypes_and_determinism():
    g = gr.Grammar.default(max_depth=3)
    ops, params, noise = sample_prior(g, 8, key=jax.random.key(5))
    assert ops.shape == (8, 15) and ops.dtype == jnp.int32
    assert params.shape == (8, 15, spec.MAX_PARAMS) and params.dtype == jnp.float64
    assert noise.shape == (8,) and noise.dtype == jnp.float64
    again = sample_prior(g, 8, key=jax.random.key(5))
    other = sample_prior(g, 8, key=jax.random.key(6))
    for x, y in zip((ops, params, noise), again, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(noise, other[2])
    assert np.all(np.isfinite(gr.log_prior(g, ops, params, noise)))
    assert gr.log_prior_structure(g, ops).shape == (8,)
    with pytest.raises(ValueError):
        gr.log_prior_structure(g, jnp.zeros((8, 31), jnp.int32))


def test_jit_does_not_retrace_across_structures_and_slots():
    g = gr.Grammar.default(max_depth=3)
    traces = []

    @jax.jit
    def redraw(ops, params, slot, key):
        traces.append(1)
        new_ops, new_params, log_prob = gr.sample_subtree(g, ops, params, slot, key=key)
        return new_ops, new_params, log_prob, gr.log_prior_structure(g, new_ops)

    ops, params, _ = sample_prior(g, 8, key=jax.random.key(0))
    for i in range(8):
        slot = jnp.int32(int(np.nonzero(np.asarray(ops[i]))[0][-1]))
        out = redraw(ops[i], params[i], slot, jax.random.key(i))
        assert np.isfinite(out[2]) and np.isfinite(out[3])
    assert len(traces) == 1


def test_vmap_over_a_series_axis():
    g = gr.Grammar.default(max_depth=2, weights=TINY)
    keys = jax.random.split(jax.random.key(4), 3)
    ops, params, noise = jax.jit(jax.vmap(lambda k: gr.sample_prior(g, 5, key=k)))(keys)
    assert ops.shape == (3, 5, 7) and params.shape == (3, 5, 7, 3) and noise.shape == (3, 5)
    log_p = jax.jit(jax.vmap(lambda o, p, n: gr.log_prior(g, o, p, n)))(ops, params, noise)
    np.testing.assert_allclose(log_p, jax.jit(gr.log_prior)(g, ops, params, noise), rtol=1e-12)
    single = sample_prior(g, 5, key=keys[1])
    np.testing.assert_array_equal(ops[1], single[0])
