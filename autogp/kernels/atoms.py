"""The atoms: base kernels with natural parameters, the leaves of every expression.

One final ``Kernel`` class per row of ``autogp.kernels.atom_table``, built from the row: its name
is the row's ``class_name``, its docstring the row's formula, its fields the row's parameters
(named and ordered as ``spec.PARAM_NAMES``) defaulting to the default prior's mean
(``transforms.default_natural_params``), so ``SE()`` is the atom a structure-only text such as
``"SE"`` parses to. Every class is importable from this module by its name.
"""

from __future__ import annotations

import types

from autogp.kernels import spec
from autogp.kernels.atom_row import AtomRow
from autogp.kernels.base import Kernel, param_field


class Atom(Kernel):
    """A base kernel: no children, only parameters (abstract)."""


def atom_class(row: AtomRow) -> type[Atom]:
    """The final ``Atom`` subclass of one row of the atom table."""

    def body(namespace: dict) -> None:
        namespace["__module__"] = __name__
        namespace["__doc__"] = row.formula
        namespace["__annotations__"] = {name: float for name in row.param_names}
        namespace["opcode"] = row.opcode
        for name in row.param_names:
            namespace[name] = param_field(row.opcode, name)

    return types.new_class(row.class_name, (Atom,), exec_body=body)


ATOM_CLASSES: tuple[type[Atom], ...] = tuple(atom_class(row) for row in spec.ATOM_ROWS)
CLASS_OF_NAME: dict[str, type[Atom]] = {cls.__name__: cls for cls in ATOM_CLASSES}
# Module attributes, so that every atom class is importable (and picklable) by its name.
globals().update(CLASS_OF_NAME)

# The atoms other modules name in code (type checkers cannot see the line above).
Const = CLASS_OF_NAME["Const"]
Linear = CLASS_OF_NAME["Linear"]
SE = CLASS_OF_NAME["SE"]
GE = CLASS_OF_NAME["GE"]
Periodic = CLASS_OF_NAME["Periodic"]
WhiteNoise = CLASS_OF_NAME["WhiteNoise"]
Matern12 = CLASS_OF_NAME["Matern12"]
Matern32 = CLASS_OF_NAME["Matern32"]
Matern52 = CLASS_OF_NAME["Matern52"]
RQ = CLASS_OF_NAME["RQ"]
Brownian = CLASS_OF_NAME["Brownian"]
