"""GP posterior predictive distributions for a batch of particles."""

from __future__ import annotations

import jax.numpy as jnp

from autogp.evaluator.gram import gram
from autogp.evaluator.likelihood import robust_cholesky
from autogp.evaluator.linalg import cho_solve, solve_triangular


def posterior_predictive(ops, params, noise, x, y, mask, x_new, *, observation_noise=False,
                         full_cov=True, known_var=None):
    """Posterior mean and covariance of f(x_new) (or of noisy observations) per particle.

    Args:
      ops, params: packed trees ``[P, S]``, ``[P, S, MAX_PARAMS]`` (unconstrained).
      noise: ``[P]`` unconstrained (log) noise variance.
      x, y, mask: training inputs ``[N]`` or ``[P, N]``, targets, bool mask.
      x_new: ``[M]`` or ``[P, M]`` prediction inputs.
      observation_noise: add the noise variance to the predictive covariance's diagonal.
      full_cov: return ``[P, M, M]`` covariances, else ``[P, M]`` variances.
      known_var: ``[N]`` or ``[P, N]`` known variances of the training observations, added to
        the noise there (``None``: none); new points get the noise alone.

    Returns ``(mean [P, M], cov)``; particles whose matrix cannot be factorised get NaN, which
    callers must treat as failed (their weights are zero by the likelihood's ``-inf``).
    """
    noise_var = jnp.exp(noise)
    K = gram(ops, params, x)
    P, N = K.shape[0], K.shape[-1]
    if known_var is not None:
        known_var = jnp.broadcast_to(known_var, (P, N))
    L, ok = robust_cholesky(K, noise_var, mask, known_var)
    mask = jnp.broadcast_to(mask, (P, N))
    ym = jnp.where(mask, jnp.broadcast_to(y, (P, N)), 0.0)
    alpha = cho_solve(L, ym[..., None])[..., 0]
    K_cross = gram(ops, params, x, x_new) * mask[..., :, None]  # [P, N, M]
    mean = jnp.einsum("pnm,pn->pm", K_cross, alpha)
    v = solve_triangular(L, K_cross, lower=True)
    if full_cov:
        cov = gram(ops, params, x_new) - jnp.einsum("pnm,pnk->pmk", v, v)
        if observation_noise:
            cov = cov + noise_var[:, None, None] * jnp.eye(cov.shape[-1], dtype=cov.dtype)
    else:
        prior_var = jnp.einsum("pmm->pm", gram(ops, params, x_new))
        cov = prior_var - jnp.sum(v * v, axis=1)
        if observation_noise:
            cov = cov + noise_var[:, None]
    bad = ~ok
    mean = jnp.where(bad[:, None], jnp.nan, mean)
    cov = jnp.where(bad.reshape((-1,) + (1,) * (cov.ndim - 1)), jnp.nan, cov)
    return mean, cov

