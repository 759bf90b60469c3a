"""Batched refinement (``autogp.inference.refine``) on objectives with known optima."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.inference import refine
from autogp.kernels import spec

P, S = 3, 7


def _problem():
    rng = np.random.default_rng(0)
    ops = np.zeros((P, S), np.int32)
    ops[:, 0] = [spec.SE, spec.PER, spec.BM]  # 2, 3 and 2 parameters used at the root
    params = rng.normal(size=(P, S, spec.MAX_PARAMS))
    target = rng.normal(size=(P, S, spec.MAX_PARAMS))
    return jnp.asarray(ops), jnp.asarray(params), jnp.asarray(target)


def _quadratic(target, noise_target, broken=None):
    """log posterior -0.5 |theta - target|^2 over the used entries, likelihood = the same minus
    a constant; particle ``broken`` returns NaN (a failed Cholesky upstream)."""
    used = refine.active_mask(_problem()[0])

    def fn(params, noise):
        lp = -0.5 * jnp.sum(jnp.where(used, params - target, 0.0) ** 2, axis=(1, 2))
        lp = lp - 0.5 * (noise - noise_target) ** 2
        if broken is not None:
            lp = lp.at[broken].set(jnp.nan)
        return lp, lp - 1.0

    return fn


@pytest.mark.parametrize("steps", [0, 1, 400])
def test_optimize_moves_used_entries_to_the_optimum_and_scores_the_end(steps):
    ops, params, target = _problem()
    noise = jnp.zeros(P)
    fn = _quadratic(target, 0.5)
    out = jax.jit(
        lambda p, n: refine.optimize(
            fn, ops, p, n, optimizer=refine.make_optimizer("adam", 0.05), steps=steps
        )
    )(params, noise)
    used = np.asarray(refine.active_mask(ops))
    # Unused entries never move; the reported likelihood is the one at the returned point.
    np.testing.assert_array_equal(np.asarray(out.params)[~used], np.asarray(params)[~used])
    np.testing.assert_allclose(out.log_likelihood, fn(out.params, out.noise)[1], rtol=1e-12)
    start = np.asarray(fn(params, noise)[0])
    assert np.all(np.asarray(fn(out.params, out.noise)[0]) >= start - 1e-12)
    if steps == 0:
        np.testing.assert_array_equal(out.params, params)
    if steps == 400:
        np.testing.assert_allclose(np.asarray(out.params)[used], np.asarray(target)[used],
                                   atol=1e-3)
        np.testing.assert_allclose(out.noise, 0.5, atol=1e-3)


def test_optimize_keeps_failed_particles_and_fixed_noise():
    ops, params, target = _problem()
    noise = jnp.full(P, -1.0)
    fn = _quadratic(target, 0.5, broken=1)
    out = refine.optimize(
        fn, ops, params, noise, optimizer=refine.make_optimizer("adam", 0.05), steps=50,
        learn_noise=False,
    )
    np.testing.assert_array_equal(out.noise, noise)
    np.testing.assert_array_equal(out.params[1], params[1])
    assert not bool(out.accepted[1]) and bool(out.accepted[0]) and bool(out.accepted[2])
    assert np.isnan(float(out.log_likelihood[1]))
