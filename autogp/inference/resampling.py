"""Resampling schemes for SMC: each maps normalised log weights ``[P]`` to ancestor indices
``[P]`` with ``E[count_p] = P w_p`` (unbiased)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

SCHEMES = ("multinomial", "systematic", "stratified", "residual")


def _from_uniforms(weights, u):
    """Ancestors for sorted uniforms ``u`` in [0, 1) by inverting the weights' CDF."""
    cdf = jnp.cumsum(weights)
    cdf = cdf.at[-1].set(1.0)  # guard against round-off
    return jnp.clip(jnp.searchsorted(cdf, u, side="right"), 0, weights.shape[0] - 1)


def multinomial(log_weights, *, key):
    P = log_weights.shape[0]
    return jax.random.categorical(key, log_weights, shape=(P,)).astype(jnp.int32)


def systematic(log_weights, *, key):
    P = log_weights.shape[0]
    u = (jax.random.uniform(key, ()) + jnp.arange(P)) / P
    return _from_uniforms(jnp.exp(log_weights), u).astype(jnp.int32)


def stratified(log_weights, *, key):
    P = log_weights.shape[0]
    u = (jax.random.uniform(key, (P,)) + jnp.arange(P)) / P
    return _from_uniforms(jnp.exp(log_weights), u).astype(jnp.int32)


def residual(log_weights, *, key):
    """floor(P w_p) deterministic copies, the rest multinomial on the residual weights."""
    P = log_weights.shape[0]
    expected = P * jnp.exp(log_weights)
    copies = jnp.floor(expected).astype(jnp.int32)
    # Deterministic part: ancestor of slot j is the p with cumsum(copies) covering j.
    ends = jnp.cumsum(copies)
    slots = jnp.arange(P)
    deterministic = jnp.searchsorted(ends, slots, side="right")
    num_det = ends[-1]
    rest = expected - copies
    rest_log = jnp.where(rest > 0, jnp.log(jnp.maximum(rest, 1e-300)), -jnp.inf)
    safe = jnp.where(jnp.any(rest > 0), rest_log, jnp.zeros_like(rest_log))
    random = jax.random.categorical(key, safe, shape=(P,))
    return jnp.where(slots < num_det, deterministic, random).astype(jnp.int32)


def resample(scheme: str, log_weights, *, key):
    """Ancestor indices by the named scheme (one of ``SCHEMES``)."""
    if scheme == "multinomial":
        return multinomial(log_weights, key=key)
    if scheme == "systematic":
        return systematic(log_weights, key=key)
    if scheme == "stratified":
        return stratified(log_weights, key=key)
    if scheme == "residual":
        return residual(log_weights, key=key)
    raise ValueError(f"unknown resampling scheme {scheme!r}; choose one of {SCHEMES}")
