"""The evaluator's view of the atom table: each atom's formula and VJP by opcode, and the
change point's sigmoid.

Each atom has a ``value(theta, t1, t2) -> [N1, N2]`` and a
``vjp(theta, t1, t2, cot) -> [MAX_PARAMS]`` returning sum(cot * dK/dtheta_k) for each natural
(constrained) parameter theta_k; both are defined with the atom's row in
``autogp.kernels.atom_table``. ``theta`` is always a length-``MAX_PARAMS`` vector; unused entries
are ignored.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from autogp.kernels import covariates, spec

VALUE = {row.opcode: row.value for row in spec.ATOM_ROWS}
VJP = {row.opcode: row.vjp for row in spec.ATOM_ROWS}


# --- inputs: time, and covariates -----------------------------------------------------------------
# Inputs are ``[N]`` (time only) or ``[N, 1 + C]`` (time, then C covariates). The covariate atoms
# of one kind share one ``lax.switch`` branch that reads its column by the opcode's ``INPUT``, so
# covariates add two branches, not two per covariate, and opcodes below them keep their
# branch numbers (``EXPAND``, the lag expansion, comes after them).
#: The branch that evaluates each opcode (and ``EXPAND = NUM_OPS``) in a leaf switch.
BRANCH = np.arange(spec.NUM_OPS + 1, dtype=np.int32)
BRANCH[list(covariates.LINEAR_OPCODES)] = covariates.FIRST_OPCODE
BRANCH[list(covariates.SMOOTH_OPCODES)] = covariates.FIRST_OPCODE + 1
BRANCH[spec.NUM_OPS] = covariates.FIRST_OPCODE + 2
BRANCH.setflags(write=False)
#: Number of leaf-switch branches (the last one expands lag vectors).
NUM_BRANCHES = covariates.FIRST_OPCODE + 3
#: Opcodes that stand for each shared covariate branch.
COVARIATE_BRANCHES = {covariates.FIRST_OPCODE: covariates.LINEAR_OPCODES[0],
                      covariates.FIRST_OPCODE + 1: covariates.SMOOTH_OPCODES[0]}


def time_column(t):
    """The time input of ``[N]`` or ``[N, 1 + C]`` inputs."""
    return t if t.ndim == 1 else t[:, 0]


def input_column(t, op):
    """The input that opcode ``op`` (may be traced) reads: its covariate's column, or time."""
    if t.ndim == 1:
        return t
    return jnp.take(t, jnp.asarray(spec.INPUT)[op], axis=1)


# --- change-point sigmoid ------------------------------------------------------------------------
def cp_sigmoid(theta, t):
    """s(t) = (1 + tanh((location - t)/scale))/2 and its derivatives wrt location and scale."""
    location, scale = theta[0], theta[1]
    z = (location - t) / scale
    th = jnp.tanh(z)
    s = 0.5 * (1.0 + th)
    ds_dlocation = 0.5 * (1.0 - th * th) / scale
    ds_dscale = -ds_dlocation * z
    return s, ds_dlocation, ds_dscale
