"""Kernel expressions: immutable trees of atoms and operators, their text form and packing.

>>> from autogp.kernels import parse, to_text
>>> to_text(parse("LIN + PER * SE"))
'LIN + PER * SE'
"""

from autogp.kernels import spec
from autogp.kernels.atoms import (
    ATOM_CLASSES,
    CLASS_OF_NAME,
    GE,
    RQ,
    SE,
    Atom,
    Brownian,
    Const,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    WhiteNoise,
)
from autogp.kernels.base import Kernel, depth, kernel_class, leaves, nodes, size
from autogp.kernels.operators import ChangePoint, Operator, Product, Sum
from autogp.kernels.packing import pack, pack_one, unpack, unpack_one
from autogp.kernels.text import parse, structure, to_text
from autogp.kernels.transforms import (
    constrain,
    constrain_np,
    default_natural_params,
    unconstrain,
    unconstrain_np,
)

# Every atom class by its name, including atoms the explicit imports above do not list.
globals().update(CLASS_OF_NAME)

__all__ = [
    "ATOM_CLASSES",
    "CLASS_OF_NAME",
    "GE",
    "RQ",
    "Brownian",
    "SE",
    "Atom",
    "ChangePoint",
    "Const",
    "Kernel",
    "Linear",
    "Matern12",
    "Matern32",
    "Matern52",
    "Operator",
    "Periodic",
    "Product",
    "Sum",
    "WhiteNoise",
    "constrain",
    "constrain_np",
    "default_natural_params",
    "depth",
    "kernel_class",
    "leaves",
    "nodes",
    "pack",
    "pack_one",
    "parse",
    "size",
    "spec",
    "structure",
    "to_text",
    "unconstrain",
    "unconstrain_np",
    "unpack",
    "unpack_one",
]
__all__ += [name for name in CLASS_OF_NAME if name not in __all__]
