"""Exactness of the structure moves: long chains against enumerated targets, exact choice
probabilities against brute force, and the batching / jit / vmap contract."""

from __future__ import annotations

import collections
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from autogp.inference import grammar as gr
from autogp.inference import heap as heaps
from autogp.inference import moves as mv
from autogp.inference import periods
from autogp.kernels import spec
from tests.enumerate_trees import contains, enumerate_trees, size, to_heap
from tests.helpers import LONG_RUNNING

TINY = {spec.LIN: 6, spec.PER: 3, spec.PLUS: 5, spec.TIMES: 4, spec.CP: 2}
DEPTH = 2
GRAMMAR = gr.Grammar.default(max_depth=DEPTH, weights=TINY)
TREES = enumerate_trees(TINY, DEPTH)
HEAPS = np.array([to_heap(t, DEPTH) for t, _ in TREES], dtype=np.int32)
PRIOR = np.array([float(p) for _, p in TREES])
NUM_SLOTS = HEAPS.shape[1]

NUM_CHAINS = 2000
NUM_STEPS = 250
BURN_IN = 50

sample_prior = jax.jit(gr.sample_prior, static_argnums=(0, 1))

MOVES = {
    "replace_uniform": functools.partial(mv.subtree_replace, pick="uniform"),
    "replace_leaf_biased": functools.partial(mv.subtree_replace, pick="leaf_biased"),
    "detach_attach": mv.detach_attach,
    "mixture": mv.structure_move,
}


def encode(ops):
    """int64 code of each heap (base-16 digits), numpy or jax."""
    xp = jnp if isinstance(ops, jax.Array) else np
    weights = xp.asarray(16 ** np.arange(ops.shape[-1], dtype=np.int64))
    return xp.sum(ops.astype(xp.int64) * weights, axis=-1)


CODES = encode(HEAPS)
ORDER = np.argsort(CODES)
SORTED_CODES = CODES[ORDER]
# A structure-only "likelihood": a random table over the enumerated trees.
LOG_F = np.random.default_rng(0).normal(size=len(TREES))
TARGET = PRIOR * np.exp(LOG_F) / np.sum(PRIOR * np.exp(LOG_F))


def table_log_likelihood(sorted_codes, sorted_log_f, calls: list):
    """A batched log_likelihood_fn looking up f(T) by structure (NaN off the table); records
    the shape of each call made while tracing in ``calls``."""

    def log_likelihood(ops, params, noise):
        calls.append(ops.shape)
        code = encode(ops)
        i = jnp.clip(jnp.searchsorted(sorted_codes, code), 0, sorted_codes.shape[0] - 1)
        return jnp.where(sorted_codes[i] == code, sorted_log_f[i], jnp.nan)

    return log_likelihood


TRACED_CALLS: dict[str, list] = {}


@functools.partial(jax.jit, static_argnames=("move",), compiler_options=LONG_RUNNING)
def run_chains(sorted_log_f, key, move):
    """NUM_CHAINS parallel chains of NUM_STEPS moves from prior draws; visited codes [T, P]."""
    calls = TRACED_CALLS.setdefault(move, [])
    log_likelihood = table_log_likelihood(jnp.asarray(SORTED_CODES), sorted_log_f, calls)
    key_init, key_steps = jax.random.split(key)
    ops, params, noise = gr.sample_prior(GRAMMAR, NUM_CHAINS, key=key_init)
    state = mv.ParticleState(ops, params, noise, log_likelihood(ops, params, noise))

    def step(state, k):
        state, accepted = MOVES[move](GRAMMAR, state, log_likelihood, key=k)
        return state, (encode(state.ops), accepted)

    _, (codes, accepted) = jax.lax.scan(step, state, jax.random.split(key_steps, NUM_STEPS))
    return codes, accepted


@functools.cache
def chain_result(move: str, target: str):
    log_f = LOG_F if target == "f" else np.zeros_like(LOG_F)
    seed = list(MOVES).index(move) + (10 if target == "f" else 0)
    codes, accepted = run_chains(jnp.asarray(log_f[ORDER]), jax.random.key(seed), move)
    return np.asarray(codes)[BURN_IN:], np.asarray(accepted)


def events():
    """Low-dimensional summaries of a tree, for z-tests with chain-level standard errors."""
    out = {f"root={spec.NAMES[op]}": [t[0] == op for t, _ in TREES] for op in TINY}
    out["size=1"] = [size(t) == 1 for t, _ in TREES]
    out["size=3"] = [size(t) == 3 for t, _ in TREES]
    out["has *"] = [contains(t, spec.TIMES) for t, _ in TREES]
    out["nested CP"] = [
        t[0] == spec.CP and any(len(c) == 3 and c[0] == spec.CP for c in t[1:]) for t, _ in TREES
    ]
    return {name: np.array(mask) for name, mask in out.items()}


def check_chain(codes, target):
    """Total variation of the visited-structure frequencies, and per-event z-scores."""
    known = np.isin(codes, CODES)
    assert known.all(), "a move produced a tree outside the grammar"
    index = {int(c): i for i, c in enumerate(CODES)}
    visited = np.vectorize(index.__getitem__)(codes)  # [T, P]
    freq = np.bincount(visited.ravel(), minlength=len(TREES)) / visited.size
    tv = 0.5 * np.abs(freq - target).sum()
    z_scores = {}
    for name, mask in events().items():
        per_chain = mask[visited].mean(axis=0)
        se = per_chain.std(ddof=1) / math.sqrt(per_chain.size)
        z_scores[name] = (per_chain.mean() - target[mask].sum()) / se
    return tv, z_scores


@pytest.mark.parametrize("move", list(MOVES))
def test_chain_targets_prior_times_structure_likelihood(move):
    codes, accepted = chain_result(move, "f")
    tv, z_scores = check_chain(codes, TARGET)
    assert tv < 0.05, tv
    assert max(abs(z) for z in z_scores.values()) < 4.5, z_scores
    assert 0.05 < accepted.mean() < 0.95
    # One batched likelihood call for the initial state and one per move (in the scan body).
    assert TRACED_CALLS[move] == [(NUM_CHAINS, NUM_SLOTS)] * 2


@pytest.mark.parametrize("move", list(MOVES))
def test_chain_with_flat_likelihood_keeps_the_prior(move):
    codes, _ = chain_result(move, "one")
    tv, z_scores = check_chain(codes, PRIOR)
    assert tv < 0.05, tv
    assert max(abs(z) for z in z_scores.values()) < 4.5, z_scores


# --- exact choice probabilities --------------------------------------------------------------
@pytest.mark.parametrize("pick", ["uniform", "leaf_biased"])
def test_pick_probabilities_sum_to_one(pick):
    log_q = jax.jit(jax.vmap(lambda o: mv.log_pick_probs(o, pick)))(jnp.asarray(HEAPS))
    np.testing.assert_allclose(np.exp(log_q).sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(np.isneginf(np.asarray(log_q)[HEAPS == spec.EMPTY]))
    if pick == "leaf_biased":  # PLUS(LIN, TIMES(PER, LIN)): 1/2, 1/4, 1/8, 1/16, 1/16
        heap = jnp.asarray([spec.PLUS, spec.LIN, spec.TIMES, 0, 0, spec.PER, spec.LIN])
        q = np.exp(mv.log_pick_probs(heap, pick))
        np.testing.assert_allclose(q, [1 / 2, 1 / 4, 1 / 8, 0, 0, 1 / 16, 1 / 16])


def all_detach_choices():
    """Every (T_big, a, b) with b strictly below a, over all enumerated trees."""
    tables = heaps.heap_tables(DEPTH)
    rows = [
        (i, a, b)
        for i, heap in enumerate(HEAPS)
        for a in range(NUM_SLOTS)
        for b in range(NUM_SLOTS)
        if a != b and tables.subtree[a, b] and heap[a] and heap[b]
    ]
    big, a, b = (np.array(x, dtype=np.int32) for x in zip(*rows, strict=True))
    return big, a, b


def structure_log_attach(ops, params, a, b):
    """log q_attach without the parameter densities of the auxiliary tree."""
    log_q = mv.log_attach_choices(GRAMMAR, ops, params, a, b)
    aux = heaps.subtree_slots(DEPTH, a) & ~heaps.subtree_slots(DEPTH, b)
    return log_q - jnp.sum(jnp.where(aux, gr.param_log_probs(GRAMMAR, ops, params), 0.0))


@functools.cache
def exact_attach_table():
    big, a, b = all_detach_choices()
    ops = jnp.asarray(HEAPS[big])
    params = jnp.zeros(ops.shape + (spec.MAX_PARAMS,))
    log_attach = jax.jit(jax.vmap(structure_log_attach))(ops, params, a, b)
    log_detach = jax.jit(jax.vmap(mv.log_detach_choices))(ops, a, b)
    small = jax.jit(jax.vmap(lambda o, p, a_, b_: heaps.move_subtree(o, p, b_, a_)[0]))(
        ops, params, a, b
    )
    return big, a, b, np.asarray(log_attach), np.asarray(log_detach), encode(np.asarray(small))


def test_detach_and_attach_choice_probabilities_normalise():
    big, a, b, log_attach, log_detach, small_codes = exact_attach_table()
    assert np.isin(small_codes, CODES).all()
    # Detach from every tree with an operator: the (a, b) probabilities add up to 1/2.
    detach_total = np.bincount(big, weights=np.exp(log_detach), minlength=len(TREES))
    has_operator = np.array([size(t) > 1 for t, _ in TREES])
    np.testing.assert_allclose(detach_total[has_operator], 0.5, rtol=1e-12)
    # Attach to every tree: summed over all outcomes, p(attach) * P(a has room for a path).
    index = {int(c): i for i, c in enumerate(CODES)}
    small = np.array([index[int(c)] for c in small_codes])
    attach_total = np.bincount(small, weights=np.exp(log_attach), minlength=len(TREES))
    tables = heaps.heap_tables(DEPTH)
    for i, heap in enumerate(HEAPS):
        nodes = np.nonzero(heap)[0]
        heights = [int(heaps.subtree_height(jnp.asarray(heap), int(s))) for s in nodes]
        room = sum(DEPTH - tables.depth[s] - h >= 1 for s, h in zip(nodes, heights, strict=True))
        expected = (1.0 if len(nodes) == 1 else 0.5) * room / len(nodes)
        assert math.isclose(attach_total[i], expected, rel_tol=1e-12, abs_tol=1e-15), i


def test_choice_probabilities_by_hand():
    # PLUS(LIN, PER) --detach a=0, b=1--> LIN.
    big = jnp.asarray([spec.PLUS, spec.LIN, spec.PER, 0, 0, 0, 0])
    params = jnp.zeros((NUM_SLOTS, spec.MAX_PARAMS))
    assert math.isclose(mv.log_detach_choices(big, 0, 1), math.log(1 / 2 * 1 / 1 * 1 / 2))
    # Attach to LIN: type 1, a 1/1, direction 1/2, stop at level 1 (< L_max = 2) 1/2,
    # PLUS uniform among {+, *, CP} 1/3, PER under + 3/18; plus PER's parameter prior.
    per_params = gr.param_log_probs(GRAMMAR, big, params)[2]
    expected = math.log(1 / 2 * 1 / 2 * 1 / 3 * 3 / 18) + per_params
    assert math.isclose(mv.log_attach_choices(GRAMMAR, big, params, 0, 1), expected)
    # CP(CP(LIN, PER), LIN) from CP(LIN, PER) at a=0: L = L_max = 1, forced CP.
    big = jnp.asarray([spec.CP, spec.CP, spec.LIN, spec.LIN, spec.PER, 0, 0])
    aux = gr.param_log_probs(GRAMMAR, big, params)[jnp.array([0, 2])].sum()
    expected = math.log(1 / 2 * 1 / 3 * 1 / 2 * 6 / 20) + aux
    assert math.isclose(mv.log_attach_choices(GRAMMAR, big, params, 0, 1), expected)
    # b must lie strictly below a.
    for a, b in ((0, 0), (1, 5), (2, 1)):
        assert np.isneginf(mv.log_attach_choices(GRAMMAR, big, params, a, b))
        assert np.isneginf(mv.log_detach_choices(big, a, b))
    assert np.isneginf(mv.log_detach_choices(big, 2, 5))  # a leaf has nothing below


draw_attach = jax.jit(
    jax.vmap(lambda o, p, k: mv.sample_attach(GRAMMAR, o, p, key=k), in_axes=(None, None, 0))
)
draw_detach = jax.jit(
    jax.vmap(lambda o, p, k: mv.sample_detach(o, p, key=k), in_axes=(None, None, 0))
)


@pytest.mark.parametrize(
    "tree",
    [
        (spec.LIN,),
        (spec.CP, (spec.LIN,), (spec.PER,)),
        (spec.TIMES, (spec.PER,), (spec.LIN,)),
        (spec.PLUS, (spec.TIMES, (spec.PER,), (spec.LIN,)), (spec.LIN,)),
    ],
)
def test_samplers_draw_what_the_choice_probabilities_say(tree):
    big, a, b, log_attach, log_detach, small_codes = exact_attach_table()
    heap = jnp.asarray(to_heap(tree, DEPTH))
    params = jnp.zeros((NUM_SLOTS, spec.MAX_PARAMS))
    n = size(tree)
    keys = jax.random.split(jax.random.key(n), 100_000)
    # Attach: outcomes (a, b, T_big) against exp(log q_attach) / p(attach).
    out = draw_attach(heap, params, keys)
    possible = np.asarray(out.possible)
    drawn = collections.Counter(
        zip(
            np.asarray(out.a)[possible].tolist(),
            np.asarray(out.b)[possible].tolist(),
            encode(np.asarray(out.ops))[possible].tolist(),
            strict=True,
        )
    )
    p_attach = 1.0 if n == 1 else 0.5
    mine = small_codes == encode(np.asarray(heap))
    expected = collections.defaultdict(float)
    for a_, b_, code, lq in zip(a[mine], b[mine], CODES[big[mine]], log_attach[mine], strict=True):
        expected[(int(a_), int(b_), int(code))] += math.exp(lq) / p_attach
    assert set(drawn) <= set(expected)
    outcomes = sorted(expected)
    observed = np.array([drawn[o] for o in outcomes] + [(~possible).sum()])
    probs = np.array([expected[o] for o in outcomes])
    probs = np.append(probs, 1 - probs.sum())
    keep = probs > 1e-12
    assert observed[~keep].sum() == 0
    chi2 = stats.chisquare(observed[keep], probs[keep] * observed.sum())
    assert chi2.pvalue > 1e-4, chi2
    # Detach: (a, b) against exp(log q_detach) / p(detach).
    if n == 1:
        return
    out = draw_detach(heap, params, keys)
    drawn = collections.Counter(
        zip(np.asarray(out.a).tolist(), np.asarray(out.b).tolist(), strict=True)
    )
    mine = CODES[big] == encode(np.asarray(heap))
    outcomes = list(zip(a[mine].tolist(), b[mine].tolist(), strict=True))
    assert set(drawn) <= set(outcomes)
    observed = np.array([drawn[o] for o in outcomes])
    probs = np.exp(log_detach[mine]) / 0.5
    assert math.isclose(probs.sum(), 1.0)
    chi2 = stats.chisquare(observed, probs * observed.sum())
    assert chi2.pvalue > 1e-4, chi2


def test_subtree_replace_ratio_on_a_leaf():
    heap = jnp.asarray([spec.LIN, 0, 0, 0, 0, 0, 0])
    params = jnp.zeros((NUM_SLOTS, spec.MAX_PARAMS))
    keys = jax.random.split(jax.random.key(0), 200)
    proposal = jax.jit(
        jax.vmap(lambda k: mv.propose_subtree_replace(GRAMMAR, heap, params, key=k))
    )(keys)
    np.testing.assert_allclose(proposal.log_ratio, -np.log(heaps.node_count(proposal.ops)))


# --- validity at larger depth ----------------------------------------------------------------
def test_proposals_stay_in_the_grammar_at_depth_three():
    g = gr.Grammar.default(max_depth=3)
    ops, params, _ = sample_prior(g, 512, key=jax.random.key(1))

    @jax.jit
    def propose(ops, params, key):
        keys = jax.random.split(key, ops.shape[0])
        replace = jax.vmap(lambda o, p, k: mv.propose_subtree_replace(g, o, p, key=k))
        reattach = jax.vmap(lambda o, p, k: mv.propose_detach_attach(g, o, p, key=k))
        proposals = replace(ops, params, keys), reattach(ops, params, keys)
        return proposals, [gr.log_prior_structure(g, p.ops) for p in proposals]

    for step in range(3):
        proposals, log_priors = propose(ops, params, jax.random.key(step))
        for proposal, log_p in zip(proposals, log_priors, strict=True):
            ok = np.isfinite(np.asarray(proposal.log_ratio))
            assert np.all(np.isfinite(np.asarray(log_p)))
            unchanged = np.all(np.asarray(proposal.ops) == np.asarray(ops), axis=1)
            assert np.all(unchanged[~ok])
            assert ok.mean() > 0.3
        ops, params = proposals[1].ops, proposals[1].params


# --- the batched contract --------------------------------------------------------------------
MIXTURE_CALLS: list = []
MIXTURE_TRACES: list = []


@jax.jit
def mixture_step(state, key, offset, per_node):
    """structure_move with log-likelihood ``offset + per_node * |T|`` (offset [P])."""
    MIXTURE_TRACES.append(1)

    def log_likelihood(ops, params, noise):
        MIXTURE_CALLS.append(ops.shape)
        return offset + per_node * heaps.node_count(ops).astype(noise.dtype)

    return mv.structure_move(GRAMMAR, state, log_likelihood, key=key)


def prior_state(num, seed, log_likelihood):
    ops, params, noise = sample_prior(GRAMMAR, num, key=jax.random.key(seed))
    return mv.ParticleState(ops, params, noise, jnp.full(noise.shape, log_likelihood, noise.dtype))


def test_non_finite_proposal_likelihood_is_rejected():
    state = prior_state(16, 0, 0.0)
    offset = jnp.tile(jnp.array([jnp.nan, -jnp.inf, jnp.inf, jnp.nan]), 4)
    new, accepted = mixture_step(state, jax.random.key(1), offset, 0.0)
    assert not np.any(accepted)
    for x, y in zip(new, state, strict=True):
        np.testing.assert_array_equal(x, y)


def test_current_minus_inf_likelihood_accepts_finite_proposals():
    state = prior_state(16, 0, -jnp.inf)
    new, accepted = mixture_step(state, jax.random.key(2), jnp.zeros(16), 0.0)
    accepted = np.asarray(accepted)
    assert accepted.mean() > 0.5
    assert np.all(np.asarray(new.log_likelihood)[accepted] == 0.0)
    assert np.all(np.isneginf(np.asarray(new.log_likelihood)[~accepted]))
    np.testing.assert_array_equal(np.asarray(new.ops)[~accepted], np.asarray(state.ops)[~accepted])


def test_moves_keep_shapes_do_not_retrace_and_are_deterministic():
    state = prior_state(16, 3, 0.0)
    state = state._replace(log_likelihood=-0.1 * heaps.node_count(state.ops))
    start = state
    results = [mixture_step(state, jax.random.key(0), jnp.zeros(16), -0.1)]
    traces_before = len(MIXTURE_TRACES)
    for i in range(1, 4):  # new structures every step
        state = results[-1][0]
        results.append(mixture_step(state, jax.random.key(i), jnp.zeros(16), -0.1))
    new, accepted = results[-1]
    assert len(MIXTURE_TRACES) == traces_before  # no retrace across structures
    # Every trace made exactly one batched likelihood call.
    assert MIXTURE_CALLS == [(16, NUM_SLOTS)] * len(MIXTURE_TRACES)
    assert not np.array_equal(results[-1][0].ops, start.ops)
    assert accepted.shape == (16,) and accepted.dtype == jnp.bool_
    assert new.ops.shape == start.ops.shape and new.ops.dtype == jnp.int32
    assert new.params.shape == start.params.shape and new.params.dtype == jnp.float64
    np.testing.assert_array_equal(new.noise, start.noise)
    np.testing.assert_allclose(new.log_likelihood, -0.1 * heaps.node_count(new.ops))
    again = mixture_step(start, jax.random.key(0), jnp.zeros(16), -0.1)
    for x, y in zip(
        jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(results[0]), strict=True
    ):
        np.testing.assert_array_equal(x, y)


def test_vmap_over_a_series_axis():
    keys = jax.random.split(jax.random.key(7), 3)
    ops, params, noise = jax.jit(jax.vmap(lambda k: gr.sample_prior(GRAMMAR, 8, key=k)))(keys)
    scale = jnp.array([0.5, -1.0, 2.0])

    @jax.jit
    @jax.vmap
    def one_series(ops, params, noise, s, key):
        def log_likelihood(o, p, n):
            return s * heaps.node_count(o).astype(n.dtype)

        state = mv.ParticleState(ops, params, noise, log_likelihood(ops, params, noise))
        return mv.structure_move(GRAMMAR, state, log_likelihood, key=key)

    new, accepted = one_series(ops, params, noise, scale, keys)
    assert new.ops.shape == (3, 8, NUM_SLOTS) and accepted.shape == (3, 8)
    assert new.log_likelihood.shape == (3, 8)
    np.testing.assert_allclose(new.log_likelihood, scale[:, None] * heaps.node_count(new.ops))
    # Each series is independent of the others: permuting the series permutes the results.
    perm = np.array([2, 0, 1])
    permuted, permuted_accepted = one_series(
        ops[perm], params[perm], noise[perm], scale[perm], keys[perm]
    )
    np.testing.assert_array_equal(permuted.ops, new.ops[perm])
    np.testing.assert_array_equal(permuted_accepted, accepted[perm])


# --- the data-driven period proposal keeps the chain exact -------------------------------------
PERIOD_PROPOSAL = periods.PeriodProposal(
    log_centers=jnp.asarray([-3.0, 0.8, 0.0]),
    log_weights=jnp.log(jnp.asarray([0.7, 0.3, 1e-300])),
    mix=jnp.asarray(0.8),
    scale=jnp.asarray(0.1),
)
PERIOD_MEAN = float(GRAMMAR.prior_mean_table[spec.PER, periods.PERIOD_INDEX])
PERIOD_STD = float(GRAMMAR.prior_std_table[spec.PER, periods.PERIOD_INDEX])
# A likelihood factor N(v; 0.5, 0.6) on every PER leaf's log period v: with the prior
# N(PERIOD_MEAN, PERIOD_STD) each leaf's period then has a closed-form normal posterior.
F_MEAN, F_STD = 0.5, 0.6


@functools.partial(jax.jit, static_argnames=("move", "period_likelihood"),
                   compiler_options=LONG_RUNNING)
def run_period_chains(key, move, period_likelihood):
    """Chains of subtree-replace (or the mixture) with the period proposal; returns the final
    trees, their parameters and the visited codes."""
    def log_likelihood(ops, params, noise):
        if not period_likelihood:
            return jnp.zeros(ops.shape[0])
        v = params[..., periods.PERIOD_INDEX]
        log_n = -0.5 * ((v - F_MEAN) / F_STD) ** 2
        return jnp.sum(jnp.where(ops == spec.PER, log_n, 0.0), axis=-1)

    key_init, key_steps = jax.random.split(key)
    ops, params, noise = gr.sample_prior(GRAMMAR, NUM_CHAINS, key=key_init)
    state = mv.ParticleState(ops, params, noise, log_likelihood(ops, params, noise))
    proposal = jax.tree_util.tree_map(
        lambda a: jnp.broadcast_to(a, (NUM_CHAINS,) + a.shape), PERIOD_PROPOSAL
    )
    run = {"replace": mv.subtree_replace, "mixture": mv.structure_move}[move]

    def step(state, k):
        state, _ = run(GRAMMAR, state, log_likelihood, key=k, period_proposal=proposal)
        return state, encode(state.ops)

    state, codes = jax.lax.scan(step, state, jax.random.split(key_steps, NUM_STEPS))
    return state.ops, state.params, codes


@pytest.mark.parametrize("move", ["replace", "mixture"])
@pytest.mark.parametrize("period_likelihood", [False, True])
def test_period_proposal_keeps_the_target(move, period_likelihood):
    ops, params, codes = run_period_chains(jax.random.key(7), move, period_likelihood)
    ops, params = np.asarray(ops), np.asarray(params)
    # Periods of PER leaves in the final states (one per chain: independent draws).
    first_per = np.argmax(ops == spec.PER, axis=1)
    has_per = np.any(ops == spec.PER, axis=1)
    v = params[np.arange(len(ops)), first_per, periods.PERIOD_INDEX][has_per]
    if period_likelihood:
        precision = 1 / PERIOD_STD**2 + 1 / F_STD**2
        mean = (PERIOD_MEAN / PERIOD_STD**2 + F_MEAN / F_STD**2) / precision
        std = precision**-0.5
    else:
        mean, std = PERIOD_MEAN, PERIOD_STD
        # The structure marginal is still the prior.
        tv, _ = check_chain(np.asarray(codes)[BURN_IN:], PRIOR)
        assert tv < 0.05, tv
    assert len(v) > 100
    # Without the p/q correction the periods pile up at the proposal's peaks (-3.0 and 0.8).
    assert stats.kstest(v, stats.norm(mean, std).cdf).pvalue > 1e-3
