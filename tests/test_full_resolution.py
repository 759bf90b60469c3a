"""The full-resolution stage (``autogp.pipeline.full_resolution``): a long series' heaviest
structures re-fitted on its last points by the Kalman filter, scored by that exact likelihood,
forecast from the filter, and every other particle visibly left with the window's fit."""

from __future__ import annotations

import dataclasses
import io
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from scipy.special import logsumexp

from autogp import AutoGP
from autogp._x64 import x64
from autogp.cli.explanation import print_explanation
from autogp.config import engine_settings, load_config
from autogp.data import from_arrays
from autogp.evaluator import gram, log_marginal_likelihood, posterior_predictive
from autogp.forecast.decompose import component_terms
from autogp.forecast.explain import COMPONENTS
from autogp.forecast.tables import explanation, structure_table
from autogp.inference import smc
from autogp.kernels import pack, spec
from autogp.pipeline.fitting import posterior_from_kernels
from autogp.pipeline.full_resolution import (
    full_resolution_stage,
    ge_weight_to,
    stage_applies,
    with_ge_weight_to,
)
from autogp.pipeline.saveload import model_from_bytes, model_to_bytes
from tests.test_forecast import install_fake_smc

# A long hourly series with a known LIN + PER(24) + WN structure; the window is its last 300
# points, the stage fits its last POINTS (small, so that the dense likelihood can check it).
N, WINDOW, POINTS = 2000, 300, 260
_rng = np.random.default_rng(3)
T = np.arange(N, dtype=float)
Y = 0.002 * T + np.sin(2 * np.pi * T / 24) + 0.3 * _rng.normal(size=N)
# In the window's normalised time (299 steps onto [0, 1]) the day is 24 / 299.
TEXTS = [
    "LIN(intercept=0.5; bias=0.2, amp=0.5) + PER(l=1.0, period=0.0803; amp=1.0) + WN(v=0.1)",
    "SE(l=0.05; amp=1.0)",
    "M32(l=0.1; amp=1.0) + LIN(intercept=0.5; bias=0.2, amp=0.5)",
]
WEIGHTS = [0.5, 0.3, 0.2]
SETTINGS = {"data.window": WINDOW, "data.window_seasons": 0, "data.transform": "none",
            "data.full_resolution_points": POINTS, "data.full_resolution_steps": 3,
            "data.full_resolution_structures": 1, "data.full_resolution_from": 1000}


@pytest.fixture(scope="module")
def staged():
    with x64():
        series = from_arrays(T, Y)
        config = load_config(None, SETTINGS)
        window = posterior_from_kernels(series, config, TEXTS, weights=WEIGHTS, noise=0.05)
        return window, full_resolution_stage(window, series, config)


def _dense_points(post):
    x, y = post.full_resolution_points()
    return x, y, np.ones(len(x), bool)


def test_the_stage_scores_by_the_exact_likelihood_of_the_last_points(staged):
    window, post = staged
    fr = post.full_resolution
    assert window.left_out == N - WINDOW and stage_applies(window, load_config(None, SETTINGS))
    np.testing.assert_array_equal(fr.t, T[-POINTS:])
    np.testing.assert_array_equal(fr.y, Y[-POINTS:])
    # LIN + PER + WN re-fitted; SE (no state-space form) kept; M32 + LIN has a state-space
    # form but is below the one structure (data.full_resolution_structures) re-fitted.
    assert fr.state_space.tolist() == [True, False, False]
    ss = np.flatnonzero(fr.state_space)
    with x64():
        x, y, mask = _dense_points(post)
        dense = np.asarray(log_marginal_likelihood(post.ops[ss], post.params[ss],
                                                   post.noise[ss], x, y, mask))
    np.testing.assert_allclose(fr.log_likelihood[ss], dense, rtol=1e-8)
    # Weights: the re-fitted structures share their windowed mass by their likelihoods; the
    # others keep theirs.
    w = post.weights()
    np.testing.assert_allclose(w[ss].sum(), WEIGHTS[0], rtol=1e-12)
    np.testing.assert_allclose(np.log(w[ss] / w[ss].sum()),
                               fr.log_likelihood[ss] - logsumexp(fr.log_likelihood[ss]),
                               atol=1e-12)
    np.testing.assert_allclose(w[1:], WEIGHTS[1:], rtol=1e-12)


def _first_only(post):
    """``post`` with its first particle alone (weight 1)."""
    fr = post.full_resolution
    keep = dict(state_space=fr.state_space[:1], reason=fr.reason[:1],
                log_likelihood=fr.log_likelihood[:1])
    return dataclasses.replace(post, ops=post.ops[:1], params=post.params[:1],
                               noise=post.noise[:1], log_weights=np.zeros(1),
                               full_resolution=dataclasses.replace(fr, **keep))


def test_forecasts_and_components_from_the_filter_equal_the_dense_posterior(staged):
    window, post = staged
    t_new = np.concatenate([T[-5:] - 0.5, N + np.arange(30.0)])
    with x64():
        mean, var = post.predictive(t_new, include_noise=True)
        x, y, mask = _dense_points(post)
        x_new = post.scaler.forward_t(t_new)
        ref_mean, ref_var = posterior_predictive(post.ops[:1], post.params[:1], post.noise[:1],
                                                 x, y, mask, x_new, full_cov=False)
        np.testing.assert_allclose(mean[0], ref_mean[0], rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(var[0], ref_var[0] + np.exp(post.noise[0]), rtol=1e-7,
                                   atol=1e-8)
        # the particles left on the window predict from the window, as before the stage
        before = window.predictive(t_new, include_noise=True)
        np.testing.assert_allclose(mean[1:], before[0][1:], rtol=1e-12)
        np.testing.assert_allclose(var[1:], before[1][1:], rtol=1e-12)
        # decomposition: each term's mean k_term(x*, x) (K + s I)^-1 y on the stage's points
        one = _first_only(post)
        comps = one.component_means(t_new, component_terms, COMPONENTS)
        C = np.asarray(gram(one.ops, one.params, x))[0] + np.exp(one.noise[0]) * np.eye(len(x))
        alpha = np.linalg.solve(C, y)
        expected = {k: np.zeros(len(t_new)) for k in COMPONENTS}
        for term, kind in component_terms(one.expressions()[0]):
            o, q = pack([term], max_depth=one.max_depth)
            expected[kind] += np.asarray(gram(o, q, x_new, x))[0] @ alpha
        assert np.ptp(expected["seasonal"]) > 0.5  # the day is there to be checked
        for kind in COMPONENTS:
            np.testing.assert_allclose(comps[kind], expected[kind], rtol=1e-7, atol=1e-8)


def test_fallback_trees_are_reported(staged):
    _, post = staged
    fr = post.full_resolution
    assert fr.reason.tolist() == [0, 1, -1]
    assert "SE" in fr.scored_by(1, "dense window")
    assert "below the heaviest structures with a state-space" in fr.scored_by(2, "window")
    text = explanation([post], structure_table([post]))
    assert f"state space (Kalman filter), full resolution on the last {POINTS} points" in text
    assert "an atom with no state-space form" in text
    assert "below the heaviest structures with a state-space form" in text


@pytest.mark.parametrize("n", [WINDOW, 1342])
def test_development_panel_and_m3_sized_series_never_take_the_stage(monkeypatch, n):
    """The development panel's series have at most 1,342 points and M3's at most 126, under
    data.full_resolution_from: their fits are the fits without the stage."""
    config = load_config(None)
    assert config.data.full_resolution == "auto"
    for name in ("dev_panel", "m3_monthly", "m3_other"):
        frame = pd.read_csv(f"benchmarks/data/{name}.csv.gz", usecols=["unique_id"])
        assert frame["unique_id"].value_counts().max() < config.data.full_resolution_from, name
    install_fake_smc(monkeypatch, texts=TEXTS[:1], weights=[1.0])
    df = pd.DataFrame({"ds": T[:n], "y": Y[:n]})
    auto = AutoGP(overrides={"data.transform": "none"}).fit(df)
    off = AutoGP(overrides={"data.transform": "none", "data.full_resolution": "off"}).fit(df)
    fit = auto.fits[auto.unique_ids[0]]
    assert fit.left_out == n - WINDOW
    assert fit.full_resolution is None and not stage_applies(fit, config)
    assert fit.ge_weight_to == ""
    pd.testing.assert_frame_equal(auto.predict(12, level=[95]), off.predict(12, level=[95]))
    assert "full resolution" not in auto.explain()


def test_a_long_fit_goes_through_the_stage_and_says_so(monkeypatch):
    install_fake_smc(monkeypatch, texts=TEXTS[:2], weights=[0.6, 0.4])
    # the fixture's series and settings: the stage's compiled programs are the fixture's
    model = AutoGP(overrides=SETTINGS).fit(pd.DataFrame({"ds": T, "y": Y}))
    fit = model.fits[model.unique_ids[0]]
    assert fit.full_resolution.state_space.tolist() == [True, False]
    np.testing.assert_array_equal(fit.full_resolution.t, T[-POINTS:])
    forecast = model.predict(6, level=[95])
    assert np.all(np.isfinite(forecast.select_dtypes("number").to_numpy()))
    text = model.explain()
    assert f"scored by: state space (Kalman filter), full resolution on the last {POINTS}" in text
    assert "an atom with no state-space form" in text
    console = Console(file=io.StringIO(), width=200)
    print_explanation(console, model, top=5)
    printed = console.file.getvalue()
    assert f"1 structure(s) re-fitted on the last {POINTS} points by the Kalman filter" in printed
    assert "scored by: dense likelihood on the window (kept: an atom with no" in printed


def test_a_tail_outside_the_windows_transform_is_kept_and_named_without_a_numpy_warning():
    """A log transform chosen on a positive window cannot take the zeros of the longer tail the
    stage would fit: the window's fit is kept, the note says why, and numpy's divide-by-zero
    warning does not reach the user."""
    y = np.abs(Y) + 1.0
    y[N - WINDOW - 20] = 0.0  # before the window, inside the stage's last POINTS + 100 points
    settings = {**SETTINGS, "data.transform": "log", "data.full_resolution_points": POINTS + 100}
    with x64(), warnings.catch_warnings():
        warnings.simplefilter("error")
        series = from_arrays(T, y)
        config = load_config(None, settings)
        window = posterior_from_kernels(series, config, TEXTS, weights=WEIGHTS, noise=0.05)
        assert window.scaler.units == "log"
        post = full_resolution_stage(window, series, config)
    fr = post.full_resolution
    assert not fr.state_space.any() and fr.dim == 0
    assert fr.note == "values outside the window's log transform's domain"
    np.testing.assert_array_equal(fr.y, y[-(POINTS + 100):])
    np.testing.assert_array_equal(post.params, window.params)


def test_a_saved_model_keeps_the_stage(staged):
    _, post = staged
    config = load_config(None, SETTINGS)
    holder = SimpleNamespace(config=config, fits={post.unique_id: post})
    (back,) = model_from_bytes(model_to_bytes(holder)).fits
    fr, again = post.full_resolution, back.full_resolution
    for name in ("t", "y", "state_space", "reason", "log_likelihood"):
        np.testing.assert_array_equal(getattr(again, name), getattr(fr, name))
    assert (again.dim, again.note) == (fr.dim, fr.note)
    t_new = N + np.arange(5.0)
    with x64():
        np.testing.assert_allclose(back.predictive(t_new, True)[0],
                                   post.predictive(t_new, True)[0], rtol=1e-12)


def test_ge_weight_goes_to_a_state_space_atom_only_where_the_stage_will_refit():
    """GE has no state-space form: where the stage will re-fit, the search gives its prior
    weight to data.full_resolution_ge (M32 by default) and to no other atom; elsewhere, and
    where the stage cannot re-fit (covariates, known noise), the grammar is the config's."""
    config = load_config(None, {"data.window": WINDOW})
    long_series, short = from_arrays(T, Y), from_arrays(T[:1342], Y[:1342])
    assert ge_weight_to(long_series, config, N - WINDOW) == "M32"
    assert ge_weight_to(short, config, 1342 - WINDOW) == ""  # under data.full_resolution_from
    assert ge_weight_to(long_series, config, 0) == ""  # the whole series in the window
    on = load_config(None, {"data.full_resolution": "on"})
    assert ge_weight_to(short, on, 0) == "M32"
    for key, value in [("data.full_resolution", "off"), ("data.full_resolution_ge", "GE"),
                       ("grammar.weights.GE", 0.0)]:
        assert ge_weight_to(long_series, config.with_overrides({key: value}), N - WINDOW) == ""
    noisy = dataclasses.replace(long_series, noise_sd=np.full(N, 0.1))
    assert ge_weight_to(noisy, config, N - WINDOW) == ""
    covariate = dataclasses.replace(long_series, covariates=pd.DataFrame({"c": T}))
    assert ge_weight_to(covariate, config, N - WINDOW) == ""

    m52 = config.with_overrides({"data.full_resolution_ge": "M52", "grammar.weights.M52": 1.5})
    expected = dict(spec.DEFAULT_WEIGHTS)
    expected[spec.M52], expected[spec.GE] = 1.5 + expected[spec.GE], 0.0
    moved = engine_settings(with_ge_weight_to(m52, "M52")).grammar.weights
    assert moved == tuple(float(expected.get(op, 0.0)) for op in range(spec.NUM_OPS))
    assert with_ge_weight_to(config, "") is config


def test_a_long_fit_and_its_updates_search_without_ge_and_say_so(monkeypatch):
    install_fake_smc(monkeypatch, texts=TEXTS[1:2], weights=[1.0])  # SE: no re-fit to compile
    grammars = []

    def spy(fake, position):
        def call(*args, **kwargs):
            grammars.append((fake.__name__, args[position]))
            return fake(*args, **kwargs)
        return call

    monkeypatch.setattr(smc, "run_smc", spy(smc.run_smc, 2))
    monkeypatch.setattr(smc, "update_smc", spy(smc.update_smc, 3))
    df = pd.DataFrame({"ds": T, "y": Y})
    model = AutoGP(overrides=SETTINGS).fit(df.iloc[:-5])
    fit = model.fits[model.unique_ids[0]]
    assert fit.ge_weight_to == "M32"
    assert "the search gave GE's prior weight to M32" in model.explain()
    (back,) = model_from_bytes(model_to_bytes(model)).fits
    assert back.ge_weight_to == "M32"
    model.update(df.iloc[-5:])
    assert model.fits[model.unique_ids[0]].ge_weight_to == "M32"
    assert [name for name, _ in grammars] == ["fake_run_smc", "fake_update_smc"]
    for _, grammar in grammars:
        assert grammar.weights[spec.GE] == 0.0
        assert grammar.weights[spec.M32] == spec.DEFAULT_WEIGHTS[spec.GE]
        assert grammar.weights[spec.PER] == spec.DEFAULT_WEIGHTS[spec.PER]
