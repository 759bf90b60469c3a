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


def inverse(A):
    """``A^-1`` for square ``A`` ``[..., n, n]`` (LU, as :func:`jax.numpy.linalg.inv`), one
    matrix at a time on CPU."""
    return _per_matrix(jnp.linalg.inv, A)


def cho_solve(L, B):
    """``(L L^T)^-1 B`` for lower Cholesky factors ``L`` ``[..., n, n]`` and ``B``
    ``[..., n, k]``."""
    return _per_matrix(lambda l, b: jsl.cho_solve((l, True), b), L, B)


#: Matrices up to this size are inverted by one triangular solve against the identity and one
#: matrix product; larger ones are split in two.
INVERSE_LEAF = 64


def _lower_inverse(L):
    """``L^-1`` of lower triangular ``L`` ``[..., n, n]`` by 2 x 2 blocks, recursively.

    With ``L = [[A, 0], [C, D]]``: ``L^-1 = [[A^-1, 0], [-(D^-1 C) A^-1, D^-1]]``, the lower
    block by two triangular solves. That is about n^3 / 3 flops, as LAPACK's ``trtri``, against
    the n^3 of a solve against the whole identity.
    """
    n = L.shape[-1]
    if n <= INVERSE_LEAF:
        eye = jnp.broadcast_to(jnp.eye(n, dtype=L.dtype), L.shape)
        return jsl.solve_triangular(L, eye, lower=True)
    k = n // 2
    A, C, D = L[..., :k, :k], L[..., k:, :k], L[..., k:, k:]
    A_inv, D_inv = _lower_inverse(A), _lower_inverse(D)
    Y = jsl.solve_triangular(D, C, lower=True)  # D^-1 C
    # -(D^-1 C) A^-1 = -(A^-T (D^-1 C)^T)^T
    lower = -jnp.swapaxes(
        jsl.solve_triangular(A, jnp.swapaxes(Y, -1, -2), lower=True, trans=1), -1, -2)
    top = jnp.concatenate([A_inv, jnp.zeros(A_inv.shape[:-1] + (n - k,), L.dtype)], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([lower, D_inv], axis=-1)], axis=-2)


def _gram_of_lower(W):
    """``W^T W`` for lower triangular ``W`` ``[..., n, n]`` by 2 x 2 blocks (LAPACK's
    ``lauum``): with ``W = [[P, 0], [Q, R]]`` it is ``[[P^T P + Q^T Q, Q^T R], [R^T Q, R^T R]]``,
    2 n^3 / 3 flops with dense block products (``lauum``: n^3 / 3) against the 2 n^3 of the
    plain product."""
    n = W.shape[-1]
    if n <= INVERSE_LEAF:
        return jnp.swapaxes(W, -1, -2) @ W
    k = n // 2
    P, Q, R = W[..., :k, :k], W[..., k:, :k], W[..., k:, k:]
    Qt = jnp.swapaxes(Q, -1, -2)
    top_left = _gram_of_lower(P) + Qt @ Q
    bottom_left = jnp.swapaxes(R, -1, -2) @ Q
    top = jnp.concatenate([top_left, jnp.swapaxes(bottom_left, -1, -2)], axis=-1)
    bottom = jnp.concatenate([bottom_left, _gram_of_lower(R)], axis=-1)
    return jnp.concatenate([top, bottom], axis=-2)


def inverse_from_cholesky(L):
    """``(L L^T)^-1`` for lower Cholesky factors ``L`` ``[..., n, n]``: ``L^-T L^-1`` by
    blocks, in about n^3 flops (LAPACK's ``potri``: 2 n^3 / 3) instead of the 2 n^3 of
    ``cho_solve`` against the identity; one matrix at a time on CPU. Symmetric to rounding."""
    return _per_matrix(lambda l: _gram_of_lower(_lower_inverse(l)), L)


__all__ = ["cho_solve", "cholesky", "inverse", "inverse_from_cholesky", "solve_triangular"]
