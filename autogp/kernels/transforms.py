"""Maps between natural (constrained) parameter values and the unconstrained values that are packed.

Each parameter slot of opcode ``op`` has a transform kind ``spec.TRANSFORMS[op, k]``:

* log:      theta = exp(u),         u = log(theta)                (theta > 0)
* gamma:    theta = 2 * sigmoid(u), u = log(theta) - log(2 - theta) (0 < theta <= 2)
* identity: theta = u                                               (locations on the time axis)

Unused slots (past ``NUM_PARAMS[op]``, and every slot of EMPTY/+/*) are identity, so zero padding
stays zero. The ``jnp`` versions work under ``jit``/``vmap``/``grad`` on ``[..., MAX_PARAMS]``
arrays; the ``_np`` versions are the host-side twins used by packing.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from autogp.kernels import spec

# gamma = 2 is allowed (GE is then SE-shaped) but its logit is +inf; it is stored as this finite
# value instead, which constrains back to exactly 2.0 (2 * sigmoid(40) rounds to 2 in float64) and
# keeps packed arrays finite. Every float64 gamma < 2 has a logit below ~37, so nothing else clips.
GAMMA_LOGIT_MAX = 40.0

# How many ulps either side of constrain(u) `preimage_np` searches for an exact inverse.
_PREIMAGE_SEARCH_ULPS = 4


# --- jnp (traceable) -------------------------------------------------------------------------


def constrain(ops: jax.Array, u: jax.Array) -> jax.Array:
    """Natural values of unconstrained ``u`` ``[..., MAX_PARAMS]`` for opcodes ``ops`` ``[...]``."""
    kind = jnp.asarray(spec.TRANSFORMS)[ops]
    is_log, is_gamma = kind == spec.T_LOG, kind == spec.T_GAMMA
    # Feed each branch a harmless value where it is not selected, so that an unselected exp(u)
    # overflowing cannot turn gradients into 0 * inf = nan.
    log_branch = jnp.exp(jnp.where(is_log, u, 0.0))
    gamma_branch = 2.0 * jax.nn.sigmoid(jnp.where(is_gamma, u, 0.0))
    return jnp.where(is_log, log_branch, jnp.where(is_gamma, gamma_branch, u))


def unconstrain(ops: jax.Array, theta: jax.Array) -> jax.Array:
    """Unconstrained values of natural ``theta`` ``[..., MAX_PARAMS]``; inverts ``constrain``."""
    kind = jnp.asarray(spec.TRANSFORMS)[ops]
    is_log, is_gamma = kind == spec.T_LOG, kind == spec.T_GAMMA
    # Same double-where: log of an unselected negative location must not poison gradients.
    log_branch = jnp.log(jnp.where(is_log, theta, 1.0))
    gamma_theta = jnp.where(is_gamma, theta, 1.0)
    gamma_branch = jnp.minimum(jnp.log(gamma_theta) - jnp.log(2.0 - gamma_theta), GAMMA_LOGIT_MAX)
    return jnp.where(is_log, log_branch, jnp.where(is_gamma, gamma_branch, theta))


# --- numpy (host side) -----------------------------------------------------------------------


def _sigmoid_np(u: np.ndarray) -> np.ndarray:
    # exp of -|u| only, so neither branch overflows.
    e = np.exp(-np.abs(u))
    return np.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def constrain_np(ops: np.ndarray, u: np.ndarray) -> np.ndarray:
    """numpy twin of ``constrain``."""
    u = np.asarray(u, dtype=np.float64)
    kind = spec.TRANSFORMS[np.asarray(ops)]
    with np.errstate(over="ignore"):
        log_branch = np.exp(np.where(kind == spec.T_LOG, u, 0.0))
    gamma_branch = 2.0 * _sigmoid_np(u)
    return np.where(kind == spec.T_LOG, log_branch, np.where(kind == spec.T_GAMMA, gamma_branch, u))


def unconstrain_np(ops: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """numpy twin of ``unconstrain``."""
    theta = np.asarray(theta, dtype=np.float64)
    kind = spec.TRANSFORMS[np.asarray(ops)]
    is_log, is_gamma = kind == spec.T_LOG, kind == spec.T_GAMMA
    with np.errstate(divide="ignore"):  # log(2 - 2) = -inf is clipped below
        log_branch = np.log(np.where(is_log, theta, 1.0))
        gamma_theta = np.where(is_gamma, theta, 1.0)
        gamma_branch = np.minimum(np.log(gamma_theta) - np.log(2.0 - gamma_theta), GAMMA_LOGIT_MAX)
    return np.where(is_log, log_branch, np.where(is_gamma, gamma_branch, theta))


def preimage_np(ops: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Natural values that ``unconstrain_np`` maps back to exactly ``u``, bit for bit.

    ``constrain_np(u)`` is within an ulp or two of such a value but, exp/log and sigmoid/logit
    being separately rounded, is itself one in only ~75-99% of cases; so this searches the few
    floats nearest to it. That makes ``pack(unpack(ops, params))`` reproduce ``params`` exactly.
    Where no float nearby inverts exactly (``u`` not produced by ``unconstrain_np``), returns
    ``constrain_np(u)``.
    """
    u = np.asarray(u, dtype=np.float64)
    theta = constrain_np(ops, u)
    best = theta.copy()
    found = unconstrain_np(ops, theta) == u
    up, down = theta, theta
    for _ in range(_PREIMAGE_SEARCH_ULPS):
        if found.all():
            break
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        for candidate in (up, down):
            with np.errstate(invalid="ignore"):
                hit = ~found & (unconstrain_np(ops, candidate) == u)
            best = np.where(hit, candidate, best)
            found |= hit
    return best


# --- natural-value helpers -------------------------------------------------------------------


@functools.cache
def default_natural_params(op: int) -> tuple[float, ...]:
    """Natural values at the default prior's mean: what a structure-only atom gets.

    E.g. exp(-1.5) ~ 0.223 for positive parameters, 0.5 for locations, 1.0 for gamma.
    """
    mean, _ = spec.default_prior_table()
    n = int(spec.NUM_PARAMS[op])
    natural = constrain_np(np.asarray(op), mean[op])
    return tuple(float(x) for x in natural[:n])


def check_natural_params(op: int, values: tuple[object, ...]) -> None:
    """Raise ``ValueError`` if a concrete natural value is outside its domain.

    Only Python floats are checked, so expressions holding traced values still build under jit.
    """
    for name, kind, value in zip(spec.PARAM_NAMES[op], spec.TRANSFORMS[op], values, strict=False):
        if not isinstance(value, float):
            continue
        if kind == spec.T_LOG:
            ok, domain = 0.0 < value < np.inf, "a positive finite number"
        elif kind == spec.T_GAMMA:
            ok, domain = 0.0 < value <= 2.0, "in (0, 2]"
        else:
            ok, domain = bool(np.isfinite(value)), "finite"
        if not ok:
            raise ValueError(f"{spec.NAMES[op]} parameter {name}={value!r} must be {domain}")
