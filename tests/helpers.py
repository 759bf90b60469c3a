"""Shared test helpers: dtype-aware closeness checks and random kernel expressions."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from autogp.kernels import spec
from autogp.kernels.base import Kernel, kernel_class

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Default (rtol, atol) by the precision of the arrays compared (tinygp's test helper does the
# same): float64 results of the same formulas agree to ~1e-12, float32 ones to ~1e-6.
_TOLERANCES = {
    np.dtype(np.float64): (1e-10, 1e-12),
    np.dtype(np.float32): (1e-5, 1e-6),
}


def assert_allclose(
    actual: object,
    desired: object,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    err_msg: str = "",
) -> None:
    """``np.testing.assert_allclose`` with tolerances chosen by the less precise dtype."""
    actual_array, desired_array = np.asarray(actual), np.asarray(desired)
    dtypes = [a.dtype for a in (actual_array, desired_array) if np.issubdtype(a.dtype, np.floating)]
    loosest = min(dtypes, key=lambda d: np.finfo(d).bits, default=np.dtype(np.float64))
    default_rtol, default_atol = _TOLERANCES.get(loosest, (1e-10, 1e-12))
    np.testing.assert_allclose(
        actual_array,
        desired_array,
        rtol=default_rtol if rtol is None else rtol,
        atol=default_atol if atol is None else atol,
        err_msg=err_msg,
    )


# Natural-value ranges of random parameters, by parameter name.
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "l": (0.05, 2.0),
    "period": (0.05, 1.0),
    "gamma": (0.2, 2.0),
    "amp": (0.1, 2.0),
    "intercept": (-0.5, 1.5),
    "location": (-0.5, 1.5),
    "origin": (-0.5, 0.5),
    "scale": (0.01, 0.5),
    "alpha": (0.2, 5.0),
    "c": (0.05, 2.0),
    "v": (0.05, 2.0),
    "bias": (0.05, 2.0),
}
assert set(PARAM_RANGES) == set(spec.PARAM_OF_NAME)


def random_params(rng: np.random.Generator, op: int) -> tuple[float, ...]:
    """Uniform natural values in ``PARAM_RANGES``; gamma is exactly 2 one time in four (the
    boundary value, whose unconstrained form is clipped)."""
    values = []
    for name in spec.PARAM_NAMES[op]:
        low, high = PARAM_RANGES[name]
        if name == "gamma" and rng.random() < 0.25:
            values.append(2.0)
        else:
            values.append(float(rng.uniform(low, high)))
    return tuple(values)


def random_expression(
    rng: np.random.Generator,
    max_depth: int,
    atoms: Sequence[int] = spec.ATOMS,
    ops: Sequence[int] = (spec.PLUS, spec.TIMES, spec.CP),
    operator_probability: float = 0.6,
) -> Kernel:
    """A random expression of depth <= ``max_depth`` with random natural parameters.

    Each node above the depth limit is an operator with ``operator_probability`` (if ``ops`` is
    non-empty), otherwise an atom; opcodes are drawn uniformly from ``atoms`` / ``ops``.
    """
    if max_depth > 0 and ops and rng.random() < operator_probability:
        op = int(rng.choice(ops))
        children = (
            random_expression(rng, max_depth - 1, atoms, ops, operator_probability),
            random_expression(rng, max_depth - 1, atoms, ops, operator_probability),
        )
    else:
        op = int(rng.choice(atoms))
        children = ()
    return kernel_class(op).from_parts(children, random_params(rng, op))
