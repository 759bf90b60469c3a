"""A first run says what is happening: compilation is its own phase (shown only when programs
are compiled from scratch, with the cache's location), a fit's summary line says how much of
its time was compilation, and XLA's C++ log messages (its slow-compile alarms among them) stay
off the terminal of the command line and of panel workers."""

from __future__ import annotations

import io
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import Progress

import autogp_launcher
from autogp import AutoGP
from autogp.config import load_config
from autogp.data import TimeSeries
from autogp.inference import exported
from autogp.parallel import panel as panel_module
from autogp.parallel.local import map_chunks
from autogp.parallel.progress import CompilePhase, NoProgress, compiling_text
from autogp.parallel.work import (
    QUIET_XLA_ENV,
    ChunkFits,
    SeriesError,
    chunk_series,
    quiet_xla_logs,
    single_thread_env,
    use_compilation_cache,
)

ROOT = Path(__file__).resolve().parents[1]
AIRLINE = ROOT / "examples" / "data" / "airline.csv"
TINY = {"grammar": {"max_depth": 1}, "refine": {"steps": 2},
        "smc": {"num_particles": 2, "num_rounds": 1, "structure_moves": 1}}
TINY_CLI = ["--particles", "2", "--set", "smc.num_rounds=1", "--set", "smc.structure_moves=1",
            "--set", "grammar.max_depth=1", "--set", "refine.steps=2"]
SUMMARY = re.compile(r"fitted 1 series .* in ([0-9.]+) s, ([0-9.]+) s of it compiling")
#: An XLA flag whose failure XLA logs at ERROR level on every compile, as it does its
#: slow-compile alarm: a dump folder that cannot be created.
FAILING_DUMP = "--xla_dump_to=/proc/autogp-no-such-folder"
DUMP_ERROR = "Could not create directory"


def _scale(factor, x):
    return x * factor + 1.0


def _program(factor=3.0, n=4):
    return exported.Program("test_scale", _scale, (factor,), (jnp.arange(n, dtype=jnp.float32),))


def _forget_programs(monkeypatch):
    """As in a new process: no program exported, loaded or compiled yet."""
    monkeypatch.setattr(exported, "_loaded", {})
    monkeypatch.setattr(exported, "_jitted", {})
    monkeypatch.setattr(exported, "_jitted_keys", set())


def test_only_programs_missing_from_the_cache_are_announced(tmp_path, monkeypatch):
    _forget_programs(monkeypatch)
    program = _program()
    treedef = jax.tree_util.tree_structure(program.args[0])
    heard = []
    assert exported.cache_is_cold(tmp_path)
    before = exported.compile_seconds()
    with exported.on_compiling(heard.append):
        out = exported.call(tmp_path, program, treedef)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4) * 3.0 + 1.0)
    assert [(n.programs, n.cache) for n in heard] == [(1, tmp_path)]
    assert exported.compile_seconds() > before
    assert not exported.cache_is_cold(tmp_path)  # a fit of this autogp wrote programs here

    # The same program again in this process: nothing to compile, no time counted.
    spent = exported.compile_seconds()
    with exported.on_compiling(heard.append):
        exported.call(tmp_path, program, treedef)
    assert len(heard) == 1 and exported.compile_seconds() == spent

    # A new process with the cache warm: loaded from disk, not announced.
    _forget_programs(monkeypatch)
    with exported.on_compiling(heard.append):
        out = exported.call(tmp_path, program, treedef)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4) * 3.0 + 1.0)
    assert len(heard) == 1

    # No cache: every new process compiles, and says so (with no cache to name).
    _forget_programs(monkeypatch)
    with exported.on_compiling(heard.append):
        exported.call(None, _program(factor=5.0), treedef)
    assert [(n.programs, n.cache) for n in heard[1:]] == [(1, None)]
    assert exported.cache_is_cold(None)


def test_compile_phase_prints_lines_without_a_bar(capsys):
    phase = CompilePhase(NoProgress(), enabled=True)
    phase(exported.Compiling(2, Path("/c/jax/autogp-exported"), []))
    phase(exported.Compiling(1, Path("/c/jax/autogp-exported"), []))  # the same phase
    phase.finish(12.5, 9.25)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["autogp: compiling (first run on this machine only; cache: /c/jax)",
                     "autogp: fitted in 12.5 s, 9.2 s of it compiling"]
    quiet = CompilePhase(NoProgress(), enabled=False)
    quiet(exported.Compiling(2, None, []))
    quiet.finish(1.0, 1.0)
    assert capsys.readouterr().err == ""
    # Nothing compiled: no closing line either.
    CompilePhase(NoProgress(), enabled=True).finish(1.0, 0.0)
    assert capsys.readouterr().err == ""


def test_compile_phase_is_a_task_of_the_bar_counting_programs():
    bar = Progress(console=Console(file=io.StringIO(), width=200))
    phase = CompilePhase(bar, enabled=True)
    first = exported.Compiling(2, Path("/c/autogp-exported"), [])
    phase(first)
    second = exported.Compiling(1, Path("/c/autogp-exported"), [])
    phase(second)
    (task,) = bar.tasks
    assert task.description == "compiling"
    assert f"autogp: {compiling_text(Path('/c'))}" in bar.console.file.getvalue()
    assert (task.total, task.completed) == (3, 0)
    for notice in (first, first, second):
        for done in notice.on_each_done:
            done()
    assert bar.tasks[0].completed == 3


def test_panel_in_workers_says_they_compile_and_sums_their_compile_seconds(
        tmp_path, monkeypatch, capsys):
    where = tmp_path / "jax" / "autogp-exported"
    monkeypatch.setattr(exported, "directory", lambda: where)

    # workers that only report their time
    def run_local(chunks, config, *, panel, workers, after=None):
        for i, chunk in enumerate(chunks):
            out = ChunkFits(SeriesError(s.unique_id, "not fitted here") for s in chunk)
            out.compile_seconds = 10.0 + i
            yield i, out

    monkeypatch.setattr(panel_module, "run_local", run_local)
    y = pd.read_csv(AIRLINE)["y"].to_numpy(dtype=float)[:48]
    series = [TimeSeries(np.arange(48.0), y + k, unique_id=f"s{k}") for k in range(3)]
    result = panel_module.fit_panel(load_config(TINY), series, workers=2, notes=True)
    chunks = len(chunk_series(series, 2))
    assert result.compile_seconds == sum(10.0 + i for i in range(chunks))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == ("autogp: compiling in the workers (first run on this machine only; "
                        f"cache: {where.parent})")
    assert lines[-1].endswith(f"compiling: {result.compile_seconds:.1f} s summed over the "
                              "workers")

    # A cache that has seen a fit of this autogp: the workers load, nothing is announced.
    exported._stamp(where).parent.mkdir(parents=True)
    exported._stamp(where).touch()
    panel_module.fit_panel(load_config(TINY), series, workers=2, notes=True)
    assert capsys.readouterr().err == ""


def test_compiling_text_names_the_cache_or_its_absence():
    assert compiling_text(Path("/x/y")) == "compiling (first run on this machine only; cache: /x/y)"
    assert "in the workers (first run" in compiling_text(Path("/x"), " in the workers")
    assert "no compilation cache" in compiling_text(None)


def test_worker_environment_quiets_xla_unless_the_user_chose_a_level():
    assert single_thread_env({})["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert single_thread_env({"TF_CPP_MIN_LOG_LEVEL": "0"})["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert autogp_launcher.QUIET_XLA_ENV == QUIET_XLA_ENV


def test_quiet_xla_logs_sets_absl_at_the_chosen_level(monkeypatch):
    from jaxlib import utils as jaxlib_utils

    levels = []
    monkeypatch.setattr(jaxlib_utils, "absl_set_min_log_level", levels.append)
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "x")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    quiet_xla_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3" and levels == [3]
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")  # the user's choice
    quiet_xla_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1" and levels == [3, 1]
    env = {}
    quiet_xla_logs(env)  # another process's environment: this process's absl is left alone
    assert env == QUIET_XLA_ENV and levels == [3, 1]


def _log_level_seen_by_a_worker(chunk):
    import jax  # the worker's JAX starts here, after the pool set the variable

    return os.environ.get("TF_CPP_MIN_LOG_LEVEL"), float(jax.jit(lambda x: x + 1)(1.0))


def test_pool_workers_start_jax_with_xla_quiet(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "x")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    seen = dict(map_chunks(_log_level_seen_by_a_worker, [[1], [2]], workers=2))
    assert seen == {0: ("3", 2.0), 1: ("3", 2.0)}
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ  # the caller's environment is restored


def test_chunk_results_carry_their_compile_seconds_through_pickling():
    chunk = ChunkFits(["a", "b"])
    chunk.compile_seconds = 4.5
    back = pickle.loads(pickle.dumps(chunk))
    assert list(back) == ["a", "b"] and back.compile_seconds == 4.5


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def test_the_launcher_keeps_xla_error_logs_off_the_terminal():
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(XLA_FLAGS=FAILING_DUMP, PYTHONPATH=str(ROOT))
    compile_something = "import jax; print(float(jax.jit(lambda x: x + 1)(1.0)))"
    loud = _python(compile_something, env)
    quiet = _python("import autogp_launcher; autogp_launcher.quiet_xla_logs(); "
                    + compile_something, env)
    assert loud.stdout.strip() == quiet.stdout.strip() == "2.0"
    assert DUMP_ERROR in loud.stderr  # the control: XLA logs this at ERROR level
    assert DUMP_ERROR not in quiet.stderr


def _cli(tmp_path: Path, data: Path, out: Path) -> subprocess.CompletedProcess:
    # JAX's own cache variables (the test session's shared cache) would win over ours.
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "JAX_COMPILATION_CACHE_DIR",
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")}
    env.update(AUTOGP_CACHE_DIR=str(tmp_path / "cache"), XLA_FLAGS=FAILING_DUMP,
               PYTHONPATH=str(ROOT), COLUMNS="300")
    command = [sys.executable, "-m", "autogp_launcher", "fit", str(data), "--horizon", "3",
               *TINY_CLI, "--output", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def test_cli_first_run_shows_its_compiling_phase_and_a_warm_run_does_not(tmp_path):
    data = tmp_path / "airline.csv"
    pd.read_csv(AIRLINE).iloc[:30].to_csv(data, index=False)
    cold = _cli(tmp_path, data, tmp_path / "cold.csv")
    warm = _cli(tmp_path, data, tmp_path / "warm.csv")
    phase = f"compiling (first run on this machine only; cache: {tmp_path / 'cache'})"
    assert phase in cold.stderr
    fit_s, compile_s = map(float, SUMMARY.search(cold.stderr).groups())
    assert 0 < compile_s <= fit_s
    assert "compiling (" not in warm.stderr
    assert SUMMARY.search(warm.stderr) is not None
    assert DUMP_ERROR not in cold.stderr + warm.stderr  # XLA's error logs stay quiet
    assert (tmp_path / "cold.csv").read_bytes() == (tmp_path / "warm.csv").read_bytes()


def test_api_fit_says_when_it_compiles(tmp_path, monkeypatch, capsys):
    where = tmp_path / "jax" / "autogp-exported"
    monkeypatch.setattr(exported, "directory", lambda: where)
    _forget_programs(monkeypatch)
    data = pd.read_csv(AIRLINE).iloc[:30]
    model = AutoGP(TINY, seed=0).fit(data)  # progress left at its default
    err = capsys.readouterr().err
    assert f"autogp: compiling (first run on this machine only; cache: {where.parent})" in err
    fit_s, compile_s = map(float, re.search(
        r"autogp: fitted in ([0-9.]+) s, ([0-9.]+) s of it compiling", err).groups())
    assert 0 < compile_s <= fit_s + 0.05
    assert model.compile_seconds > 0

    again = AutoGP(TINY, seed=1).fit(data)  # the same programs: nothing compiles
    assert capsys.readouterr().err == ""
    assert again.compile_seconds == 0.0
    _forget_programs(monkeypatch)
    AutoGP(TINY, seed=0, progress=False).fit(data)  # loaded from disk, and asked for silence
    assert capsys.readouterr().err == ""


def test_an_api_fit_keeps_compiled_programs_where_the_command_line_does(monkeypatch):
    """A Python process that never configured JAX's cache gets autogp's own on its first fit
    (the folder the command line uses), so only a machine's first fit compiles; a cache the
    user chose is kept, and ``AUTOGP_CACHE_DIR=off`` keeps it off."""
    session = jax.config.jax_compilation_cache_dir  # AUTOGP_CACHE_DIR points here too
    assert os.environ["AUTOGP_CACHE_DIR"] == session
    data = pd.read_csv(AIRLINE).iloc[:30]
    try:
        jax.config.update("jax_compilation_cache_dir", None)
        AutoGP(TINY, seed=0, progress=False).fit(data)
        assert jax.config.jax_compilation_cache_dir == session

        chosen = str(Path(session) / "chosen-by-the-user")
        jax.config.update("jax_compilation_cache_dir", chosen)
        assert use_compilation_cache() == Path(chosen)
        assert jax.config.jax_compilation_cache_dir == chosen

        jax.config.update("jax_compilation_cache_dir", None)
        monkeypatch.setenv("AUTOGP_CACHE_DIR", "off")
        assert use_compilation_cache() is None
        assert jax.config.jax_compilation_cache_dir is None
    finally:
        jax.config.update("jax_compilation_cache_dir", session)
