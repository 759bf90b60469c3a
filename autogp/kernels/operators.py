"""The operators: interior nodes combining two sub-expressions."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx

from autogp.kernels import spec
from autogp.kernels.base import Kernel, param_field


class Operator(Kernel):
    """A node with a left and a right sub-expression (abstract)."""

    left: eqx.AbstractVar[Kernel]
    right: eqx.AbstractVar[Kernel]

    def __check_init__(self) -> None:
        for side, child in (("left", self.left), ("right", self.right)):
            if not isinstance(child, Kernel):
                raise TypeError(f"{type(self).__name__}.{side} must be a Kernel, got {child!r}")

    @property
    def children(self) -> tuple[Kernel, ...]:
        return (self.left, self.right)


class Sum(Operator):
    """Sum: k(t, t') = k_left(t, t') + k_right(t, t')."""

    opcode: ClassVar[int] = spec.PLUS
    left: Kernel
    right: Kernel


class Product(Operator):
    """Product: k(t, t') = k_left(t, t') * k_right(t, t')."""

    opcode: ClassVar[int] = spec.TIMES
    left: Kernel
    right: Kernel


class ChangePoint(Operator):
    """Change point from ``left`` (before ``location``) to ``right`` (after it).

    s(t) = (1 + tanh((location - t) / scale)) / 2, falling from 1 to 0 around ``location`` over a
    width ~``scale``;  k(t, t') = s(t) k_left(t, t') s(t') + (1 - s(t)) k_right(t, t') (1 - s(t')).
    """

    opcode: ClassVar[int] = spec.CP
    left: Kernel
    right: Kernel
    location: float = param_field(spec.CP, "location")
    scale: float = param_field(spec.CP, "scale")
