"""The optimiser's stochastic gradient (``refine.probes``): Hutchinson's estimate of the
``(K + s I)^-1`` the exact gradient needs. The value stays exact, the gradient's mean is the
exact gradient, the moves do not see the probes, and rounds below ``refine.probes_from``
columns keep the exact gradient."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.evaluator import gaussian_log_marginal
from autogp.inference import grammar as gr
from autogp.inference import moves, rejuvenation
from autogp.inference.rounds import gradient_probes, likelihood_fn, make_data
from autogp.inference.settings import RefineSettings, SMCSettings
from tests.helpers import assert_allclose

B, N = 3, 10


def _problem():
    """Three noise-free covariance matrices (squared exponential, three length scales) on 10
    points, the last two masked in the second matrix."""
    x = np.linspace(0.0, 1.0, N)
    scales = np.array([0.1, 0.3, 1.0])
    K = np.exp(-0.5 * (x[None, :, None] - x[None, None, :]) ** 2 / scales[:, None, None] ** 2)
    noise = np.array([0.1, 0.05, 0.2])
    y = np.sin(6.0 * x) + 0.1 * np.random.default_rng(0).normal(size=N)
    mask = np.ones((B, N), bool)
    mask[1, -2:] = False
    return jnp.asarray(K), jnp.asarray(noise), jnp.asarray(y), jnp.asarray(mask)


def _gradient(K, noise, y, mask, probes=None):
    def total(K, noise):
        return jnp.sum(gaussian_log_marginal(K, noise, y, mask, probes=probes)
                       * jnp.array([1.0, 2.0, 0.5]))  # distinct cotangents per matrix

    return jax.grad(total, argnums=(0, 1))(K, noise)


def test_value_is_exact_and_scaled_identity_probes_give_the_exact_gradient():
    K, noise, y, mask = _problem()
    # sqrt(N) I has Z Z^T = N I = S I exactly, so the estimate is the inverse itself.
    scaled_identity = jnp.broadcast_to(jnp.sqrt(N) * jnp.eye(N), (B, N, N))
    exact = gaussian_log_marginal(K, noise, y, mask)
    probed = gaussian_log_marginal(K, noise, y, mask, probes=scaled_identity)
    np.testing.assert_array_equal(np.asarray(probed), np.asarray(exact))
    for got, want in zip(_gradient(K, noise, y, mask, scaled_identity),
                         _gradient(K, noise, y, mask), strict=True):
        assert_allclose(got, want)


def test_rademacher_probes_give_the_exact_gradient_on_average():
    K, noise, y, mask = _problem()
    want_K, want_noise = _gradient(K, noise, y, mask)
    draws = 4000

    @jax.jit
    def draw(key):
        Z = jax.random.rademacher(key, (B, N, 4), K.dtype)
        return _gradient(K, noise, y, mask, Z)

    got_K, got_noise = jax.lax.map(draw, jax.random.split(jax.random.key(0), draws))
    for got, want in ((got_K, want_K), (got_noise, want_noise)):
        got = np.asarray(got)
        mean = got.mean(axis=0)
        standard_error = got.std(axis=0) / np.sqrt(draws)
        # Unbiased: every entry's mean within 5 standard errors (plus rounding) of the exact one;
        # and the estimate is noisy (a probe count this small is not the inverse).
        assert np.all(np.abs(mean - np.asarray(want)) <= 5.0 * standard_error + 1e-10)
        assert np.max(got.std(axis=0)) > 1e-3
    # Masked rows and columns get no gradient, as in the exact one.
    assert np.all(np.asarray(got_K)[:, 1, -2:, :] == 0.0)


def test_rounds_use_probes_from_probes_from_columns_in_optimize_mode_only():
    on = SMCSettings(refine=RefineSettings(probes=16, probes_from=256))
    assert gradient_probes(on, 256) == 16 and gradient_probes(on, 320) == 16
    assert gradient_probes(on, 160) == 0
    assert gradient_probes(SMCSettings(), 320) == 16  # the default
    assert gradient_probes(SMCSettings(), 160) == 0  # M3's lengths keep the exact gradient
    off = SMCSettings(refine=RefineSettings(probes=0))
    assert gradient_probes(off, 1024) == 0
    hmc = dataclasses.replace(on, refine=dataclasses.replace(on.refine, mode="hmc"))
    assert gradient_probes(hmc, 1024) == 0


GRAMMAR = gr.Grammar.default(max_depth=2)
P = 6


@pytest.fixture(scope="module")
def gp_particles():
    x = np.linspace(0.0, 1.0, 40)
    y = np.sin(2 * np.pi * 4 * x) + 0.5 * x + 0.1 * np.random.default_rng(3).normal(size=x.size)
    data = make_data([x], [(y - y.mean()) / y.std()])
    count = jnp.array([x.size], jnp.int32)
    exact = likelihood_fn(data, count, P)
    ops, params, noise = jax.jit(gr.sample_prior, static_argnums=(0, 1))(
        GRAMMAR, P, key=jax.random.key(3))
    particles = moves.ParticleState(ops, params, noise, jax.jit(exact)(ops, params, noise))
    return particles, exact, likelihood_fn(data, count, P, probes=8)


@functools.partial(jax.jit, static_argnums=(1,))
def _rejuvenate(particles, loglik, probe_key, steps):
    # Steps as data: the moves alone (0) and the optimiser (30) share one program.
    settings = SMCSettings(structure_moves=3, refine=RefineSettings(steps=30))
    return rejuvenation.rejuvenate(GRAMMAR, settings, particles, loglik, key=jax.random.key(11),
                                   probe_key=probe_key, steps=steps)


def test_probes_leave_the_moves_alone_and_the_optimiser_climbs(gp_particles):
    particles, exact_loglik, probed_loglik = gp_particles
    exact = _rejuvenate(particles, exact_loglik, None, 30)
    first = _rejuvenate(particles, probed_loglik, jax.random.key(7), 30)
    again = _rejuvenate(particles, probed_loglik, jax.random.key(7), 30)
    other = _rejuvenate(particles, probed_loglik, jax.random.key(8), 30)
    moved = _rejuvenate(particles, probed_loglik, jax.random.key(7), 0).particles
    # The moves score exact values with the same keys: same acceptances and structures.
    np.testing.assert_array_equal(first.accepted, exact.accepted)
    np.testing.assert_array_equal(first.particles.ops, exact.particles.ops)
    # The same probe key gives the same parameters, another key other ones.
    np.testing.assert_array_equal(first.particles.params, again.particles.params)
    assert not np.array_equal(first.particles.params, other.particles.params)

    def log_posterior(state):
        fn = rejuvenation.log_posterior_fn(GRAMMAR, exact_loglik, state.ops)
        lp, ll = jax.jit(fn)(state.params, state.noise)  # op by op: hundreds of compiles
        assert_allclose(ll, state.log_likelihood)  # the stored likelihood is the exact one
        return np.asarray(lp)

    # The stochastic optimiser climbs about as far as the exact one from the same moves.
    start, with_exact, with_probes = (log_posterior(s) for s in (moved, exact.particles,
                                                                  first.particles))
    assert np.all(with_probes >= start - 1e-9)
    gain_exact, gain_probes = np.sum(with_exact - start), np.sum(with_probes - start)
    assert gain_exact > 1.0
    assert gain_probes > 0.8 * gain_exact
