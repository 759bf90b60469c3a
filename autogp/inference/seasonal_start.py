"""Initial particles with a seasonal term: a data-driven structure proposal, exact by weights.

Under the grammar's prior a tree holds a ``PER`` leaf near the series' season rarely: the leaf
must be drawn (a quarter of the atoms), then its period must land near the season (the period
proposal of :mod:`autogp.inference.periods` helps with the second step only). On a short
seasonal series the few particles that start this way are easily lost to resampling before the
structure moves find them again. So a share ``s`` of the initial particles is drawn from

    r(T, theta) = [T = S + PER] P_1(S) p(l) p(amp) peaks(v)

instead: a ``+`` at the root, a subtree ``S`` drawn at slot 1 as the base proposal draws it
(the prior, with PER periods from the period proposal q), and at slot 2 a ``PER`` leaf whose log
period ``v`` comes from the peak part of q alone (the periodogram's peaks and the calendar
seasons), other parameters from the prior. The initial draw is then from the mixture

    Q = (1 - s) q0 + s r,    q0(T, theta) = p(T, theta) prod_PER q(v) / p(v)

(q0: the prior with the period proposal, what the particles start from without this), and each
particle carries the importance weight p / Q. Since q0 holds the same S at slot 1,

    r / q0 = [T = S + PER] peaks(v) / (p(+ at the root) p(PER at slot 2 | +) q(v)),

so ``log Q - log q0`` is one ``logaddexp``. The SMC targets exactly the same posterior; the
particles only start where a seasonal series' posterior is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from autogp.inference import grammar as gr
from autogp.inference import heap, periods
from autogp.kernels import spec

Array = jax.Array

#: Slots of ``S + PER``: the ``+`` at the root, S at its left child, the PER leaf at its right.
ROOT, LEFT, RIGHT = 0, 1, 2


def available(grammar: gr.Grammar) -> bool:
    """Whether the grammar can produce ``S + PER`` (``+`` and PER with positive weight)."""
    return grammar.weights[spec.PLUS] > 0 and grammar.weights[spec.PER] > 0


def _peaks_only(proposal: periods.PeriodProposal) -> periods.PeriodProposal:
    return proposal._replace(mix=jnp.ones_like(proposal.mix))


def seasonal_tree(
    grammar: gr.Grammar, proposal: periods.PeriodProposal, *, key: Array
) -> tuple[Array, Array]:
    """One draw ``(ops [S], params [S, K])`` from r for one particle's ``proposal``."""
    k_left, k_per, k_left_periods, k_period = jax.random.split(key, 4)
    num = grammar.num_slots
    ops = jnp.zeros(num, jnp.int32).at[ROOT].set(spec.PLUS).at[RIGHT].set(spec.PER)
    params = jnp.zeros((num, spec.MAX_PARAMS))
    ops, params, _ = gr.sample_subtree(grammar, ops, params, LEFT, key=k_left)
    mean = jnp.asarray(grammar.prior_mean_table[spec.PER], params.dtype)
    std = jnp.asarray(grammar.prior_std_table[spec.PER], params.dtype)
    used = jnp.arange(spec.MAX_PARAMS) < spec.NUM_PARAMS[spec.PER]
    draw = mean + std * jax.random.normal(k_per, (spec.MAX_PARAMS,), params.dtype)
    params = params.at[RIGHT].set(jnp.where(used, draw, 0.0))
    slots = jnp.arange(num)
    params = periods.redraw_periods(ops, params, heap.subtree_mask(ops, LEFT), proposal,
                                    key=k_left_periods)
    params = periods.redraw_periods(ops, params, slots == RIGHT, _peaks_only(proposal),
                                    key=k_period)
    return ops, params


def log_r_over_q0(
    grammar: gr.Grammar, ops: Array, params: Array, proposal: periods.PeriodProposal
) -> Array:
    """``log r(T, theta) - log q0(T, theta)`` for one tree: ``-inf`` unless it is ``S + PER``."""
    mean, std = periods.period_prior(grammar)
    node = gr.node_log_probs(grammar, ops)
    v = params[RIGHT, periods.PERIOD_INDEX]
    log_peaks_over_p = periods.log_q_minus_log_p(v, mean, std, _peaks_only(proposal))
    log_q_over_p = periods.log_q_minus_log_p(v, mean, std, proposal)
    ratio = log_peaks_over_p - log_q_over_p - node[ROOT] - node[RIGHT]
    form = (ops[ROOT] == spec.PLUS) & (ops[RIGHT] == spec.PER)
    return jnp.where(form, ratio, -jnp.inf)


def log_mixture_over_q0(
    grammar: gr.Grammar, ops: Array, params: Array, proposal: periods.PeriodProposal,
    share: Array,
) -> Array:
    """``log Q - log q0`` for one tree under the mixture with share ``share`` of r."""
    log_rest = jnp.log1p(-share)
    seasonal = jnp.log(share) + log_r_over_q0(grammar, ops, params, proposal)
    return jnp.where(share > 0, jnp.logaddexp(log_rest, seasonal), 0.0)


def share_of(proposal: periods.PeriodProposal, share: float) -> Array:
    """Each particle's share of r: ``share`` where its series has peaks or seasons, else 0
    (a series without them starts from q0, as without this proposal)."""
    return jnp.where(proposal.mix > 0, share, 0.0)


def propose(
    grammar: gr.Grammar, ops: Array, params: Array, proposal: periods.PeriodProposal,
    share: Array, *, key: Array,
) -> tuple[Array, Array, Array]:
    """Turn one draw ``(ops, params)`` from q0 into a draw from Q: with probability ``share``
    replace it by a draw from r. Returns the tree and ``log Q - log q0`` at it."""
    k_use, k_tree = jax.random.split(key)
    new_ops, new_params = seasonal_tree(grammar, proposal, key=k_tree)
    use = jax.random.uniform(k_use) < share
    ops = jnp.where(use, new_ops, ops)
    params = jnp.where(use, new_params, params)
    return ops, params, log_mixture_over_q0(grammar, ops, params, proposal, share)


__all__ = ["available", "log_mixture_over_q0", "log_r_over_q0", "propose", "seasonal_tree",
           "share_of"]
