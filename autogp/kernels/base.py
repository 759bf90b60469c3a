"""The abstract kernel expression and the tree helpers every part of autogp shares.

A kernel expression is an immutable tree of small ``equinox.Module``s (tinygp style): atoms
(``autogp.kernels.atoms``) at the leaves, operators (``autogp.kernels.operators``) inside. Every
class is either abstract (no fields) or final (never subclassed). Parameters are stored as
*natural* (constrained) values, named and ordered exactly as ``spec.PARAM_NAMES[opcode]``; fields
are ordered children first, then parameters, so ``cls(*children, *params)`` rebuilds any node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import equinox as eqx
import numpy as np

from autogp.kernels import spec
from autogp.kernels.printing import to_text
from autogp.kernels.transforms import check_natural_params, default_natural_params


def as_float(value: object) -> object:
    """Field converter: Python/numpy numbers become Python floats; jax arrays (possibly traced)
    pass through untouched, so expressions can still be built inside jit."""
    if isinstance(value, bool):
        raise TypeError(f"kernel parameter must be a number, got {value!r}")
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return float(value)
    return value


def param_field(op: int, name: str) -> Any:
    """A natural-parameter field, defaulting to the default prior's mean (what a structure-only
    text such as ``"SE"`` parses to)."""
    default = default_natural_params(op)[spec.PARAM_NAMES[op].index(name)]
    return eqx.field(default=default, converter=as_float)


# opcode -> the final Kernel class of that opcode, filled as the classes are defined (atoms.py,
# operators.py; ``autogp.kernels`` imports both before anything can use a kernel).
_CLASS_OF_OPCODE: dict[int, type[Kernel]] = {}


class Kernel(eqx.Module):
    """A covariance function k(t, t') of one time input, as an expression tree (abstract)."""

    opcode: ClassVar[int]

    def __check_init__(self) -> None:
        check_natural_params(self.opcode, self.params)

    # -- algebra ----------------------------------------------------------------------------
    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Final classes (those that set an opcode) register themselves, so the base can build
        # sums and products and the parser can find classes without importing their modules.
        super().__init_subclass__(**kwargs)
        opcode = cls.__dict__.get("opcode")
        if isinstance(opcode, int):
            _CLASS_OF_OPCODE[opcode] = cls

    def __add__(self, other: Kernel) -> Kernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return kernel_class(spec.PLUS)(self, other)

    def __mul__(self, other: Kernel) -> Kernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return kernel_class(spec.TIMES)(self, other)

    # -- generic access ---------------------------------------------------------------------
    @property
    def children(self) -> tuple[Kernel, ...]:
        """Sub-expressions, left to right (empty for atoms)."""
        return ()

    @property
    def params(self) -> tuple[float, ...]:
        """Natural parameter values in ``spec.PARAM_NAMES[opcode]`` order."""
        return tuple(getattr(self, name) for name in spec.PARAM_NAMES[self.opcode])

    @property
    def param_dict(self) -> dict[str, float]:
        return dict(zip(spec.PARAM_NAMES[self.opcode], self.params, strict=True))

    @classmethod
    def from_parts(cls, children: tuple[Kernel, ...], params: tuple[float, ...]) -> Kernel:
        """Rebuild a node of this class from its children and natural parameters."""
        return cls(*children, *params)

    def replace_params(self, params: tuple[float, ...]) -> Kernel:
        """This node (children untouched) with new natural parameters, in spec order."""
        return self.from_parts(self.children, tuple(params))

    def in_data_units(self, time_scale: float, time_offset: float, value_scale: float) -> Kernel:
        """The same covariance expressed in data units.

        Fitting uses normalised t_n = (t - time_offset) / time_scale and y_n = y / value_scale
        (after centring); the result k_data satisfies
        k_data(t, t') = value_scale**2 * k_n(t_n, t_n').

        Each parameter theta becomes theta * time_scale**a * value_scale**b with (a, b) =
        ``spec.unit_powers(opcode, name)``, and points on the time axis (LIN intercept, CP
        location: ``spec.is_time_location``) also shift: theta * time_scale + time_offset. The
        value_scale**2 must enter every additive term exactly once, so it goes into both sides
        of a Sum or ChangePoint but only into the left factor of a Product (the right factor
        keeps its value-unit parameters, e.g. a PER amp, as they were).
        """
        return self._in_data_units(time_scale, time_offset, value_scale, carries_value_scale=True)

    def _in_data_units(
        self, time_scale: float, time_offset: float, value_scale: float, carries_value_scale: bool
    ) -> Kernel:
        params = []
        for name, value in zip(spec.PARAM_NAMES[self.opcode], self.params, strict=True):
            time_power, value_power = spec.unit_powers(self.opcode, name)
            value = value * time_scale**time_power
            if carries_value_scale:
                value = value * value_scale**value_power
            if spec.is_time_location(self.opcode, name):
                value = value + time_offset
            params.append(value)
        if self.opcode == spec.TIMES:
            child_carries = (carries_value_scale, False)
        else:
            child_carries = (carries_value_scale, carries_value_scale)
        children = tuple(
            child._in_data_units(time_scale, time_offset, value_scale, carries)
            for child, carries in zip(self.children, child_carries, strict=False)
        )
        return self.from_parts(children, tuple(params))

    def __str__(self) -> str:
        return to_text(self, params=True)


# --- tree helpers ----------------------------------------------------------------------------


def depth(expr: Kernel) -> int:
    """Depth of the tree; an atom has depth 0 (as heap slot 0 in ``spec``)."""
    return 1 + max(depth(c) for c in expr.children) if expr.children else 0


def size(expr: Kernel) -> int:
    """Number of nodes (atoms and operators)."""
    return 1 + sum(size(c) for c in expr.children)


def nodes(expr: Kernel) -> Iterator[Kernel]:
    """All nodes in pre-order (node, then its children left to right)."""
    yield expr
    for c in expr.children:
        yield from nodes(c)


def leaves(expr: Kernel) -> list[Kernel]:
    """The atoms, left to right."""
    return [node for node in nodes(expr) if not node.children]


def kernel_class(opcode: int) -> type[Kernel]:
    """The final ``Kernel`` subclass of an opcode (``ValueError`` for EMPTY or unknown ones)."""
    try:
        return _CLASS_OF_OPCODE[int(opcode)]
    except KeyError:
        raise ValueError(f"no kernel class for opcode {opcode!r}") from None
