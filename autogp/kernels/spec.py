"""The kernel grammar's tables: opcodes, parameter layout, transforms and default priors.

Every atom is one row of ``autogp.kernels.atom_table``; this module adds the operators and turns
the rows into the arrays and mappings that packing, the evaluator, the grammar, the text form and
the config read. Nothing here is written per atom: adding an atom is adding its row.

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
exp(-1.5) in normalised units, as AutoGP.jl), see ``default_prior_table``. Time is normalised to
[0, 1] over the training data and values to zero mean and unit variance before fitting, so these
priors are in those units; ``autogp.forecast`` converts parameters back to data units for
reporting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

import numpy as np

from autogp.kernels import atom_table, covariates
from autogp.kernels.atom_row import MAX_PARAMS, AtomRow, Param
from autogp.kernels.atom_table import BM, CONST, GE, LIN, M12, M32, M52, PER, RQ, SE, WN

# --- opcodes ---------------------------------------------------------------------------------
# Opcodes are append-only: saved fits store them and seeded draws index by them.
EMPTY: Final = 0
PLUS: Final = 12
TIMES: Final = 13
CP: Final = 14

ATOM_ROWS: Final[tuple[AtomRow, ...]] = tuple(
    sorted(atom_table.ROWS + covariates.ROWS, key=lambda r: r.opcode)
)
ROW_OF_OPCODE: Final[Mapping[int, AtomRow]] = {row.opcode: row for row in ATOM_ROWS}
ATOMS: Final = tuple(row.opcode for row in ATOM_ROWS)
OPERATORS: Final = (PLUS, TIMES, CP)
NUM_OPS: Final = max((*ATOMS, *OPERATORS)) + 1

# The node-type noise of the opcodes 0..14 (the original grammar) is drawn as one block; each
# later opcode draws its own column (``autogp.inference.grammar.node_type_noise``), so appending
# an atom leaves every seeded draw that does not use it unchanged.
BASE_NUM_OPS: Final = 15

# CP's sigmoid s(t) = (1 + tanh((location - t) / scale)) / 2.
CP_PARAMS: Final = (
    Param("location", "identity", (0.5, 0.5), units=(1, 0), time_location=True,
          doc="CP change-point location in normalised time (identity)"),
    Param("scale", "log", (-3.5, 0.5), units=(1, 0),
          doc="CP transition width in normalised time (log scale)"),
)  # fmt: skip
NOISE: Final = Param(
    "noise", "log", atom_table.POSITIVE_PRIOR, units=(0, 2),
    doc="observation-noise variance (log scale)",
)  # fmt: skip

#: Parameters of each opcode, in storage order.
PARAMS: Final[Mapping[int, tuple[Param, ...]]] = {
    EMPTY: (),
    **{row.opcode: row.params for row in ATOM_ROWS},
    PLUS: (),
    TIMES: (),
    CP: CP_PARAMS,
}
NAMES: Final = {EMPTY: "EMPTY", **{row.opcode: row.name for row in ATOM_ROWS},
                PLUS: "+", TIMES: "*", CP: "CP"}  # fmt: skip
OPCODE_OF_NAME: Final = {name: op for op, name in NAMES.items() if op != EMPTY}
# Operators' names as config keys ([grammar.weights] PLUS = 5), and every symbol's title.
KEYS: Final = {**NAMES, PLUS: "PLUS", TIMES: "TIMES"}
TITLES: Final = {
    **{row.opcode: row.title for row in ATOM_ROWS},
    PLUS: "sum of two kernels",
    TIMES: "product of two kernels",
    CP: "change point",
}

# Parameter names per opcode, in storage order. In the text form the names before ``SPLIT[op]``
# come before the ';' and the rest after it: ``PER(l=0.31, period=0.083; amp=1.2)``.
PARAM_NAMES: Final = {op: tuple(p.name for p in params) for op, params in PARAMS.items()}
SPLIT: Final = {op: ROW_OF_OPCODE[op].split if op in ROW_OF_OPCODE else 0 for op in PARAMS}

#: The input column each opcode reads: 0 for time (and for operators), k for covariate k.
INPUT = np.zeros(NUM_OPS, dtype=np.int32)
for _row in ATOM_ROWS:
    INPUT[_row.opcode] = _row.input
INPUT.setflags(write=False)
#: Atoms that act on a covariate (``autogp.kernels.covariates``); absent from the config's
#: [grammar.weights]: a fit gives them weight by its number of covariates.
COVARIATE_ATOMS: Final = tuple(row.opcode for row in ATOM_ROWS if row.input > 0)
MAX_COVARIATES: Final = covariates.MAX_COVARIATES

#: Atoms whose covariance depends on t - t' only.
STATIONARY: Final = tuple(row.opcode for row in ATOM_ROWS if row.stationary)

#: Default production weight of every atom and operator (AutoGP.jl's: LIN, GE, PER 6 each;
#: + and * 5 each; CP 2; all else 0).
DEFAULT_WEIGHTS: Final[Mapping[int, float]] = {
    **{row.opcode: row.weight for row in ATOM_ROWS},
    PLUS: 5.0,
    TIMES: 5.0,
    CP: 2.0,
}

IS_ATOM = np.zeros(NUM_OPS, dtype=bool)
IS_ATOM[list(ATOMS)] = True
IS_ATOM.setflags(write=False)
IS_OPERATOR = np.zeros(NUM_OPS, dtype=bool)
IS_OPERATOR[list(OPERATORS)] = True
IS_OPERATOR.setflags(write=False)

# Transform kinds.
T_IDENTITY: Final = 0
T_LOG: Final = 1
T_GAMMA: Final = 2
TRANSFORM_NAMES: Final = {T_IDENTITY: "identity", T_LOG: "log", T_GAMMA: "gamma"}
_TRANSFORM_CODES = {name: code for code, name in TRANSFORM_NAMES.items()}

NUM_PARAMS = np.zeros(NUM_OPS, dtype=np.int32)
TRANSFORMS = np.zeros((NUM_OPS, MAX_PARAMS), dtype=np.int32)
for _op, _params in PARAMS.items():
    NUM_PARAMS[_op] = len(_params)
    for _k, _param in enumerate(_params):
        TRANSFORMS[_op, _k] = _TRANSFORM_CODES[_param.transform]
NUM_PARAMS.setflags(write=False)
TRANSFORMS.setflags(write=False)


def _shared_definitions() -> dict[str, Param]:
    """Each parameter name's definition; the config has one ``[priors.<name>]`` per name, so
    every node using a name must agree on its transform, prior and doc (units may differ)."""
    out: dict[str, Param] = {}
    for op, params in PARAMS.items():
        for param in params:
            first = out.setdefault(param.name, param)
            same = (first.transform, first.prior, first.doc, first.time_location)
            if same != (param.transform, param.prior, param.doc, param.time_location):
                raise ValueError(f"{NAMES[op]} defines parameter {param.name!r} differently")
    return out


#: Every parameter name of any node -> its transform, default prior and doc, in opcode order.
#: (Its units can differ between nodes: see :func:`unit_powers`.)
PARAM_OF_NAME: Final[Mapping[str, Param]] = _shared_definitions()


def unit_powers(op: int, name: str) -> tuple[int, int]:
    """(power of time_scale, power of value_scale) of parameter ``name`` of opcode ``op``."""
    return PARAMS[op][PARAM_NAMES[op].index(name)].units


def is_time_location(op: int, name: str) -> bool:
    """Whether parameter ``name`` of ``op`` is a point on the time axis (it shifts by the
    time offset in data units)."""
    return PARAMS[op][PARAM_NAMES[op].index(name)].time_location


def is_atom(op: int) -> bool:
    return op in ROW_OF_OPCODE


def num_slots(max_depth: int) -> int:
    """Heap slots for trees of depth <= max_depth (the root has depth 0)."""
    return 2 ** (max_depth + 1) - 1


def slot_depth(slot: int) -> int:
    return int(math.floor(math.log2(slot + 1)))


# --- priors ----------------------------------------------------------------------------------
# Normal(mean, std) on the unconstrained value of each parameter, from its ``Param``.
DEFAULT_POSITIVE_PRIOR: Final = atom_table.POSITIVE_PRIOR
DEFAULT_NOISE_PRIOR: Final = NOISE.prior


def default_prior_table() -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)`` arrays of shape ``[NUM_OPS, MAX_PARAMS]`` (std 1 where unused)."""
    mean = np.zeros((NUM_OPS, MAX_PARAMS))
    std = np.ones((NUM_OPS, MAX_PARAMS))
    for op, params in PARAMS.items():
        for k, param in enumerate(params):
            mean[op, k], std[op, k] = param.prior
    return mean, std


__all__ = [
    "ATOMS", "ATOM_ROWS", "BASE_NUM_OPS", "BM", "CONST", "COVARIATE_ATOMS", "CP", "INPUT",
    "MAX_COVARIATES", "CP_PARAMS", "DEFAULT_NOISE_PRIOR",
    "DEFAULT_POSITIVE_PRIOR", "DEFAULT_WEIGHTS", "EMPTY", "GE", "IS_ATOM", "IS_OPERATOR", "KEYS",
    "LIN", "M12", "M32", "M52", "MAX_PARAMS", "NAMES", "NOISE", "NUM_OPS", "NUM_PARAMS",
    "OPCODE_OF_NAME", "OPERATORS", "PARAMS", "PARAM_NAMES", "PARAM_OF_NAME", "PER", "PLUS", "RQ",
    "ROW_OF_OPCODE", "SE", "SPLIT", "STATIONARY", "T_GAMMA", "T_IDENTITY", "T_LOG", "TIMES",
    "TITLES", "TRANSFORMS", "TRANSFORM_NAMES", "WN", "default_prior_table", "is_atom",
    "is_time_location", "num_slots", "slot_depth", "unit_powers",
]  # fmt: skip
