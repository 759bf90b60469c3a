"""Heap bookkeeping for packed kernel trees: which slots are whose parents, children and
subtrees, and moving or clearing a subtree (pure, static-shaped, ``jax.jit``-friendly).

A tree of maximum depth D lives in ``S = 2**(D+1) - 1`` heap slots: the root is slot 0 and the
children of slot i are slots ``2i+1`` and ``2i+2``; empty slots hold ``spec.EMPTY``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels import spec

Array = jax.Array


# --- heap bookkeeping ------------------------------------------------------------------------
class HeapTables(NamedTuple):
    """Static index tables of the heap layout for one maximum depth (numpy, read-only)."""

    max_depth: int
    num_slots: int
    depth: np.ndarray  # int32 [S]: depth of each slot (root 0)
    parent: np.ndarray  # int32 [S]: parent slot (the root points at itself)
    is_root: np.ndarray  # bool [S]
    subtree: np.ndarray  # bool [S, S]: subtree[i, s] iff slot s lies in the subtree rooted at i


@functools.cache
def heap_tables(max_depth: int) -> HeapTables:
    """Index tables for trees of depth <= ``max_depth`` (cached per depth)."""
    num = spec.num_slots(max_depth)
    slots = np.arange(num)
    depth = np.floor(np.log2(slots + 1)).astype(np.int32)
    parent = np.maximum((slots - 1) // 2, 0).astype(np.int32)
    subtree = np.zeros((num, num), dtype=bool)
    for root in range(num):
        for level in range(max_depth + 1 - depth[root]):
            first = (root + 1) * 2**level - 1
            subtree[root, first : first + 2**level] = True
    tables = HeapTables(max_depth, num, depth, parent, slots == 0, subtree)
    for table in tables[2:]:
        table.setflags(write=False)
    return tables


def max_depth_of(num_slots: int) -> int:
    """The maximum depth D of a heap with ``num_slots = 2**(D+1) - 1`` slots."""
    depth = int(round(math.log2(num_slots + 1))) - 1
    if spec.num_slots(depth) != num_slots:
        raise ValueError(f"{num_slots} is not a heap size 2**(D+1) - 1")
    return depth


def tables_of(ops: Array) -> HeapTables:
    return heap_tables(max_depth_of(ops.shape[-1]))


def subtree_slots(max_depth: int, slot: Array | int) -> Array:
    """bool ``[S]``: the heap positions of the subtree rooted at ``slot`` (occupied or not)."""
    return jnp.asarray(heap_tables(max_depth).subtree)[slot]


def subtree_mask(ops: Array, slot: Array | int) -> Array:
    """bool ``[S]``: the nodes (occupied slots) of the subtree of ``ops`` [S] rooted at ``slot``."""
    tables = tables_of(ops)
    return jnp.asarray(tables.subtree)[slot] & (ops != spec.EMPTY)


def node_count(ops: Array) -> Array:
    """int32 ``[...]``: number of nodes |T| of each tree in ``ops`` [..., S]."""
    return jnp.sum(ops != spec.EMPTY, axis=-1, dtype=jnp.int32)


def subtree_size(ops: Array, slot: Array | int) -> Array:
    """int32: number of nodes of the subtree of ``ops`` [S] rooted at ``slot``."""
    return jnp.sum(subtree_mask(ops, slot), dtype=jnp.int32)


def subtree_height(ops: Array, slot: Array | int) -> Array:
    """int32: height of the subtree of ``ops`` [S] at ``slot`` (0 for a leaf, -1 if empty)."""
    tables = tables_of(ops)
    depth = jnp.asarray(tables.depth)
    relative = depth - depth[slot]
    return jnp.max(jnp.where(subtree_mask(ops, slot), relative, -1)).astype(jnp.int32)


def tree_height(ops: Array) -> Array:
    """int32 ``[...]``: height of each tree in ``ops`` [..., S] (-1 for an empty heap)."""
    depth = jnp.asarray(tables_of(ops).depth)
    return jnp.max(jnp.where(ops != spec.EMPTY, depth, -1), axis=-1).astype(jnp.int32)


def clear_subtree(ops: Array, params: Array, slot: Array | int) -> tuple[Array, Array]:
    """Empty the subtree of one tree (``ops`` [S], ``params`` [S, MAX_PARAMS]) at ``slot``."""
    region = subtree_slots(max_depth_of(ops.shape[-1]), slot)
    ops = jnp.where(region, spec.EMPTY, ops).astype(ops.dtype)
    params = jnp.where(region[:, None], 0.0, params).astype(params.dtype)
    return ops, params


def move_subtree(
    ops: Array, params: Array, src: Array | int, dst: Array | int
) -> tuple[Array, Array]:
    """Copy the subtree of one tree rooted at ``src`` to position ``dst``, clearing what was there.

    The descendant of ``src`` at relative level k and offset j, slot ``(src+1)*2**k - 1 + j``,
    lands in slot ``(dst+1)*2**k - 1 + j``. Slots outside the subtree at ``dst`` keep their
    contents (including the old copy at ``src`` when the two subtrees do not overlap); the copy
    is read from the input arrays, so overlapping ``src``/``dst`` are fine. Nodes that would
    fall below the maximum depth are dropped: callers check heights first.
    """
    tables = tables_of(ops)
    num = tables.num_slots
    depth = jnp.asarray(tables.depth)
    slots = jnp.arange(num, dtype=jnp.int32)
    in_dst = jnp.asarray(tables.subtree)[dst]
    level = jnp.maximum(depth - depth[dst], 0)
    offset = slots + 1 - jnp.left_shift(dst + 1, level)
    source = jnp.left_shift(src + 1, level) - 1 + offset
    has_source = in_dst & (source < num)
    source = jnp.clip(source, 0, num - 1)
    new_ops = jnp.where(in_dst, jnp.where(has_source, ops[source], spec.EMPTY), ops)
    moved_params = jnp.where(has_source[:, None], params[source], 0.0)
    new_params = jnp.where(in_dst[:, None], moved_params, params)
    return new_ops.astype(ops.dtype), new_params.astype(params.dtype)


__all__ = [
    "HeapTables",
    "heap_tables",
    "max_depth_of",
    "tables_of",
    "subtree_slots",
    "subtree_mask",
    "node_count",
    "subtree_size",
    "subtree_height",
    "tree_height",
    "clear_subtree",
    "move_subtree",
]
