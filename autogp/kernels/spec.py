"""The kernel grammar's table: opcodes, parameter layout, transforms and default priors.

Everything that packs, evaluates, samples or prints a kernel expression reads this one table, so
adding an atom means adding one row here plus its formula (``autogp.evaluator.leaves``) and its
module (``autogp.kernels.atoms``).

Layout of a packed batch of P trees of maximum depth D (see ``autogp.kernels.packing``):

* ``ops``    int32   ``[P, S]`` with ``S = 2**(D+1) - 1`` slots in heap order: the root is slot 0
  and the children of slot i are slots ``2i+1`` (left) and ``2i+2`` (right). Empty slots hold
  ``EMPTY`` (0).
* ``params`` float64 ``[P, S, MAX_PARAMS]``: each node's parameters in *unconstrained* space, in the
  order of ``PARAM_NAMES[op]``; unused entries are 0.
* ``noise``  float64 ``[P]``: the unconstrained observation-noise variance (``log`` transform).

Parameters map to their natural (constrained) values through ``TRANSFORMS``:

* ``"log"``:      theta = exp(u), for positive values (length scales, periods, amplitudes, ...);
* ``"gamma"``:    theta = 2 * sigmoid(u), for the gamma-exponential's exponent in (0, 2);
* ``"identity"``: theta = u, for locations on the time axis (LIN intercept, BM origin, CP
  location).

Default priors are normal in unconstrained space (log-normal on positive parameters with median
exp(-1.5) in normalised units, as AutoGP.jl), see ``DEFAULT_PRIOR``. Time is normalised to [0, 1]
over the training data and values to zero mean and unit variance before fitting, so these priors
are in those units; ``autogp.forecast`` converts parameters back to data units for reporting.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

# --- opcodes ---------------------------------------------------------------------------------
EMPTY: Final = 0
CONST: Final = 1
LIN: Final = 2
SE: Final = 3
GE: Final = 4
PER: Final = 5
WN: Final = 6
M12: Final = 7
M32: Final = 8
M52: Final = 9
RQ: Final = 10
BM: Final = 11
PLUS: Final = 12
TIMES: Final = 13
CP: Final = 14
NUM_OPS: Final = 15

ATOMS: Final = (CONST, LIN, SE, GE, PER, WN, M12, M32, M52, RQ, BM)
OPERATORS: Final = (PLUS, TIMES, CP)
MAX_PARAMS: Final = 3

NAMES: Final = {
    EMPTY: "EMPTY",
    CONST: "CONST",
    LIN: "LIN",
    SE: "SE",
    GE: "GE",
    PER: "PER",
    WN: "WN",
    M12: "M12",
    M32: "M32",
    M52: "M52",
    RQ: "RQ",
    BM: "BM",
    PLUS: "+",
    TIMES: "*",
    CP: "CP",
}
OPCODE_OF_NAME: Final = {name: op for op, name in NAMES.items() if op != EMPTY}

# Parameter names per opcode, in storage order. In the text form the names before ``SPLIT[op]``
# come before the ';' and the rest after it: ``PER(l=0.31, period=0.083; amp=1.2)``.
PARAM_NAMES: Final = {
    EMPTY: (),
    CONST: ("c",),
    LIN: ("intercept", "bias", "amp"),
    SE: ("l", "amp"),
    GE: ("l", "gamma", "amp"),
    PER: ("l", "period", "amp"),
    WN: ("v",),
    M12: ("l", "amp"),
    M32: ("l", "amp"),
    M52: ("l", "amp"),
    RQ: ("l", "alpha", "amp"),
    BM: ("origin", "amp"),
    PLUS: (),
    TIMES: (),
    CP: ("location", "scale"),
}
SPLIT: Final = {
    EMPTY: 0,
    CONST: 1,
    LIN: 1,
    SE: 1,
    GE: 2,
    PER: 2,
    WN: 1,
    M12: 1,
    M32: 1,
    M52: 1,
    RQ: 2,
    BM: 1,
    PLUS: 0,
    TIMES: 0,
    CP: 0,
}

# Transform kinds.
T_IDENTITY: Final = 0
T_LOG: Final = 1
T_GAMMA: Final = 2
TRANSFORM_NAMES: Final = {T_IDENTITY: "identity", T_LOG: "log", T_GAMMA: "gamma"}


def _transform_of(name: str) -> int:
    if name in ("intercept", "location", "origin"):
        return T_IDENTITY
    if name == "gamma":
        return T_GAMMA
    return T_LOG


NUM_PARAMS = np.zeros(NUM_OPS, dtype=np.int32)
TRANSFORMS = np.zeros((NUM_OPS, MAX_PARAMS), dtype=np.int32)
for _op, _names in PARAM_NAMES.items():
    NUM_PARAMS[_op] = len(_names)
    for _k, _n in enumerate(_names):
        TRANSFORMS[_op, _k] = _transform_of(_n)
NUM_PARAMS.setflags(write=False)
TRANSFORMS.setflags(write=False)

# How each parameter scales when time (t -> t * time_scale) and values (y -> y * value_scale)
# are mapped back to data units: (power of time_scale, power of value_scale). Locations on the
# time axis also shift (``autogp.forecast`` handles the offset).
UNIT_POWERS: Final = {
    "c": (0, 2),
    "intercept": (1, 0),
    "bias": (0, 2),
    "amp": (0, 2),
    "l": (1, 0),
    "period": (1, 0),
    "gamma": (0, 0),
    "alpha": (0, 0),
    "v": (0, 2),
    "location": (1, 0),
    "origin": (1, 0),
    "scale": (1, 0),
}

# Per-opcode exceptions to UNIT_POWERS: LIN's amp multiplies (t - intercept)(t' - intercept), so it
# carries time^-2, and BM's a duration (a variance per unit time), time^-1; PER's l divides a
# squared sine (dimensionless), so it does not scale with time.
UNIT_POWER_EXCEPTIONS: Final = {(LIN, "amp"): (-2, 2), (BM, "amp"): (-1, 2), (PER, "l"): (0, 0)}
# Parameters that are points on the time axis: in data units they also shift by the time offset.
TIME_LOCATIONS: Final = frozenset({"intercept", "location", "origin"})


def unit_powers(op: int, name: str) -> tuple[int, int]:
    """(power of time_scale, power of value_scale) of parameter ``name`` of opcode ``op``."""
    return UNIT_POWER_EXCEPTIONS.get((op, name), UNIT_POWERS[name])


def is_atom(op: int) -> bool:
    return op in ATOMS


def num_slots(max_depth: int) -> int:
    """Heap slots for trees of depth <= max_depth (the root has depth 0)."""
    return 2 ** (max_depth + 1) - 1


def slot_depth(slot: int) -> int:
    return int(math.floor(math.log2(slot + 1)))


# --- priors ----------------------------------------------------------------------------------
# Normal(mean, std) on the unconstrained value of each parameter. Positive parameters get
# log-normal priors with median exp(-1.5) (AutoGP.jl); gamma a logit-normal on (0, 2);
# locations a normal centred in the middle of the normalised time axis.
_DEFAULT_BY_NAME: Final = {
    "intercept": (0.5, 1.0),
    "location": (0.5, 0.5),
    # BM starts a little before the first observation (normalised time 0): its first value
    # then has some variance of its own (amp * -origin) instead of being pinned at zero.
    "origin": (-0.1, 0.1),
    "gamma": (0.0, 1.0),
    "scale": (-3.5, 0.5),
}
DEFAULT_POSITIVE_PRIOR: Final = (-1.5, 1.0)
DEFAULT_NOISE_PRIOR: Final = (-1.5, 1.0)


def default_prior_table() -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)`` arrays of shape ``[NUM_OPS, MAX_PARAMS]`` (std 1 where unused)."""
    mean = np.zeros((NUM_OPS, MAX_PARAMS))
    std = np.ones((NUM_OPS, MAX_PARAMS))
    for op, names in PARAM_NAMES.items():
        for k, name in enumerate(names):
            mean[op, k], std[op, k] = _DEFAULT_BY_NAME.get(name, DEFAULT_POSITIVE_PRIOR)
    return mean, std
