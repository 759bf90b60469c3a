"""SMC rounds and initial particles as exported programs: compiled side by side, and kept on disk
so that a fresh process skips tracing and lowering.

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
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import os
import pickle
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jaxlib

_SUBDIR = "autogp-exported"
#: Programs loaded (or exported) by this process, by file name.
_loaded: dict[str, Callable] = {}


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


def program_key(name: str, static: tuple, args: tuple) -> str:
    """The file name of ``name``'s program for these static arguments and argument avals."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    avals = [(tuple(a.shape), str(a.dtype)) for a in leaves]
    digest = hashlib.sha256()
    for part in (name, jax.__version__, jaxlib.__version__, jax.default_backend(),
                 jax.config.jax_enable_x64, _source_hash(), str(treedef), repr(avals)):
        digest.update(repr(part).encode())
        digest.update(b"\0")
    digest.update(_pickled_without_memo(static))
    return f"{name}-{digest.hexdigest()[:32]}"


def _pickled_without_memo(obj: Any) -> bytes:
    """Pickle the fields that equality compares, with the memo off, so equal settings always
    give the same bytes. Plain ``pickle.dumps`` differs between equal objects in two ways: it
    writes a back-reference where a part is shared (one fit) but not where it is a separate
    copy (the next fit), and it includes values a ``functools.cached_property`` has stored in
    the instance (the grammar's probability tables, present once a fit has used them)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=4)
    pickler.fast = True  # settings hold no cycles, the only thing the memo is needed for
    pickler.dump(_compared_fields(obj))
    return buffer.getvalue()


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
    return obj


class Program(NamedTuple):
    """One program to prepare: ``fn(*static, *args)`` named ``name`` (see :func:`call`)."""

    name: str
    fn: Callable
    static: tuple
    args: tuple


def call(where: Path | None, name: str, fn: Callable, static: tuple, args: tuple,
         out_treedef: Any) -> Any:
    """``fn(*static, *args)`` through a program exported to ``where`` (or loaded from it; None:
    kept in memory only).

    ``static`` are picklable settings baked into the program; ``args`` a tuple of pytrees of
    arrays (no PRNG key arrays: pass their ``jax.random.key_data``); ``out_treedef`` the
    structure of ``fn``'s result, which the caller knows without tracing.
    """
    leaves = jax.tree_util.tree_leaves(args)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        # Under a transformation (jit, vmap, eval_shape): a compiled program cannot be traced
        # through, so trace the function itself.
        return fn(*static, *args)
    key = program_key(name, static, args)
    program = _loaded.get(key)
    if program is None:
        prepare(where, [Program(name, fn, static, args)])
        program = _loaded[key]
    return jax.tree_util.tree_unflatten(out_treedef, program(*leaves))


def prepare(where: Path | None, programs: Sequence[Program]) -> None:
    """Load (or export) and compile ``programs`` (their ``args`` arrays or
    ``jax.ShapeDtypeStruct``s), compiling them side by side: XLA compiles, or reads from the
    persistent cache, outside the GIL, so a fit that needs several programs (its initial
    particles, one round per round size) waits for the slowest rather than for the sum.
    Export (tracing) stays serial."""
    todo: dict[str, Program] = {}
    for program in programs:
        key = program_key(program.name, program.static, program.args)
        if key not in _loaded and key not in todo:
            todo[key] = program
    if not todo:
        return
    exported = {key: _load_or_export(None if where is None else where / f"{key}.bin",
                                     p.fn, p.static, p.args)
                for key, p in todo.items()}

    # Lower here, compile in threads: JAX's configuration (x64 above all) can be a thread-local
    # context, which worker threads would not see; compiling a lowered program does not read it.
    lowered = {key: jax.jit(exported[key].call).lower(
        *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in jax.tree_util.tree_leaves(p.args)])
        for key, p in todo.items()}
    if len(todo) == 1:
        compiled = {key: program.compile() for key, program in lowered.items()}
    else:
        with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
            compiled = dict(zip(todo, pool.map(lambda k: lowered[k].compile(), todo),
                                strict=True))
    _loaded.update(compiled)


def programs(name: str) -> int:
    """How many of ``name``'s programs this process has loaded or exported (one per distinct
    key: a second fit with the same settings and shapes adds none)."""
    return sum(key.startswith(f"{name}-") for key in _loaded)


def _load_or_export(path: Path | None, fn: Callable, static: tuple, args: tuple) -> Any:
    """The exported program from ``path``, or exported now (and written to ``path``)."""
    from jax import export

    if path is not None:
        try:
            return export.deserialize(bytearray(path.read_bytes()))
        except Exception:  # missing, unreadable or corrupt: export it afresh
            pass
    treedef = jax.tree_util.tree_structure(args)

    def flat(*leaves):
        return jax.tree_util.tree_leaves(fn(*static, *jax.tree_util.tree_unflatten(treedef,
                                                                                   leaves)))

    exported = export.export(jax.jit(flat))(*jax.tree_util.tree_leaves(args))
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
    except (OSError, ImportError):
        pass  # read-only cache or no flatbuffers: this process still uses the exported program


__all__ = ["Program", "call", "directory", "enabled", "prepare", "program_key", "programs"]
