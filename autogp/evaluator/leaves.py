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

from autogp.kernels import spec

VALUE = {row.opcode: row.value for row in spec.ATOM_ROWS}
VJP = {row.opcode: row.vjp for row in spec.ATOM_ROWS}


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
