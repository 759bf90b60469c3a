"""Printing kernel expressions with minimal parentheses (the parser is in :mod:`text`).

Kept apart from the parser so that :class:`~autogp.kernels.base.Kernel` can print itself without
importing the module that builds kernels (no import cycle): printing only reads ``opcode``,
``params`` and ``children``.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def atom_name(op: int, covariates: Sequence[str] | None = None) -> str:
    """The name of opcode ``op`` in the text form; a covariate atom's ``LIN[k]`` reads
    ``LIN[temp]`` when ``covariates`` names the covariates in order."""
    k = int(spec.INPUT[op])
    if k and covariates is not None and k <= len(covariates):
        return f"{spec.NAMES[op].split('[')[0]}[{covariates[k - 1]}]"
    return spec.NAMES[op]


def _print(expr: Kernel, params: bool, precision: int | None, needed: int,
           covariates: Sequence[str] | None = None) -> str:
    op = expr.opcode
    name = atom_name(op, covariates)
    if op in (spec.PLUS, spec.TIMES):
        strength = _strength(expr)
        # Left-associative: the left operand may be the same operator, the right one may not.
        left = _print(expr.children[0], params, precision, strength, covariates)
        right = _print(expr.children[1], params, precision, strength + 1, covariates)
        text = f"{left} {name} {right}"
        return f"({text})" if strength < needed else text
    if op == spec.CP:
        left, right = (_print(c, params, precision, _LOOSEST, covariates)
                       for c in expr.children)
        suffix = f"; {_format_params(expr, precision, 0)}" if params else ""
        return f"CP({left}, {right}{suffix})"
    if params:
        return f"{name}({_format_params(expr, precision, spec.SPLIT[op])})"
    return name


def to_text(expr: Kernel, params: bool = False, precision: int | None = 4,
            covariates: Sequence[str] | None = None) -> str:
    """The text form of ``expr``; with ``params``, natural values to ``precision`` significant
    digits, or exactly (``repr``) when ``precision`` is None. ``covariates``: the names of the
    covariates, written in their atoms (``LIN[temp]`` instead of ``LIN[1]``)."""
    return _print(expr, params, precision, _LOOSEST, covariates)


def structure(expr: Kernel, covariates: Sequence[str] | None = None) -> str:
    """The expression's shape without parameters, e.g. ``(LIN + PER) * SE``."""
    return to_text(expr, params=False, covariates=covariates)


__all__ = ["atom_name", "structure", "to_text"]
