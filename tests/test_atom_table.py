"""The atom table: every row states every fact, the facts hold, and everything that knows about
atoms (evaluator, kernel classes, text form, explain, grammar and config defaults) covers exactly
the table's atoms. Rows are checked generically, so a new atom is tested here without new code."""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from autogp.config import GrammarWeights, PriorsConfig, load_config
from autogp.data import TimeAxis
from autogp.evaluator import gram, leaves
from autogp.forecast import explain
from autogp.inference import grammar as gr
from autogp.kernels import atom_table, atoms, kernel_class, pack, parse, spec, to_text
from autogp.kernels.atom_row import MAX_PARAMS, ROLES, AtomRow
from tests.helpers import assert_allclose, random_params

ROWS = spec.ATOM_ROWS
IDS = [row.name for row in ROWS]
AXIS = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))


# --- every row states every fact ----------------------------------------------------------------
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row_states_every_fact(row: AtomRow):
    assert isinstance(row.opcode, int) and row.opcode not in (spec.EMPTY, *spec.OPERATORS)
    # a name token of the text form (covariate atoms: LIN[k])
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?", row.name)
    assert row.class_name.isidentifier() and row.title and row.formula
    assert 1 <= len(row.params) <= MAX_PARAMS
    assert len(set(row.param_names)) == len(row.params)
    assert 0 <= row.split <= len(row.params)
    for param in row.params:
        assert param.transform in ("log", "gamma", "identity")
        mean, std = param.prior
        assert math.isfinite(mean) and std > 0
        assert all(isinstance(power, int) for power in param.units)
        assert param.time_location == (param.transform == "identity")
        assert param.doc
    assert callable(row.value) and callable(row.vjp) and callable(row.reading)
    assert isinstance(row.stationary, bool)
    assert row.role in ROLES
    # explain reads a smooth atom's length scale and a seasonal atom's period by name.
    if row.role == "smooth":
        assert "l" in row.param_names
    if row.role == "seasonal":
        assert "period" in row.param_names
    assert math.isfinite(row.weight) and row.weight >= 0


def test_opcodes_and_names_are_unique_and_the_table_is_in_opcode_order():
    opcodes = [row.opcode for row in atom_table.ROWS]
    assert opcodes == sorted(opcodes) and len(set(opcodes)) == len(opcodes)
    assert len({row.name for row in ROWS}) == len(ROWS)
    assert len({row.class_name for row in ROWS}) == len(ROWS)
    assert set(spec.ATOMS) | set(spec.OPERATORS) | {spec.EMPTY} == set(range(spec.NUM_OPS))


# --- the facts hold -------------------------------------------------------------------------------
def _theta(row: AtomRow, seed: int) -> np.ndarray:
    values = random_params(np.random.default_rng(seed), row.opcode)
    return np.pad(np.asarray(values), (0, MAX_PARAMS - len(values)))


T1 = np.array([0.0, 0.1, 0.1, 0.35, 0.6, 0.95])
T2 = np.array([0.05, 0.1, 0.5, 0.9])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_vjp_matches_reverse_mode_through_the_value(row: AtomRow):
    cot = np.random.default_rng(1).normal(size=(T1.size, T2.size))
    for seed in range(3):
        theta = jnp.asarray(_theta(row, seed))
        _, pullback = jax.vjp(lambda th: row.value(th, T1, T2), theta)
        (expected,) = pullback(cot)
        got = row.vjp(theta, T1, T2, cot)
        assert got.shape == (MAX_PARAMS,)
        assert_allclose(got[: len(row.params)], expected[: len(row.params)], rtol=1e-9)
        assert np.all(np.asarray(got[len(row.params) :]) == 0)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_stationary_flag_says_whether_the_value_is_shift_invariant(row: AtomRow):
    theta = jnp.asarray(_theta(row, 0))
    shifted = np.asarray(row.value(theta, T1 + 0.37, T2 + 0.37))
    invariant = np.allclose(shifted, np.asarray(row.value(theta, T1, T2)), rtol=1e-12, atol=0)
    if row.input:  # a covariate atom: its input is not time, so it is never stationary in time
        assert not row.stationary
        return
    assert invariant == row.stationary


def _gram_and_gradient(ops, params, x, regular_grid):
    """The Gram matrix and the gradient of a scalar function of it; jitted, so that every
    atom (the same packed shapes) shares one compiled program per path."""
    value = gram(ops, params, x, regular_grid=regular_grid)
    grad = jax.grad(lambda u: jnp.sum(jnp.sin(gram(ops, u, x, regular_grid=regular_grid))))
    return value, grad(params)


_gram_and_gradient_jit = jax.jit(_gram_and_gradient, static_argnames="regular_grid")


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_regular_grid_path_equals_the_general_one(row: AtomRow):
    x = np.linspace(0.0, 1.0, 9)
    expr = kernel_class(row.opcode)(*random_params(np.random.default_rng(2), row.opcode))
    ops, params = pack([expr], max_depth=1)
    dense, grad_dense = _gram_and_gradient_jit(ops, params, x, regular_grid=False)
    fast, grad_fast = _gram_and_gradient_jit(ops, params, x, regular_grid=True)
    assert_allclose(fast, dense)
    assert_allclose(grad_fast, grad_dense, rtol=1e-8, atol=1e-10)


# --- everything derived covers exactly the table's atoms -----------------------------------------
def test_evaluator_classes_and_text_cover_exactly_the_table():
    opcodes = {row.opcode for row in ROWS}
    assert set(leaves.VALUE) == set(leaves.VJP) == opcodes == set(spec.ATOMS)
    assert {cls.opcode for cls in atoms.ATOM_CLASSES} == opcodes
    assert set(spec.STATIONARY) == {row.opcode for row in ROWS if row.stationary}
    for row in ROWS:
        cls = kernel_class(row.opcode)
        assert cls.__name__ == row.class_name and cls.__doc__ == row.formula
        assert getattr(atoms, row.class_name) is cls
        assert spec.PARAM_NAMES[row.opcode] == row.param_names
        assert spec.NAMES[row.opcode] == row.name and spec.SPLIT[row.opcode] == row.split
        expr = cls(*random_params(np.random.default_rng(3), row.opcode))
        assert parse(to_text(expr, params=True, precision=None)) == expr
        assert type(parse(row.name)) is cls


def test_transforms_units_and_priors_come_from_the_rows():
    mean, std = spec.default_prior_table()
    codes = {"identity": spec.T_IDENTITY, "log": spec.T_LOG, "gamma": spec.T_GAMMA}
    for op, params in spec.PARAMS.items():
        assert spec.NUM_PARAMS[op] == len(params)
        for k, param in enumerate(params):
            assert spec.TRANSFORMS[op, k] == codes[param.transform]
            assert (mean[op, k], std[op, k]) == param.prior
            assert spec.unit_powers(op, param.name) == param.units


def test_explain_reads_every_atom_by_its_row():
    roles = {
        "polynomial": "trend", "constant": "trend", "level": "trend",
        "seasonal": "seasonal", "smooth": "smooth", "noise": "noise", "covariate": "covariates",
    }  # fmt: skip
    for row in ROWS:
        expr = kernel_class(row.opcode)(*random_params(np.random.default_rng(4), row.opcode))
        params = dict(zip(row.param_names, expr.params, strict=True))
        reading = row.reading(params, explain.AxisWords(AXIS))
        if row.input:  # covariate atoms add their length scale in the covariate's units
            assert explain.describe(expr, AXIS).startswith(reading)
        else:
            assert explain.describe(expr, AXIS) == reading
        assert explain.role(expr) == row.role
        assert explain.classify_term(expr) == roles[row.role]


def test_grammar_and_config_defaults_share_the_table():
    defaults = GrammarWeights()
    for op, weight in spec.DEFAULT_WEIGHTS.items():
        assert gr.DEFAULT_WEIGHTS.get(op, 0.0) == weight
        if op not in spec.COVARIATE_ATOMS:  # a fit weighs those by its covariates
            assert getattr(defaults, spec.KEYS[op]) == weight
    assert set(defaults.as_dict()) == {spec.KEYS[op] for op in (*spec.ATOMS, *spec.OPERATORS)
                                       if op not in spec.COVARIATE_ATOMS}
    assert {row.opcode: row.weight for row in ROWS}.items() <= spec.DEFAULT_WEIGHTS.items()
    grammar = gr.Grammar.default()
    assert grammar.weights == tuple(spec.DEFAULT_WEIGHTS.get(op, 0.0) for op in range(spec.NUM_OPS))
    priors = PriorsConfig().as_dict()
    assert priors == {
        **{name: p.prior for name, p in spec.PARAM_OF_NAME.items()},
        "noise": spec.NOISE.prior,
    }
    assert load_config().grammar.weights == defaults


# --- seeded draws do not depend on how many opcodes exist ----------------------------------------
def test_node_type_noise_of_the_original_opcodes_is_one_block():
    key = jax.random.key(7)
    noise = gr.node_type_noise(key, 15, jnp.float64)
    assert noise.shape == (15, spec.NUM_OPS)
    first = jax.random.gumbel(key, (15, spec.BASE_NUM_OPS), jnp.float64)
    np.testing.assert_array_equal(noise[:, : spec.BASE_NUM_OPS], first)
    for op in range(spec.BASE_NUM_OPS, spec.NUM_OPS):
        column = jax.random.gumbel(jax.random.fold_in(key, op), (15,), jnp.float64)
        np.testing.assert_array_equal(noise[:, op], column)
