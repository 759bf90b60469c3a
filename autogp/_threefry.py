"""JAX's Threefry-2x32 hash compiled as straight-line code on CPU: the same bits, compiled faster.

Every ``jax.random`` call (split, fold_in, uniform, normal, Gumbel, categorical) hashes its
counters with Threefry-2x32 (Salmon et al. 2011, 20 rounds). On CPU, JAX lowers each call site
to a ``while`` loop over the hash's five blocks of four rounds; elsewhere it writes the rounds
out. XLA:CPU compiles a while loop into separate kernels and calls, which costs 0.15-0.45 s of
compile time per call site here, and an SMC round draws from about 30 sites (the structure
moves). Written out, a call site fuses into one elementwise kernel: 1.3-3x faster to compile
and faster to run (``scripts/bench_threefry.py``).

:func:`install` registers :func:`threefry2x32` as the CPU lowering of JAX's
``threefry2x32`` primitive (the public ``jax.extend.random.threefry2x32_p``). It computes the
hash exactly, so every random draw, in autogp and in the user's own JAX code, is bit for bit what
JAX's own lowering gives (``tests/test_threefry.py`` checks the Random123 known answers and
compares with a process that never imported autogp). Only how the hash compiles changes.

What ``import autogp`` changes, exactly: it calls :func:`install` once, which replaces JAX's
CPU lowering rule of ``threefry2x32_p`` for the whole process. Every program lowered for the
CPU afterwards, the user's own included, draws the same random bits as before; its compile
time and its HLO text differ. Programs lowered for other platforms, and programs lowered
before the import, are untouched; no JAX configuration flag changes. The rule is installed at
import rather than around autogp's own calls because JAX offers no public way to restore the
rule it replaces, and because autogp's programs are also lowered in worker processes (process
pools, Dask workers) that only import autogp.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

#: Rotation constants of Threefry-2x32, for the even and the odd blocks of four rounds.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: The key-schedule parity constant of Threefry (Salmon et al. 2011, Table 4).
PARITY = 0x1BD11BDA


def rotate_left(x, bits):
    """Rotate the uint32 words ``x`` left by ``bits`` (a number, or a traced uint32)."""
    bits = jnp.asarray(bits, jnp.uint32)
    return (x << bits) | (x >> (jnp.uint32(32) - bits))


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 with 20 rounds on uint32 arrays (broadcast together): the key (key1, key2)
    hashes the counters (x1, x2). Five blocks of four rounds, each block followed by the
    injection of the next key-schedule word and the block number."""
    schedule = (key1, key2, key1 ^ key2 ^ np.uint32(PARITY))
    x1 = x1 + schedule[0]
    x2 = x2 + schedule[1]
    for block in range(5):
        for bits in ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = rotate_left(x2, bits) ^ x1
        x1 = x1 + schedule[(block + 1) % 3]
        x2 = x2 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def lowering_of(hash_fn):
    """A lowering rule of JAX's threefry primitive that computes it with ``hash_fn(key1, key2,
    x1, x2)`` on its operands broadcast to the output's shape (the primitive broadcasts them)."""

    def rule(ctx, key1, key2, x1, x2):
        shape = ctx.avals_out[0].shape

        def broadcast_hash(*operands):
            return hash_fn(*(jnp.broadcast_to(v, shape) for v in operands))

        return mlir.lower_fun(broadcast_hash, multiple_results=True)(ctx, key1, key2, x1, x2)

    return rule


def install() -> None:
    """Make :func:`threefry2x32` the CPU lowering of JAX's threefry primitive (registering it
    again is harmless; programs lowered before keep theirs, which compute the same bits)."""
    mlir.register_lowering(threefry2x32_p, lowering_of(threefry2x32), platform="cpu")


__all__ = ["install", "lowering_of", "rotate_left", "threefry2x32"]
