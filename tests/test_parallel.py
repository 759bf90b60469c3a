"""Panels on backends: the per-series unit of work, the local process pool and a Dask
LocalCluster give the same forecasts as one process; a killed worker, an interrupted and resumed
run and a bad series lose nothing else.

The real-engine tests use a tiny configuration (2 particles, 2 rounds) on three 15-16 point
series (one compiled shape). The resume and bad-series tests of the command line use the
stand-in engine of test_forecast, which also counts how many series are fitted.
"""

from __future__ import annotations

import os
import pickle
import signal
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from autogp import AutoGP, load
from autogp.cli.main import app
from autogp.config import ConfigError
from autogp.data import AutoGPDataWarning, from_arrays, from_frame
from autogp.forecast.outputs import series_outputs
from autogp.inference.posterior import Posterior
from autogp.parallel import (
    ResumeStore,
    SeriesError,
    chunk_series,
    fit_chunk,
    fit_panel,
    single_thread_env,
)
from tests.test_forecast import install_fake_smc

AIRLINE = "examples/data/airline.csv"
TINY = {
    "smc": {"num_particles": 2, "num_rounds": 2, "structure_moves": 1},
    "refine": {"steps": 2},
    "grammar": {"max_depth": 2},
}
KILL_MARKER = "AUTOGP_TEST_KILL_MARKER"
runner = CliRunner()


def _tiny_panel() -> pd.DataFrame:
    df = pd.read_csv(AIRLINE)
    return pd.concat(
        [
            df.iloc[0:16].assign(unique_id="a"),
            df.iloc[40:55].assign(unique_id="b", y=df["y"].iloc[40:55] * 0.5 + 3.0),
            df.iloc[90:106].assign(unique_id="c"),
        ],
        ignore_index=True,
    )


def _values(fc: pd.DataFrame) -> np.ndarray:
    return fc[[c for c in fc.columns if c.startswith("AutoGP")]].to_numpy()


def _with(config: dict, **smc) -> dict:
    return {**config, "smc": {**config["smc"], **smc}}


@pytest.fixture(scope="module")
def cache_env():
    """The worker processes inherit the session's JAX compilation cache (tests/conftest.py)
    through the environment, so each compiled shape is built once per session."""
    from tests.conftest import SESSION_CACHE

    assert os.environ["AUTOGP_CACHE_DIR"] == os.environ["JAX_COMPILATION_CACHE_DIR"]
    assert os.environ["AUTOGP_CACHE_DIR"] == SESSION_CACHE
    return SESSION_CACHE


@pytest.fixture(scope="module")
def one_process():
    """The tiny panel fitted series after series in this process."""
    model = AutoGP(TINY, progress=False).fit(_tiny_panel())
    return model.predict(4)


@pytest.fixture(scope="module")
def one_worker(cache_env):
    """The tiny panel fitted series after series in one worker process (single-threaded XLA,
    as every pool and Dask worker): the reference the backends must match bit for bit."""
    from autogp.parallel.local import run_local

    config = AutoGP(TINY).config
    chunks = chunk_series(from_frame(_tiny_panel(), id_col="unique_id"), workers=1)
    fits = {r.unique_id: r for _, results in run_local(chunks, config.to_dict(), panel=True,
                                                       workers=1) for r in results}
    assert len(chunks) > 1 and sorted(fits) == ["a", "b", "c"]
    return AutoGP.from_fits([fits[u] for u in "abc"], config).predict(4)


# ---- the unit of work ---------------------------------------------------------------------
def test_chunks_group_similar_lengths_and_cover_every_series_once():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 200, size=37)
    series = [from_arrays(np.arange(n), np.ones(n), unique_id=f"s{i}")
              for i, n in enumerate(lengths)]
    for workers in (1, 2, 5):
        chunks = chunk_series(series, workers)
        ids = [s.unique_id for c in chunks for s in c]
        assert sorted(ids) == sorted(s.unique_id for s in series)  # each once
        assert all(len(c) <= 8 for c in chunks)
        # chunks are runs of the length order: no chunk's range overlaps another's
        bounds = sorted((min(s.n for s in c), max(s.n for s in c)) for c in chunks)
        assert all(hi <= lo for (_, hi), (lo, _) in zip(bounds, bounds[1:], strict=False))
        # handed out longest first, then shortest, second longest, second shortest, ...:
        # each chunk is the longest (even places) or shortest (odd) of those still left
        for i, c in enumerate(chunks):
            rest = [s.n for later in chunks[i:] for s in later]
            assert (max(s.n for s in c) == max(rest)) if i % 2 == 0 else (
                min(s.n for s in c) == min(rest)), i


def install_smc_failing_on_seven_points(monkeypatch) -> None:
    """test_forecast's stand-in engine, except that a 7-point series fails as a failed
    Cholesky factorisation would."""
    install_fake_smc(monkeypatch)
    from autogp.inference import smc

    fake = smc.run_smc

    def failing_on_seven_points(x, y, grammar, settings, **kwargs):
        if len(x) == 7:
            raise FloatingPointError("the Cholesky factor is not finite")
        return fake(x, y, grammar, settings, **kwargs)

    monkeypatch.setattr(smc, "run_smc", failing_on_seven_points)


def test_fit_chunk_returns_an_error_record_for_the_series_that_fails(monkeypatch):
    install_smc_failing_on_seven_points(monkeypatch)
    good = from_arrays(np.arange(10.0), np.sin(np.arange(10.0)), unique_id="good")
    bad = from_arrays(np.arange(7.0), np.cos(np.arange(7.0)), unique_id="bad")
    config = AutoGP(particles=2).config.to_dict()
    out = fit_chunk([good, bad], config)
    assert isinstance(out[0], Posterior) and out[0].unique_id == "good"
    assert out[1] == SeriesError("bad", "FloatingPointError: the Cholesky factor is not finite")
    # the picklable pieces travel: a fit survives a round trip and predicts the same
    again = pickle.loads(pickle.dumps(out[0]))
    a, b = series_outputs(out[0], config), series_outputs(again, config)
    pd.testing.assert_frame_equal(a.forecast, b.forecast, check_exact=True)
    assert list(a.forecast.columns[:3]) == ["unique_id", "ds", "AutoGP"]
    assert a.statistics["n"] == 10 and a.structures["weight"].sum() == pytest.approx(1.0)


def test_a_bad_series_gets_its_own_error_and_the_others_are_forecast(monkeypatch):
    install_fake_smc(monkeypatch)
    good = _tiny_panel()
    short = pd.DataFrame({"unique_id": "short", "ds": good["ds"].iloc[:2], "y": [1.0, 2.0]})
    empty = pd.DataFrame({"unique_id": "blank", "ds": good["ds"].iloc[:5], "y": np.nan})
    panel = pd.concat([good[good.unique_id == "a"], short, empty, good[good.unique_id != "a"]])
    with pytest.warns(AutoGPDataWarning) as caught:
        model = AutoGP(particles=2, progress=False).fit(panel)
    messages = [str(w.message) for w in caught]
    assert any("series 'short' was not fitted" in m and "only 2 observations" in m
               for m in messages)
    assert any("series 'blank' was not fitted" in m and "only 0 observations" in m
               for m in messages)
    assert model.unique_ids == ["a", "b", "c"] and set(model.errors) == {"short", "blank"}
    alone = AutoGP(particles=2, progress=False).fit(good)
    np.testing.assert_array_equal(_values(model.predict(4)), _values(alone.predict(4)))


def test_run_lists_bad_series_in_errors_csv(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    panel = _tiny_panel()
    short = pd.DataFrame({"unique_id": "short", "ds": panel["ds"].iloc[:2], "y": [1.0, 2.0]})
    data = tmp_path / "panel.csv"
    pd.concat([panel, short]).to_csv(data, index=False)
    config = _run_config(tmp_path, data, "out")
    result = runner.invoke(app, ["run", str(config), "--holdout", "3"])
    assert result.exit_code == 0, result.output
    assert "series 'short'" in result.stderr and "errors.csv" in result.stderr
    errors = pd.read_csv(tmp_path / "out" / "errors.csv")
    assert errors["unique_id"].tolist() == ["short"]
    assert "only 2 observations" in errors["error"].iloc[0]
    fc = pd.read_csv(tmp_path / "out" / "forecast.csv")
    assert fc["unique_id"].unique().tolist() == ["a", "b", "c"] and len(fc) == 9


def test_workers_keep_the_callers_xla_flags_and_run_single_threaded():
    flag = "--xla_cpu_multi_thread_eigen=false"
    assert single_thread_env({})["XLA_FLAGS"] == flag
    env = single_thread_env({"XLA_FLAGS": "--xla_force_host_platform_device_count=4 "
                                          "--xla_cpu_multi_thread_eigen=true"})
    assert env["XLA_FLAGS"] == f"--xla_force_host_platform_device_count=4 {flag}"
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"] == "1"


# ---- backends: same forecasts everywhere -----------------------------------------------------
#: A configuration and series whose fit changes in its last digits when the round programs
#: are compiled with XLA's default (multi-threaded Eigen) products instead of a worker's.
BITS = {"smc": {"num_particles": 4, "num_rounds": 2, "structure_moves": 2, "workers": 1},
        "refine": {"steps": 5}, "grammar": {"max_depth": 2}}


def _m3_training_head() -> pd.DataFrame:
    df = pd.read_csv("benchmarks/data/m3_other.csv.gz")
    rows = df[(df["unique_id"] == "N1383") & (df["split"] == "train")].iloc[:-8]
    # With a second series this is a panel in this process too, as it is for the workers.
    other = pd.read_csv(AIRLINE).iloc[:30].assign(unique_id="airline")
    return pd.concat([rows[["unique_id", "ds", "y"]], other], ignore_index=True)


@pytest.mark.slow
def test_a_fit_here_equals_a_workers_fit_to_the_last_bit(cache_env, monkeypatch):
    from autogp.inference import exported
    from autogp.parallel.local import run_local

    series = _m3_training_head()
    config = AutoGP(BITS).config  # workers = 1: the fits below run in this process
    chunks = chunk_series(from_frame(series, id_col="unique_id"), workers=1)
    fits = [r for _, results in run_local(chunks, config.to_dict(), panel=True, workers=1)
            for r in results]
    worker = _values(AutoGP.from_fits(fits, config).predict(8))
    here = _values(AutoGP(BITS, progress=False).fit(series).predict(8))
    assert np.array_equal(here, worker)
    # The check has teeth: with XLA's default products for this process's round programs
    # (autogp._xla's switch), the same fit here gives other bits.
    monkeypatch.setenv("AUTOGP_MULTI_THREAD_EIGEN", "1")
    exported.forget()
    default = _values(AutoGP(BITS, progress=False).fit(series).predict(8))
    exported.forget()
    assert not np.array_equal(default, worker)
    np.testing.assert_allclose(default, worker, rtol=1e-6)


@pytest.mark.slow
def test_local_pool_and_dask_cluster_match_one_process(cache_env, one_worker, one_process):
    pytest.importorskip("distributed")
    panel = _tiny_panel()
    pool = AutoGP(_with(TINY, workers=2), progress=False).fit(panel).predict(4)
    dask = AutoGP(_with(TINY, workers=2), progress=False).fit(panel, backend="dask").predict(4)
    assert one_worker["unique_id"].tolist() == ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    for fc in (pool, dask, one_process):
        assert fc["unique_id"].tolist() == one_worker["unique_id"].tolist()
        assert fc["ds"].tolist() == one_worker["ds"].tolist()
    assert np.array_equal(_values(pool), _values(one_worker))
    assert np.array_equal(_values(dask), _values(one_worker))
    # This process keeps XLA's multi-threaded default for the user's programs; autogp's own are
    # compiled single-threaded (autogp._xla), so they agree with the workers' to the last bit.
    assert np.array_equal(_values(one_process), _values(one_worker))


def fit_chunk_killing_its_worker_once(chunk, config, panel=True):
    """A chunk task whose first call (across all workers) kills its own worker process."""
    marker = Path(os.environ[KILL_MARKER])
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return fit_chunk(chunk, config, panel)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")  # pragma: no cover


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(cache_env, one_worker, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from autogp.parallel import dask_backend
    from autogp.parallel.dask_backend import start_local_cluster

    monkeypatch.setenv(KILL_MARKER, str(tmp_path / "killed"))
    # the workers import the stand-in from this module (it is pickled by name)
    monkeypatch.setattr(dask_backend, "fit_chunk", fit_chunk_killing_its_worker_once)
    model = AutoGP(_with(TINY, workers=2), progress=False)
    panel = from_frame(_tiny_panel(), id_col="unique_id")
    with start_local_cluster(2) as cluster, distributed.Client(cluster) as client:
        first_pids = set(client.run(os.getpid).values())
        # by address, as for a cluster started with `dask scheduler` / `dask worker`
        result = fit_panel(model.config, panel, scheduler=cluster.scheduler_address)
        later_pids = set(client.run(os.getpid).values())
        # and through a client of the caller's
        again = model.fit(_tiny_panel(), client=client).predict(4)
    assert (tmp_path / "killed").exists() and first_pids != later_pids  # a worker did die
    assert sorted(result.fits) == ["a", "b", "c"] and not result.errors
    fc = AutoGP.from_fits([result.fits[u] for u in "abc"], model.config).predict(4)
    assert np.array_equal(_values(fc), _values(one_worker))
    assert np.array_equal(_values(again), _values(one_worker))


# ---- resumable runs ----------------------------------------------------------------------------
def test_an_interrupted_fit_resumes_without_refitting(one_process, tmp_path):
    resume = tmp_path / "resume"
    fitted: list[list[str]] = []

    def stop_after_first_chunk(ids):
        fitted.append(ids)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        AutoGP(TINY, progress=False).fit(_tiny_panel(), resume=resume,
                                         on_chunk=stop_after_first_chunk)
    assert len(list(resume.glob("chunk-*.autogp"))) == 1
    done_first = fitted[0]
    fitted.clear()
    model = AutoGP(TINY, progress=False).fit(_tiny_panel(), resume=resume, on_chunk=fitted.append)
    refitted = [u for ids in fitted for u in ids]
    assert sorted(refitted + done_first) == ["a", "b", "c"]  # nothing fitted twice
    assert np.array_equal(_values(model.predict(4)), _values(one_process))
    fitted.clear()
    AutoGP(TINY, progress=False).fit(_tiny_panel(), resume=resume, on_chunk=fitted.append)
    assert fitted == []  # all loaded


def test_resume_refuses_other_settings_and_refits_changed_data(monkeypatch, tmp_path):
    calls: list = []
    install_fake_smc(monkeypatch, calls=calls)
    panel = _tiny_panel()
    AutoGP(particles=2, progress=False).fit(panel, resume=tmp_path)
    assert len(calls) == 3
    # other forecast or output settings are fine (nothing is refitted); fit settings are not
    AutoGP(particles=2, progress=False,
           overrides={"forecast.horizon": 5, "output.dir": "elsewhere"}).fit(panel, resume=tmp_path)
    assert len(calls) == 3
    with pytest.raises(ConfigError, match="other settings"):
        AutoGP(particles=3, progress=False).fit(panel, resume=tmp_path)
    changed = panel.copy()
    changed.loc[changed.unique_id == "b", "y"] += 1.0
    calls.clear()
    AutoGP(particles=2, progress=False).fit(changed, resume=tmp_path)
    assert len(calls) == 1  # only the changed series
    store = ResumeStore(tmp_path, AutoGP(particles=2).config.to_dict(), panel=True)
    assert len(store.files()) == 3  # the new fit of 'b' replaced the stale one
    new_b = from_frame(changed, id_col="unique_id")
    assert sorted(store.load(new_b)) == ["a", "b", "c"]


def test_resume_files_are_model_files_without_pickle(monkeypatch, tmp_path):
    """Each chunk is an ``.autogp`` file (JSON and .npy members, loadable as a model) whose
    posteriors are the fitted ones bit for bit; pickled chunks of an older autogp are never
    opened, only reported, and their series are fitted again."""
    install_fake_smc(monkeypatch)
    (tmp_path / "chunk-0123.pkl").write_bytes(b"not opened")
    with pytest.warns(AutoGPDataWarning, match="older autogp"):
        model = AutoGP(particles=2, progress=False).fit(_tiny_panel(), resume=tmp_path)
    files = ResumeStore(tmp_path, model.config, panel=True).files()
    assert len(files) == 3
    for path in files:
        with zipfile.ZipFile(path) as zf:
            assert sorted(zf.namelist()) == ["arrays.npz", "model.json", "notes.json"]
        loaded = load(path)
        for uid, fit in loaded.fits.items():
            mine = model.fits[uid]
            for name in ("ops", "params", "noise", "log_weights"):
                assert np.array_equal(getattr(fit, name), getattr(mine, name))
            assert np.array_equal(fit.series.y, mine.series.y)


def test_a_windowed_fit_resumes(monkeypatch, tmp_path):
    """A series longer than data.window is fitted on its window, and the resume folder still
    recognises its data (the digest is of the series given, not of the window)."""
    calls: list = []
    install_fake_smc(monkeypatch, calls=calls)
    long = pd.DataFrame({"unique_id": np.repeat(["a", "b"], 40),
                         "ds": np.tile(np.arange(40), 2),
                         "y": np.sin(np.arange(80) / 3.0) + np.arange(80) / 40})
    settings = {"overrides": {"data.window": 24}, "progress": False}
    AutoGP(particles=2, **settings).fit(long, resume=tmp_path)
    assert len(calls) == 2
    model = AutoGP(particles=2, **settings).fit(long, resume=tmp_path)
    assert len(calls) == 2  # both loaded
    assert all(fit.left_out > 0 for fit in model.fits.values())


def _run_config(tmp_path: Path, data: Path, out: str) -> Path:
    config = tmp_path / f"{out}.toml"
    config.write_text(
        f"""
[data]
path = "{data.as_posix()}"
id_col = "unique_id"

[smc]
num_particles = 2

[forecast]
levels = [80, 95]

[output]
dir = "{(tmp_path / out).as_posix()}"
plot = ""
model = ""

[experiment]
metrics = ["smape", "mase", "coverage", "lpd"]
"""
    )
    return config


def test_run_stopped_midway_and_resumed_writes_the_same_files(monkeypatch, tmp_path):
    calls: list = []
    install_fake_smc(monkeypatch, calls=calls)
    from autogp.inference import smc

    fake = smc.run_smc
    panel = pd.concat([_tiny_panel().assign(unique_id=lambda d, k=k: d.unique_id + str(k))
                       for k in range(3)])  # 9 series
    data = tmp_path / "panel.csv"
    panel.to_csv(data, index=False)
    full = runner.invoke(app, ["run", str(_run_config(tmp_path, data, "full")), "--quiet",
                               "--holdout", "3"])
    assert full.exit_code == 0, full.output

    def interrupted_at_the_sixth_series(x, y, grammar, settings, **kwargs):
        if len(calls) == 5:
            raise KeyboardInterrupt  # Ctrl-C while the sixth series is fitted
        return fake(x, y, grammar, settings, **kwargs)

    monkeypatch.setattr(smc, "run_smc", interrupted_at_the_sixth_series)
    calls.clear()
    config = _run_config(tmp_path, data, "part")
    args = ["run", str(config), "--quiet", "--holdout", "3", "--resume"]
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 130 and "interrupted" in stopped.stderr
    chunks = list((tmp_path / "part" / "resume").glob("chunk-*.autogp"))
    saved = len(calls)  # chunks of 2 series: the first four series are kept
    assert saved == 5 and len(chunks) == 2
    monkeypatch.setattr(smc, "run_smc", fake)
    calls.clear()
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    assert len(calls) == 9 - 4  # only the series not saved are fitted
    for name in ("forecast.csv", "metrics.csv", "structures.csv", "train.csv"):
        assert (tmp_path / "part" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()


# ---- settings and inputs -----------------------------------------------------------------------
def test_backend_settings_are_checked(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    with pytest.raises(ConfigError, match="smc.backend"):
        AutoGP(overrides={"smc.backend": "spark"})
    with pytest.raises(ConfigError, match="backend must be one of"):
        AutoGP(progress=False).fit(_tiny_panel(), backend="spark")
    data = tmp_path / "panel.csv"
    _tiny_panel().to_csv(data, index=False)
    result = runner.invoke(app, ["fit", str(data), "--id-col", "unique_id", "--backend", "ray"])
    assert result.exit_code == 2 and "smc.backend" in result.stderr


def test_a_dask_dataframe_is_fitted_like_the_pandas_one(monkeypatch):
    dd = pytest.importorskip("dask.dataframe")
    install_fake_smc(monkeypatch)
    panel = _tiny_panel()
    frame = dd.from_pandas(panel, npartitions=3, sort=False)
    a = AutoGP(particles=2, progress=False).fit(panel)
    b = AutoGP(particles=2, progress=False).fit(frame)
    assert a.unique_ids == b.unique_ids == ["a", "b", "c"]
    pd.testing.assert_frame_equal(a.predict(4), b.predict(4), check_exact=True)


def test_fit_resume_folder_skips_finished_series_and_reports_bad_ones(monkeypatch, tmp_path):
    calls: list = []
    install_fake_smc(monkeypatch, calls=calls)
    panel = _tiny_panel()
    short = pd.DataFrame({"unique_id": "short", "ds": panel["ds"].iloc[:2], "y": [1.0, 2.0]})
    data = tmp_path / "panel.csv"
    pd.concat([panel, short]).to_csv(data, index=False)
    args = ["fit", str(data), "--id-col", "unique_id", "-p", "2", "--horizon", "3",
            "--resume", str(tmp_path / "done")]
    first = runner.invoke(app, [*args, "-o", str(tmp_path / "a.csv")])
    assert first.exit_code == 0, first.output
    assert "series 'short' was not fitted" in first.stderr and "only 2 observations" in first.stderr
    assert len(calls) == 3
    again = runner.invoke(app, [*args, "-o", str(tmp_path / "b.csv")])
    assert again.exit_code == 0, again.output
    assert len(calls) == 3  # nothing refitted
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert pd.read_csv(tmp_path / "a.csv")["unique_id"].unique().tolist() == ["a", "b", "c"]


# ---- autogp run: forecasts and scores on worker processes -------------------------------------
@pytest.mark.slow
def test_run_scores_on_workers_as_in_one_process(cache_env):
    from autogp.experiments.runner import forecast_and_score_all, split_series

    base = _tiny_panel()
    panel = pd.concat([base.assign(unique_id=base.unique_id + str(k)) for k in range(6)])
    series = from_frame(panel, id_col="unique_id")
    pairs = [split_series(s, 3) for s in series]
    pairs[-1] = (series[-1], None)  # one series without a test part: a plain forecast
    config = _with({**TINY, "experiment": {"metrics": ["mase", "coverage", "lpd"]}}, workers=1)
    model = AutoGP(config, progress=False).fit([train for train, _ in pairs])
    items = [(model.fits[t.unique_id], t, h) for t, h in pairs]
    here = forecast_and_score_all(items, model.config)
    two = forecast_and_score_all(items, AutoGP(_with(config, workers=2)).config)
    assert len(here) == len(two) == 18
    for (fc1, row1), (fc2, row2), (train, test) in zip(here, two, pairs, strict=True):
        assert fc1["unique_id"].tolist() == fc2["unique_id"].tolist()
        assert set(fc1["unique_id"]) == {train.unique_id}
        np.testing.assert_allclose(_values(fc2), _values(fc1), rtol=1e-9)
        if test is None:
            assert row1 is None and row2 is None and len(fc1) == model.config.forecast.horizon
            continue
        assert row1.keys() == row2.keys() and row1["n_test"] == 3
        for key in ("mase", "coverage_95", "lpd_per_point"):
            assert row2[key] == pytest.approx(row1[key], rel=1e-9), key
        # The log-units CRPS is a grid integral whose grid follows the mixture's quantiles:
        # last-digit differences move the grid, so it agrees to the grid's accuracy.
        assert row2["crps_mixture_scaled"] == pytest.approx(row1["crps_mixture_scaled"],
                                                            rel=1e-5)
        np.testing.assert_array_equal(fc1["y"].to_numpy(), test.y)
