"""SMC rounds and initial particles kept on disk (``autogp.inference.exported``): a run through
exported programs gives bit for bit the jitted run's result; a later run loads them without
tracing the round; a fit compiles all its programs in one batch before it starts; keys change
with everything a program depends on; a corrupt file is exported afresh."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autogp.config import engine_settings, load_config
from autogp.inference import exported, round_steps, rounds
from tests.helpers import small_smc_problem

#: The rounds' point counts: the first two fit the 32-column prefix of the padded 64 points,
#: the last needs all 64, so a run needs two round programs.
TWO_SIZES = ((10, 9), (25, 18), (40, 27))


def _problem(n=(40, 27), particles=3, counts=TWO_SIZES):
    grammar, settings, data, state = small_smc_problem(n, particles, regular=False, moves=2,
                                                       steps=3)
    return grammar, settings, data, state, np.array(counts, dtype=np.int32)


def _run(problem):
    grammar, settings, data, state, counts = problem
    final, history = rounds.run_rounds(grammar, settings, state, data, counts,
                                       key=jax.random.key(9))
    return final, history


def _assert_same(a, b):
    for name, x, y in zip(rounds.SMCState._fields, a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


@pytest.fixture
def on_disk(tmp_path, monkeypatch):
    """Exported programs in a fresh folder, and no programs loaded by this process."""
    monkeypatch.setattr(exported, "directory", lambda: tmp_path)
    _forget_programs(monkeypatch)
    return tmp_path


def _forget_programs(monkeypatch):
    """As in a new process: no program exported, loaded or compiled yet."""
    monkeypatch.setattr(exported, "_loaded", {})
    monkeypatch.setattr(exported, "_jitted", {})
    monkeypatch.setattr(exported, "_jitted_keys", set())


def test_rounds_through_exported_programs_equal_the_jitted_rounds(on_disk, monkeypatch):
    # Two rounds on all 64 padded columns: one program, compiled here three ways (exported,
    # jitted, loaded). One program per round size is checked on two sizes below.
    problem = _problem(counts=((34, 20), (40, 27)))
    on_disk_state, on_disk_history = _run(problem)
    files = sorted(p.name for p in on_disk.glob("round_*.bin"))
    # A split round's five programs: likelihood and optimiser for the one size, reweighting,
    # proposals and accept steps for every size.
    assert sorted(f.split("-")[0] for f in files) == [
        "round_accept", "round_propose", "round_refine", "round_resample", "round_score"]
    assert rounds.compilation_counts()["round"] == exported.programs("round_refine") == 1
    assert len({rounds.round_size(int(c.max()), 64) for c in problem[4]}) == 1
    with monkeypatch.context() as m:
        m.setenv("AUTOGP_EXPORTED_ROUNDS", "0")
        jitted_state, jitted_history = _run(problem)
    _assert_same(on_disk_state, jitted_state)
    assert on_disk_history == jitted_history

    # A later process: nothing loaded yet, and tracing the round would fail the test.
    _forget_programs(monkeypatch)

    def no_tracing(*args, **kwargs):
        raise AssertionError("the round was traced instead of loaded")

    monkeypatch.setattr(rounds, "smc_round", no_tracing)
    for step in ("score", "reweight_resample", "propose", "accept", "refine"):
        monkeypatch.setattr(round_steps, step, no_tracing)
    loaded_state, _ = _run(problem)
    _assert_same(loaded_state, jitted_state)
    assert sorted(p.name for p in on_disk.glob("round_*.bin")) == files


def test_in_memory_programs_without_a_cache_write_nothing(tmp_path, monkeypatch):
    """No persistent cache: the rounds still run through exported programs, none on disk."""
    monkeypatch.setattr(exported, "directory", lambda: None)
    _forget_programs(monkeypatch)
    monkeypatch.chdir(tmp_path)
    problem = _problem()  # two round sizes (32 and 64 columns), so two programs
    in_memory, _ = _run(problem)
    assert rounds.compilation_counts()["round"] == 2
    assert not any(tmp_path.rglob("*"))
    monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")
    jitted, _ = _run(problem)
    _assert_same(in_memory, jitted)


def test_jitted_rounds_are_counted_once_per_program(monkeypatch):
    """Where exported programs are off the wrapper runs ``jax.jit`` and counts its programs the
    same way: one per round size, none added by a second run of the same shapes."""
    _forget_programs(monkeypatch)
    monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")
    problem = _problem()  # two round sizes
    _run(problem)
    assert exported.programs("round_refine") == rounds.compilation_counts()["round"] == 2
    _run(problem)
    assert rounds.compilation_counts() == {"round": 2, "moves": 1, "draws": 0}


def test_a_corrupt_program_is_exported_afresh(on_disk, monkeypatch):
    problem = _problem(n=(20,), particles=2)
    problem = (*problem[:4], np.array([[8], [20]], dtype=np.int32))
    first, _ = _run(problem)
    (path,) = on_disk.glob("round_propose-*.bin")
    path.write_bytes(b"not a program")
    _forget_programs(monkeypatch)
    again, _ = _run(problem)
    _assert_same(again, first)
    assert path.read_bytes() != b"not a program"


def _round_key(grammar, settings, data, state, inducing=0):
    """The program key of a round on ``_problem()``'s two series."""
    count = jnp.asarray([10, 9], dtype=jnp.int32)
    kd = jax.random.key_data(jax.random.key(0))
    return exported.program_key("smc_round", (grammar, settings, inducing),
                                (state, data, count, kd))


def test_keys_follow_everything_a_program_depends_on():
    grammar, settings, data, state, _ = _problem()

    def key(grammar=grammar, settings=settings, data=data, state=state, inducing=0):
        return _round_key(grammar, settings, data, state, inducing)

    base = key()
    assert key() == base  # deterministic
    grammar2, _ = engine_settings(load_config({"grammar": {"max_depth": 2,
                                                           "weights": {"SE": 1.0}}}))
    irregular = dataclasses.replace(data, regular_grid=not data.regular_grid)
    shorter = rounds.data_prefix(data, 32)
    different = {
        "settings": key(settings=dataclasses.replace(settings, structure_moves=3)),
        "grammar": key(grammar=grammar2),
        "inducing": key(inducing=64),
        "regular grid": key(data=irregular),
        "shape": key(data=shorter),
    }
    for what, k in different.items():
        assert k != base, what
    assert len(set(different.values())) == len(different)


def test_equal_settings_give_one_key_however_their_parts_are_shared_or_cached():
    """Regression: a second fit in one process exported a second program, because plain pickle
    differs between equal settings (shared parts, lazily cached grammar tables)."""
    grammar, settings, data, state, _ = _problem()
    copied = dataclasses.replace(grammar)  # equal, and its cached tables are not computed yet
    _ = grammar.node_log_prob_table, grammar.path_log_prob_table
    assert "node_log_prob_table" in vars(grammar) and "node_log_prob_table" not in vars(copied)
    shared = dataclasses.replace(settings, refine=settings.refine)
    separate = dataclasses.replace(settings, refine=dataclasses.replace(settings.refine))
    assert copied == grammar and shared == separate

    def key(grammar, settings):
        return _round_key(grammar, settings, data, state)

    assert key(grammar, shared) == key(copied, separate)
    assert key(grammar, shared) != key(grammar, dataclasses.replace(settings, structure_moves=3))


def test_static_digest_is_equal_for_equal_settings_and_differs_otherwise():
    """The static part of a program key is a canonical text, not a pickle: equal settings (a
    separate copy, lazily cached tables filled in) give equal bytes, and any compared field,
    type (1 vs 1.0 vs True) or nesting that differs gives other bytes."""
    grammar, settings, _, _, _ = _problem()
    fresh = dataclasses.replace(grammar)
    _ = grammar.node_log_prob_table
    copy = dataclasses.replace(settings, refine=dataclasses.replace(settings.refine))
    assert exported.static_digest((grammar, settings, 0)) == exported.static_digest(
        (fresh, copy, 0))
    variants = [
        (grammar, settings, 0),
        (grammar, settings, 1),
        (grammar, settings, 1.0),
        (grammar, settings, True),
        (grammar, dataclasses.replace(settings, ess_threshold=0.25), 0),
        (grammar, dataclasses.replace(settings, refine=dataclasses.replace(
            settings.refine, steps=settings.refine.steps + 1)), 0),
        (dataclasses.replace(grammar, max_depth=grammar.max_depth + 1), settings, 0),
        [grammar, settings, 0],
    ]
    digests = [exported.static_digest(v) for v in variants]
    assert len(set(digests)) == len(digests)


def test_beside_the_compilation_cache_and_off_without_it(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOGP_EXPORTED_ROUNDS", raising=False)
    before = jax.config.jax_compilation_cache_dir
    try:
        jax.config.update("jax_compilation_cache_dir", None)
        assert exported.directory() is None and exported.enabled()  # in memory only
        jax.config.update("jax_compilation_cache_dir", str(tmp_path))
        assert exported.directory() == tmp_path / "autogp-exported"
        monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")  # the opt-out: plain jax.jit
        assert not exported.enabled()
    finally:  # nothing is compiled in between, so the cache itself is never opened here
        jax.config.update("jax_compilation_cache_dir", before)


def test_programs_compiled_in_threads_keep_a_thread_local_x64(monkeypatch):
    """Regression: autogp turns float64 on with a context local to the calling thread
    (``autogp._x64``); programs compiled side by side in worker threads must still be float64
    (they were lowered there, without it, and a panel worker's fits all failed)."""
    from autogp._x64 import x64

    monkeypatch.setattr(exported, "directory", lambda: None)
    _forget_programs(monkeypatch)
    jax.config.update("jax_enable_x64", False)
    try:
        with x64():
            problem = _problem()
            in_threads, _ = _run(problem)
            assert rounds.compilation_counts()["round"] == 2
            monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")
            jitted, _ = _run(problem)
    finally:
        jax.config.update("jax_enable_x64", True)
    assert in_threads.params.dtype == np.float64
    _assert_same(in_threads, jitted)


@pytest.mark.parametrize("proposal", [False, True], ids=["prior", "period proposal"])
def test_initial_particles_through_exported_programs_equal_the_jitted_ones(
        proposal, on_disk, monkeypatch):
    grammar, settings, data, _, _ = _problem()
    extra = {"data": data, "settings": settings} if proposal else {}
    assert settings.period_proposal > 0  # so the proposal's program is the one used

    def init():
        return rounds.init_state(grammar, 2, 3, key=jax.random.key(5), **extra)

    through_program = init()
    name = "init_proposal" if proposal else "init_prior"
    assert len(list(on_disk.glob(f"{name}-*.bin"))) == 1
    # The shapes prepare_programs compiles for, written out without tracing the sampler
    # (eval_shape traces: exported.call then runs the function itself).
    assert rounds.state_shapes(grammar, 2, 3) == jax.eval_shape(init)
    monkeypatch.setenv("AUTOGP_EXPORTED_ROUNDS", "0")
    _assert_same(through_program, init())


def test_a_fit_prepares_all_its_programs_before_it_starts(on_disk, monkeypatch):
    """run_smc_panel compiles the initial particles' program and every round size's programs
    in one batch (side by side); nothing is exported or compiled after the fit has started."""
    from autogp.inference import smc

    grammar, settings, _, _, _ = _problem()
    batches = []
    prepare = exported.prepare

    def recording(where, programs):
        batches.append(sorted({p.name for p in programs
                               if exported.program_key(p.name, p.static, p.args)
                               not in exported._loaded}))
        prepare(where, programs)

    monkeypatch.setattr(exported, "prepare", recording)
    x = np.linspace(0, 1, 50)
    smc.run_smc(x, np.sin(9 * x), grammar, settings, key=jax.random.key(0))
    assert batches[0] == ["init_proposal", "round_accept", "round_propose", "round_refine",
                          "round_resample", "round_score"]
    assert all(not names for names in batches[1:])  # later calls find everything loaded
    sizes = set(rounds.round_sizes(settings, np.arange(1, 51)[:, None], 64))
    assert exported.programs("round_refine") == len(list(on_disk.glob("round_refine-*.bin"))) == 2
    assert exported.programs("round_propose") == 1
    assert len(sizes) == 2


def _resident_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


@pytest.mark.skipif(exported._malloc_trim is None, reason="no malloc_trim in this C library")
def test_released_memory_leaves_the_resident_set():
    """Freed C heap pages below a live block stay resident until ``malloc_trim``: 64 MB of
    4 KB blocks, all freed but the last (which pins the heap's top), must leave the process's
    resident memory once :func:`exported.release_free_memory` runs, and not before."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = []
    for _ in range(16_384):
        block = libc.malloc(4096)
        ctypes.memset(block, 1, 4096)  # touched: resident
        blocks.append(block)
    for block in blocks[:-1]:
        libc.free(block)
    held = _resident_mb()
    exported.release_free_memory()
    released = _resident_mb()
    libc.free(blocks[-1])
    assert held - released > 32, (held, released)


def test_each_compiled_program_releases_free_memory(monkeypatch):
    """Every program :func:`exported.prepare` compiles gives its freed memory back when its
    compilation ends: one release per program loaded."""
    calls = []
    monkeypatch.setattr(exported, "_malloc_trim", lambda pad: calls.append(pad) or 1)
    monkeypatch.setattr(exported, "directory", lambda: None)
    monkeypatch.delenv("AUTOGP_EXPORTED_ROUNDS", raising=False)
    _forget_programs(monkeypatch)
    _run(_problem())
    assert rounds.compilation_counts()["round"] == 2
    assert len(exported._loaded) >= 2 and calls == [0] * len(exported._loaded)
