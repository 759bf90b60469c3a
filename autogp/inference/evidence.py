"""Structure weights from the Laplace evidence of the particles' modes.

The default refinement optimises each particle's parameters, so after the last round every
particle sits near a mode of its structure's posterior, and the SMC's weights and particle
counts estimate p(T | y) with Monte Carlo noise of order 1 / sqrt(P) per structure: two seeds
that find the same structures can weigh them 0.8 / 0.2 and 0.3 / 0.7, and forecasts swing with
them. For particles that are point masses at modes the mass each mode should carry is its
Laplace evidence

    log Z_m = log p(T) + log p(y, theta* | T) + k/2 log(2 pi) - 1/2 log det A,

``A`` the negative Hessian of the log joint (the tempered likelihood eta * log p(y | T, theta)
plus the parameter priors) over the mode's k unconstrained coordinates. Given the modes that
were found, these weights do not depend on how many particles reached each mode.

Modes are found among the particles on the host: particles with the same tree whose log joints
agree (copies and mirror images: ``LIN * LIN`` with its factors swapped is the same function) or
whose parameters lie within the mode's Laplace width of each other are one mode. A tree with
commuting children that are the same subtree has 2 mirror-image modes per such node, counted
by :func:`symmetry_count`. Each mode's mass is shared equally by its particles, so everything
downstream (mixtures, decomposition, draws) reads ordinary particle weights.

The Hessian is a central difference of the exact gradient (the evaluator's custom VJPs have
no forward mode): two batched gradients per coordinate, in one compiled program per shape
whose loop runs over the largest number of active coordinates.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from autogp._xla import jit
from autogp.inference import exported, rejuvenation
from autogp.inference import grammar as gr
from autogp.inference.refine import active_mask
from autogp.inference.rounds import Data, likelihood_fn
from autogp.kernels import spec

Array = jax.Array

#: Central-difference step in unconstrained units (float64: truncation ~h^2, rounding ~1e-12/h).
STEP = 1e-4


def _coordinates(ops: Array, learn_noise: bool) -> tuple[Array, Array]:
    """Per particle, the flat indices of its active coordinates first (params then noise) and
    how many there are: ``order [B, K]``, ``count [B]``; K = S * MAX_PARAMS + 1."""
    active = active_mask(ops).reshape(ops.shape[0], -1)
    noise = jnp.full((ops.shape[0], 1), learn_noise)
    active = jnp.concatenate([active, noise], axis=1)
    order = jnp.argsort(~active, axis=1, stable=True)
    return order, jnp.sum(active, axis=1)


def _log_joint_hessians(grammar: gr.Grammar, num_particles: int, num_inducing: int,
                        learn_noise: bool, ops: Array, params: Array, noise: Array,
                        data: Data) -> tuple[Array, Array, Array]:
    """Over flattened ``[G * P]`` particles of G series on all of ``data``: the log joint
    ``[B]`` (tempered likelihood plus parameter priors), its Hessian over each particle's active
    coordinates ``[B, K, K]`` (rows and columns in the order of :func:`_coordinates`; entries
    past ``count`` are 0) and ``count [B]``: see :func:`log_joint_hessians`."""
    B, S, M = params.shape
    K = S * M + 1
    # The log posterior the refinement climbs, here on all the data.
    log_posterior = rejuvenation.log_posterior_fn(
        grammar, likelihood_fn(data, data.length, num_particles, num_inducing), ops)

    def joint(flat):
        return log_posterior(flat[:, :-1].reshape(B, S, M), flat[:, -1])[0]

    def total(flat):
        lj = joint(flat)
        return jnp.sum(jnp.where(jnp.isfinite(lj), lj, 0.0))

    grad = jax.grad(total)
    flat0 = jnp.concatenate([params.reshape(B, -1), noise[:, None]], axis=1)
    order, count = _coordinates(ops, learn_noise)
    rows = jnp.arange(B)

    def column(j, H):
        e = jnp.zeros((B, K)).at[rows, order[:, j]].set(jnp.where(j < count, STEP, 0.0))
        diff = (grad(flat0 + e) - grad(flat0 - e)) / (2 * STEP)  # [B, K] d(grad)/d(coord j)
        return H.at[:, :, j].set(jnp.take_along_axis(diff, order, axis=1))

    # A loop over the largest active count (not K): trees use few of their slots.
    H = jax.lax.fori_loop(0, jnp.max(count), column, jnp.zeros((B, K, K)))
    inside = jnp.arange(K) < count[:, None]
    H = jnp.where(inside[:, :, None] & inside[:, None, :], H, 0.0)
    return joint(flat0), H, count


_jitted_hessians = jit(_log_joint_hessians, static_argnums=(0, 1, 2, 3))


def _program(grammar, num_particles, num_inducing, learn_noise, ops, params, noise,
             data) -> exported.Program:
    return exported.Program("laplace_hessians", _log_joint_hessians,
                            (grammar, num_particles, num_inducing, learn_noise),
                            (ops, params, noise, data))


def prepare_program(grammar: gr.Grammar, data: Data, *, num_particles: int,
                    num_inducing: int = 0, learn_noise: bool = True) -> None:
    """Start compiling the Hessian program of a fit of ``data`` (G series of ``num_particles``)
    beside its rounds (``exported.prepare``), so a cold start does not wait for it after them."""
    if not exported.enabled():
        return
    G, S = data.x.shape[0], grammar.num_slots
    real = jax.dtypes.canonicalize_dtype(float)
    B = G * num_particles
    shapes = (jax.ShapeDtypeStruct((B, S), jnp.int32),
              jax.ShapeDtypeStruct((B, S, spec.MAX_PARAMS), real),
              jax.ShapeDtypeStruct((B,), real), exported.shapes(data))
    exported.prepare(exported.directory(),
                     [_program(grammar, num_particles, num_inducing, learn_noise, *shapes)])


def log_joint_hessians(grammar: gr.Grammar, num_particles: int, num_inducing: int,
                       learn_noise: bool, ops: Array, params: Array, noise: Array,
                       data: Data) -> tuple[Array, Array, Array]:
    """Over flattened ``[G * P]`` particles of G series on all of ``data``: the log joint
    ``[B]`` (tempered likelihood plus parameter priors), its Hessian over each particle's active
    coordinates ``[B, K, K]`` (rows and columns in the order of :func:`_coordinates`; entries
    past ``count`` are 0) and ``count [B]``. One compiled program per shape: exported (kept on
    disk beside the rounds, :mod:`autogp.inference.exported`) or jitted."""
    args = (jnp.asarray(ops, dtype=jnp.int32), jnp.asarray(params), jnp.asarray(noise), data)
    static = (grammar, num_particles, num_inducing, learn_noise)
    if not exported.enabled():
        return _jitted_hessians(*static, *args)
    out_treedef = jax.tree_util.tree_structure((0, 0, 0))
    return exported.call(exported.directory(), _program(*static, *args), out_treedef)


def prior_precisions(grammar: gr.Grammar, ops: np.ndarray, learn_noise: bool) -> list[np.ndarray]:
    """Per particle, the prior precision of each active coordinate (the order of the Hessian)."""
    std = np.asarray(grammar.prior_std_table)[ops]  # [B, S, M]
    active = np.asarray(active_mask(jnp.asarray(ops)))
    noise_std = float(grammar.noise_prior[1])
    out = []
    for b in range(ops.shape[0]):
        s = std[b][active[b]]
        if learn_noise:
            s = np.append(s, noise_std)
        out.append(1.0 / s**2)
    return out


def laplace_log_evidence(log_joint: float, hessian: np.ndarray, precision: np.ndarray,
                         ) -> tuple[float, np.ndarray]:
    """``log p(y, theta*) + k/2 log 2 pi - 1/2 log det A`` and ``A``, the negative Hessian with
    its eigenvalues raised to at least the smallest prior precision: at a mode A is the prior's
    precision plus a positive semi-definite likelihood term, so a flatter direction only means
    the optimiser stopped short of the mode, and its width is bounded by the prior's."""
    k = hessian.shape[0]
    if k == 0:
        return float(log_joint), np.zeros((0, 0))
    A = -0.5 * (hessian + hessian.T)
    eigval, eigvec = np.linalg.eigh(A)
    eigval = np.maximum(eigval, float(np.min(precision)))
    A = (eigvec * eigval) @ eigvec.T
    return float(log_joint + 0.5 * k * math.log(2 * math.pi) - 0.5 * np.sum(np.log(eigval))), A


def _subtree(ops: np.ndarray, i: int) -> tuple:
    if i >= len(ops) or ops[i] == spec.EMPTY:
        return ()
    return (int(ops[i]), _subtree(ops, 2 * i + 1), _subtree(ops, 2 * i + 2))


def _mirrored_nodes(ops: np.ndarray) -> list[int]:
    """Slots of ``+`` and ``*`` nodes whose two children are the same subtree, deepest first."""
    S = len(ops)
    return [i for i in reversed(range(S)) if ops[i] in (spec.PLUS, spec.TIMES)
            and 2 * i + 2 < S and _subtree(ops, 2 * i + 1) == _subtree(ops, 2 * i + 2)]


def _subtree_slots(root: int, S: int) -> np.ndarray:
    """The slots of the subtree at ``root``, level by level, left to right."""
    out, width, first = [], 1, root
    while first < S:
        out.extend(range(first, min(first + width, S)))
        first, width = 2 * first + 1, 2 * width
    return np.asarray(out, dtype=int)


def symmetry_count(ops: np.ndarray) -> int:
    """Mirror-image modes of a tree: 2 per ``+`` or ``*`` node whose two children are the same
    subtree (swapping them gives the same function at different parameter values)."""
    return 2 ** len(_mirrored_nodes(np.asarray(ops)))


def canonical_params(ops: np.ndarray, params: np.ndarray) -> np.ndarray:
    """``params [S, M]`` of the mirror image whose identical children are in lexicographic
    order of their parameters (bottom-up), so mirror images of one mode compare equal."""
    ops, params = np.asarray(ops), np.array(params, dtype=np.float64)
    S = len(ops)
    for i in _mirrored_nodes(ops):
        left, right = _subtree_slots(2 * i + 1, S), _subtree_slots(2 * i + 2, S)
        if tuple(params[right].ravel()) < tuple(params[left].ravel()):
            params[left], params[right] = params[right].copy(), params[left].copy()
    return params


def mode_log_weights(ops: np.ndarray, flat: np.ndarray, log_joint: np.ndarray,
                     log_evidence: np.ndarray, widths: list[np.ndarray],
                     coords: list[np.ndarray], *, same_joint: float = 1e-6,
                     mirrors: bool = True) -> np.ndarray:
    """Particle log weights: each mode's Laplace mass (times its mirror images), shared equally
    by the particles in it. ``flat [B, K]`` all coordinates; ``coords[b]`` particle b's active
    flat indices; ``widths[b]`` its ``A``. Particles with a non-finite evidence get ``-inf``.
    ``mirrors=False``: ``log_evidence`` is a score at the mode, not an integral over the
    parameters, so mirror images (the same function) add nothing."""
    B = ops.shape[0]
    order = np.argsort(-np.where(np.isfinite(log_evidence), log_evidence, -np.inf), kind="stable")
    mode_of = np.full(B, -1)
    reps: list[int] = []
    for b in order:
        if not np.isfinite(log_evidence[b]):
            continue
        for m, r in enumerate(reps):
            if not np.array_equal(ops[b], ops[r]):
                continue
            if abs(log_joint[b] - log_joint[r]) <= same_joint * max(1.0, abs(log_joint[r])):
                mode_of[b] = m
                break
            d = flat[b, coords[r]] - flat[r, coords[r]]
            if d @ widths[r] @ d <= max(len(d), 1):  # within the mode's Laplace width
                mode_of[b] = m
                break
        else:
            mode_of[b] = len(reps)
            reps.append(b)
    out = np.full(B, -np.inf)
    for m, r in enumerate(reps):
        members = np.flatnonzero(mode_of == m)
        mass = log_evidence[r] + (math.log(symmetry_count(ops[r])) if mirrors else 0.0)
        out[members] = mass - math.log(len(members))
    return out


class ParticleEvidence(NamedTuple):
    """Laplace evidence of flattened particles ``[B]`` and what grouping them into modes needs."""

    log_evidence: np.ndarray  # [B] log Z incl. log p(T); -inf where not finite
    log_joint: np.ndarray  # [B]
    flat: np.ndarray  # [B, K] every coordinate (params, then noise)
    coords: list[np.ndarray]  # per particle: its active flat indices, the Hessian's order
    widths: list[np.ndarray]  # per particle: A (floored negative Hessian)


def particle_evidence(grammar: gr.Grammar, ops, params, noise, data: Data, *,
                      num_particles: int, num_inducing: int = 0,
                      learn_noise: bool = True, power: float = 1.0) -> ParticleEvidence:
    """The Laplace evidence of every particle of G series (``ops [G * P, S]`` etc., series
    after series) on all of ``data``. ``power`` tau tempers it: ``log p(T) + tau log p(y | T)``
    (the modes' widths, and so which particles share a mode, do not change)."""
    # Mirror images are the same function: compute (and later compare) every particle in the
    # canonical one, so copies of a mode found as different mirror images are one mode.
    ops = np.asarray(ops)
    params = np.stack([canonical_params(o, p) for o, p in zip(ops, np.asarray(params),
                                                               strict=True)])
    ops_j = jnp.asarray(ops)
    log_joint, H, count = log_joint_hessians(grammar, num_particles, num_inducing, learn_noise,
                                             ops_j, jnp.asarray(params), jnp.asarray(noise),
                                             data)
    ops, log_joint, H, count = (np.asarray(a) for a in (ops, log_joint, H, count))
    order = np.asarray(_coordinates(ops_j, learn_noise)[0])
    log_prior_t = np.asarray(gr.log_prior_structure(grammar, ops_j))
    precisions = prior_precisions(grammar, ops, learn_noise)
    flat = np.concatenate([np.asarray(params).reshape(len(ops), -1),
                           np.asarray(noise)[:, None]], axis=1)
    log_z = np.full(len(ops), -np.inf)
    widths, coords = [], []
    for b in range(len(ops)):
        k = int(count[b])
        coords.append(order[b, :k])
        if not (np.isfinite(log_joint[b]) and np.all(np.isfinite(H[b, :k, :k]))):
            widths.append(np.eye(k))
            continue
        lz, A = laplace_log_evidence(log_joint[b], H[b, :k, :k], precisions[b])
        widths.append(A)
        log_z[b] = power * lz + log_prior_t[b]
    return ParticleEvidence(log_z, log_joint, flat, coords, widths)


def laplace_log_weights(ops: np.ndarray, evidence: ParticleEvidence,
                        members: np.ndarray, *, mirrors: bool = True) -> np.ndarray:
    """Normalised log weights of the particles ``members`` (indices into ``evidence``) of one
    series: its modes' Laplace masses (or, with ``evidence.log_evidence`` replaced by
    :func:`prequential_log_scores` and ``mirrors=False``, their scores), each shared by the
    particles in it."""
    members = np.asarray(members)
    lw = mode_log_weights(
        np.asarray(ops)[members], evidence.flat[members], evidence.log_joint[members],
        evidence.log_evidence[members], [evidence.widths[b] for b in members],
        [evidence.coords[b] for b in members], mirrors=mirrors)
    if not np.isfinite(np.max(lw)):
        return lw
    return lw - logsumexp(lw)


def prequential_log_scores(grammar: gr.Grammar, ops, params, noise, data: Data, *,
                           num_particles: int, num_inducing: int = 0) -> np.ndarray:
    """``log p(T) + eta log p(y_{h+1..n} | y_{1..h}, theta)`` of flattened particles ``[G * P]``
    at their own parameters, ``h`` the first half of each series (rounded up): the sum of the
    one-step-ahead predictive log densities over the second half, the forecasting score the
    SMC's incremental weights accumulate as the data arrive (there at parameters refitted
    before each step). ``-inf`` where not finite."""
    ops, params, noise = (jnp.asarray(a) for a in (ops, params, noise))
    score = np.asarray(_second_half_log_likelihood(num_particles, num_inducing, ops, params,
                                                   noise, data), dtype=np.float64)
    score = score + np.asarray(gr.log_prior_structure(grammar, ops))
    return np.where(np.isfinite(score), score, -np.inf)


def second_half_log_likelihood(ops, params, noise, data: Data, *, num_particles: int,
                               num_inducing: int = 0) -> np.ndarray:
    """``log p(y_{h+1..n} | y_{1..h}, theta)`` of flattened particles ``[G * P]`` at their own
    parameters (``h`` the first half, rounded up): the one-step-ahead predictive log densities
    of the second half summed. ``-inf`` where not finite."""
    ops, params, noise = (jnp.asarray(a) for a in (ops, params, noise))
    score = np.asarray(_second_half_log_likelihood(num_particles, num_inducing, ops, params,
                                                   noise, data), dtype=np.float64)
    return np.where(np.isfinite(score), score, -np.inf)


@functools.partial(jit, static_argnums=(0, 1))
def _second_half_log_likelihood(num_particles, num_inducing, ops, params, noise, data):
    half = (data.length + 1) // 2
    full = likelihood_fn(data, data.length, num_particles, num_inducing)(ops, params, noise)
    first = likelihood_fn(data, half, num_particles, num_inducing)(ops, params, noise)
    return full - first


__all__ = ["ParticleEvidence", "laplace_log_evidence", "laplace_log_weights",
           "prequential_log_scores", "second_half_log_likelihood",
           "log_joint_hessians", "mode_log_weights", "particle_evidence", "symmetry_count"]
