"""autogp's one compilation wrapper: the SMC rounds, initial particles and other programs of a
fit as exported programs, compiled side by side and kept on disk so that a fresh process skips
tracing and lowering, or as plain ``jax.jit``; either way counted per program
(:func:`programs`). The functions it runs are pure.

Two costs of a first fit are cut here. A fit needs several programs: its initial particles and
one round per data size its annealing rounds grow through. Jitted one by one, their compilations
add up, while XLA compiles outside the GIL, so :func:`prepare` exports every program of the fit
(tracing is serial) and then compiles them in threads, waiting for the slowest rather than the
sum. And JAX's persistent compilation cache keeps compiled executables, but a new process must
still trace the Python function and lower it to StableHLO before it can look the executable up:
on the AutoGP.jl tutorial configuration that took longer than running the fit. ``jax.export``
serialises the lowered program; a later process deserialises it and calls it, skipping both
steps, and the compile step then hits the persistent cache as before (the A/B is in
``benchmarks/smc/``).

On unless ``AUTOGP_EXPORTED_ROUNDS=0`` (then the programs are plain ``jax.jit``). Programs are
kept on disk only where JAX's persistent compilation cache is on (the command line and Dask
workers turn it on; ``AUTOGP_CACHE_DIR=off`` turns it off), beside the executables in
``<cache dir>/autogp-exported``; elsewhere they live in this process only. A program's file name
is a hash of everything it depends on: the static arguments, the arguments' tree structure,
shapes and dtypes, the platform, the versions of jax and jaxlib, and autogp's own source, so an
edited or upgraded package never reuses a stale program. A missing, unreadable or corrupt file is
exported afresh; where the file cannot be written, this process still runs the exported program
from memory.

A first run says so: :func:`prepare` tells the listeners of :func:`on_compiling` when it
compiles programs that have no exported file on disk (the command line and ``AutoGP.fit`` show
that as their compiling phase), :func:`cache_is_cold` says whether a cache has seen a fit of this
autogp and JAX at all (a panel's parent asks it for its workers), and :func:`compile_seconds`
counts the time the fitting threads lost to compilation (a fit's summary line reports it).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import functools
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jaxlib

from autogp._x64 import float64_platform
from autogp._xla import compiler_options, jit

_SUBDIR = "autogp-exported"
#: Programs loaded (or exported) by this process, by file name: compiled, or still compiling
#: (a future) while the fit that asked for them runs its first rounds.
_loaded: dict[str, Callable | Future] = {}
#: The same, where programs run as plain ``jax.jit`` (``AUTOGP_EXPORTED_ROUNDS=0`` or
#: :func:`call_jitted`): the jitted function of each ``(fn, number of static arguments)``, and
#: the keys of the programs it has run (jit's own cache holds their executables).
_jitted: dict[tuple[Callable, int], Callable] = {}
_jitted_keys: set[str] = set()
_compile_pool: ThreadPoolExecutor | None = None
#: Seconds the calling threads have waited for compilation (:func:`compile_seconds`).
_waited = [0.0]
_waited_lock = threading.Lock()
#: Who is told when a fit starts compiling programs that no cache holds (:func:`on_compiling`).
_listeners: list[Callable[[Compiling], None]] = []


def _pool() -> ThreadPoolExecutor:
    global _compile_pool
    if _compile_pool is None:
        _compile_pool = ThreadPoolExecutor(max_workers=_usable_cores(),
                                           thread_name_prefix="autogp-compile")
    return _compile_pool


def _find_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS, Windows)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no C library of this process to open (Windows)
        return None


_malloc_trim = _find_malloc_trim()


def release_free_memory(_future: Future | None = None) -> None:
    """Give the C heap's free pages back to the system. Compiling a round program (or loading
    it from the cache) allocates hundreds of MB that XLA frees when it is done, but glibc keeps
    freed memory in the arena of the thread that freed it: without this, a process stays at the
    resident size of its compile peak for the rest of its life (2.9 GB for the README's airline
    fit, of which 0.45 GB in use; ``benchmarks/smc/memory.md``). Called as each compilation
    finishes; a no-op where the C library has no ``malloc_trim``."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def _usable_cores() -> int:
    """The cores this process may run on (its affinity), else the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's compile threads: drop the pool and the
    programs that were still compiling (they would wait forever)."""
    global _compile_pool
    _compile_pool = None
    for key in [k for k, v in _loaded.items() if isinstance(v, Future)]:
        del _loaded[key]


os.register_at_fork(after_in_child=_after_fork_in_child)


def enabled() -> bool:
    """Whether rounds run through exported programs (``AUTOGP_EXPORTED_ROUNDS=0``: no)."""
    return os.environ.get("AUTOGP_EXPORTED_ROUNDS") != "0"


def directory() -> Path | None:
    """Where exported programs are kept on disk: inside JAX's persistent compilation cache, or
    None when that cache is off (programs then live in this process only)."""
    where = jax.config.jax_compilation_cache_dir
    if not where:
        return None
    return Path(where) / _SUBDIR


@functools.cache
def _source_hash() -> str:
    """sha256 of autogp's Python source: any edit gives every program a new key."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


#: Program keys already computed in this process: a split round calls its step programs a few
#: dozen times, and the canonical text of the settings costs more than running a small step.
_keys: dict[tuple, str] = {}


def program_key(name: str, static: tuple, args: tuple) -> str:
    """The file name of ``name``'s program for these static arguments and argument avals."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    avals = tuple((tuple(a.shape), str(a.dtype)) for a in leaves)
    memo = (name, static, treedef, avals, float64_platform(), jax.config.jax_enable_x64)
    try:
        return _keys[memo]
    except KeyError:
        pass
    except TypeError:  # static arguments that cannot be hashed: computed every time
        return _program_key(name, static, treedef, list(avals))
    _keys[memo] = key = _program_key(name, static, treedef, list(avals))
    return key


def _program_key(name: str, static: tuple, treedef: Any, avals: list) -> str:
    digest = hashlib.sha256()
    for part in (name, jax.__version__, jaxlib.__version__, float64_platform(),
                 jax.config.jax_enable_x64, _source_hash(), str(treedef), repr(avals)):
        digest.update(repr(part).encode())
        digest.update(b"\0")
    digest.update(static_digest(static))
    return f"{name}-{digest.hexdigest()[:32]}"


def static_digest(obj: Any) -> bytes:
    """A canonical text of the fields that equality compares (:func:`_compared_fields`): equal
    settings give the same bytes however their parts are shared and whatever a
    ``functools.cached_property`` has stored in them, different ones different bytes (JSON
    keeps 1, 1.0 and True apart and writes floats exactly; other values by type and repr)."""
    text = json.dumps(_compared_fields(obj), separators=(",", ":"), allow_nan=True,
                      default=lambda v: f"{type(v).__module__}.{type(v).__qualname__}:{v!r}")
    return text.encode("utf-8")


def _compared_fields(obj: Any) -> Any:
    """``obj`` with every dataclass replaced by its class name and the fields its ``==``
    compares, recursively (so lazily cached attributes never reach the key)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj).__module__, type(obj).__qualname__,
                tuple((f.name, _compared_fields(getattr(obj, f.name)))
                      for f in dataclasses.fields(obj) if f.compare))
    if isinstance(obj, tuple | list):
        return type(obj).__name__, tuple(_compared_fields(v) for v in obj)
    if isinstance(obj, dict):
        return "dict", tuple(sorted((repr(k), _compared_fields(v)) for k, v in obj.items()))
    if isinstance(obj, enum.Enum):  # by name and value (a StrEnum would pass for its string)
        return type(obj).__qualname__, obj.name, _compared_fields(obj.value)
    return obj


class Compiling(NamedTuple):
    """A fit starts compiling ``programs`` programs that neither this process nor the cache on
    disk holds; ``cache`` is where they will be kept (None: in this process only). A listener
    may add callbacks to ``on_each_done``: each is called (in a compile thread) as each of these
    programs finishes compiling."""

    programs: int
    cache: Path | None
    on_each_done: list[Callable[[], None]]

    def _done(self, _future: Future) -> None:
        for callback in list(self.on_each_done):
            callback()


@contextlib.contextmanager
def on_compiling(listener: Callable[[Compiling], None]) -> Iterator[None]:
    """Call ``listener`` (in the calling thread) whenever :func:`prepare` starts compiling
    programs from scratch, inside the block."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def compile_seconds() -> float:
    """Seconds the threads that fit have spent on compilation in this process so far: tracing,
    lowering or loading exported programs, waiting for the compile threads, and the first call
    of each plain ``jax.jit`` program (its compilation and one run). Programs compile while
    earlier rounds run, so this is the fit's wall time lost to compiling, not the compile
    threads' total. A fit reads the difference before and after."""
    return _waited[0]


@contextlib.contextmanager
def _compiling_time() -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        with _waited_lock:
            _waited[0] += time.perf_counter() - start


def cache_is_cold(where: Path | None) -> bool:
    """Whether no fit of this autogp (its source) and JAX has kept programs under ``where``
    yet (True where there is no cache): a first run on this machine."""
    return where is None or not _stamp(where).exists()


def _stamp(where: Path) -> Path:
    return where / f"seen-{_source_hash()[:16]}-jax{jax.__version__}"


class Program(NamedTuple):
    """One program to prepare: ``fn(*static, *args)`` named ``name`` (see :func:`call`)."""

    name: str
    fn: Callable
    static: tuple
    args: tuple


def call_jitted(program: Program, out_treedef: Any) -> Any:
    """``program.fn(*program.static, *program.args)`` through ``jax.jit`` (the static
    arguments static), counted in :func:`programs` like an exported program."""
    leaves = jax.tree_util.tree_leaves(program.args)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return program.fn(*program.static, *program.args)
    n = len(program.static)
    if (program.fn, n) not in _jitted:
        _jitted[program.fn, n] = jit(program.fn, static_argnums=tuple(range(n)))
    key = program_key(program.name, program.static, program.args)
    first = key not in _jitted_keys
    _jitted_keys.add(key)
    with _compiling_time() if first else contextlib.nullcontext():
        out = _jitted[program.fn, n](*program.static, *program.args)
        if first:
            out = jax.block_until_ready(out)
    return jax.tree_util.tree_unflatten(out_treedef, jax.tree_util.tree_leaves(out))


def call(where: Path | None, program: Program, out_treedef: Any) -> Any:
    """``program.fn(*program.static, *program.args)`` through a program exported to ``where``
    (or loaded from it; None: kept in memory only), or through :func:`call_jitted` where
    exported programs are off (:func:`enabled`).

    ``static`` are hashable settings baked into the program; ``args`` a tuple of pytrees of
    arrays (no PRNG key arrays: pass their ``jax.random.key_data``); ``out_treedef`` the
    structure of the result, which the caller knows without tracing.
    """
    leaves = jax.tree_util.tree_leaves(program.args)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        # Under a transformation (jit, vmap, eval_shape): a compiled program cannot be traced
        # through, so trace the function itself.
        return program.fn(*program.static, *program.args)
    return bind(where, program, out_treedef)(*program.args)


def bind(where: Path | None, program: Program, out_treedef: Any) -> Callable[..., Any]:
    """``program`` as a function of new arguments of the same shapes: ``bind(...)(*args)`` is
    ``call`` of the program with ``args``, without computing its key again (a loop that calls
    a few small programs many times pays for the key once)."""
    if not enabled():
        return lambda *args: call_jitted(program._replace(args=args), out_treedef)
    key = program_key(program.name, program.static, program.args)
    if key not in _loaded:
        prepare(where, [program])

    def run(*args):
        leaves = jax.tree_util.tree_leaves(args)
        return jax.tree_util.tree_unflatten(out_treedef, _compiled(key)(*leaves))

    return run


def _compiled(key: str) -> Callable:
    """The compiled program ``key``, waiting for its compilation if it is still running (a
    failed compilation is forgotten, so the next call tries again, and its error raised)."""
    program = _loaded[key]
    if isinstance(program, Future):
        try:
            with _compiling_time() if not program.done() else contextlib.nullcontext():
                program = program.result()
        except BaseException:
            _loaded.pop(key, None)
            raise
        _loaded[key] = program
    return program


def prepare(where: Path | None, programs: Sequence[Program]) -> None:
    """Load (or export) ``programs`` (their ``args`` arrays or ``jax.ShapeDtypeStruct``s) and
    start compiling them, side by side in threads, in the order given: XLA compiles, or reads
    from the persistent cache, outside the GIL, so a fit that needs several programs (its
    initial particles, one round per round size) waits for the slowest rather than for the sum,
    and its first rounds run while the programs of later, larger rounds still compile.
    :func:`call` waits for a program that is not ready. Export (tracing) stays serial.

    Programs with no exported file under ``where`` (all of them where ``where`` is None) are
    compiled from scratch: the listeners of :func:`on_compiling` are told, with their futures.
    """
    new = {}
    for program in programs:
        key = program_key(program.name, program.static, program.args)
        if key not in _loaded:
            new.setdefault(key, program)
    fresh = {key for key in new if where is None or not (where / f"{key}.bin").is_file()}
    notice = Compiling(len(fresh), where, [])
    if fresh:
        for listener in list(_listeners):
            listener(notice)
    with _compiling_time() if new else contextlib.nullcontext():
        for key, program in new.items():
            exported = _export(where, program, key)
            # Lower here, compile in a thread: JAX's configuration (x64 above all) can be a
            # thread-local context, which the compile threads would not see; compiling a
            # lowered program does not read it.
            lowered = jax.jit(exported.call).lower(
                *jax.tree_util.tree_leaves(shapes(program.args)))
            _loaded[key] = _pool().submit(lowered.compile, compiler_options())
            _loaded[key].add_done_callback(release_free_memory)
            if key in fresh:
                _loaded[key].add_done_callback(notice._done)


def forget() -> None:
    """Drop every program this process has loaded, once those still compiling finish (the next
    fit loads them again, from disk where the cache is on). Each compiled XLA:CPU program holds
    memory mappings until it is freed, and a process may hold at most ``vm.max_map_count``
    (65,530 by default) before XLA's compiler crashes: a process that fits many different
    configurations (a test suite, a service) calls this between them, beside
    ``jax.clear_caches()``."""
    for program in list(_loaded.values()):
        if isinstance(program, Future):
            program.exception()  # wait; a failed compilation has nothing to free
    _loaded.clear()
    _jitted.clear()
    _jitted_keys.clear()
    release_free_memory()


def programs(name: str) -> int:
    """How many of ``name``'s programs this process has loaded, exported or jitted (one per
    distinct key: a second fit with the same settings and shapes adds none)."""
    return sum(key.startswith(f"{name}-") for key in (*_loaded, *_jitted_keys))


def shapes(tree: Any) -> Any:
    """``tree`` with every array replaced by its ``jax.ShapeDtypeStruct``."""
    return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)


def _export(where: Path | None, program: Program, key: str) -> Any:
    """``program``'s exported (traced and lowered) form, named ``key``: read from disk under
    ``where``, or exported now (and written there)."""
    from jax import export

    path = None if where is None else where / f"{key}.bin"
    if path is not None:
        try:
            return export.deserialize(bytearray(path.read_bytes()))
        except Exception:  # missing, unreadable or corrupt: export it afresh
            pass
    args = shapes(program.args)
    treedef = jax.tree_util.tree_structure(args)

    def flat(*leaves):
        return jax.tree_util.tree_leaves(
            program.fn(*program.static, *jax.tree_util.tree_unflatten(treedef, leaves)))

    exported = export.export(jax.jit(flat), platforms=(float64_platform(),))(
        *jax.tree_util.tree_leaves(args))
    if path is not None:
        _write_atomically(path, exported)
    return exported


def _write_atomically(path: Path, exported: Any) -> None:
    """Write to a temporary file and rename, so a concurrent reader never sees half a file."""
    try:
        blob = exported.serialize()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
        _stamp(path.parent).touch()
    except (OSError, ImportError):
        pass  # read-only cache or no flatbuffers: this process still uses the exported program


__all__ = ["Compiling", "Program", "bind", "cache_is_cold", "call", "call_jitted",
           "compile_seconds", "directory", "enabled", "forget", "on_compiling", "prepare",
           "program_key", "programs", "release_free_memory", "shapes", "static_digest"]
