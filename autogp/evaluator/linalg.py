"""Batched Cholesky factorisations and triangular solves that cannot deadlock XLA:CPU.

jaxlib's CPU LAPACK kernels (0.10) split a batched call across XLA's intra-op thread pool and
block until the pieces finish (``ParallelBatchMap``). When two such calls are independent in a
program, XLA runs them at the same time on two pool threads; with a pool as small as the
machine (two threads on two cores) both threads then wait for work that no thread is left to
run, and the program never returns. It happens at random, more often at large sizes (a batch
of 8 solves of 256 x 1,000 stalls within ten runs), and a gradient has many such pairs.

On CPU these functions therefore loop over the batch (``lax.map``): each LAPACK call then has
a batch of one and runs on the calling thread. Other platforms (GPU solvers have no such
pool) get the batched call. ``scripts/bench_linalg.py`` times the two side by side.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl


def _per_matrix(fn, *arrays):
    """``fn`` applied to each matrix of arrays sharing the leading batch shape ``[..., n, k]``,
    one LAPACK call at a time on CPU and in one batched call elsewhere."""
    batch = jnp.broadcast_shapes(*(a.shape[:-2] for a in arrays))
    if not batch:
        return fn(*arrays)
    arrays = tuple(jnp.broadcast_to(a, batch + a.shape[-2:]) for a in arrays)
    flat = tuple(a.reshape((-1,) + a.shape[-2:]) for a in arrays)

    def looped():
        return jax.lax.map(lambda xs: fn(*xs), flat)

    def batched():
        return fn(*flat)

    out = jax.lax.platform_dependent(cpu=looped, default=batched)
    return out.reshape(batch + out.shape[-2:])


def cholesky(A):
    """Lower Cholesky factors of ``A`` ``[..., n, n]`` (NaN where a matrix is not positive
    definite, as :func:`jax.numpy.linalg.cholesky`)."""
    return _per_matrix(jnp.linalg.cholesky, A)


def solve_triangular(L, B, *, lower: bool = True, trans: int = 0):
    """``op(L)^-1 B`` for triangular ``L`` ``[..., n, n]`` and ``B`` ``[..., n, k]`` (batch
    dimensions broadcast); ``trans`` as :func:`jax.scipy.linalg.solve_triangular`."""
    return _per_matrix(lambda l, b: jsl.solve_triangular(l, b, lower=lower, trans=trans), L, B)


def cho_solve(L, B):
    """``(L L^T)^-1 B`` for lower Cholesky factors ``L`` ``[..., n, n]`` and ``B``
    ``[..., n, k]``."""
    return _per_matrix(lambda l, b: jsl.cho_solve((l, True), b), L, B)


__all__ = ["cho_solve", "cholesky", "solve_triangular"]
