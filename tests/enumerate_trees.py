"""Brute-force enumeration of every kernel tree of a tiny grammar, with its exact prior p(T).

Plain Python, written from the grammar's rules and independent of ``autogp.inference.grammar``:

* the node type at a position is drawn with probability proportional to its weight among the
  opcodes allowed there;
* positions at depth ``max_depth`` allow atoms only;
* ``CP`` is allowed only at the root or as a child of another ``CP``.

A tree is a nested tuple: ``(atom,)`` for a leaf, ``(operator, left, right)`` otherwise, with
integer opcodes from ``autogp.kernels.spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from autogp.kernels import spec

Tree = tuple


def _allowed(weights: Mapping[int, float], depth: int, max_depth: int, cp_ok: bool) -> list:
    allowed = []
    for op, weight in sorted(weights.items()):
        if weight <= 0:
            continue
        if op in spec.OPERATORS and depth >= max_depth:
            continue
        if op == spec.CP and not cp_ok:
            continue
        allowed.append(op)
    return allowed


def _trees_at(
    weights: Mapping[int, float], depth: int, max_depth: int, cp_ok: bool
) -> list[tuple[Tree, Fraction]]:
    allowed = _allowed(weights, depth, max_depth, cp_ok)
    total = sum(Fraction(weights[op]) for op in allowed)
    result = []
    for op in allowed:
        p_op = Fraction(weights[op]) / total
        if op in spec.ATOMS:
            result.append(((op,), p_op))
            continue
        children = _trees_at(weights, depth + 1, max_depth, op == spec.CP)
        for left, p_left in children:
            for right, p_right in children:
                result.append(((op, left, right), p_op * p_left * p_right))
    return result


def enumerate_trees(weights: Mapping[int, float], max_depth: int) -> list[tuple[Tree, Fraction]]:
    """All trees of depth <= ``max_depth`` with positive prior, and their exact p(T)."""
    return _trees_at(weights, 0, max_depth, True)


def enumerate_subtrees(
    weights: Mapping[int, float], max_depth: int, depth: int, cp_ok: bool
) -> list[tuple[Tree, Fraction]]:
    """All subtrees that can be drawn at a position of the given depth, with their P_i(S)."""
    return _trees_at(weights, depth, max_depth, cp_ok)


def to_heap(tree: Tree, max_depth: int, root_slot: int = 0) -> tuple[int, ...]:
    """The heap-ordered opcodes (length 2**(max_depth+1) - 1) of ``tree`` placed at root_slot."""
    heap = [spec.EMPTY] * (2 ** (max_depth + 1) - 1)

    def put(node: Tree, slot: int) -> None:
        heap[slot] = node[0]
        if len(node) == 3:
            put(node[1], 2 * slot + 1)
            put(node[2], 2 * slot + 2)

    put(tree, root_slot)
    return tuple(heap)


def num_leaves(tree: Tree) -> int:
    return 1 if len(tree) == 1 else num_leaves(tree[1]) + num_leaves(tree[2])


def size(tree: Tree) -> int:
    return 1 if len(tree) == 1 else 1 + size(tree[1]) + size(tree[2])


def contains(tree: Tree, op: int) -> bool:
    return tree[0] == op or (len(tree) == 3 and (contains(tree[1], op) or contains(tree[2], op)))


def heap_code(heap) -> int:
    """An integer key of a heap of opcodes (base-16 digits, slot 0 least significant)."""
    code = 0
    for slot, op in enumerate(heap):
        code += int(op) * 16**slot
    return code
