"""Hyperparameter refinement for a whole batch of particles in one compiled step.

Two modes over the same log posterior in unconstrained space,
``log p(y | T, theta, noise) + log p(theta | T) + log p(noise)``:

* :func:`optimize`: ``steps`` optax updates inside one ``lax.scan`` (GPJax's ``fit`` pattern).
  The particles are independent, so the gradient of the summed objective is every particle's own
  gradient, and element-wise optimisers (Adam, SGD) keep them independent too. Fast; the SMC then
  targets the posterior only approximately (each particle sits near a mode of its structure),
  which is what the forecasting defaults use.
* :func:`hmc`: Hamiltonian Monte Carlo with per-particle accept/reject, an exact MCMC kernel for
  the parameters (AutoGP.jl's behaviour).

Only the parameter entries a tree actually uses move (``active_mask``); a particle whose objective
is not finite keeps its previous values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from autogp.kernels import spec

Array = jax.Array
# log_posterior_fn(params [B,S,K], noise [B]) -> ([B] log posterior, [B] log likelihood)
LogPosteriorFn = Callable[[Array, Array], tuple[Array, Array]]


class Refined(NamedTuple):
    params: Array
    noise: Array
    log_likelihood: Array
    accepted: Array  # [B] HMC acceptance of the last step, or improvement flag for optimize


def active_mask(ops: Array) -> Array:
    """bool ``[..., S, MAX_PARAMS]``: the parameter entries the tree at ``ops`` uses."""
    counts = jnp.asarray(spec.NUM_PARAMS)[ops]
    return jnp.arange(spec.MAX_PARAMS) < counts[..., None]


def step_scale(ops: Array, period_step: float) -> Array | float:
    """Each parameter entry's factor on the optimiser's update ``[..., S, MAX_PARAMS]``:
    ``period_step`` for PER periods, 1 elsewhere (1.0 itself when ``period_step`` is 1, so the
    updates stay bit for bit those without it)."""
    if period_step == 1.0:
        return 1.0
    period = spec.PARAM_NAMES[spec.PER].index("period")
    is_period = (ops == spec.PER)[..., None] & (jnp.arange(spec.MAX_PARAMS) == period)
    return jnp.where(is_period, period_step, 1.0)


def make_optimizer(name: str, learning_rate: float) -> optax.GradientTransformation:
    if name == "adam":
        return optax.adam(learning_rate)
    if name == "sgd":
        return optax.sgd(learning_rate, momentum=0.9)
    if name == "rmsprop":
        return optax.rmsprop(learning_rate)
    raise ValueError(f"unknown optimizer {name!r}; choose adam, sgd or rmsprop")


def optimize(
    log_posterior_fn: LogPosteriorFn,
    ops: Array,
    params: Array,
    noise: Array,
    *,
    optimizer: optax.GradientTransformation,
    steps: int,
    learn_noise: bool = True,
    period_step: float = 1.0,
) -> Refined:
    """``steps`` optimiser updates of every particle's parameters (and noise) at once; PER
    periods move by ``period_step`` times the optimiser's update (:func:`step_scale`)."""
    active = active_mask(ops)
    scale = step_scale(ops, period_step)

    def loss(variables):
        p, n = variables
        log_post, log_lik = log_posterior_fn(p, n)
        # Failed particles contribute nothing (their gradient is zero by construction).
        return -jnp.sum(jnp.where(jnp.isfinite(log_post), log_post, 0.0)), (log_post, log_lik)

    def step(carry, i):
        variables, opt_state = carry
        (_, scores), grads = jax.value_and_grad(loss, has_aux=True)(variables)
        grads = (
            jnp.where(active, grads[0], 0.0),
            grads[1] if learn_noise else jnp.zeros_like(grads[1]),
        )
        grads = jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), grads)
        updates, new_state = optimizer.update(grads, opt_state, variables)
        moved = optax.apply_updates(variables, (updates[0] * scale, updates[1]))
        last = i == steps  # the extra pass only scores the end point
        variables, opt_state = jax.tree_util.tree_map(
            lambda new, old: jnp.where(last, old, new), (moved, new_state), (variables, opt_state)
        )
        return (variables, opt_state), scores

    # steps + 1 passes: every pass scores the point it starts from, so the first pass scores the
    # start and the last one the end. This keeps the refinement to one call site of the (large)
    # likelihood program (each call site is compiled separately) for the cost of one gradient.
    start = (params, noise)
    (end, _), (posts, lls) = jax.lax.scan(
        step, (start, optimizer.init(start)), jnp.arange(steps + 1)
    )
    before, after = posts[0], posts[-1]
    ll_before, ll_after = lls[0], lls[-1]
    better = jnp.isfinite(after) & (after >= jnp.where(jnp.isfinite(before), before, -jnp.inf))
    return Refined(
        params=jnp.where(better[:, None, None], end[0], params),
        noise=jnp.where(better, end[1], noise),
        log_likelihood=jnp.where(better, ll_after, ll_before),
        accepted=better,
    )


def hmc(
    log_posterior_fn: LogPosteriorFn,
    ops: Array,
    params: Array,
    noise: Array,
    *,
    key: Array,
    steps: int,
    step_size: float,
    leapfrog_steps: int,
    learn_noise: bool = True,
) -> Refined:
    """``steps`` HMC transitions per particle (identity mass, leapfrog integrator).

    Each particle accepts or rejects its own trajectory with probability
    ``min(1, exp(H(q, p) - H(q', p')))``; non-finite energies are rejected.
    """
    active = active_mask(ops).astype(params.dtype)
    noise_active = jnp.asarray(1.0 if learn_noise else 0.0, params.dtype)

    def log_post_and_grad(q):
        def total(q):
            lp, ll = log_posterior_fn(*q)
            return jnp.sum(jnp.where(jnp.isfinite(lp), lp, 0.0)), (lp, ll)

        (_, (lp, ll)), g = jax.value_and_grad(total, has_aux=True)(q)
        g = (g[0] * active, g[1] * noise_active)
        return lp, ll, g

    def kinetic(m):
        return 0.5 * (jnp.sum(m[0] ** 2, axis=(1, 2)) + jnp.sum(m[1] ** 2 * noise_active))

    def transition(carry, key):
        q, lp, ll, g = carry
        k_mom, k_acc = jax.random.split(key)
        k1, k2 = jax.random.split(k_mom)
        m0 = (
            jax.random.normal(k1, q[0].shape, q[0].dtype) * active,
            jax.random.normal(k2, q[1].shape, q[1].dtype) * noise_active,
        )

        def leapfrog(state, _):
            q, m, g = state
            m = jax.tree_util.tree_map(lambda m, g: m + 0.5 * step_size * g, m, g)
            q = jax.tree_util.tree_map(lambda q, m: q + step_size * m, q, m)
            lp_new, ll_new, g = log_post_and_grad(q)
            m = jax.tree_util.tree_map(lambda m, g: m + 0.5 * step_size * g, m, g)
            return (q, m, g), (lp_new, ll_new)

        (q_new, m_new, g_new), (lps, lls) = jax.lax.scan(
            leapfrog, (q, m0, g), None, length=leapfrog_steps
        )
        lp_new, ll_new = lps[-1], lls[-1]
        log_accept = (lp_new - kinetic(m_new)) - (lp - kinetic(m0))
        u = jax.random.uniform(k_acc, lp.shape)
        accept = jnp.isfinite(log_accept) & (jnp.log(u) < log_accept)
        q = (
            jnp.where(accept[:, None, None], q_new[0], q[0]),
            jnp.where(accept, q_new[1], q[1]),
        )
        g = (
            jnp.where(accept[:, None, None], g_new[0], g[0]),
            jnp.where(accept, g_new[1], g[1]),
        )
        return (q, jnp.where(accept, lp_new, lp), jnp.where(accept, ll_new, ll), g), accept

    lp, ll, g = log_post_and_grad((params, noise))
    keys = jax.random.split(key, steps)
    (q, _, ll, _), accepts = jax.lax.scan(transition, ((params, noise), lp, ll, g), keys)
    return Refined(params=q[0], noise=q[1], log_likelihood=ll, accepted=accepts[-1])
