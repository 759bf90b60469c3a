"""The quasi-periodic atom (``QPER``: a seasonal pattern that changes over time), one row of the
atom table: its covariance against PER times SE written in numpy, its custom VJP against finite
differences, the regular grid's lag path, the period proposal over its period, units, text form
and reading, and that it is off unless configured."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from autogp.data import TimeAxis
from autogp.evaluator import gram
from autogp.forecast import explain
from autogp.inference import grammar as gr
from autogp.inference import periods
from autogp.kernels import SE, Periodic, QuasiPeriodic, pack, parse, spec, structure, to_text
from tests.helpers import (
    assert_allclose,
    assert_atom_off_by_default_and_on_when_configured,
    assert_atom_vjp_matches_finite_differences,
)
from tests.reference_numpy import gram_numpy

QPER = spec.OPCODE_OF_NAME["QPER"]
X = np.sort(np.random.default_rng(0).uniform(0.0, 1.0, 20))
X[7] = X[6]  # a repeated time point


def test_qper_is_a_stationary_atom_with_an_appended_opcode():
    assert QPER == 18 and QPER in spec.ATOMS and spec.NUM_OPS == 19
    assert spec.PARAM_NAMES[QPER] == ("decay", "period", "amp") and QPER in spec.STATIONARY
    # the period sits where PER's does, with PER's prior: the period proposal draws both
    assert spec.PARAM_NAMES[spec.PER].index("period") == 1
    mean, std = spec.default_prior_table()
    assert (mean[QPER, 1], std[QPER, 1]) == (mean[spec.PER, 1], std[spec.PER, 1])


@pytest.mark.parametrize(("decay", "period", "amp"), [(0.4, 0.1, 1.3), (5.0, 0.25, 0.2),
                                                      (0.05, 0.3, 2.0)])
def test_covariance_is_per_with_shape_one_half_times_se(decay, period, amp):
    expr = QuasiPeriodic(decay=decay, period=period, amp=amp)
    x_new = np.array([1.2, 2.0, X[3]])
    for a, b in [(X, X), (X, x_new)]:
        expected = (gram_numpy(Periodic(l=0.5, period=period, amp=amp), a, b)
                    * gram_numpy(SE(l=decay, amp=1.0), a, b))
        assert_allclose(gram(*pack([expr], max_depth=1), a, b)[0], expected, rtol=1e-12)
        assert_allclose(gram_numpy(expr, a, b), expected, rtol=1e-12)
    # A long decay is PER itself; cycles a decay apart keep exp(-1/2) of their correlation.
    long = gram(*pack([QuasiPeriodic(decay=1e6, period=period, amp=amp)], 1), X)[0]
    assert_allclose(long, gram_numpy(Periodic(l=0.5, period=period, amp=amp), X, X), rtol=1e-9)
    t = np.array([0.0, 4 * period])
    k = gram(*pack([QuasiPeriodic(decay=4 * period, period=period, amp=1.0)], 1), t)[0]
    assert float(k[0, 1]) == pytest.approx(math.exp(-0.5), rel=1e-9)


def test_custom_vjp_matches_finite_differences_of_the_numpy_formula():
    rng = np.random.default_rng(1)
    cot = rng.normal(size=(X.size, X.size))
    u = np.array([math.log(0.3), math.log(0.17), math.log(1.3)])  # decay, period, amp (log)

    def reference(u):
        expr = QuasiPeriodic(decay=math.exp(u[0]), period=math.exp(u[1]), amp=math.exp(u[2]))
        return float(np.sum(cot * gram_numpy(expr, X, X)))

    assert_atom_vjp_matches_finite_differences(QPER, u, X, cot, reference)


def test_regular_grid_lag_path_matches_the_general_one():
    """On evenly spaced points a stationary subtree is carried as lags: same value and VJP."""
    expr = parse("QPER(decay=0.4, period=0.1; amp=1.3) * GE(l=0.5, gamma=1.5; amp=0.7)"
                 " + LIN(intercept=0.2; bias=0.1, amp=0.5)")
    ops, params = pack([expr], max_depth=3)
    x = np.linspace(0.0, 1.0, 17)
    cot = jnp.asarray(np.random.default_rng(2).normal(size=(17, 17)))

    def loss(p, regular):
        return jnp.sum(cot * gram(ops, p, x, regular_grid=regular)[0])

    p = jnp.asarray(params)
    assert_allclose(gram(ops, p, x, regular_grid=True), gram(ops, p, x), rtol=1e-12)
    assert_allclose(jax.grad(loss)(p, True), jax.grad(loss)(p, False), rtol=1e-9, atol=1e-12)


def test_period_proposal_covers_qper_periods():
    """The proposal's correction and its redraw treat a QPER leaf's period as a PER leaf's, and
    leave other leaves alone."""
    ops = jnp.asarray([spec.PLUS, QPER, spec.GE], jnp.int32)
    params = jnp.asarray([[0.0, 0.0, 0.0], [-1.0, -2.0, 0.3], [-1.0, -2.0, 0.3]])
    region = jnp.ones(3, bool)
    proposal = periods.PeriodProposal(log_centers=jnp.asarray([math.log(0.1)]),
                                      log_weights=jnp.asarray([0.0]), mix=jnp.asarray(1.0),
                                      scale=jnp.asarray(0.01))
    new = periods.redraw_periods(ops, params, region, proposal, key=jax.random.key(0))
    assert abs(float(new[1, 1]) - math.log(0.1)) < 0.05  # QPER's period drawn near the peak
    assert_allclose(np.delete(np.asarray(new), [(1 * 3) + 1]),
                    np.delete(np.asarray(params), [(1 * 3) + 1]))  # nothing else moved
    prior = periods.period_prior(gr.Grammar.default())
    one = periods.log_q_minus_log_p(new[1, 1], *prior, proposal)
    assert float(periods.region_correction(ops, new, region, *prior, proposal)) == pytest.approx(
        float(one), rel=1e-12)
    per_ops = ops.at[1].set(spec.PER)  # the same value on a PER leaf counts the same
    assert float(periods.region_correction(per_ops, new, region, *prior, proposal)) == (
        pytest.approx(float(one), rel=1e-12))


def test_period_prior_must_be_shared():
    """The config sets priors by parameter name, so PER and QPER share "period"; a grammar
    built with different ones is refused by the proposal, whose correction uses one prior."""
    grammar = gr.Grammar.default(param_priors={("QPER", "period"): (0.0, 1.0)})
    with pytest.raises(ValueError, match="share one period prior"):
        periods.period_prior(grammar)
    assert periods.period_prior(gr.Grammar.default()) == spec.PARAMS[spec.PER][1].prior


def test_text_form_round_trips():
    expr = parse("QPER(decay=0.4, period=0.1; amp=1.3)")
    assert isinstance(expr, QuasiPeriodic) and expr.params == (0.4, 0.1, 1.3)
    assert to_text(expr, params=True) == "QPER(decay=0.4, period=0.1; amp=1.3)"
    assert structure(parse("LIN + QPER * GE")) == "LIN + QPER * GE"
    assert parse(to_text(expr, params=True, precision=None)) == expr


def test_units_and_reading():
    """decay and period are durations, amp a variance; the reading names the season."""
    axis = TimeAxis("datetime", "months", pd.Timestamp("1949-01-01"))
    normalised = parse("QPER(decay=0.5, period=0.1; amp=1.5)")
    data = normalised.in_data_units(120.0, 3.0, 2.0)
    assert data.params == pytest.approx((60.0, 12.0, 6.0))
    t = np.array([0.2, 0.5, 0.9])
    assert_allclose(gram_numpy(data, t * 120.0 + 3.0, t * 120.0 + 3.0),
                    4.0 * gram_numpy(normalised, t, t), rtol=1e-12)
    reading = explain.describe(data, axis)
    assert reading.startswith("yearly seasonality (period 12 months) changing over ~")
    assert explain.classify_term(data) == "seasonal"


def test_off_by_default_and_on_when_configured():
    assert_atom_off_by_default_and_on_when_configured("QPER")
