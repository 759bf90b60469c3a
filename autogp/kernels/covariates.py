"""Atoms on covariates: inputs other than time (temperature, a price, a holiday indicator).

A series with C covariates is fitted on inputs ``x = [t, z_1, ..., z_C]``; time atoms read column
0, and the atoms here read one covariate's column. Each covariate k = 1 .. :data:`MAX_COVARIATES`
has its own two opcodes, so the grammar's atom choice *is* the choice of input: the structure
prior, its proposals and their densities need nothing new, and a fit without covariates (where
these opcodes have weight 0) draws exactly what it drew before they existed.

* ``LIN[k]``: k(z, z') = amp * z * z', a linear effect y ~ beta * z with beta ~ N(0, amp) (the
  covariates are standardised, so no intercept: the level belongs to the time atoms);
* ``SE[k]``: k(z, z') = amp * exp(-(z - z')^2 / (2 l^2)), a smooth non-linear effect.

No periodic, random-walk or change-point atoms act on a covariate: they describe time. Their
parameters are in standardised covariate units (``l``) and standardised values (``amp``);
``autogp.forecast.explain`` converts them to data units with the stored scaling.
"""

from __future__ import annotations

from typing import Final

from autogp.kernels.atom_row import AtomRow, gradient
from autogp.kernels.atom_table import AMP, LENGTH, se_value, se_vjp

#: Most covariates a series may have (each takes two opcodes).
MAX_COVARIATES: Final = 8
#: Opcode of ``LIN[1]``; ``LIN[k]`` is ``FIRST_OPCODE + 2 (k - 1)``, ``SE[k]`` the next one.
FIRST_OPCODE: Final = 18


def linear_value(theta, z1, z2):
    return theta[0] * z1[:, None] * z2[None, :]


def linear_vjp(theta, z1, z2, cot):
    return gradient(z1 @ (cot @ z2))


def linear_opcode(k: int) -> int:
    """Opcode of ``LIN[k]`` (k = 1 .. MAX_COVARIATES)."""
    return FIRST_OPCODE + 2 * (k - 1)


def smooth_opcode(k: int) -> int:
    """Opcode of ``SE[k]``."""
    return FIRST_OPCODE + 2 * (k - 1) + 1


def _rows(k: int) -> tuple[AtomRow, AtomRow]:
    linear = AtomRow(
        opcode=linear_opcode(k), name=f"LIN[{k}]", class_name=f"CovariateLinear{k}",
        title=f"linear in covariate {k}",
        formula=f"Linear in covariate {k}: k(z, z') = amp * z * z' (z standardised).",
        params=(AMP.with_units(0, 2),), split=1, value=linear_value, vjp=linear_vjp,
        stationary=False, role="covariate", input=k,
        reading=lambda p, words, k=k: f"linear effect of covariate {k}",
    )  # fmt: skip
    smooth = AtomRow(
        opcode=smooth_opcode(k), name=f"SE[{k}]", class_name=f"CovariateSE{k}",
        title=f"smooth in covariate {k}",
        formula=(f"Squared exponential in covariate {k}: "
                 "k(z, z') = amp * exp(-(z - z')^2 / (2 l^2)) (z standardised)."),
        # l is in standardised covariate units: it does not scale with time.
        params=(LENGTH.with_units(0, 0), AMP), split=1, value=se_value, vjp=se_vjp,
        stationary=False, role="covariate", input=k,
        reading=lambda p, words, k=k: f"smooth effect of covariate {k}",
    )  # fmt: skip
    return linear, smooth


#: The covariate atoms' rows, in opcode order.
ROWS: Final = tuple(row for k in range(1, MAX_COVARIATES + 1) for row in _rows(k))
#: Opcodes of the linear and the smooth covariate atoms.
LINEAR_OPCODES: Final = tuple(linear_opcode(k) for k in range(1, MAX_COVARIATES + 1))
SMOOTH_OPCODES: Final = tuple(smooth_opcode(k) for k in range(1, MAX_COVARIATES + 1))

__all__ = [
    "FIRST_OPCODE", "LINEAR_OPCODES", "MAX_COVARIATES", "ROWS", "SMOOTH_OPCODES",
    "linear_opcode", "linear_value", "linear_vjp", "smooth_opcode",
]  # fmt: skip
