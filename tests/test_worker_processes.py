"""Worker processes started from a user's script: they never run the script again (an unguarded
script is how nearly everyone writes one), forecasts equal a guarded script's to the last bit,
and no worker outlives the process that started it.

The scripts run in fresh Python processes with the README's quick settings (``AUTOGP_SET``) or
test_parallel's tiny panel and settings, whose compiled programs the session's cache holds.
"""

from __future__ import annotations

import multiprocessing.spawn
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogp.config import SETTINGS_ENV, ConfigError, environment_settings
from autogp.parallel.spawning import main_module_hidden
from autogp_launcher.worker import process_alive
from tests.test_parallel import TINY, _tiny_panel

ROOT = Path(__file__).resolve().parents[1]
#: configs/quick.toml's search settings, as a user would put them in AUTOGP_SET.
QUICK = ("grammar.max_depth=2 smc.num_particles=4 smc.num_rounds=3 smc.structure_moves=2 "
         "refine.steps=10")


def _run(script: str, cwd: Path, *, timeout: float = 480,
         **env: str) -> subprocess.CompletedProcess:
    (cwd / "script.py").write_text(script)
    return subprocess.run([sys.executable, "script.py"], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})


def _guarded(script: str) -> str:
    """The same script under ``if __name__ == "__main__":``, as the multiprocessing docs ask."""
    return 'if __name__ == "__main__":\n' + textwrap.indent(script, "    ")


def _python_block(page: str, heading: str) -> str:
    """The first Python block under ``heading`` of ``page``, exactly as written."""
    text = (ROOT / page).read_text()
    found = re.search(rf"^{re.escape(heading)}\n.*?^```python\n(.*?)^```", text, re.S | re.M)
    assert found, f"{page} has no Python block under {heading!r}"
    return found.group(1)


# ---- the user's __main__ stays out of the workers ------------------------------------------------
@pytest.mark.parametrize("how", ["path", "module"])
def test_spawned_processes_are_not_told_to_run_the_main_module(how, monkeypatch):
    main = types.ModuleType("__main__")
    if how == "path":  # python script.py
        main.__file__ = "/somewhere/script.py"
        main.__spec__ = None
        key = "init_main_from_path"
    else:  # python -m package.script
        main.__spec__ = types.SimpleNamespace(name="package.script")
        key = "init_main_from_name"
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert key in multiprocessing.spawn.get_preparation_data("worker")
    with main_module_hidden():
        data = multiprocessing.spawn.get_preparation_data("worker")
        assert "init_main_from_path" not in data and "init_main_from_name" not in data
    assert sys.modules["__main__"] is main
    assert key in multiprocessing.spawn.get_preparation_data("worker")


def test_an_interactive_main_is_left_alone(monkeypatch):
    main = types.ModuleType("__main__")  # a REPL or notebook: no file, no spec
    monkeypatch.setitem(sys.modules, "__main__", main)
    with main_module_hidden():
        assert sys.modules["__main__"] is main


PANEL_SCRIPT = """\
import pandas as pd
from autogp import AutoGP
print("START", flush=True)
panel = pd.read_csv("panel.csv")
for backend in ("local", "dask"):
    model = AutoGP({config!r}, progress=False)
    model.fit(panel, backend=backend).predict(4).to_csv(f"{{backend}}.csv", index=False)
print("END", flush=True)
"""


@pytest.mark.slow
def test_an_unguarded_script_fits_a_panel_on_workers_as_a_guarded_one(tmp_path):
    pytest.importorskip("distributed")
    config = {**TINY, "smc": {**TINY["smc"], "workers": 2}}
    script = PANEL_SCRIPT.format(config=config)
    forecasts = {}
    for name, text in (("unguarded", script), ("guarded", _guarded(script))):
        where = tmp_path / name
        where.mkdir()
        _tiny_panel().to_csv(where / "panel.csv", index=False)
        done = _run(text, where)
        assert done.returncode == 0, done.stderr[-3000:]
        # the workers did not run the script again: one START, and no bootstrapping error
        assert done.stdout.split() == ["START", "END"], done.stdout
        assert "bootstrapping phase" not in done.stderr
        forecasts[name] = {b: pd.read_csv(where / f"{b}.csv") for b in ("local", "dask")}
    for backend in ("local", "dask"):
        pd.testing.assert_frame_equal(forecasts["unguarded"][backend],
                                      forecasts["guarded"][backend], check_exact=True)
    pd.testing.assert_frame_equal(forecasts["unguarded"]["local"],
                                  forecasts["unguarded"]["dask"], check_exact=True)


@pytest.mark.slow
def test_the_readme_python_block_runs_as_a_script(tmp_path):
    """The README's block exactly as written, pasted into a file and run with ``python``
    from a copy of the repository's root, its cross-validation on 2 worker processes."""
    block = _python_block("README.md", "## Python")
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    # Afterwards (not part of the block): what the test compares.
    tail = '\ncv.to_csv("cv.csv", index=False)\nforecast.to_csv("forecast.csv", index=False)\n'
    done = _run(block + tail, tmp_path, **{SETTINGS_ENV: f"{QUICK} smc.workers=2"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bootstrapping phase" not in done.stderr
    printed = done.stdout.strip()
    assert printed and done.stdout.count(printed.splitlines()[0]) == 1  # explain(), printed once
    for made in ("forecast.png", "airline.autogp"):
        assert (tmp_path / made).stat().st_size > 0
    cv = pd.read_csv(tmp_path / "cv.csv")
    airline = pd.read_csv(tmp_path / "examples" / "data" / "airline.csv")
    assert len(cv) == 36 and cv["cutoff"].nunique() == 3
    assert cv["ds"].tolist() == airline["ds"].iloc[-36:].tolist()
    assert np.array_equal(cv["y"].to_numpy(), airline["y"].iloc[-36:].to_numpy())
    assert (cv["AutoGP-lo-95"] < cv["AutoGP"]).all() and (cv["AutoGP"] < cv["AutoGP-hi-95"]).all()
    forecast = pd.read_csv(tmp_path / "forecast.csv")
    assert len(forecast) == 18 and forecast["ds"].iloc[0] == airline["ds"].iloc[126]


# ---- AUTOGP_SET ----------------------------------------------------------------------------------
def test_settings_from_the_environment_reach_models_below_explicit_arguments(monkeypatch):
    from autogp import AutoGP

    monkeypatch.setenv(SETTINGS_ENV, "smc.num_particles=4 'forecast.levels=[80, 95]' seed=3")
    assert environment_settings() == {"smc.num_particles": 4, "forecast.levels": [80, 95],
                                      "seed": 3}
    model = AutoGP(seed=0)
    assert model.config.smc.num_particles == 4 and model.config.seed == 0
    assert tuple(model.config.forecast.levels) == (80, 95)
    assert AutoGP(overrides={"smc.num_particles": 8}).config.smc.num_particles == 8
    # A built Config is taken as it is (a loaded model keeps its settings).
    assert AutoGP(AutoGP(particles=16).config).config.smc.num_particles == 16
    monkeypatch.setenv(SETTINGS_ENV, "smc.num_particle=4")
    with pytest.raises(ConfigError, match="AUTOGP_SET.*smc.num_particles"):
        AutoGP()
    monkeypatch.setenv(SETTINGS_ENV, "smc.num_particles")
    with pytest.raises(ConfigError, match="AUTOGP_SET.*key=value"):
        environment_settings()
    monkeypatch.delenv(SETTINGS_ENV)
    assert environment_settings() == {}


# ---- no worker outlives the run ------------------------------------------------------------------
def _descendants(pid: int) -> set[int]:
    psutil = pytest.importorskip("psutil")
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _wait_until(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_exit_with_ends_a_process_whose_watched_process_died(tmp_path):
    """A grandchild watching its grandparent (a Dask worker watching the caller) and a child
    watching its parent (a pool worker) both end once the watched process is killed."""
    script = textwrap.dedent("""\
        import os, subprocess, sys, time
        from autogp_launcher.worker import exit_with
        grand = sys.argv[1] if len(sys.argv) > 1 else None
        if grand is None:  # the starter: one child that watches it
            child = subprocess.Popen([sys.executable, __file__, str(os.getpid())])
            print(child.pid, flush=True)
            time.sleep(600)
        exit_with(int(grand), every=0.1)
        time.sleep(600)
        """)
    (tmp_path / "watch.py").write_text(script)
    starter = subprocess.Popen([sys.executable, str(tmp_path / "watch.py")],
                               stdout=subprocess.PIPE, text=True)
    child = int(starter.stdout.readline())
    assert process_alive(child)
    time.sleep(1.0)  # the child's watch has started
    assert process_alive(child)
    starter.kill()
    starter.wait()
    assert _wait_until(lambda: not process_alive(child), 10)
    assert not process_alive(starter.pid)


KILL_SCRIPT = """\
from autogp import AutoGP
import pandas as pd
panel = pd.read_csv("panel.csv")
AutoGP(progress=False, overrides={{"smc.workers": 2}}).fit(panel, backend={backend!r},
                                                          resume="resume")
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend,interrupt_first", [("local", False), ("local", True),
                                                     ("dask", False)])
def test_workers_end_within_seconds_when_their_parent_is_killed(backend, interrupt_first,
                                                                tmp_path):
    """A panel fit's process killed as a batch scheduler or the out-of-memory killer does it
    (SIGINT, and 3 s later SIGKILL; or SIGKILL alone, which leaves no cleanup to the parent):
    every process it started ends within 10 s."""
    if backend == "dask":
        pytest.importorskip("distributed")
    panel = pd.concat([_tiny_panel().assign(unique_id=lambda d, k=k: d["unique_id"] + str(k))
                       for k in range(4)], ignore_index=True)  # the default search: slow
    panel.to_csv(tmp_path / "panel.csv", index=False)
    (tmp_path / "script.py").write_text(KILL_SCRIPT.format(backend=backend))
    parent = subprocess.Popen([sys.executable, "script.py"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started: set[int] = set()
    try:
        # two workers (Dask's nannies run in the parent) and multiprocessing's resource tracker
        assert _wait_until(lambda: len(_descendants(parent.pid)) >= 3, 120), \
            "the workers never started"
        time.sleep(3)  # they are importing autogp or fitting
        started |= _descendants(parent.pid)
        assert parent.poll() is None, "the fit ended before it could be killed"
        if interrupt_first:
            parent.send_signal(signal.SIGINT)
            time.sleep(3)
        parent.kill()
        parent.wait()
        assert _wait_until(lambda: not any(process_alive(p) for p in started), 10), \
            f"still alive 10 s after the parent: {[p for p in started if process_alive(p)]}"
    finally:  # whatever failed, leave nothing running
        if parent.poll() is None:
            parent.kill()
        for pid in started:
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


#: The documentation's Python examples that start worker processes: each runs as a script.
DOCS_WITH_WORKERS = [("docs/workflow.md", "## Cross-validation")]


@pytest.mark.slow
@pytest.mark.parametrize("page,heading", DOCS_WITH_WORKERS)
def test_the_docs_examples_that_start_workers_run_as_scripts(page, heading, tmp_path):
    block = _python_block(page, heading)
    assert "import" in block  # a whole script, not a fragment
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    done = _run(block, tmp_path, **{SETTINGS_ENV: f"{QUICK} smc.workers=2"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bootstrapping phase" not in done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 + 3 and done.stdout.count(lines[0]) == 1  # one table: 3 cutoffs


def test_workers_of_autogps_own_cluster_share_this_machines_compilation_cache(monkeypatch,
                                                                            tmp_path):
    pytest.importorskip("distributed")
    import jax

    from autogp.parallel.dask_backend import AutoGPWorkerSetup

    monkeypatch.setenv("AUTOGP_CACHE_DIR", str(tmp_path))
    seen: list[tuple[str, object]] = []
    monkeypatch.setattr(jax.config, "update", lambda name, value: seen.append((name, value)))
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the plugin sets worker variables
    worker = types.SimpleNamespace(name="tcp://10.0.0.7:4000")
    AutoGPWorkerSetup(shared=True).setup(worker)
    AutoGPWorkerSetup().setup(worker)  # a cluster of the user's: a folder per worker
    dirs = [value for name, value in seen if name == "jax_compilation_cache_dir"]
    assert dirs == [str(tmp_path), str(tmp_path / "dask-worker-tcp_10.0.0.7_4000")]
