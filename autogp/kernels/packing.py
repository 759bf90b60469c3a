"""Packing kernel expressions into fixed-shape heap arrays for the compiled evaluator, and back.

A batch of P trees of depth <= D becomes (see ``spec`` for the layout)

* ``ops``    int32   ``[P, S]``, ``S = 2**(D+1) - 1``, heap order: root in slot 0, the children
  of slot i in slots 2i+1 (left) and 2i+2 (right), EMPTY elsewhere;
* ``params`` float64 ``[P, S, MAX_PARAMS]``: each node's *unconstrained* parameters in
  ``spec.PARAM_NAMES`` order, 0 where unused.

``unpack(*pack(exprs))`` returns the expressions up to the transform round trip (exp/log may move a
value by an ulp), and ``pack(unpack(ops, params))`` reproduces ``params`` bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from autogp.kernels import spec
from autogp.kernels.base import Kernel, depth, kernel_class
from autogp.kernels.text import structure
from autogp.kernels.transforms import preimage_np, unconstrain_np


def _fill(expr: Kernel, slot: int, ops: np.ndarray, natural: np.ndarray) -> None:
    ops[slot] = expr.opcode
    natural[slot, : len(expr.params)] = expr.params
    for k, child in enumerate(expr.children):
        _fill(child, 2 * slot + 1 + k, ops, natural)


def pack(exprs: Sequence[Kernel], max_depth: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Pack expressions into ``(ops int32 [P, S], params float64 [P, S, MAX_PARAMS])``.

    Raises ``ValueError`` if an expression is deeper than ``max_depth`` (an atom has depth 0).
    """
    slots = spec.num_slots(max_depth)
    ops = np.zeros((len(exprs), slots), dtype=np.int32)
    natural = np.zeros((len(exprs), slots, spec.MAX_PARAMS), dtype=np.float64)
    for i, expr in enumerate(exprs):
        if not isinstance(expr, Kernel):
            raise TypeError(f"expression {i} is not a Kernel: {expr!r}")
        if (d := depth(expr)) > max_depth:
            raise ValueError(
                f"expression {i} has depth {d} > max_depth={max_depth}: {structure(expr)}"
            )
        _fill(expr, 0, ops[i], natural[i])
    return ops, unconstrain_np(ops, natural)


def pack_one(expr: Kernel, max_depth: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``pack`` for one expression: ``(ops [S], params [S, MAX_PARAMS])``."""
    ops, params = pack([expr], max_depth)
    return ops[0], params[0]


def _build(slot: int, ops: np.ndarray, natural: np.ndarray, tree: int) -> Kernel:
    op = int(ops[slot])
    if op == spec.EMPTY or not 0 < op < spec.NUM_OPS:
        what = "an EMPTY slot" if op == spec.EMPTY else f"unknown opcode {op}"
        raise ValueError(f"tree {tree}: slot {slot} (reached from the root) holds {what}")
    children: tuple[Kernel, ...] = ()
    if not spec.is_atom(op):
        left = 2 * slot + 1
        if left + 1 >= len(ops):
            raise ValueError(f"tree {tree}: operator {spec.NAMES[op]} in leaf slot {slot}")
        children = (_build(left, ops, natural, tree), _build(left + 1, ops, natural, tree))
    params = tuple(float(x) for x in natural[slot, : spec.NUM_PARAMS[op]])
    return kernel_class(op).from_parts(children, params)


def unpack(ops: np.ndarray, params: np.ndarray) -> list[Kernel]:
    """Rebuild expressions from packed ``ops [P, S]`` and unconstrained ``params [P, S, MAX]``.

    Slots below an atom are ignored. Raises ``ValueError`` on malformed arrays (an EMPTY slot
    where a node is needed, an operator without room for children, unknown opcodes).
    """
    ops = np.asarray(ops)
    params = np.asarray(params, dtype=np.float64)
    if ops.ndim != 2 or params.shape != ops.shape + (spec.MAX_PARAMS,):
        raise ValueError(
            f"expected ops [P, S] and params [P, S, {spec.MAX_PARAMS}], "
            f"got {ops.shape} and {params.shape}"
        )
    if np.any((ops < 0) | (ops >= spec.NUM_OPS)):
        raise ValueError(f"opcodes must be in [0, {spec.NUM_OPS}), got {np.unique(ops)}")
    natural = preimage_np(ops, params)
    return [_build(0, ops[i], natural[i], i) for i in range(ops.shape[0])]


def unpack_one(ops: np.ndarray, params: np.ndarray) -> Kernel:
    """``unpack`` for one packed expression: ``ops [S]``, ``params [S, MAX_PARAMS]``."""
    return unpack(np.asarray(ops)[None], np.asarray(params)[None])[0]
