"""Sanity checks of the numpy reference evaluator against scalar closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autogp.kernels import (
    GE,
    RQ,
    SE,
    ChangePoint,
    Const,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    WhiteNoise,
)
from tests.helpers import assert_allclose, random_expression
from tests.reference_numpy import gram_numpy


def k(expr, t: float, s: float) -> float:
    """The reference at one pair of time points."""
    return float(gram_numpy(expr, np.array([t]), np.array([s]))[0, 0])


def test_stationary_atoms_equal_amp_at_zero_distance():
    for expr in [SE(0.3, 1.7), GE(0.3, 1.2, 1.7), Periodic(0.5, 0.2, 1.7), Matern12(0.3, 1.7),
                 Matern32(0.3, 1.7), Matern52(0.3, 1.7), RQ(0.3, 2.0, 1.7)]:  # fmt: skip
        assert k(expr, 0.4, 0.4) == pytest.approx(1.7, rel=1e-15), expr


def test_closed_forms_at_one_length_scale():
    l, amp = 0.3, 1.5
    t, s = 0.1, 0.4  # r = l
    e = math.exp
    assert k(SE(l, amp), t, s) == pytest.approx(amp * e(-0.5), rel=1e-12)
    assert k(Matern12(l, amp), t, s) == pytest.approx(amp * e(-1.0), rel=1e-12)
    assert k(Matern32(l, amp), t, s) == pytest.approx(amp * (1 + 3**0.5) * e(-(3**0.5)), rel=1e-12)
    m52 = amp * (1 + 5**0.5 + 5 / 3) * e(-(5**0.5))
    assert k(Matern52(l, amp), t, s) == pytest.approx(m52, rel=1e-12)
    assert k(GE(l, 0.7, amp), t, s) == pytest.approx(amp * e(-1.0), rel=1e-12)
    assert k(RQ(l, 2.0, amp), t, s) == pytest.approx(amp * (1 + 1 / 4) ** -2.0, rel=1e-12)


def test_periodic_repeats_every_period_and_is_lowest_at_half_period():
    expr = Periodic(0.8, 0.25, 1.3)
    assert k(expr, 0.1, 0.1 + 0.25) == pytest.approx(1.3, rel=1e-12)
    assert k(expr, 0.1, 0.1 + 3 * 0.25) == pytest.approx(1.3, rel=1e-12)
    assert k(expr, 0.1, 0.1 + 0.125) == pytest.approx(1.3 * math.exp(-2 / 0.8**2), rel=1e-12)


def test_ge_special_cases_match_se_and_matern12():
    x = np.linspace(-0.3, 1.2, 17)
    assert_allclose(gram_numpy(GE(0.4, 2.0, 1.1), x, x), gram_numpy(SE(0.4 / 2**0.5, 1.1), x, x))
    assert_allclose(gram_numpy(GE(0.4, 1.0, 1.1), x, x), gram_numpy(Matern12(0.4, 1.1), x, x))


def test_rq_tends_to_se_for_large_alpha():
    x = np.linspace(0, 1, 9)
    assert_allclose(gram_numpy(RQ(0.3, 1e7, 0.9), x, x), gram_numpy(SE(0.3, 0.9), x, x), rtol=1e-5)


def test_const_linear_and_white_noise():
    assert k(Const(0.7), 0.0, 5.0) == 0.7
    assert k(Linear(0.5, 0.2, 1.1), 1.5, -0.5) == pytest.approx(0.2 + 1.1 * 1.0 * -1.0)
    x = np.array([0.1, 0.2, 0.2, 0.3])
    assert_allclose(gram_numpy(WhiteNoise(0.4), x, x), 0.4 * (x[:, None] == x[None, :]))
    # Exact equality only: the next float is already a different time.
    assert k(WhiteNoise(0.4), 0.2, np.nextafter(0.2, 1.0)) == 0.0


def test_sum_and_product_are_elementwise():
    x1, x2 = np.linspace(0, 1, 5), np.linspace(-0.2, 0.9, 4)
    a, b = Linear(0.3, 0.5, 1.2), Periodic(0.6, 0.2, 0.8)
    assert_allclose(gram_numpy(a + b, x1, x2), gram_numpy(a, x1, x2) + gram_numpy(b, x1, x2))
    assert_allclose(gram_numpy(a * b, x1, x2), gram_numpy(a, x1, x2) * gram_numpy(b, x1, x2))


def test_change_point_limits_and_midpoint():
    left, right = Linear(0.5, 0.2, 1.1), SE(0.3, 2.0)
    cp = ChangePoint(left, right, location=0.5, scale=0.01)
    assert k(cp, -0.2, 0.1) == pytest.approx(k(left, -0.2, 0.1), rel=1e-12)  # far left
    assert k(cp, 0.9, 1.4) == pytest.approx(k(right, 0.9, 1.4), rel=1e-12)  # far right
    assert abs(k(cp, 0.1, 0.9)) < 1e-12  # across the change: uncorrelated
    mid = 0.25 * k(left, 0.5, 0.5) + 0.25 * k(right, 0.5, 0.5)  # s(location) = 1/2
    assert k(cp, 0.5, 0.5) == pytest.approx(mid, rel=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_random_expressions_give_symmetric_psd_grams(seed):
    rng = np.random.default_rng(seed)
    expr = random_expression(rng, max_depth=3)
    x = np.sort(rng.uniform(-0.2, 1.2, 25))
    gram = gram_numpy(expr, x, x)
    assert_allclose(gram, gram.T)
    eigenvalues = np.linalg.eigvalsh(gram)
    assert eigenvalues.min() >= -1e-9 * max(1.0, eigenvalues.max()), str(expr)


@pytest.mark.parametrize("seed", range(20))
def test_in_data_units_gives_the_same_covariance_in_data_units(seed):
    """k_data(t, t') = value_scale^2 k_n((t - offset)/scale, (t' - offset)/scale)."""
    rng = np.random.default_rng(100 + seed)
    expr = random_expression(rng, max_depth=3)
    time_scale, time_offset, value_scale = 37.5, 1990.0, 4.2
    x_normalised = rng.uniform(-0.2, 1.2, 12)
    x_data = x_normalised * time_scale + time_offset
    data_expr = expr.in_data_units(time_scale, time_offset, value_scale)
    assert type(data_expr) is type(expr)
    # WN compares times exactly, so compare at the same float points on both sides.
    x_back = (x_data - time_offset) / time_scale
    assert_allclose(
        gram_numpy(data_expr, x_data, x_data),
        value_scale**2 * gram_numpy(expr, x_back, x_back),
        rtol=1e-8,
        atol=1e-10,
    )
