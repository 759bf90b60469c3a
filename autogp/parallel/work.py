"""The unit of work of a panel fit: one series and the settings in, its fit (or its error) out.

Everything here is a pure, picklable, module-level function, so any backend (a process pool, a
Dask cluster) can run it anywhere: a series' random key comes from the seed and its id only, so
its fit does not depend on how the panel is partitioned, in which order or on which machine.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

from autogp._x64 import x64
from autogp.config import Config, load_config
from autogp.data import DataError, TimeSeries
from autogp.inference import exported
from autogp.inference.posterior import Posterior
from autogp.pipeline.fitting import fit_series_posterior


def compilation_cache_root() -> str | None:
    """Where autogp keeps JAX's persistent compilation cache: ``$AUTOGP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/autogp/jax`` (``~/.cache/autogp/jax``); None when ``AUTOGP_CACHE_DIR`` is
    ``off``, ``0``, ``none`` or empty."""
    where = os.environ.get("AUTOGP_CACHE_DIR")
    if where is not None and where.lower() in ("off", "0", "none", ""):
        return None
    if where is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        where = os.path.join(base, "autogp", "jax")
    return where


def enable_compilation_cache() -> Path | None:
    """Keep compiled programs on disk between runs (JAX's persistent cache); the folder, or None
    where the cache is off or cannot be made.

    A fit's programs depend only on the settings and the padded data length, so a second process
    with the same settings loads them instead of compiling them again (about a minute on 2
    cores). The folder is :func:`compilation_cache_root`. Spawned panel workers inherit it
    through the environment (``JAX_COMPILATION_CACHE_DIR``).
    """
    where = compilation_cache_root()
    if where is None:
        return None
    try:
        os.makedirs(where, exist_ok=True)
    except OSError:
        return None  # read-only home: run without the cache
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", where)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1")
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update(
        "jax_persistent_cache_min_compile_time_secs",
        float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]),
    )
    return Path(where)


def use_compilation_cache() -> Path | None:
    """The persistent compilation cache a fit in this process uses: the one JAX is already
    given (by the user, the command line or a test session), else autogp's own
    (:func:`enable_compilation_cache`), so that only a machine's first fit compiles."""
    where = jax.config.jax_compilation_cache_dir
    if where:
        return Path(where)
    return enable_compilation_cache()


# BLAS and XLA's Eigen operations run single-threaded in each worker: the compiled SMC round is
# a chain of small dependent computations that one core runs about as fast as two, so a panel
# scales by fitting different series at once, one per core. (XLA's own thread pool still has
# one thread per core; no flag sets its size.)
SINGLE_THREAD_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
}

#: XLA's C++ log messages below FATAL stay off the terminal in processes autogp starts or owns
#: (the command line, panel workers): on a loaded machine a compile over two minutes prints a
#: ``slow_operation_alarm`` block ("Very slow compile? If you want to file a bug ...") at ERROR
#: level, which reads as a failure. Real errors still reach the user as Python exceptions. Read
#: by XLA when its backend starts (and by absl's logging when it first logs), so it must be set
#: before then; a value the user set is kept.
QUIET_XLA_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def quiet_xla_logs(environ: MutableMapping[str, str] | None = None) -> None:
    """Add :data:`QUIET_XLA_ENV` to ``environ`` (default ``os.environ``) where not set; in this
    process, also set the same level on absl's logging, which XLA's slow-compile alarm writes
    through and which the variable (read by XLA's other logging) does not reach."""
    here = environ is None
    environ = os.environ if environ is None else environ
    for name, value in QUIET_XLA_ENV.items():
        environ.setdefault(name, value)
    level = environ.get("TF_CPP_MIN_LOG_LEVEL", "")
    if here and level.isdigit():
        try:
            from jaxlib import utils as jaxlib_utils

            jaxlib_utils.absl_set_min_log_level(min(int(level), 3))
        except (ImportError, AttributeError):  # another jaxlib: its alarms are not hidden
            pass


def single_thread_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """:data:`SINGLE_THREAD_ENV` and :data:`QUIET_XLA_ENV` for a worker started from
    ``environ`` (default ``os.environ``; a log level set there is kept): XLA flags already
    set there are kept and the single-thread flag is added to them, so a caller's own flags
    (device count, dumps, optimisation level) reach the workers too."""
    environ = os.environ if environ is None else environ
    env = dict(SINGLE_THREAD_ENV)
    for name, value in QUIET_XLA_ENV.items():
        env[name] = environ.get(name, value)
    flags = environ.get("XLA_FLAGS", "").split()
    wanted = SINGLE_THREAD_ENV["XLA_FLAGS"]
    name = wanted.split("=")[0]
    env["XLA_FLAGS"] = " ".join([f for f in flags if f.split("=")[0] != name] + [wanted])
    return env


@dataclass(frozen=True)
class SeriesError:
    """A series of a panel that could not be fitted, and why."""

    unique_id: str
    message: str


def _as_config(config: Config | Mapping[str, Any]) -> Config:
    return config if isinstance(config, Config) else load_config(dict(config))


def error_message(exc: Exception) -> str:
    """One line: the message of a data error, or the exception's type and message."""
    text = str(exc).strip().replace("\n", " ")
    return text if isinstance(exc, DataError) else f"{type(exc).__name__}: {text}"


def fit_series(
    series: TimeSeries,
    config: Config | Mapping[str, Any],
    *,
    panel: bool = True,
    callback: Callable[[int, int], None] | None = None,
) -> Posterior:
    """The particle posterior of one series (key: the seed and, in a panel, the series id)."""
    with x64():
        return fit_series_posterior(series, _as_config(config), panel=panel, callback=callback)


@dataclass(frozen=True)
class AfterFitResult:
    """What :class:`AfterFit` gave for one series where it ran, and the warnings it raised
    there (category and text), to be raised again where the result is used."""

    value: Any
    warnings: tuple[tuple[type[Warning], str], ...] = ()

    def result(self) -> Any:
        """The value, after raising this process's copy of the warnings that came with it."""
        for category, text in self.warnings:
            warnings.warn(text, category, stacklevel=2)
        return self.value


@dataclass(frozen=True)
class AfterFit:
    """Work on each series' fit done where the fit was made, right after it, and sent back
    with it: a forecast whose horizon is known before fitting, its scores. A panel's workers
    then share that work, instead of leaving it to the calling process after the fit.

    ``fn(fit, config, extra)`` must be a picklable module-level function (or object) whose
    result pickles; ``extra`` is the series' entry of ``per_series`` (None without one). A
    call that raises gives no result for its series: the caller does that series' work itself
    and meets the error there, where it is reported as if nothing had run elsewhere.
    """

    fn: Callable[[Posterior, Config, Any], Any]
    per_series: Mapping[str, Any] = field(default_factory=dict)

    def of(self, ids: Iterable[str]) -> AfterFit:
        """The same work with only the entries of ``ids`` (what one chunk's task carries)."""
        return AfterFit(self.fn, {u: self.per_series[u] for u in ids if u in self.per_series})

    def run(self, fit: Posterior, config: Config) -> AfterFitResult | None:
        """``fn`` on one fit (in float64), with its warnings; None when it raises."""
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                with x64():
                    value = self.fn(fit, config, self.per_series.get(fit.unique_id))
            except Exception:  # noqa: BLE001 - the caller redoes it and meets the error
                return None
        return AfterFitResult(value, tuple((w.category, str(w.message)) for w in seen))

    def run_into(self, fit: Posterior, config: Config,
                 results: MutableMapping[str, AfterFitResult]) -> None:
        """:meth:`run` on one fit, its result kept in ``results`` by series id (none kept
        when it raised)."""
        done = self.run(fit, config)
        if done is not None:
            results[fit.unique_id] = done


class ChunkFits(list):
    """The fits (and errors) of a chunk, in its order, the seconds the worker spent compiling
    for them (``compile_seconds``) and the results of :class:`AfterFit` by series id
    (``after``)."""

    compile_seconds: float = 0.0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.after: dict[str, AfterFitResult] = {}


def fit_chunk(
    chunk: Sequence[TimeSeries | Posterior],
    config: Mapping[str, Any],
    panel: bool = True,
    after: AfterFit | None = None,
) -> ChunkFits:
    """Fit ``chunk`` one series after another; a series that fails gives a :class:`SeriesError`
    (its id and the message) and the others are still fitted. With ``after``, each fit is
    followed by that work (:class:`AfterFit`); a fit in the chunk (one loaded from a resume
    folder) only gets that work and is not returned among the fits."""
    cfg = _as_config(config)
    out = ChunkFits()
    before = exported.compile_seconds()
    for item in chunk:
        fit: Posterior | None = item if isinstance(item, Posterior) else None
        if fit is None:
            try:
                fit = fit_series(item, cfg, panel=panel)
                out.append(fit)
            except Exception as exc:  # noqa: BLE001 - one bad series must not stop the panel
                out.append(SeriesError(item.unique_id, error_message(exc)))
        if fit is not None and after is not None:
            after.run_into(fit, cfg, out.after)
    out.compile_seconds = exported.compile_seconds() - before
    return out


def chunk_ids(chunk: Iterable[TimeSeries | Posterior]) -> list[str]:
    """The series ids of a chunk of series (or of fits)."""
    return [item.unique_id for item in chunk]


def chunk_series(series: Sequence[TimeSeries], workers: int) -> list[list[TimeSeries]]:
    """Chunks of series of similar length (so a worker reuses its compiled programs), small
    enough that all workers stay busy to the end (about four chunks per worker, at most 8
    series each). Which chunk a series lands in never changes its fit.

    The chunks come in the order they should be handed out: the longest first, then the
    shortest, the second longest, the second shortest, ... Long chunks then start early
    instead of running alone at the end. Work still does not grow evenly with the series
    done: on M3 the first half in this order (the longest and the shortest quarters) is about
    40% of the work, the cost of a fit growing about as the square of its padded length."""
    if not series:
        return []
    size = max(1, min(8, len(series) // (4 * max(1, workers))))
    ordered = sorted(series, key=lambda s: s.n)  # stable: ties keep the panel order
    by_length = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    out = []
    lo, hi = 0, len(by_length) - 1
    while lo <= hi:
        out.append(by_length[hi])
        if lo < hi:
            out.append(by_length[lo])
        lo, hi = lo + 1, hi - 1
    return out


__all__ = [
    "AfterFit",
    "AfterFitResult",
    "QUIET_XLA_ENV",
    "SINGLE_THREAD_ENV",
    "ChunkFits",
    "quiet_xla_logs",
    "single_thread_env",
    "SeriesError",
    "chunk_ids",
    "chunk_series",
    "error_message",
    "fit_chunk",
    "fit_series",
]
