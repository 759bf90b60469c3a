"""Printing kernel expressions with minimal parentheses (the parser is in :mod:`text`).

Kept apart from the parser so that :class:`~autogp.kernels.base.Kernel` can print itself without
importing the module that builds kernels (no import cycle): printing only reads ``opcode``,
``params`` and ``children``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autogp.kernels import spec

if TYPE_CHECKING:
    from autogp.kernels.base import Kernel

# --- printing --------------------------------------------------------------------------------

# Binding strength: an operand is parenthesised when its own is lower than its position needs.
_LOOSEST, _SUM, _PRODUCT, _TIGHTEST = 0, 1, 2, 3


def _strength(expr: Kernel) -> int:
    return {spec.PLUS: _SUM, spec.TIMES: _PRODUCT}.get(expr.opcode, _TIGHTEST)


def _format_number(value: float, precision: int | None) -> str:
    value = float(value)
    return repr(value) if precision is None else format(value, f".{precision}g")


def _format_params(expr: Kernel, precision: int | None, split: int) -> str:
    items = [
        f"{name}={_format_number(value, precision)}"
        for name, value in zip(spec.PARAM_NAMES[expr.opcode], expr.params, strict=True)
    ]
    before, after = ", ".join(items[:split]), ", ".join(items[split:])
    return f"{before}; {after}" if before and after else before or after


def _print(expr: Kernel, params: bool, precision: int | None, needed: int) -> str:
    op = expr.opcode
    name = spec.NAMES[op]
    if op in (spec.PLUS, spec.TIMES):
        strength = _strength(expr)
        # Left-associative: the left operand may be the same operator, the right one may not.
        left = _print(expr.children[0], params, precision, strength)
        right = _print(expr.children[1], params, precision, strength + 1)
        text = f"{left} {name} {right}"
        return f"({text})" if strength < needed else text
    if op == spec.CP:
        left, right = (_print(c, params, precision, _LOOSEST) for c in expr.children)
        suffix = f"; {_format_params(expr, precision, 0)}" if params else ""
        return f"CP({left}, {right}{suffix})"
    if params:
        return f"{name}({_format_params(expr, precision, spec.SPLIT[op])})"
    return name


def to_text(expr: Kernel, params: bool = False, precision: int | None = 4) -> str:
    """The text form of ``expr``; with ``params``, natural values to ``precision`` significant
    digits, or exactly (``repr``) when ``precision`` is None."""
    return _print(expr, params, precision, _LOOSEST)


def structure(expr: Kernel) -> str:
    """The expression's shape without parameters, e.g. ``(LIN + PER) * SE``."""
    return to_text(expr, params=False)


__all__ = ["structure", "to_text"]
