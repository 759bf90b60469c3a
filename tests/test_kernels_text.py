"""Kernel expression modules and their text form: printing, parsing, round trips, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autogp.kernels import (
    GE,
    SE,
    ChangePoint,
    Const,
    Linear,
    Periodic,
    Product,
    Sum,
    WhiteNoise,
    default_natural_params,
    depth,
    leaves,
    parse,
    size,
    spec,
    structure,
    to_text,
)
from autogp.kernels.base import kernel_class
from tests.helpers import random_expression

# --- expression modules ----------------------------------------------------------------------


def test_operators_build_sums_and_products():
    a, b, c = Linear(0.5, 0.2, 1.1), Periodic(0.31, 0.083, 1.2), SE(0.3, 1.0)
    assert a + b * c == Sum(a, Product(b, c))
    assert (a + b) * c == Product(Sum(a, b), c)
    assert a + b + c == Sum(Sum(a, b), c)


def test_classes_match_the_spec_table():
    for op in (*spec.ATOMS, *spec.OPERATORS):
        cls = kernel_class(op)
        assert cls.opcode == op
        doc = cls.__doc__ or ""
        assert "k(t, t') =" in doc or (op in spec.COVARIATE_ATOMS and "k(z, z') =" in doc)
        node = cls(SE(), SE()) if op in spec.OPERATORS else cls()
        assert node.params == default_natural_params(op)
        assert tuple(node.param_dict) == spec.PARAM_NAMES[op]


def test_parameters_are_floats_and_validated():
    assert SE(1, 2) == SE(1.0, 2.0)
    assert isinstance(SE(np.float32(0.5), 1).l, float)
    GE(0.3, 2.0, 1.0)  # gamma = 2 is allowed
    for bad in [lambda: SE(-1.0, 1.0), lambda: GE(0.3, 2.5, 1.0), lambda: GE(0.3, 0.0, 1.0),
                lambda: Const(float("nan")), lambda: Linear(float("inf"), 1.0, 1.0),
                lambda: ChangePoint(SE(), SE(), 0.5, 0.0)]:  # fmt: skip
        with pytest.raises(ValueError, match="must be"):
            bad()


def test_operators_need_kernel_operands():
    with pytest.raises(TypeError, match="right must be a Kernel"):
        Sum(SE(), 1.0)
    with pytest.raises(TypeError):
        SE() + 1.0


def test_tree_helpers():
    expr = parse("CP(LIN + PER, GE) * SE")
    assert depth(SE()) == 0
    assert depth(expr) == 3
    assert size(expr) == 7
    assert [spec.NAMES[leaf.opcode] for leaf in leaves(expr)] == ["LIN", "PER", "GE", "SE"]
    assert structure(expr) == "CP(LIN + PER, GE) * SE"


def test_replace_params_keeps_children():
    cp = ChangePoint(SE(), GE(), 0.5, 0.1)
    moved = cp.replace_params((0.7, 0.2))
    assert moved == ChangePoint(SE(), GE(), 0.7, 0.2)


def test_in_data_units_scales_and_shifts_parameters():
    product = Linear(0.5, 0.2, 1.1) * Periodic(0.3, 0.1, 1.2)
    expr = product + ChangePoint(SE(0.2, 1.0), WhiteNoise(0.1))
    data = expr.in_data_units(time_scale=10.0, time_offset=2000.0, value_scale=3.0)
    lin, per = data.left.left, data.left.right
    assert lin == Linear(2005.0, 0.2 * 9, 1.1 * 9 / 100)  # amp: value^2 / time^2
    assert per == Periodic(0.3, 1.0, 1.2)  # right factor of a product: no value scale; l unitless
    cp = data.right
    assert cp.location == pytest.approx(2005.0) and cp.scale == pytest.approx(10 * expr.right.scale)
    assert cp.left == SE(2.0, 9.0) and cp.right == WhiteNoise(0.9)


# --- printing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "LIN + PER * SE",
        "(LIN + PER) * SE",
        "LIN * (PER + SE)",
        "LIN + (PER + SE)",
        "LIN * (PER * SE)",
        "LIN + PER + SE",
        "LIN * PER * SE",
        "CP(LIN, GE)",
        "CP(LIN + SE, GE * PER) * WN",
        "CP(CP(M12, M32), M52 + RQ) + CONST",
    ],
)
def test_structure_text_round_trips_with_minimal_parentheses(text):
    assert to_text(parse(text)) == text


def test_precedence_builds_the_intended_trees():
    lin, per, se = Linear(), Periodic(), SE()
    assert parse("LIN + PER * SE") == lin + per * se
    assert parse("(LIN + PER) * SE") == (lin + per) * se
    assert parse("LIN * (PER + SE)") == lin * (per + se)
    assert parse("LIN + (PER + SE)") == Sum(lin, Sum(per, se))
    assert parse("LIN + PER + SE") == Sum(Sum(lin, per), se)
    assert parse("((LIN))") == lin
    assert parse(" LIN+PER*SE ") == lin + per * se


def test_parameter_text_format():
    assert to_text(Periodic(0.31, 0.083, 1.2), params=True) == "PER(l=0.31, period=0.083; amp=1.2)"
    assert to_text(Linear(0.5, 0.2, 1.1), params=True) == "LIN(intercept=0.5; bias=0.2, amp=1.1)"
    assert to_text(Const(0.5), params=True) == "CONST(c=0.5)"
    assert to_text(WhiteNoise(0.1), params=True) == "WN(v=0.1)"
    assert to_text(SE(0.3, 1.0), params=True) == "SE(l=0.3; amp=1)"
    assert to_text(GE(0.3, 1.5, 1.0), params=True) == "GE(l=0.3, gamma=1.5; amp=1)"
    cp = ChangePoint(Linear(0.5, 0.2, 1.1), GE(0.3, 1.5, 1.0), 0.5, 0.01)
    assert to_text(cp, params=True) == (
        "CP(LIN(intercept=0.5; bias=0.2, amp=1.1), GE(l=0.3, gamma=1.5; amp=1); "
        "location=0.5, scale=0.01)"
    )
    assert str(cp) == to_text(cp, params=True)
    assert to_text(SE(0.123456789, 1.0), params=True, precision=3) == "SE(l=0.123; amp=1)"
    assert to_text(SE(0.1 + 0.2, 1.0), params=True, precision=None) == (
        "SE(l=0.30000000000000004; amp=1.0)"
    )


def test_structure_only_text_gets_default_parameters():
    for op in (*spec.ATOMS,):
        assert parse(spec.NAMES[op]).params == default_natural_params(op)
    assert parse("CP(SE, GE)").params == default_natural_params(spec.CP)
    # Mixing is allowed: only the atoms written without parameters get defaults.
    assert parse("SE(l=0.3; amp=2) + PER") == SE(0.3, 2.0) + Periodic()


def test_parse_reads_numbers_in_any_float_syntax():
    assert parse("LIN(intercept=-1e-3; bias=.5, amp=2.)") == Linear(-0.001, 0.5, 2.0)
    assert parse("SE(l=1E+2; amp=3)") == SE(100.0, 3.0)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_depth=st.integers(0, 5))
def test_text_round_trip_is_exact(seed, max_depth):
    expr = random_expression(np.random.default_rng(seed), max_depth)
    exact = to_text(expr, params=True, precision=None)
    assert parse(exact) == expr
    assert to_text(parse(exact), params=True, precision=None) == exact
    shape = to_text(expr)
    assert to_text(parse(shape)) == shape
    assert depth(parse(shape)) == depth(expr)
    # Rounded parameters still parse to the same structure.
    assert structure(parse(to_text(expr, params=True, precision=3))) == shape


# --- parse errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "token"),
    [
        ("", 0, "end of text"),
        ("LIN +", 5, "end of text"),
        ("LIN + FOO", 6, "'FOO'"),
        ("LIN PER", 4, "'PER'"),
        ("(LIN + PER", 10, "end of text"),
        ("LIN )", 4, "')'"),
        ("SE(l=1, amp=2)", 6, "','"),
        ("SE(amp=2; l=1)", 3, "'amp'"),
        ("SE(l=; amp=2)", 5, "';'"),
        ("SE()", 3, "')'"),
        ("CP(LIN)", 6, "')'"),
        ("CP(SE, SE; location=1)", 21, "')'"),
        ("CP", 2, "end of text"),
        ("LIN + *", 6, "'*'"),
        ("LIN & PER", 4, "'&'"),
        ("+", 0, "'+'"),
    ],
)
def test_parse_errors_name_position_and_token(text, position, token):
    with pytest.raises(ValueError, match=f"position {position}") as info:
        parse(text)
    assert token in str(info.value)


def test_parse_rejects_out_of_domain_parameters():
    with pytest.raises(ValueError, match=r"GE at position 5.*gamma"):
        parse("SE + GE(l=0.3, gamma=2.5; amp=1)")
    with pytest.raises(ValueError, match="scale"):
        parse("CP(SE, SE; location=0.5, scale=-1)")
