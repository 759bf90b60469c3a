"""The compiled evaluator: covariance matrices, marginal likelihoods and predictions for a whole
batch of packed kernel trees, one compiled program for every structure and data size."""

import jax.numpy as jnp

from autogp.evaluator.gram import constrain, gram, is_regular_grid
from autogp.evaluator.likelihood import gaussian_log_marginal, robust_cholesky
from autogp.evaluator.predict import posterior_predictive


def log_marginal_likelihood(ops, params, noise, x, y, mask=None, *, regular_grid=False,
                            probes=None, known_var=None):
    """log p(y[mask] | tree, params, noise) per particle: ``[P]``.

    ``noise`` is the unconstrained (log) noise variance ``[P]``; ``x``/``y``/``mask`` are ``[N]``
    (shared) or ``[P, N]``. Differentiable in ``params`` and ``noise``. ``regular_grid``: see
    :func:`gram` (a fast path for evenly spaced inputs; masked padding must continue the grid).
    ``probes``: ``[P, N, S]`` columns for a stochastic, unbiased gradient (see
    :func:`gaussian_log_marginal`); ``None``: the exact gradient. ``known_var``: ``[N]`` or
    ``[P, N]`` known variances of the observations, added to the noise (``None``: none).
    """
    K = gram(ops, params, x, regular_grid=regular_grid)
    return gaussian_log_marginal(K, jnp.exp(noise), y, mask, probes=probes, known_var=known_var)


__all__ = [
    "constrain",
    "gaussian_log_marginal",
    "gram",
    "is_regular_grid",
    "log_marginal_likelihood",
    "posterior_predictive",
    "robust_cholesky",
]
