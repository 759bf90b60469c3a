"""Priors learned across series: the reweighted prior against the grammar's own log-prior, the
evidence gain against a numpy sum, and the learned prior against closed-form estimates."""

from __future__ import annotations

import jax
import numpy as np
from scipy.special import logsumexp

from autogp.inference import empirical_bayes as eb
from autogp.inference import grammar as gr
from autogp.kernels import spec
from tests.helpers import assert_allclose

WITH_CP = gr.Grammar.default(max_depth=3, weights={"LIN": 6, "GE": 6, "PER": 6, "BM": 6,
                                                   "+": 5, "*": 5, "CP": 2})


def test_particle_log_prior_is_the_grammars():
    ops, params, noise = jax.jit(gr.sample_prior, static_argnums=(0, 1))(
        WITH_CP, 256, key=jax.random.key(3))
    assert np.any(np.asarray(ops) == spec.CP)  # the CP rules are exercised
    hyper = eb.hyperprior_of(WITH_CP)
    assert_allclose(eb.particle_log_prior(hyper, ops, params, noise),
                    gr.log_prior(WITH_CP, ops, params, noise))
    # another prior: shifted means, other stds and weights, through grammar_of
    moved = hyper._replace(mean=hyper.mean + 0.3, log_std=hyper.log_std - 0.2,
                           noise=hyper.noise + np.array([0.5, 0.1]),
                           log_weights=hyper.log_weights + np.linspace(0, 1, spec.NUM_OPS))
    other = eb.grammar_of(moved, WITH_CP)
    assert_allclose(eb.particle_log_prior(moved, ops, params, noise),
                    gr.log_prior(other, ops, params, noise))


def test_evidence_gain_is_the_reweighted_sum():
    ops, params, noise = jax.jit(gr.sample_prior, static_argnums=(0, 1))(
        WITH_CP, 12, key=jax.random.key(4))
    ops, params, noise = (np.asarray(a) for a in (ops, params, noise))
    rng = np.random.default_rng(0)
    fits = []
    for i in range(3):  # three series of 4, 3 and 5 particles
        take = [slice(0, 4), slice(4, 7), slice(7, 12)][i]
        lw = rng.normal(size=ops[take].shape[0])
        fits.append((ops[take], params[take], noise[take], lw))
    particles = eb.stack_particles(fits)
    base = eb.hyperprior_of(WITH_CP)
    moved = base._replace(mean=base.mean - 0.4, noise=base.noise + np.array([1.0, 0.0]))
    other = eb.grammar_of(moved, WITH_CP)
    expected = 0.0
    for o, p, z, lw in fits:
        lw = lw - logsumexp(lw)
        ratio = (np.asarray(gr.log_prior(other, o, p, z))
                 - np.asarray(gr.log_prior(WITH_CP, o, p, z)))
        expected += logsumexp(lw + ratio)
    assert_allclose(eb.evidence_gain(moved, base, particles), expected)


def test_one_particle_per_series_learns_the_normal_fit():
    """With one particle per series the gain is sum_i log N(theta_i; mean, std) + const: the
    learned mean and std are the sample's (up to the weak hyperprior over 2,000 series)."""
    rng = np.random.default_rng(1)
    n = 2000
    base = gr.Grammar.default(max_depth=1)
    ops = np.zeros((n, 1, base.num_slots), dtype=np.int32)
    ops[:, 0, 0] = spec.LIN
    params = np.zeros((n, 1, base.num_slots, spec.MAX_PARAMS))
    amp = rng.normal(-3.0, 0.5, size=n)
    params[:, 0, 0, :3] = np.column_stack([rng.normal(0.8, 0.6, n), rng.normal(-2, 1.5, n), amp])
    noise = rng.normal(0.7, 0.6, size=(n, 1))
    fits = [(ops[i], params[i], noise[i], np.zeros(1)) for i in range(n)]
    learned = eb.learn_prior(eb.stack_particles(fits), base, steps=1500, learning_rate=0.05)
    mean, std = np.asarray(learned.grammar.prior_mean_table), np.asarray(
        learned.grammar.prior_std_table)
    for k, values in enumerate((params[:, 0, 0, 0], params[:, 0, 0, 1], amp)):
        np.testing.assert_allclose(mean[spec.LIN, k], values.mean(), atol=0.01)
        np.testing.assert_allclose(std[spec.LIN, k], values.std(), rtol=0.02)
    np.testing.assert_allclose(learned.grammar.noise_prior, (noise.mean(), noise.std()),
                               rtol=0.02)
    # every series is a single LIN: LIN's share of the atoms at the root grows
    root = lambda g: np.asarray(g.node_log_prob_table)[0, 1, spec.LIN]  # noqa: E731
    assert root(learned.grammar) > root(base) + 0.5
    # untouched: parameters of atoms no particle uses keep their prior where the data say
    # nothing (only the weak hyperprior acts, and it is centred on the base values)
    assert_allclose(mean[spec.PER], np.asarray(base.prior_mean_table)[spec.PER])
    # a zero-weight opcode stays off
    assert learned.grammar.weights[spec.SE] == 0.0
    assert learned.gain > 0


def test_predictive_gain_is_the_first_half_posteriors_forecast():
    """Brute force: reweight each series' particles to the posterior of its first half under
    the new prior, then average their densities of the second half."""
    ops, params, noise = jax.jit(gr.sample_prior, static_argnums=(0, 1))(
        WITH_CP, 9, key=jax.random.key(5))
    ops, params, noise = (np.asarray(a) for a in (ops, params, noise))
    rng = np.random.default_rng(2)
    takes = [slice(0, 5), slice(5, 9)]
    fits = [(ops[t], params[t], noise[t], rng.normal(size=t.stop - t.start)) for t in takes]
    held = [rng.normal(-20.0, 3.0, size=t.stop - t.start) for t in takes]
    particles = eb.stack_particles(fits, held)
    base = eb.hyperprior_of(WITH_CP)
    moved = base._replace(mean=base.mean + 0.2, noise=base.noise + np.array([-0.5, 0.2]))
    other = eb.grammar_of(moved, WITH_CP)
    expected = 0.0
    for (o, p, z, lw), b in zip(fits, held, strict=True):
        ratio = np.exp(np.asarray(gr.log_prior(other, o, p, z))
                       - np.asarray(gr.log_prior(WITH_CP, o, p, z)))
        first_half = np.exp(lw - lw.max()) * ratio * np.exp(-(b - b.max()))
        first_half /= first_half.sum()
        expected += np.log(np.sum(first_half * np.exp(b - b.max()))) + b.max()
    assert_allclose(eb.predictive_gain(moved, base, particles), expected)
    # particles that all forecast the second half alike: the prior cannot change the forecast
    same = particles._replace(holdout=np.full_like(particles.holdout, -7.0))
    assert_allclose(eb.predictive_gain(moved, base, same), -14.0)


def test_laplace_ratio_integrates_the_prior_over_the_modes_width():
    """A Gaussian likelihood of LIN's slope scale, N(theta; -2, 0.3): the Laplace posterior
    under the base prior is exact, and the evidence ratio of another prior is the ratio of
    two integrals, which scipy's quadrature gives. Coordinates the data do not inform (their
    posterior variance is the prior's) add nothing, wherever the new prior puts them."""
    from scipy import integrate, stats

    base_grammar = gr.Grammar.default(max_depth=1)
    base = eb.hyperprior_of(base_grammar)
    amp = spec.PARAM_NAMES[spec.LIN].index("amp")
    m_l, v_l = -2.0, 0.3
    m0, s0 = base_grammar.param_prior_mean[spec.LIN][amp], base_grammar.param_prior_std[
        spec.LIN][amp]
    post_var = 1.0 / (1.0 / v_l + 1.0 / s0**2)
    post_mean = post_var * (m_l / v_l + m0 / s0**2)
    ops = np.zeros((1, 1, base_grammar.num_slots), dtype=np.int32)
    ops[0, 0, 0] = spec.LIN
    params = np.zeros((1, 1, base_grammar.num_slots, spec.MAX_PARAMS))
    params[0, 0, 0, amp] = post_mean
    var = np.full_like(params, np.inf)
    var[0, 0, 0, :3] = np.asarray(base_grammar.prior_std_table)[spec.LIN, :3] ** 2
    var[0, 0, 0, amp] = post_var
    particles = eb.stack_particles([(ops[0], params[0], np.zeros(1), np.zeros(1))],
                                   variances=[(var[0], np.full(1, np.inf))])
    mean, log_std = np.array(base.mean), np.array(base.log_std)
    mean[spec.LIN, amp], log_std[spec.LIN, amp] = -3.0, np.log(0.5)
    mean[spec.LIN, 1] += 2.0  # LIN's bias: not informed here
    moved = base._replace(mean=mean, log_std=log_std, noise=base.noise + 1.0)

    def evidence(m, s):
        return integrate.quad(lambda t: stats.norm.pdf(t, m_l, np.sqrt(v_l))
                              * stats.norm.pdf(t, m, s), -15, 10, epsabs=1e-13)[0]

    expected = np.log(evidence(-3.0, 0.5)) - np.log(evidence(m0, s0))
    assert_allclose(eb.evidence_gain(moved, base, particles), expected, rtol=1e-8)
