"""Structure weights from the Laplace evidence of the particles' modes
(``smc.structure_weights = "laplace"``, :mod:`autogp.inference.evidence`): the Hessian against
a plain numpy/scipy log joint, the Laplace formula against brute-force integration, mirror
images, and weights that do not depend on how many particles reached a mode."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from scipy import linalg, optimize, stats
from scipy.special import logsumexp

from autogp.inference import evidence, exported, rounds, smc
from autogp.inference import grammar as gr
from autogp.inference.refine import active_mask
from autogp.inference.settings import SMCSettings
from autogp.kernels import parse
from autogp.kernels.packing import pack, unpack_one
from tests.reference_numpy import gram_numpy

DEPTH = 2
# The default weights plus SE (not in AutoGP.jl's default grammar), whose two parameters keep the
# brute-force integral below small.
GRAMMAR = gr.Grammar.default(max_depth=DEPTH, weights={**gr.DEFAULT_WEIGHTS, "SE": 1.0})


def _series(n=24, seed=0):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n)
    y = np.sin(7.0 * x) + 0.8 * x + 0.15 * rng.normal(size=n)
    return x, (y - y.mean()) / y.std()


def _particles(texts, seed=0):
    """Packed trees with random unconstrained parameters on their active entries."""
    ops, params = pack([parse(t) for t in texts], max_depth=DEPTH)
    rng = np.random.default_rng(seed)
    active = np.asarray(active_mask(ops))
    params = np.where(active, rng.normal(-1.0, 0.4, params.shape), 0.0)
    noise = rng.normal(-2.5, 0.2, len(texts))
    return np.asarray(ops), params, noise


def _numpy_log_joint(ops, params, noise, x, y):
    """log N(y; 0, K + e^noise I) + the normal priors of the used parameters and of the noise,
    from the plain numpy kernel (tests/reference_numpy.py) and scipy."""
    K = gram_numpy(unpack_one(ops, params), x, x) + np.exp(noise) * np.eye(len(x))
    L = np.linalg.cholesky(K)
    alpha = linalg.solve_triangular(L, y, lower=True)
    ll = -0.5 * alpha @ alpha - np.sum(np.log(np.diag(L))) - 0.5 * len(y) * np.log(2 * np.pi)
    used = np.asarray(active_mask(ops))
    mean = np.asarray(GRAMMAR.prior_mean_table)[ops]
    std = np.asarray(GRAMMAR.prior_std_table)[ops]
    lp = np.sum(stats.norm.logpdf(params, mean, std)[used])
    return ll + lp + stats.norm.logpdf(noise, *GRAMMAR.noise_prior)


def _hessians(ops, params, noise, x, y, learn_noise=True):
    data = rounds.make_data([x], [y])
    return evidence.log_joint_hessians(GRAMMAR, len(ops), 0, learn_noise, ops, params, noise,
                                       data)


@pytest.mark.parametrize("texts", [["SE", "LIN * PER", "GE + LIN"]])
def test_hessian_matches_second_differences_of_a_numpy_log_joint(texts):
    x, y = _series()
    ops, params, noise = _particles(texts)
    log_joint, H, count = (np.asarray(a) for a in _hessians(ops, params, noise, x, y))
    for b in range(len(ops)):
        used = np.argwhere(np.asarray(active_mask(ops[b])))
        k = len(used) + 1
        assert count[b] == k

        def f(v, b=b, used=used):
            p = params[b].copy()
            p[tuple(used.T)] = v[:-1]
            return _numpy_log_joint(ops[b], p, v[-1], x, y)

        v0 = np.append(params[b][tuple(used.T)], noise[b])
        assert log_joint[b] == pytest.approx(f(v0), rel=1e-9)
        h = 1e-4  # the period's curvature is large: a smaller step than 1e-3 is needed
        E = np.eye(k) * h
        want = np.array([[(f(v0 + E[i] + E[j]) - f(v0 + E[i] - E[j]) - f(v0 - E[i] + E[j])
                           + f(v0 - E[i] - E[j])) / (4 * h * h) for j in range(k)]
                         for i in range(k)])
        np.testing.assert_allclose(H[b, :k, :k], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        assert np.all(H[b, k:, :] == 0.0) and np.all(H[b, :, k:] == 0.0)


def test_laplace_evidence_is_exact_for_a_gaussian_and_close_to_brute_force_for_a_gp():
    # A quadratic log joint: the Laplace integral is the Gaussian integral, in closed form.
    A = np.array([[3.0, 0.4], [0.4, 0.5]])
    got, _ = evidence.laplace_log_evidence(-7.0, -A, np.array([0.1, 0.1]))
    xs = np.linspace(-12, 12, 1201)
    u, v = np.meshgrid(xs, xs, indexing="ij")
    quad = -7.0 - 0.5 * (A[0, 0] * u * u + 2 * A[0, 1] * u * v + A[1, 1] * v * v)
    assert got == pytest.approx(logsumexp(quad) + 2 * np.log(xs[1] - xs[0]), abs=1e-6)

    # SE on 40 points, noise fixed: two coordinates, integrated on a grid around the mode.
    x, y = _series(40, seed=1)
    ops, params, noise = _particles(["SE"])
    used = tuple(np.argwhere(np.asarray(active_mask(ops[0]))).T)

    def f(v):
        p = params[0].copy()
        p[used] = v
        return _numpy_log_joint(ops[0], p, noise[0], x, y)

    mode = optimize.minimize(lambda v: -f(v), params[0][used], method="Nelder-Mead",
                             options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 4000}).x
    params[0][used] = mode
    ev = evidence.particle_evidence(GRAMMAR, ops, params, noise, rounds.make_data([x], [y]),
                                    num_particles=1, learn_noise=False)
    laplace = ev.log_evidence[0] - float(gr.log_prior_structure(GRAMMAR, ops[0]))
    sd = np.sqrt(np.diag(np.linalg.inv(ev.widths[0])))
    grids = [np.linspace(m - 7 * s, m + 7 * s, 71) for m, s in zip(mode, sd, strict=True)]
    values = np.array([[f(np.array([a, b])) for b in grids[1]] for a in grids[0]])
    brute = logsumexp(values) + sum(np.log(g[1] - g[0]) for g in grids)
    # Laplace is not exact for a GP's posterior over log length scale and amplitude, but on 40
    # points it is within a tenth of a nat; a wrong constant (2 pi, the determinant's
    # sign or power) would be off by one or more.
    assert laplace == pytest.approx(brute, abs=0.1)  # measured: 0.04


def test_mirror_images_are_one_mode_counted_twice():
    ops, _ = pack([parse("LIN * LIN"), parse("(SE + SE) * (SE + SE)"), parse("LIN + PER"),
                   parse("SE + PER")], max_depth=DEPTH)
    assert [evidence.symmetry_count(o) for o in ops] == [2, 8, 1, 1]

    x, y = _series()
    (o,), (p,), _ = _particles(["LIN * LIN"], seed=3)
    mirror = p.copy()
    mirror[[1, 2]] = p[[2, 1]]
    canon = evidence.canonical_params(o, p)
    np.testing.assert_array_equal(canon, evidence.canonical_params(o, mirror))
    assert sorted(map(tuple, canon[[1, 2]])) == sorted(map(tuple, p[[1, 2]]))
    np.testing.assert_allclose(gram_numpy(unpack_one(o, canon), x, x),
                               gram_numpy(unpack_one(o, p), x, x), rtol=1e-12)


def _structure_weights(texts, params, noise, x, y):
    ops, _ = pack([parse(t) for t in texts], max_depth=DEPTH)
    ev = evidence.particle_evidence(GRAMMAR, ops, params, noise, rounds.make_data([x], [y]),
                                    num_particles=len(texts))
    w = np.exp(evidence.laplace_log_weights(ops, ev, np.arange(len(texts))))
    out = {}
    for t, wi in zip(texts, w, strict=True):
        out[t] = out.get(t, 0.0) + wi
    return out, ev


def test_weights_do_not_depend_on_how_many_particles_reached_a_mode():
    x, y = _series()
    ops, params, noise = _particles(["LIN * LIN", "SE + LIN"], seed=5)
    mirror = params[0].copy()
    mirror[[1, 2]] = params[0][[2, 1]]
    # One copy of each mode ...
    one, ev = _structure_weights(["LIN * LIN", "SE + LIN"], params, noise, x, y)
    # ... against three copies of the second mode and the first one's mirror image.
    texts = ["LIN * LIN", "LIN * LIN", "SE + LIN", "SE + LIN", "SE + LIN"]
    many_params = np.stack([params[0], mirror, params[1], params[1], params[1]])
    many_noise = noise[[0, 0, 1, 1, 1]]
    many, _ = _structure_weights(texts, many_params, many_noise, x, y)
    for t in one:
        assert many[t] == pytest.approx(one[t], rel=1e-9)
    # The weights are the modes' Laplace masses, the mirrored tree's counted twice.
    ratio = np.exp(ev.log_evidence[0] - ev.log_evidence[1]) * 2
    assert one["LIN * LIN"] / one["SE + LIN"] == pytest.approx(ratio, rel=1e-9)


def test_evidence_power_tempers_the_likelihood_not_the_structure_prior():
    x, y = _series()
    ops, params, noise = _particles(["LIN * LIN", "SE + LIN"], seed=5)
    data = rounds.make_data([x], [y])
    full = evidence.particle_evidence(GRAMMAR, ops, params, noise, data, num_particles=2)
    half = evidence.particle_evidence(GRAMMAR, ops, params, noise, data, num_particles=2,
                                      power=0.5)
    log_prior_t = np.asarray(gr.log_prior_structure(GRAMMAR, jax.numpy.asarray(ops)))
    np.testing.assert_allclose(half.log_evidence - log_prior_t,
                               0.5 * (full.log_evidence - log_prior_t), rtol=1e-12)
    # Same modes, so the weights' log ratio is the tempered evidence ratio (mirror count 2).
    w = evidence.laplace_log_weights(ops, half, np.arange(2))
    assert w[0] - w[1] == pytest.approx(
        half.log_evidence[0] - half.log_evidence[1] + np.log(2), rel=1e-9)


def test_prequential_score_is_the_second_half_given_the_first_by_numpy():
    x, y = _series(25)
    texts = ["LIN * PER", "GE + LIN", "SE"]
    ops, params, noise = _particles(texts, seed=3)
    data = rounds.make_data([x], [y])
    got = evidence.prequential_log_scores(GRAMMAR, ops, params, noise, data,
                                          num_particles=len(texts))
    log_prior_t = np.asarray(gr.log_prior_structure(GRAMMAR, jax.numpy.asarray(ops)))
    h = 13  # the first half, rounded up
    for b in range(len(texts)):
        K = gram_numpy(unpack_one(ops[b], params[b]), x, x) + np.exp(noise[b]) * np.eye(len(x))
        # y_{h+1..n} | y_{1..h}: the Gaussian conditional, by scipy.
        A, B, C = K[:h, :h], K[h:, :h], K[h:, h:]
        mean = B @ linalg.solve(A, y[:h], assume_a="pos")
        cov = C - B @ linalg.solve(A, B.T, assume_a="pos")
        want = stats.multivariate_normal(mean, cov).logpdf(y[h:]) + log_prior_t[b]
        assert got[b] == pytest.approx(want, rel=1e-8, abs=1e-8)


def _three_fits(weights):
    """A small fit with the SMC's weights, then twice with ``weights``, on the same key."""
    x, y = _series(30)
    grammar = gr.Grammar.default(max_depth=DEPTH)
    base = SMCSettings(num_particles=6, num_rounds=3, structure_moves=2,
                       refine=dataclasses.replace(SMCSettings().refine, steps=5))
    other = dataclasses.replace(base, structure_weights=weights)
    fits = [smc.run_smc(x, y, grammar, s, key=jax.random.key(4)) for s in (base, other, other)]
    return x, y, grammar, fits


def test_a_prequential_fit_weighs_modes_by_their_scores_and_repeats_with_the_seed():
    x, y, grammar, (plain, got, again) = _three_fits("prequential")
    np.testing.assert_array_equal(got.ops, plain.ops)
    np.testing.assert_array_equal(got.log_weights, again.log_weights)
    assert logsumexp(got.log_weights) == pytest.approx(0.0, abs=1e-12)
    data = rounds.make_data([x], [y])
    score = evidence.prequential_log_scores(grammar, got.ops, got.params, got.noise, data,
                                            num_particles=6)
    # Each mode's mass is exp(score) shared by its particles: mass ratios of the two best
    # particles' modes are their score ratios (no mirror factor for a score at a point).
    w = np.exp(got.log_weights)
    best = np.argsort(-score)
    modes = {}
    for b in range(6):
        if w[b] > 0:
            modes.setdefault(round(float(score[b]), 6), []).append(b)
    assert len(modes) >= 1
    (s1, m1), *rest = sorted(modes.items(), reverse=True)
    assert np.isclose(s1, score[best[0]], atol=1e-6)
    for s2, m2 in rest:
        assert np.log(w[m1].sum() / w[m2].sum()) == pytest.approx(s1 - s2, abs=1e-5)


def test_a_laplace_fit_reweights_the_smc_particles_and_repeats_with_the_seed():
    x, y, grammar, (plain, got, again) = _three_fits("laplace")
    # Same particles and evidence estimate as the SMC run; only the weights change.
    np.testing.assert_array_equal(got.ops, plain.ops)
    np.testing.assert_array_equal(got.params, plain.params)
    assert got.log_marginal_likelihood == plain.log_marginal_likelihood
    np.testing.assert_array_equal(got.log_weights, again.log_weights)
    w = np.exp(got.log_weights)
    assert w.sum() == pytest.approx(1.0) and np.all(np.isfinite(got.log_weights))
    ev = evidence.particle_evidence(grammar, got.ops, got.params, got.noise,
                                    rounds.make_data([x], [y]), num_particles=6)
    np.testing.assert_allclose(
        got.log_weights, evidence.laplace_log_weights(got.ops, ev, np.arange(6)), rtol=1e-12)


def test_the_hessian_program_compiles_once_per_shape():
    def programs():
        if exported.enabled():
            return exported.programs("laplace_hessians")
        return evidence._jitted_hessians._cache_size()

    x, y = _series()
    ops, params, noise = _particles(["SE", "LIN"])
    _hessians(ops, params, noise, x, y)
    before = programs()
    # Other trees, data and values of the same shapes: no new program.
    for seed, texts in enumerate([["PER * SE", "GE + LIN"], ["LIN * LIN", "SE + PER"]]):
        ops, params, noise = _particles(texts, seed=seed + 1)
        _hessians(ops, params, noise, x * 0.5, y * (2 + seed))
    assert programs() == before
