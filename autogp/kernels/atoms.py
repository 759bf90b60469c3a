"""The atoms: base kernels with natural parameters, the leaves of every expression.

Throughout, r = |t - t'|. Parameter fields are named and ordered as ``spec.PARAM_NAMES`` and
default to the default prior's mean (``transforms.default_natural_params``), so ``SE()`` is the
atom a structure-only text such as ``"SE"`` parses to.
"""

from __future__ import annotations

from typing import ClassVar

from autogp.kernels import spec
from autogp.kernels.base import Kernel, param_field


class Atom(Kernel):
    """A base kernel: no children, only parameters (abstract)."""


class Const(Atom):
    """Constant: k(t, t') = c."""

    opcode: ClassVar[int] = spec.CONST
    c: float = param_field(spec.CONST, "c")


class Linear(Atom):
    """Linear: k(t, t') = bias + amp * (t - intercept) * (t' - intercept)."""

    opcode: ClassVar[int] = spec.LIN
    intercept: float = param_field(spec.LIN, "intercept")
    bias: float = param_field(spec.LIN, "bias")
    amp: float = param_field(spec.LIN, "amp")


class SE(Atom):
    """Squared exponential: k(t, t') = amp * exp(-r^2 / (2 l^2))."""

    opcode: ClassVar[int] = spec.SE
    l: float = param_field(spec.SE, "l")
    amp: float = param_field(spec.SE, "amp")


class GE(Atom):
    """Gamma exponential: k(t, t') = amp * exp(-(r / l)^gamma), 0 < gamma <= 2."""

    opcode: ClassVar[int] = spec.GE
    l: float = param_field(spec.GE, "l")
    gamma: float = param_field(spec.GE, "gamma")
    amp: float = param_field(spec.GE, "amp")


class Periodic(Atom):
    """Periodic: k(t, t') = amp * exp(-(2 / l^2) * sin^2(pi r / period)).

    Here l is dimensionless (it divides a sine), unlike the length scales of the other atoms.
    """

    opcode: ClassVar[int] = spec.PER
    l: float = param_field(spec.PER, "l")
    period: float = param_field(spec.PER, "period")
    amp: float = param_field(spec.PER, "amp")


class WhiteNoise(Atom):
    """White noise: k(t, t') = v * [t == t'] (exact equality of the time points)."""

    opcode: ClassVar[int] = spec.WN
    v: float = param_field(spec.WN, "v")


class Matern12(Atom):
    """Matern 1/2: k(t, t') = amp * exp(-r / l)."""

    opcode: ClassVar[int] = spec.M12
    l: float = param_field(spec.M12, "l")
    amp: float = param_field(spec.M12, "amp")


class Matern32(Atom):
    """Matern 3/2: k(t, t') = amp * (1 + sqrt(3) r / l) * exp(-sqrt(3) r / l)."""

    opcode: ClassVar[int] = spec.M32
    l: float = param_field(spec.M32, "l")
    amp: float = param_field(spec.M32, "amp")


class Matern52(Atom):
    """Matern 5/2: k(t, t') = amp * (1 + sqrt(5) r / l + 5 r^2 / (3 l^2)) * exp(-sqrt(5) r / l)."""

    opcode: ClassVar[int] = spec.M52
    l: float = param_field(spec.M52, "l")
    amp: float = param_field(spec.M52, "amp")


class RQ(Atom):
    """Rational quadratic: k(t, t') = amp * (1 + r^2 / (2 alpha l^2))^(-alpha)."""

    opcode: ClassVar[int] = spec.RQ
    l: float = param_field(spec.RQ, "l")
    alpha: float = param_field(spec.RQ, "alpha")
    amp: float = param_field(spec.RQ, "amp")


class Brownian(Atom):
    """Brownian motion (a random walk) from ``origin``:
    k(t, t') = amp * max(min(t, t') - origin, 0).

    Non-stationary: its forecasts keep the last level (with growing uncertainty) instead of
    reverting to the mean; with white noise it is the local-level model of exponential smoothing.
    """

    opcode: ClassVar[int] = spec.BM
    origin: float = param_field(spec.BM, "origin")
    amp: float = param_field(spec.BM, "amp")


ATOM_CLASSES: tuple[type[Atom], ...] = (
    Const,
    Linear,
    SE,
    GE,
    Periodic,
    WhiteNoise,
    Matern12,
    Matern32,
    Matern52,
    RQ,
    Brownian,
)
assert tuple(cls.opcode for cls in ATOM_CLASSES) == spec.ATOMS
