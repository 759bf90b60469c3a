"""Forecasts made by a panel's workers beside each fit (autogp.parallel.work.AfterFit,
autogp.forecast.known_horizon) are the forecasts the calling process makes from the same fits.

The plumbing tests use test_forecast's stand-in engine in this process; the end-to-end tests
fit a tiny panel (2 particles, 2 rounds, three 15-16 point series) in two worker processes and
compare bit for bit with the parent's ``predict`` of the same fits, uninterrupted and resumed,
through the API and the command line. (tests/test_parallel.py checks, on a series where
XLA's default multi-threaded products would round differently, that autogp's programs give
the workers' bits in the calling process.)
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, load
from autogp.cli.main import app
from autogp.data import AutoGPDataWarning, from_arrays
from autogp.forecast.known_horizon import ForecastRequest
from autogp.inference.posterior import Posterior
from autogp.parallel import AfterFit, SeriesError, fit_chunk
from tests.test_forecast import install_fake_smc
from tests.test_parallel import TINY, _tiny_panel, _with, install_smc_failing_on_seven_points

runner = CliRunner()


def _length_and_extra(fit, config, extra):
    """Stand-in after-fit work: what it was given, a warning for 'b', an error for 'c'."""
    if fit.unique_id == "b":
        warnings.warn("b looks odd", AutoGPDataWarning, stacklevel=1)
    if fit.unique_id == "c":
        raise ValueError("c cannot be forecast")
    return fit.series.n, extra, config.smc.num_particles


def test_fit_chunk_runs_the_work_after_each_fit_and_keeps_its_warnings(monkeypatch):
    install_smc_failing_on_seven_points(monkeypatch)
    series = {u: from_arrays(np.arange(float(n)), np.sin(np.arange(float(n))), unique_id=u)
              for u, n in (("a", 10), ("b", 12), ("c", 11), ("bad", 7))}
    config = AutoGP(particles=2).config.to_dict()
    after = AfterFit(_length_and_extra, {"a": "for a", "b": "for b", "other": "not sent"})
    assert after.of(["a", "c"]).per_series == {"a": "for a"}  # a task carries its own part
    loaded = fit_chunk([series["a"]], config)[0]
    out = fit_chunk([series["b"], series["c"], series["bad"], loaded], config, True, after)
    # the new fits and the error come back in order; the loaded fit only gets the work
    assert [r.unique_id for r in out] == ["b", "c", "bad"]
    assert isinstance(out[0], Posterior) and isinstance(out[2], SeriesError)
    assert sorted(out.after) == ["a", "b"]  # 'c' raised, 'bad' was not fitted
    assert out.after["a"].value == (10, "for a", 2) and out.after["a"].warnings == ()
    assert out.after["b"].warnings == ((AutoGPDataWarning, "b looks odd"),)
    with pytest.warns(AutoGPDataWarning, match="b looks odd"):
        assert out.after["b"].result() == (12, "for b", 2)


def test_assemble_takes_the_workers_frames_and_makes_the_missing_ones_here(monkeypatch):
    install_fake_smc(monkeypatch)
    request = ForecastRequest(5, level=(80.0, 95.0))
    model = AutoGP(particles=2, progress=False).fit(_tiny_panel(),
                                                    after_fit=request.after_fit())
    assert sorted(model.after_fit_results) == ["a", "b", "c"]
    expected = model.predict(5, level=[80, 95])
    pd.testing.assert_frame_equal(request.assemble(model), expected, check_exact=True)
    # 'b' did not come back: it is forecast here, to the same frame
    some = {u: r for u, r in model.after_fit_results.items() if u != "b"}
    pd.testing.assert_frame_equal(request.assemble(model, some), expected, check_exact=True)
    # and a frame that did come back is used as it is, in the model's order
    marked = model.after_fit_results["b"].value.assign(AutoGP=-1.0)
    done = dict(model.after_fit_results, b=type(model.after_fit_results["b"])(marked))
    got = request.assemble(model, done)
    assert (got.loc[got.unique_id == "b", "AutoGP"] == -1.0).all()
    assert got["unique_id"].drop_duplicates().tolist() == ["a", "b", "c"]


def test_a_panel_future_frame_travels_to_each_series_as_its_own_rows():
    future = pd.DataFrame({"unique_id": ["b", "a", "b"], "ds": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
    after = ForecastRequest(2, X_df=future).after_fit()
    assert after.fn.X_df is None and sorted(after.per_series) == ["a", "b"]
    pd.testing.assert_frame_equal(after.per_series["b"], future.iloc[[0, 2]])
    shared = future.drop(columns="unique_id")  # no ids: every series reads the whole frame
    after = ForecastRequest(2, X_df=shared).after_fit()
    assert after.per_series == {} and after.fn.X_df is shared


@pytest.mark.slow
def test_two_workers_forecast_bit_for_bit_as_the_parent_uninterrupted_and_resumed(tmp_path):
    request = ForecastRequest(4, level=(80.0, 95.0))
    config = _with(TINY, workers=2)
    model = AutoGP(config, progress=False).fit(_tiny_panel(), after_fit=request.after_fit())
    assert sorted(model.after_fit_results) == ["a", "b", "c"]  # every forecast came back
    here = model.predict(4, level=[80, 95]).to_csv(index=False)  # the serial parent path
    assert request.assemble(model).to_csv(index=False) == here
    # stopped after the first chunk, then resumed: the loaded fits are forecast on the
    # workers too, and the forecast is the uninterrupted one
    seen: list[list[str]] = []

    def stop_after_first_chunk(ids):
        seen.append(ids)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        AutoGP(config, progress=False).fit(_tiny_panel(), resume=tmp_path,
                                           on_chunk=stop_after_first_chunk,
                                           after_fit=request.after_fit())
    resumed = AutoGP(config, progress=False).fit(_tiny_panel(), resume=tmp_path,
                                                 after_fit=request.after_fit())
    assert len(seen[0]) == 1 and sorted(resumed.after_fit_results) == ["a", "b", "c"]
    assert request.assemble(resumed).to_csv(index=False) == here


@pytest.mark.slow
def test_cli_fit_of_a_panel_on_two_workers_writes_the_parents_forecast(tmp_path):
    data = tmp_path / "panel.csv"
    _tiny_panel().to_csv(data, index=False)
    config = tmp_path / "tiny.toml"
    config.write_text("[smc]\nnum_particles = 2\nnum_rounds = 2\nstructure_moves = 1\n"
                      "[refine]\nsteps = 2\n[grammar]\nmax_depth = 2\n")
    out, saved = tmp_path / "fc.csv", tmp_path / "m.autogp"
    result = runner.invoke(app, ["fit", str(data), "--config", str(config), "--workers", "2",
                                 "--horizon", "3", "-l", "90", "--quiet", "-o", str(out),
                                 "--save", str(saved)])
    assert result.exit_code == 0, result.output
    model = load(saved)
    assert model.unique_ids == ["a", "b", "c"]
    expected = model.predict(3, level=[90]).to_csv(index=False)  # the saved fits, here
    assert out.read_text() == expected


@pytest.mark.slow
def test_cross_validation_windows_are_forecast_on_the_workers_as_in_the_parent(monkeypatch):
    from autogp.forecast import crossval

    fit_panel = crossval.fit_panel
    came_back: dict = {}

    def recording(*args, **kwargs):
        result = fit_panel(*args, **kwargs)
        came_back.update(result.after)
        return result

    def without_work_after_the_fit(*args, after=None, **kwargs):
        return fit_panel(*args, **kwargs)  # the serial parent path: forecasts made here

    def windows():
        return AutoGP(_with(TINY, workers=2), progress=False).cross_validation(
            _tiny_panel(), h=2, n_windows=2, level=[90])

    monkeypatch.setattr(crossval, "fit_panel", recording)
    on_workers = windows()
    assert len(came_back) == 6  # 3 series x 2 windows, each forecast by its worker
    monkeypatch.setattr(crossval, "fit_panel", without_work_after_the_fit)
    assert on_workers.to_csv(index=False) == windows().to_csv(index=False)


def test_run_forecasts_and_scores_beside_each_fit_as_after_it(monkeypatch, tmp_path):
    """``autogp run`` leaves nothing to forecast after the fit, and writes what forecasting
    every fit after the fit writes."""
    from autogp.experiments import runner as runner_module
    from tests.test_parallel import _run_config

    install_fake_smc(monkeypatch)
    later: list[list] = []
    forecast_and_score_all = runner_module.forecast_and_score_all

    def recording(items, config):
        later.append([train.unique_id for _, train, _ in items])
        return forecast_and_score_all(items, config)

    monkeypatch.setattr(runner_module, "forecast_and_score_all", recording)
    data = tmp_path / "panel.csv"
    _tiny_panel().to_csv(data, index=False)
    beside = runner.invoke(app, ["run", str(_run_config(tmp_path, data, "beside")), "--quiet",
                                 "--holdout", "3"])
    assert beside.exit_code == 0, beside.output
    assert later == [[]]
    fit = AutoGP.fit
    monkeypatch.setattr(AutoGP, "fit", lambda self, data, after_fit=None, **kw: fit(self, data,
                                                                                    **kw))
    after = runner.invoke(app, ["run", str(_run_config(tmp_path, data, "after")), "--quiet",
                                "--holdout", "3"])
    assert after.exit_code == 0, after.output
    assert later[1] == ["a", "b", "c"]
    for name in ("forecast.csv", "metrics.csv"):
        assert (tmp_path / "beside" / name).read_bytes() == (tmp_path / "after" / name).read_bytes()
