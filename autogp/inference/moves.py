"""Involutive MCMC moves over kernel-tree structure, batched over particles.

Implements ``docs/structure-moves.md``. The target of a particle x = (T, theta, noise) is

    pi(x) = p(T) p(theta | T) p(noise) L(x),    L(x) = exp(log_likelihood_fn(...)).

Each move draws auxiliary choices u ~ q(u | x), maps (x, u) -> (x', u') by an involution and
accepts with ``alpha = min(1, pi(x') q(u' | x') / (pi(x) q(u | x)))``. The structure-only part
``log[p(x') q(u'|x')] - log[p(x) q(u|x)]`` is computed per particle by a ``propose_*``
function; :func:`accept_reject` adds the likelihood ratio, evaluating ``log_likelihood_fn``
once for the whole batch of proposals. A proposal with an impossible reverse (or forward)
choice has ``log_ratio = -inf`` and is rejected, never repaired; so is a proposal whose
log-likelihood is NaN or infinite.

The batched state is :class:`ParticleState`. ``log_likelihood_fn(ops, params, noise) -> [P]``
is any batched callable (the GP marginal likelihood, or a function of structure alone in
tests). Noise is never changed by these moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp

from autogp.inference import grammar as gr
from autogp.inference import heap, periods
from autogp.kernels import spec

Array = jax.Array
LogLikelihoodFn = Callable[[Array, Array, Array], Array]
PickRule = Literal["uniform", "leaf_biased"]

LOG_HALF = math.log(0.5)


class ParticleState(NamedTuple):
    """A batch of P particles and their current log-likelihoods."""

    ops: Array  # int32 [P, S]
    params: Array  # float [P, S, MAX_PARAMS], unconstrained
    noise: Array  # float [P], unconstrained
    log_likelihood: Array  # float [P]


class Proposal(NamedTuple):
    """A proposed tree (one particle, or a batch with leading axes) and its log ratio
    ``log[p(x') q(u'|x')] - log[p(x) q(u|x)]`` without the likelihood (``-inf``: reject)."""

    ops: Array
    params: Array
    log_ratio: Array


# --- node picking ----------------------------------------------------------------------------
def log_pick_probs(ops: Array, pick: PickRule = "uniform") -> Array:
    """float [S]: log q_pick(i | T) over the slots of one tree (``-inf`` on empty slots).

    * ``"uniform"``: 1 / |T| for every node.
    * ``"leaf_biased"``: AutoGP.jl's random descent: from the root, stop at an operator with
      probability 1/2, else go left or right with probability 1/2 each; always stop at a
      leaf. Hence q(i | T) = 4**-depth(i) * (1/2 if i is an operator else 1).
    """
    present = ops != spec.EMPTY
    if pick == "uniform":
        log_q = jnp.full(ops.shape, -jnp.log(heap.node_count(ops).astype(float)))
    elif pick == "leaf_biased":
        depth = jnp.asarray(heap.heap_tables(heap.max_depth_of(ops.shape[-1])).depth)
        is_operator = jnp.asarray(gr.IS_OPERATOR)[ops]
        log_q = depth * math.log(0.25) + jnp.where(is_operator, LOG_HALF, 0.0)
    else:
        raise ValueError(f"unknown pick rule {pick!r}")
    return jnp.where(present, log_q, -jnp.inf)


def _pick_uniform(mask: Array, key: Array) -> Array:
    """A slot drawn uniformly from ``mask`` (int32; arbitrary if the mask is empty)."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


# --- subtree-replace -------------------------------------------------------------------------
def propose_subtree_replace(
    grammar: gr.Grammar,
    ops: Array,
    params: Array,
    *,
    key: Array,
    pick: PickRule = "uniform",
    period_proposal: periods.PeriodProposal | None = None,
) -> Proposal:
    """Subtree-replace proposal for one tree.

    Pick i ~ q_pick(i | T), draw S' ~ P_i (the prior at position i), put S' in place of the
    subtree S at i. The reverse picks the same i in T' and redraws S. The subtree priors
    cancel against the proposal densities, leaving

        log_ratio = log q_pick(i | T') - log q_pick(i | T)      (= log |T| / |T'| if uniform),

    so the move accepts with alpha = min(1, L(T') q_pick(i|T') / (L(T) q_pick(i|T))).
    Parameters of S' come from their prior (refine them only after acceptance).

    With a ``period_proposal`` (see :mod:`autogp.inference.periods`), the periods of PER leaves
    in S' come from q instead of the prior, and the ratio gains
    ``sum_{PER in S'} log p/q - sum_{PER in S} log p/q`` (the new draw's density and the
    reverse draw's).
    """
    key_pick, key_draw = jax.random.split(key)
    log_pick = log_pick_probs(ops, pick)
    slot = jax.random.categorical(key_pick, log_pick).astype(jnp.int32)
    if period_proposal is not None:
        key_draw, key_period = jax.random.split(key_draw)
    new_ops, new_params, _ = gr.sample_subtree(grammar, ops, params, slot, key=key_draw)
    log_ratio = log_pick_probs(new_ops, pick)[slot] - log_pick[slot]
    if period_proposal is not None:
        mean, std = periods.period_prior(grammar)
        new_region = heap.subtree_mask(new_ops, slot)
        new_params = periods.redraw_periods(
            new_ops, new_params, new_region, period_proposal, key=key_period
        )
        log_ratio = (
            log_ratio
            - periods.region_correction(new_ops, new_params, new_region, mean, std,
                                        period_proposal)
            + periods.region_correction(ops, params, heap.subtree_mask(ops, slot), mean, std,
                                        period_proposal)
        )
    return Proposal(new_ops, new_params, log_ratio)


# --- detach-attach ---------------------------------------------------------------------------
def _path_masks(num_slots: int, a: Array, b: Array) -> tuple[Array, Array]:
    """bool [S] masks of the on-path slots (a .. parent of b) and the off-path slots (the rest of
    the subtree at a outside the subtree at b) when b lies strictly below a."""
    subtree = jnp.asarray(heap.heap_tables(heap.max_depth_of(num_slots)).subtree)
    slots = jnp.arange(num_slots)
    on_path = subtree[a] & subtree[:, b] & (slots != b)
    off_path = subtree[a] & ~on_path & ~subtree[b]
    return on_path, off_path


def _strictly_below(ops: Array, a: Array, b: Array) -> Array:
    """Whether slot b holds a node strictly inside the subtree rooted at slot a."""
    subtree = jnp.asarray(heap.heap_tables(heap.max_depth_of(ops.shape[-1])).subtree)
    return subtree[a, b] & (a != b) & (ops[b] != spec.EMPTY)


def log_detach_choices(ops: Array, a: Array, b: Array) -> Array:
    """log q_detach(a, b | T) for the bigger tree T (``ops`` [S]):

    1/2 (choose detach, |T| > 1) * 1/#operators(T) (a) * 1/(|subtree_a| - 1) (b below a).
    """
    is_operator = jnp.asarray(gr.IS_OPERATOR)[ops]
    below_a = heap.subtree_size(ops, a) - 1
    log_q = LOG_HALF - jnp.log(jnp.sum(is_operator).astype(float)) - jnp.log(below_a.astype(float))
    valid = is_operator[a] & _strictly_below(ops, a, b)
    return jnp.where(valid, log_q, -jnp.inf)


def log_attach_choices(grammar: gr.Grammar, ops: Array, params: Array, a: Array, b: Array) -> Array:
    """log q_attach(a, path, A | T_small) of the attach that turns T_small into ``ops``.

    ``ops``/``params`` [S] are the bigger tree T_big; T_small is T_big with the subtree at b
    moved up to a. With L = depth(b) - depth(a) and L_max = D - depth(a) - height(subtree_b):

    * move type: 1 if |T_small| = 1, else 1/2;
    * a: 1 / |T_small|;
    * path: direction 1/2 at each of the L steps; the first step is always taken; at levels
      1 .. L-1 continue with 1/2; at level L stop with 1/2, or with 1 when L = L_max;
    * on-path nodes: uniform over the operators allowed at their position (CP only at the root
      or under a CP), or CP with probability one when the node at b (the old node at a) is a
      CP; plus the parameter prior of each on-path node;
    * off-path subtrees: their prior P_i at their position (structure and parameters).

    ``-inf`` when no attach can produce T_big from T_small this way.
    """
    tables = heap.heap_tables(grammar.max_depth)
    depth = jnp.asarray(tables.depth)
    length = depth[b] - depth[a]
    max_length = grammar.max_depth - depth[a] - heap.subtree_height(ops, b)
    log_path = (2 * length - 1) * LOG_HALF + jnp.where(length < max_length, LOG_HALF, 0.0)

    on_path, off_path = _path_masks(tables.num_slots, a, b)
    cp_allowed = gr.cp_allowed_mask(ops).astype(jnp.int32)
    path_row = jnp.where(ops[b] == spec.CP, gr.PATH_ROW_FORCED_CP, cp_allowed)
    log_path_op = jnp.asarray(grammar.path_log_prob_table)[path_row, ops]
    log_prior_op = gr.node_log_probs(grammar, ops)
    log_params = gr.param_log_probs(grammar, ops, params)
    present = ops != spec.EMPTY
    log_aux = jnp.sum(jnp.where(on_path, log_path_op + log_params, 0.0)) + jnp.sum(
        jnp.where(off_path & present, log_prior_op + log_params, 0.0)
    )

    small_size = heap.node_count(ops) - heap.subtree_size(ops, a) + heap.subtree_size(ops, b)
    log_type = jnp.where(small_size > 1, LOG_HALF, 0.0)
    log_q = log_type - jnp.log(small_size.astype(float)) + log_path + log_aux
    valid = _strictly_below(ops, a, b) & (length <= max_length) & jnp.all(present | ~on_path)
    return jnp.where(valid, log_q, -jnp.inf)


def _draw_path(max_depth: int, a: Array, max_length: Array, key: Array) -> Array:
    """The hole b below a: length L >= 1 (stop with 1/2 at levels 1 .. L_max-1, forced stop
    at L_max) and a uniform left/right choice at each step."""
    key_stop, key_direction = jax.random.split(key)
    levels = jnp.arange(1, max_depth + 1)
    stops = (jax.random.uniform(key_stop, (max_depth,)) < 0.5) & (levels < max_length)
    length = jnp.where(jnp.any(stops), jnp.argmax(stops) + 1, max_length)
    right = jax.random.bernoulli(key_direction, 0.5, (max_depth,)).astype(jnp.int32)
    hole = a
    for step in range(max_depth):
        hole = jnp.where(step < length, 2 * hole + 1 + right[step], hole)
    return hole.astype(jnp.int32)


class DetachAttachChoice(NamedTuple):
    """The outcome of one detach or attach draw on one tree: the new tree, the position a, the
    position b (detach: the node moved up to a; attach: the hole the old subtree at a went to)
    and whether a valid proposal exists (attach needs a path of length >= 1 to fit)."""

    ops: Array
    params: Array
    a: Array
    b: Array
    possible: Array


def sample_detach(ops: Array, params: Array, *, key: Array) -> DetachAttachChoice:
    """Detach on one tree: a uniform among the operators, b uniform among the nodes strictly
    below a; the subtree at b replaces the subtree at a (not possible if T is a single leaf)."""
    key_a, key_b = jax.random.split(key)
    is_operator = jnp.asarray(gr.IS_OPERATOR)[ops]
    a = _pick_uniform(is_operator, key_a)
    below_a = heap.subtree_mask(ops, a) & (jnp.arange(ops.shape[-1]) != a)
    b = _pick_uniform(below_a, key_b)
    small_ops, small_params = heap.move_subtree(ops, params, b, a)
    return DetachAttachChoice(small_ops, small_params, a, b, jnp.any(is_operator))


def sample_attach(
    grammar: gr.Grammar, ops: Array, params: Array, *, key: Array
) -> DetachAttachChoice:
    """Attach on one tree: a uniform among the nodes, a path of length L >= 1 down to a hole b
    within the depth limit given the height of the subtree at a (stop with 1/2 at levels
    1 .. L_max-1, stop at L_max; left/right 1/2 each), on-path operators uniform over the
    allowed ones (all CP when the node at a is a CP), off-path subtrees from the prior at their
    positions, and the old subtree at a moved into the hole. Not possible when L_max < 1."""
    tables = heap.heap_tables(grammar.max_depth)
    key_a, key_path, key_fill = jax.random.split(key, 3)
    a = _pick_uniform(ops != spec.EMPTY, key_a)
    depth = jnp.asarray(tables.depth)
    max_length = grammar.max_depth - depth[a] - heap.subtree_height(ops, a)
    b = _draw_path(grammar.max_depth, a, max_length, key_path)
    moved_ops, moved_params = heap.move_subtree(ops, params, a, b)
    on_path, off_path = _path_masks(tables.num_slots, a, b)
    big_ops, big_params = gr.fill_top_down(
        grammar,
        moved_ops,
        moved_params,
        free_mask=off_path,
        root_mask=jnp.zeros_like(off_path),
        path_mask=on_path,
        forced_cp=ops[a] == spec.CP,
        key=key_fill,
    )
    return DetachAttachChoice(big_ops, big_params, a, b, max_length >= 1)


def propose_detach_attach(
    grammar: gr.Grammar, ops: Array, params: Array, *, key: Array
) -> Proposal:
    """Detach-attach proposal for one tree.

    Detach (probability 1/2 when |T| > 1): pick an operator a uniformly, then b uniformly among
    the nodes strictly below a; the subtree at b replaces the subtree at a. The discarded
    on-path operators and off-path subtrees are the auxiliary tree A.

    Attach (probability 1/2, or 1 when |T| = 1): pick a uniformly among the nodes; draw a path
    of length L >= 1 down from a within the depth limit given the height of the subtree at a;
    draw the on-path operators (uniform over the allowed ones, or all CP when the node at a is
    a CP) and the off-path subtrees from the prior at their positions; put the old subtree at
    a into the hole b at the end of the path. If no path fits, the proposal is rejected.

    With T_big the tree containing A and T_small the other one,

        log_ratio(detach) = log p(T_small) - log p(T_big)
                            + log q_attach(a, path, A | T_small) - log q_detach(a, b | T_big)

    (p = structure and parameter prior, see :func:`log_attach_choices` and
    :func:`log_detach_choices`), and log_ratio(attach) is its negative. Every proposal is
    valid by construction (detach only moves a subtree up; attach forces CP paths above a CP
    and checks the depth limit); a -inf term anywhere rejects.
    """
    key_type, key_detach, key_attach = jax.random.split(key, 3)
    detach = (heap.node_count(ops) > 1) & (jax.random.uniform(key_type) < 0.5)
    detached = sample_detach(ops, params, key=key_detach)
    attached = sample_attach(grammar, ops, params, key=key_attach)

    def pick(if_detach, if_attach):
        return jnp.where(detach, if_detach, if_attach)

    big_ops, big_params = pick(ops, attached.ops), pick(params, attached.params)
    small_ops, small_params = pick(detached.ops, ops), pick(detached.params, params)
    a, b = pick(detached.a, attached.a), pick(detached.b, attached.b)

    log_big = gr.log_prior_structure(grammar, big_ops) + gr.log_prior_params(
        grammar, big_ops, big_params
    )
    log_small = gr.log_prior_structure(grammar, small_ops) + gr.log_prior_params(
        grammar, small_ops, small_params
    )
    log_attach = log_attach_choices(grammar, big_ops, big_params, a, b)
    log_detach = log_detach_choices(big_ops, a, b)
    terms = jnp.stack([log_big, log_small, log_attach, log_detach])
    possible = jnp.all(jnp.isfinite(terms)) & (detach | attached.possible)
    log_ratio_detach = (log_small + log_attach) - (log_big + log_detach)
    log_ratio = jnp.where(possible, pick(log_ratio_detach, -log_ratio_detach), -jnp.inf)
    new_ops = jnp.where(possible, pick(small_ops, big_ops), ops)
    new_params = jnp.where(possible, pick(small_params, big_params), params)
    return Proposal(new_ops, new_params, log_ratio)


# --- accept / reject -------------------------------------------------------------------------
def accept_reject(
    state: ParticleState,
    proposal: Proposal,
    log_likelihood_fn: LogLikelihoodFn,
    *,
    key: Array,
) -> tuple[ParticleState, Array]:
    """Metropolis-Hastings test of a batch of proposals [P].

    Calls ``log_likelihood_fn(proposal.ops, proposal.params, state.noise)`` once and accepts
    particle p when ``log U < log L(x'_p) - log L(x_p) + proposal.log_ratio[p]``; a proposal
    whose log-likelihood is NaN or infinite, or whose log_ratio is -inf or NaN, is rejected.
    Returns the new state and the boolean acceptance flags [P].
    """
    new_log_likelihood = log_likelihood_fn(proposal.ops, proposal.params, state.noise)
    return metropolis_hastings(state, proposal, new_log_likelihood, key=key)


def metropolis_hastings(
    state: ParticleState, proposal: Proposal, new_log_likelihood: Array, *, key: Array
) -> tuple[ParticleState, Array]:
    """:func:`accept_reject` given the proposals' log-likelihoods ``new_log_likelihood`` [P]
    (for callers that evaluate the likelihood themselves)."""
    log_alpha = new_log_likelihood - state.log_likelihood + proposal.log_ratio
    log_u = jnp.log(jax.random.uniform(key, state.log_likelihood.shape))
    accepted = (
        jnp.isfinite(new_log_likelihood) & (proposal.log_ratio > -jnp.inf) & (log_u < log_alpha)
    )
    new_state = ParticleState(
        ops=jnp.where(accepted[:, None], proposal.ops, state.ops),
        params=jnp.where(accepted[:, None, None], proposal.params, state.params),
        noise=state.noise,
        log_likelihood=jnp.where(accepted, new_log_likelihood, state.log_likelihood),
    )
    return new_state, accepted


def _batched_replace(grammar: gr.Grammar, state: ParticleState, pick: PickRule, key: Array,
                     period_proposal: periods.PeriodProposal | None = None):
    keys = jax.random.split(key, state.ops.shape[0])
    return jax.vmap(
        lambda o, p, k, q: propose_subtree_replace(
            grammar, o, p, key=k, pick=pick, period_proposal=q
        )
    )(state.ops, state.params, keys, period_proposal)


def _batched_detach_attach(grammar: gr.Grammar, state: ParticleState, key: Array):
    keys = jax.random.split(key, state.ops.shape[0])
    return jax.vmap(lambda o, p, k: propose_detach_attach(grammar, o, p, key=k))(
        state.ops, state.params, keys
    )


def subtree_replace(
    grammar: gr.Grammar,
    state: ParticleState,
    log_likelihood_fn: LogLikelihoodFn,
    *,
    key: Array,
    pick: PickRule = "uniform",
    period_proposal: periods.PeriodProposal | None = None,
) -> tuple[ParticleState, Array]:
    """One subtree-replace MH step for every particle.

    Accepts with alpha = min(1, L(T') q_pick(i | T') / (L(T) q_pick(i | T))), see
    :func:`propose_subtree_replace`. Returns ``(new_state, accepted [P])``.
    """
    key_propose, key_accept = jax.random.split(key)
    proposal = _batched_replace(grammar, state, pick, key_propose, period_proposal)
    return accept_reject(state, proposal, log_likelihood_fn, key=key_accept)


def detach_attach(
    grammar: gr.Grammar,
    state: ParticleState,
    log_likelihood_fn: LogLikelihoodFn,
    *,
    key: Array,
) -> tuple[ParticleState, Array]:
    """One detach-attach MH step for every particle.

    Accepts a detach with alpha = min(1, pi(T_small) q_attach(a, path, A | T_small) /
    (pi(T_big) q_detach(a, b | T_big))) and an attach with the inverse ratio, see
    :func:`propose_detach_attach`. Returns ``(new_state, accepted [P])``.
    """
    key_propose, key_accept = jax.random.split(key)
    proposal = _batched_detach_attach(grammar, state, key_propose)
    return accept_reject(state, proposal, log_likelihood_fn, key=key_accept)


def propose_structure_move(
    grammar: gr.Grammar,
    state: ParticleState,
    *,
    key: Array,
    replace_prob: float = 0.5,
    pick: PickRule = "uniform",
    period_proposal: periods.PeriodProposal | None = None,
) -> tuple[Proposal, Array]:
    """The proposals of :func:`structure_move` and the key of its accept/reject step: each
    particle independently proposes a subtree-replace with probability ``replace_prob`` and a
    detach-attach otherwise."""
    if not 0.0 <= replace_prob <= 1.0:
        raise ValueError("replace_prob must be in [0, 1]")
    key_kind, key_replace, key_detach, key_accept = jax.random.split(key, 4)
    if replace_prob == 1.0:
        return _batched_replace(grammar, state, pick, key_replace, period_proposal), key_accept
    if replace_prob == 0.0:
        return _batched_detach_attach(grammar, state, key_detach), key_accept
    use_replace = jax.random.uniform(key_kind, state.log_likelihood.shape) < replace_prob
    replace = _batched_replace(grammar, state, pick, key_replace, period_proposal)
    reattach = _batched_detach_attach(grammar, state, key_detach)
    proposal = jax.tree_util.tree_map(
        lambda x, y: jnp.where(use_replace.reshape((-1,) + (1,) * (x.ndim - 1)), x, y),
        replace,
        reattach,
    )
    return proposal, key_accept


def structure_move(
    grammar: gr.Grammar,
    state: ParticleState,
    log_likelihood_fn: LogLikelihoodFn,
    *,
    key: Array,
    replace_prob: float = 0.5,
    pick: PickRule = "uniform",
    period_proposal: periods.PeriodProposal | None = None,
) -> tuple[ParticleState, Array]:
    """A mixture move: each particle independently does subtree-replace with probability
    ``replace_prob`` and detach-attach otherwise.

    The choice does not depend on the state and each component is its own involution, so the
    mixture weights cancel and each particle's acceptance ratio is that of its component. Both
    proposals are built for every particle (fixed shapes; cheap next to the likelihood) and
    one is selected per particle, so the likelihood is evaluated once for all P proposals.
    ``period_proposal`` (per-particle arrays) changes how subtree-replace draws PER periods.
    Returns ``(new_state, accepted [P])``.
    """
    proposal, key_accept = propose_structure_move(
        grammar, state, key=key, replace_prob=replace_prob, pick=pick,
        period_proposal=period_proposal,
    )
    return accept_reject(state, proposal, log_likelihood_fn, key=key_accept)
