"""The seasonal start (inference/seasonal_start.py): initial particles drawn as ``S + PER`` for a
share of them, with importance weights prior / proposal that leave the target unchanged.

References are independent of the module: the prior of a depth-1 tree and the densities of
q0, r and their mixture written out in numpy/scipy from the grammar's weights and the period
proposal's peaks."""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from autogp.inference import grammar as gr
from autogp.inference import rounds, smc_round
from autogp.inference.settings import SMCSettings
from autogp.kernels import spec

LIN, PER, PLUS = spec.LIN, spec.PER, spec.PLUS
PERIOD = spec.PARAM_NAMES[PER].index("period")
SHARE, MIX, SPREAD = 0.5, 0.5, 0.05
GRAMMAR = gr.Grammar.default(max_depth=1, weights={"LIN": 1.0, "PER": 1.0, "+": 1.0})
# Depth-1 trees of GRAMMAR in heap layout (root, left, right) and their prior probabilities:
# the root is LIN, PER or + with 1/3 each; a child of + is LIN or PER with 1/2 each.
TREES = {(LIN, 0, 0): 1 / 3, (PER, 0, 0): 1 / 3,
         **{(PLUS, a, b): 1 / 12 for a in (LIN, PER) for b in (LIN, PER)}}


def _data():
    x = np.linspace(0.0, 1.0, 40)
    y = np.sin(2 * np.pi * x / 0.1) + 0.3 * x
    return rounds.make_data([x], [y], seasonal_periods=[0.1])


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _initial(settings, P, _, key, data):
    return smc_round.proposal_state(GRAMMAR, settings, 1, P, key, data)


def _draw(P, share=SHARE, seed=0):
    settings = SMCSettings(period_proposal=MIX, period_spread=SPREAD, seasonal_start=share)
    data = _data()
    state = _initial(settings, P, None, jax.random.key(seed), data)
    ops = np.asarray(state.ops[0])
    params = np.asarray(state.params[0])
    noise = np.asarray(state.noise[0])
    # Unnormalised log weights: proposal_state normalises them and keeps log mean in log_evidence.
    log_w = np.asarray(state.log_weights[0]) + float(state.log_evidence[0]) + math.log(P)
    return ops, params, noise, log_w, data


def _log_densities(ops, params, noise, data):
    """log p(T, theta, noise) and log Q(T, theta, noise) of one particle, from scratch."""
    mean, std = spec.default_prior_table()
    centers = np.asarray(data.period_centers[0])
    log_pi = np.asarray(data.period_log_weights[0])
    finite = np.isfinite(log_pi)

    def log_peaks(v):
        return logsumexp(log_pi[finite] + norm.logpdf(v, centers[finite], SPREAD))

    def log_q_period(v):  # the period proposal of every PER leaf
        return np.logaddexp(math.log(1 - MIX) + norm.logpdf(v, mean[PER, PERIOD],
                                                            std[PER, PERIOD]),
                            math.log(MIX) + log_peaks(v))

    def leaf(op, theta, period_density):  # log density of a leaf's parameters
        k = spec.NUM_PARAMS[op]
        lp = norm.logpdf(theta[:k], mean[op, :k], std[op, :k])
        if op == PER:
            lp[PERIOD] = period_density(theta[PERIOD])
        return float(np.sum(lp))

    def prior_period(v):
        return norm.logpdf(v, mean[PER, PERIOD], std[PER, PERIOD])

    tree = (int(ops[0]), int(ops[1]), int(ops[2]))
    slots = [0] if tree[0] != PLUS else [1, 2]
    log_t = math.log(TREES[tree])
    log_p = log_t + sum(leaf(tree[s], params[s], prior_period) for s in slots)
    log_q0 = log_t + sum(leaf(tree[s], params[s], log_q_period) for s in slots)
    log_noise = norm.logpdf(noise, *spec.DEFAULT_NOISE_PRIOR)
    if tree[0] == PLUS and tree[2] == PER:
        # r: the left leaf as the prior draws a child of + (1/2 each), PER's period from peaks.
        log_r = math.log(0.5) + leaf(tree[1], params[1], log_q_period) + leaf(
            PER, params[2], log_peaks)
        log_q = np.logaddexp(math.log(1 - SHARE) + log_q0, math.log(SHARE) + log_r)
    else:
        log_q = math.log(1 - SHARE) + log_q0
    return log_p + log_noise, log_q + log_noise


def test_log_weight_is_log_prior_minus_log_proposal():
    ops, params, noise, log_w, data = _draw(64)
    assert np.any((ops[:, 0] == PLUS) & (ops[:, 2] == PER))
    for i in range(len(log_w)):
        log_p, log_q = _log_densities(ops[i], params[i], noise[i], data)
        assert log_w[i] == pytest.approx(log_p - log_q, abs=1e-8)


def test_weighted_initial_structures_have_the_prior_frequencies():
    P = 6000
    ops, params, _, log_w, _ = _draw(P, seed=3)
    w = np.exp(log_w - logsumexp(log_w))
    trees = [tuple(map(int, row[:3])) for row in ops]
    seasonal = (PLUS, LIN, PER)
    # The proposal draws S + PER about SHARE + (1 - SHARE) / 12 of the time...
    drawn = np.mean([t == seasonal for t in trees])
    assert drawn == pytest.approx(SHARE / 2 + (1 - SHARE) / 12, abs=0.03)
    ess = 1.0 / np.sum(w**2)
    for tree, prob in TREES.items():
        got = float(np.sum(w[[t == tree for t in trees]]))
        sd = math.sqrt(prob * (1 - prob) / ess)
        # ...and the weights bring every structure back to its prior probability.
        assert got == pytest.approx(prob, abs=5 * sd), tree
    # The PER periods of weighted S + PER trees follow their prior, not the peaks.
    mask = np.array([t[0] == PLUS and t[2] == PER for t in trees])
    v = params[mask, 2, PERIOD]
    mean, std = spec.default_prior_table()
    weighted_mean = np.sum(w[mask] * v) / np.sum(w[mask])
    assert weighted_mean == pytest.approx(mean[PER, PERIOD], abs=0.25)


def test_particles_the_mixture_keeps_are_the_draws_of_share_zero():
    old = _draw(16, share=0.0, seed=5)
    new = _draw(16, share=0.3, seed=5)
    # r only draws S + PER: every other particle is q0's draw, as with share 0 (to the last
    # bit of the parameters' mean + std * normal, which the two programs fuse differently).
    kept = ~((new[0][:, 0] == PLUS) & (new[0][:, 2] == PER))
    assert kept.sum() >= 4
    np.testing.assert_array_equal(old[0][kept], new[0][kept])
    np.testing.assert_allclose(old[1][kept], new[1][kept], rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(old[2], new[2])
