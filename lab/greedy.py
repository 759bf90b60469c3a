"""Greedy structure search scored by BIC (the Automatic Statistician, Duvenaud et al. 2013).

:func:`greedy_search` is a deterministic-given-the-key baseline for the SMC:

1. Score every atom with positive grammar weight.
2. Expand the best tree T by every one-step edit: replace any leaf A by ``A + B`` or ``A * B``,
   or the whole tree by ``T + B`` or ``T * B``, for every atom B with positive weight (and
   each of ``+`` and ``*`` that has positive weight), within ``grammar.max_depth``.
3. Move to the best candidate if its BIC is strictly lower than T's, otherwise stop.

Scoring a structure: its parameters and noise are fitted by ``refine.optimize`` on the log
posterior ``log p(y | T, theta, noise) + log p(theta | T) + log p(noise)`` (the grammar's priors
act as a mild regulariser, so "maximum likelihood" is the likelihood at the MAP estimate) from
``restarts`` random draws of the parameter prior; the restart with the highest log likelihood
counts, and

    BIC = -2 * log_likelihood + (number of parameters + 1 for the noise) * log(n).

The fits (candidates times restarts) of a step run batched, in chunks of one fixed size (the
last chunk padded), so the whole search compiles a single program.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from autogp.evaluator import is_regular_grid, log_marginal_likelihood
from autogp.inference import grammar as gr
from autogp.inference import refine, smc
from autogp.inference.settings import RefineSettings
from autogp.kernels import Kernel, depth, kernel_class, leaves, pack, spec, structure

Array = jax.Array

MIN_BUCKET = 8


def _bucket(n: int) -> int:
    return max(MIN_BUCKET, 1 << max(0, n - 1).bit_length())


def _atom(op: int) -> Kernel:
    return kernel_class(op)()


def expansions(expr: Kernel, atoms: tuple[int, ...], operators: tuple[int, ...]) -> list[Kernel]:
    """Every one-step edit of ``expr``: ``T op B`` and each leaf ``A -> A op B`` (structure only;
    duplicates are not removed and the depth is not checked)."""

    def grow(node: Kernel) -> list[Kernel]:
        return [kernel_class(o)(node, _atom(b)) for o in operators for b in atoms]

    def replace_leaves(node: Kernel) -> list[Kernel]:
        if not node.children:
            return grow(node)
        left, right = node.children
        out = [node.from_parts((new, right), node.params) for new in replace_leaves(left)]
        out += [node.from_parts((left, new), node.params) for new in replace_leaves(right)]
        return out

    return grow(expr) + (replace_leaves(expr) if expr.children else [])


@functools.partial(
    jax.jit,
    static_argnames=(
        "grammar",
        "optimizer",
        "learning_rate",
        "steps",
        "learn_noise",
        "regular_grid",
    ),
)
def _fit_batch(
    grammar, ops, params, noise, x, y, *, optimizer, learning_rate, steps, learn_noise, regular_grid
):

    def log_posterior(p, n):
        ll = log_marginal_likelihood(ops, p, n, x, y, None, regular_grid=regular_grid)
        lp = ll + gr.log_prior_params(grammar, ops, p) + gr.log_prior_noise(grammar, n)
        return lp, ll

    refined = refine.optimize(
        log_posterior,
        ops,
        params,
        noise,
        optimizer=refine.make_optimizer(optimizer, learning_rate),
        steps=steps,
        learn_noise=learn_noise,
    )
    return refined.params, refined.noise, refined.log_likelihood


def compilation_count() -> int:
    """Programs held by the jitted batched fit (its own cache)."""
    return _fit_batch._cache_size()


def _draw_params(grammar: gr.Grammar, ops: np.ndarray, key: Array):
    """Parameters and noise of the fixed trees ``ops`` [B, S] drawn from their priors."""
    k_params, k_noise = jax.random.split(key)
    mean = np.asarray(grammar.prior_mean_table)[ops]
    std = np.asarray(grammar.prior_std_table)[ops]
    used = (np.arange(spec.MAX_PARAMS) < spec.NUM_PARAMS[ops][..., None]) & (ops != 0)[..., None]
    z = np.asarray(jax.random.normal(k_params, mean.shape, jnp.float64))
    params = np.where(used, mean + std * z, 0.0)
    m, s = grammar.noise_prior
    noise = m + s * np.asarray(jax.random.normal(k_noise, (ops.shape[0],), jnp.float64))
    return params, noise


def num_parameters(ops: np.ndarray) -> np.ndarray:
    """Number of kernel parameters of each tree in ``ops`` [..., S] (the noise not included)."""
    return np.sum(spec.NUM_PARAMS[np.asarray(ops)], axis=-1)


def greedy_search(
    x,
    y,
    grammar: gr.Grammar,
    settings: RefineSettings,
    *,
    key: Array,
    max_size: int | None = None,
    restarts: int = 4,
    steps: int | None = None,
    batch_size: int | None = None,
) -> smc.SMCResult:
    """Greedy BIC search over kernel structures on normalised ``x`` and standardised ``y``.

    Args:
      x, y: ``[N]`` normalised inputs (in [0, 1]) and standardised targets.
      grammar: the atoms and operators with positive weight, ``max_depth`` and the priors.
      settings: ``optimizer``, ``learning_rate``, ``steps`` and ``learn_noise`` (``mode`` is
        ignored: the search always optimises).
      key: JAX PRNG key for the random restarts; the same key gives the same search.
      max_size: the largest number of atoms in a tree (each step adds one atom, so at most
        ``max_size - 1`` expansion steps); default: only ``max_depth`` limits the search.
      restarts: random initialisations from the prior per candidate structure.
      steps: optimiser steps per fit (default ``settings.steps``).
      batch_size: fits per compiled call; a step's ``candidates * restarts`` fits run in
        chunks of this size (the last one padded), so the whole search compiles one program.
        Default: the first step's fit count rounded up to a power of two (at least 8).

    Returns:
      A one-particle :class:`~autogp.inference.smc.SMCResult`: the best tree (``ops`` [1, S],
      ``params`` [1, S, MAX_PARAMS], ``noise`` [1]), ``log_weights = [0.0]``,
      ``log_marginal_likelihood`` = its fitted log likelihood (at the MAP, not an evidence), and
      ``history["path"]``: the accepted structures as ``(text, BIC)``, strictly decreasing in
      BIC; ``history["candidates"]``: the number of structures scored at each step.
    """
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    if x.shape != y.shape or len(x) < 2:
        raise ValueError(f"x and y must have the same length >= 2, got {x.shape}, {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite; clean the data first (autogp.data does)")
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts}")
    weights = np.asarray(grammar.weights)
    atoms = tuple(op for op in spec.ATOMS if weights[op] > 0)
    operators = tuple(op for op in (spec.PLUS, spec.TIMES) if weights[op] > 0)
    n = len(y)
    log_n = math.log(n)
    fit_options = dict(
        optimizer=settings.optimizer,
        learning_rate=float(settings.learning_rate),
        steps=int(settings.steps if steps is None else steps),
        learn_noise=bool(settings.learn_noise),
        regular_grid=is_regular_grid(x),
    )
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    chunk = _bucket(len(atoms) * restarts) if batch_size is None else int(batch_size)
    if chunk < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")

    def score(exprs: list[Kernel], step_key: Array):
        """Fit every structure; returns (bic [C], params [C, S, K], noise [C], ll [C])."""
        ops, _ = pack(exprs, grammar.max_depth)
        C, R = len(exprs), restarts
        flat_ops = np.repeat(ops, R, axis=0)
        params, noise = _draw_params(grammar, flat_ops, step_key)
        # Fixed-size chunks (the last one padded with copies of row 0): one compiled program.
        chunks = -(-C * R // chunk)
        take = np.arange(chunks * chunk)
        take[C * R :] = 0
        out = [
            _fit_batch(
                grammar,
                jnp.asarray(flat_ops[rows]),
                jnp.asarray(params[rows]),
                jnp.asarray(noise[rows]),
                xj,
                yj,
                **fit_options,
            )
            for rows in take.reshape(chunks, chunk)
        ]
        p, nz, ll = (np.concatenate([np.asarray(o[j]) for o in out]) for j in range(3))
        p, nz, ll = np.asarray(p)[: C * R], np.asarray(nz)[: C * R], np.asarray(ll)[: C * R]
        ll = np.where(np.isfinite(ll), ll, -np.inf).reshape(C, R)
        best = np.argmax(ll, axis=1)
        rows = np.arange(C) * R + best
        best_ll = ll[np.arange(C), best]
        k = num_parameters(ops) + 1
        bic = np.where(np.isfinite(best_ll), -2.0 * best_ll + k * log_n, np.inf)
        return bic, p[rows], nz[rows], best_ll

    candidates = [_atom(op) for op in atoms]
    bic, params, noise, ll = score(candidates, jax.random.fold_in(key, 0))
    i = int(np.argmin(bic))
    if not np.isfinite(bic[i]):
        raise FloatingPointError("every base kernel failed to fit; the data may be degenerate")
    best = (candidates[i], bic[i], params[i], noise[i], ll[i])
    path = [(structure(best[0]), float(best[1]))]
    counts = [len(candidates)]
    seen = {structure(c) for c in candidates}
    limit = math.inf if max_size is None else int(max_size)
    while len(leaves(best[0])) < limit:
        fresh: dict[str, Kernel] = {}
        for cand in expansions(best[0], atoms, operators):
            text = structure(cand)
            if text not in seen and text not in fresh and depth(cand) <= grammar.max_depth:
                fresh[text] = cand
        if not fresh:
            break
        candidates = list(fresh.values())
        seen.update(fresh)
        counts.append(len(candidates))
        bic, params, noise, ll = score(candidates, jax.random.fold_in(key, len(counts)))
        i = int(np.argmin(bic))
        if not bic[i] < best[1]:
            break
        best = (candidates[i], bic[i], params[i], noise[i], ll[i])
        path.append((structure(best[0]), float(best[1])))

    expr, _, best_params, best_noise, best_ll = best
    ops, _ = pack([expr], grammar.max_depth)
    return smc.SMCResult(
        ops=ops,
        params=np.asarray(best_params)[None],
        noise=np.asarray([best_noise]),
        log_weights=np.zeros(1),
        log_marginal_likelihood=float(best_ll),
        history={"path": path, "candidates": counts},
    )


__all__ = ["expansions", "greedy_search", "num_parameters"]
