"""The compiled evaluator: covariance matrices, marginal likelihoods and predictions for a whole
batch of packed kernel trees, one compiled program for every structure and data size."""

import jax.numpy as jnp

from autogp.evaluator.gram import constrain, gram
from autogp.evaluator.likelihood import gaussian_log_marginal, robust_cholesky
from autogp.evaluator.predict import posterior_predictive


def log_marginal_likelihood(ops, params, noise, x, y, mask=None):
    """log p(y[mask] | tree, params, noise) per particle: ``[P]``.

    ``noise`` is the unconstrained (log) noise variance ``[P]``; ``x``/``y``/``mask`` are ``[N]``
    (shared) or ``[P, N]``. Differentiable in ``params`` and ``noise``.
    """
    K = gram(ops, params, x)
    return gaussian_log_marginal(K, jnp.exp(noise), y, mask)


__all__ = [
    "constrain",
    "gaussian_log_marginal",
    "gram",
    "log_marginal_likelihood",
    "posterior_predictive",
    "robust_cholesky",
]
