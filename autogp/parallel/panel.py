"""Fitting a panel: chunks of series on a backend, resumable, one error per bad series.

:func:`fit_panel` is what :meth:`autogp.AutoGP.fit` calls. It loads the series already finished
in a resume folder, cuts the others into chunks of similar length, runs the chunks on the
``local`` backend (this process, or ``smc.workers`` spawned processes) or on ``dask`` (a
``dask.distributed`` cluster), saves each finished chunk, and returns the fits and errors by
series id. Since each series' key comes from the seed and its id, a series gets the same fit
with any partitioning, number of workers or resume, and the same bits in this process, a pool
worker or a Dask worker (``autogp._xla``: autogp's programs are compiled with the workers'
single-threaded matrix products everywhere).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autogp.config import Config, ConfigError
from autogp.config.learned_prior import PANEL
from autogp.data import TimeSeries
from autogp.inference import exported
from autogp.inference.posterior import Posterior
from autogp.parallel.local import run_local
from autogp.parallel.panel_prior import learn_panel_prior
from autogp.parallel.progress import CompilePhase, SeriesProgress, progress_bar
from autogp.parallel.resume import ResumeStore
from autogp.parallel.work import (
    AfterFit,
    AfterFitResult,
    ChunkFits,
    SeriesError,
    chunk_series,
    error_message,
    fit_series,
    use_compilation_cache,
)

BACKENDS = ("local", "dask")


@dataclass
class PanelFit:
    """The outcome of :func:`fit_panel`: fits and error messages by series id, the ids
    loaded from the resume folder instead of being fitted, the seconds spent compiling
    (:func:`autogp.inference.exported.compile_seconds`; summed over worker processes, which
    compile at the same time) and the results of the ``after`` work by series id (missing
    for a series whose work raised)."""

    fits: dict[str, Posterior] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    compile_seconds: float = 0.0
    after: dict[str, AfterFitResult] = field(default_factory=dict)
    # The config the series were fitted under: grammar.prior = "panel" becomes the path of
    # the prior learned from the panel (None: the config given).
    config: Config | None = None


def resolve_workers(configured: int) -> int:
    """``smc.workers``, with 0 (the default) read as the number of cores this process may use."""
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def fit_panel(
    config: Config,
    all_series: Sequence[TimeSeries],
    *,
    panel: bool = True,
    backend: str | None = None,
    scheduler: str | None = None,
    client: Any = None,
    workers: int | None = None,
    resume: str | Path | None = None,
    on_chunk: Callable[[list[str]], None] | None = None,
    progress: bool = False,
    notes: bool | None = None,
    after: AfterFit | None = None,
    unit: str = "series",
) -> PanelFit:
    """Fit every series of ``all_series`` under ``config``.

    Args:
        backend: ``"local"`` or ``"dask"`` (default: ``"dask"`` when a ``client`` or
            ``scheduler`` is given here, else ``smc.backend``).
        scheduler: a Dask scheduler address (default ``smc.scheduler``; unset: a
            ``LocalCluster`` of ``workers`` workers for this call).
        client: a ``dask.distributed.Client`` to run on.
        workers: processes (local) or LocalCluster workers (dask); default ``smc.workers``.
        resume: a folder for finished chunks (see :mod:`autogp.parallel.resume`).
        on_chunk: called with the ids of each finished (and saved) chunk.
        progress: a progress bar on stderr: the series done, failed, the time spent and an
            estimate of the time left (:class:`~autogp.parallel.progress.SeriesProgress`; a
            plain line every few series where stderr is not a terminal).
        notes: show a first run's compilation as its own phase (:class:`CompilePhase`: in the
            bar, or as lines on stderr without one); default ``progress``.
        after: work done on each fit where it was made, right after it (a forecast: see
            :class:`~autogp.parallel.work.AfterFit`); the fits loaded from ``resume`` get it
            too, on the same workers. Results in :attr:`PanelFit.after`.
        unit: what the progress display counts (``"windows"`` for cross-validation).

    In a panel a series that fails is recorded in ``errors`` and the others are fitted; a
    single series' error is raised. Ctrl-C stops the run after saving nothing half-done.
    """
    if backend is None and (client is not None or scheduler is not None):
        backend = "dask"  # a client or a scheduler address given here means Dask
    backend = backend or config.smc.backend
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {list(BACKENDS)}, got {backend!r}",
                          key="smc.backend")
    scheduler = scheduler if scheduler is not None else config.smc.scheduler
    workers = resolve_workers(int(workers or config.smc.workers))
    if config.grammar.prior == PANEL:
        config = panel_prior_config(config, all_series, resume, lambda c, s, folder: fit_panel(
            c, s, backend=backend, scheduler=scheduler, client=client, workers=workers,
            resume=folder if resume is not None else None, progress=progress,
            notes=notes).fits)
    use_compilation_cache()  # only a machine's first fit compiles, from the API as from the CLI
    config_dict = config.to_dict()
    store = ResumeStore(resume, config, panel) if resume is not None else None
    inputs = {s.unique_id: s for s in all_series}
    out = PanelFit(config=config)
    if store is not None:
        out.fits = store.load(all_series)
        out.resumed = [s.unique_id for s in all_series if s.unique_id in out.fits]
    todo = [s for s in all_series if s.unique_id not in out.fits]
    # Loaded fits get the after-fit work where new fits get it, so a resumed run's results
    # come from the same kind of process as an uninterrupted run's.
    loaded = list(out.fits.values()) if after is not None else []

    started = time.perf_counter()
    with progress_bar(progress) as bar:
        phase = CompilePhase(bar, progress if notes is None else notes)
        overall = (SeriesProgress(bar, len(all_series), resumed=len(out.resumed), unit=unit)
                   if panel else None)

        def finish(results: list[Posterior | SeriesError]) -> None:
            out.compile_seconds += getattr(results, "compile_seconds", 0.0)
            out.after.update(getattr(results, "after", {}))
            if not results:
                return  # a chunk of loaded fits that only got the after-fit work
            fits = [r for r in results if isinstance(r, Posterior)]
            if store is not None:
                store.save(fits, inputs)
            for r in results:
                if isinstance(r, Posterior):
                    out.fits[r.unique_id] = r
                else:
                    out.errors[r.unique_id] = r.message
            if overall is not None:
                overall.advance(len(results), failed=len(results) - len(fits))
            if on_chunk is not None:
                on_chunk([r.unique_id for r in results])

        if not todo and not loaded:
            pass  # everything was loaded from the resume folder
        elif backend == "local" and min(workers, len(todo) + len(loaded)) <= 1:
            before = exported.compile_seconds()
            with exported.on_compiling(phase):
                _fit_here(todo, config, panel, bar, finish, after)
                for fit in loaded:
                    after.run_into(fit, config, out.after)  # type: ignore[union-attr]
            out.compile_seconds = exported.compile_seconds() - before
        else:
            if exported.cache_is_cold(exported.directory()):
                phase.in_workers(None if exported.directory() is None
                                 else exported.directory().parent)
            chunks: list[list[Any]] = chunk_series(todo, workers)
            size = max(1, min(8, len(loaded) // (4 * workers)))
            chunks += [loaded[i : i + size] for i in range(0, len(loaded), size)]
            if backend == "local":
                done = run_local(chunks, config_dict, panel=panel, workers=workers, after=after)
            else:
                done = _dask_runner()(chunks, config_dict, panel=panel, workers=workers,
                                      scheduler=scheduler, client=client, after=after)
            for _, results in done:
                finish(results)
        phase.finish(time.perf_counter() - started, out.compile_seconds)
    return out


def panel_prior_config(config: Config, all_series: Sequence[TimeSeries],
                       resume: str | Path | None, fit: Callable[..., Any]) -> Config:
    """``config`` with ``grammar.prior`` the path of the prior learned from ``all_series``
    (:func:`~autogp.parallel.panel_prior.learn_panel_prior`), kept in the resume folder (a
    resumed run reads it back) or, without one, in a new temporary folder."""
    folder = Path(resume) if resume is not None else Path(tempfile.mkdtemp(prefix="autogp_"))
    path = learn_panel_prior(config, all_series, folder=folder, fit=fit)
    return config.with_overrides({"grammar.prior": str(path.resolve())})


def _dask_runner() -> Callable[..., Any]:
    try:
        from autogp.parallel.dask_backend import run_dask
    except ImportError:
        raise ConfigError(
            "backend 'dask' needs dask.distributed: pip install 'autogp[dask]'", key="smc.backend"
        ) from None
    return run_dask


def _fit_here(
    todo: list[TimeSeries],
    config: Config,
    panel: bool,
    bar: Any,
    finish: Callable[[list[Posterior | SeriesError]], None],
    after: AfterFit | None = None,
) -> None:
    """Fit in this process, in panel order, with a bar for each series' SMC rounds; chunks
    of up to 8 series are handed to ``finish`` (and so saved) as they complete. ``after``:
    the work each fit is followed by."""
    size = max(1, min(8, len(todo) // 4))
    for start in range(0, len(todo), size):
        results = ChunkFits()
        for series in todo[start : start + size]:
            rounds = bar.add_task(f"{series.unique_id}: SMC rounds", total=None)

            def callback(done: int, total: int, task: Any = rounds) -> None:
                bar.update(task, completed=done, total=total)

            try:
                results.append(fit_series(series, config, panel=panel, callback=callback))
            except Exception as exc:
                if not panel:
                    raise
                results.append(SeriesError(series.unique_id, error_message(exc)))
            if after is not None and isinstance(results[-1], Posterior):
                after.run_into(results[-1], config, results.after)
            if panel:
                bar.remove_task(rounds)
        finish(results)


__all__ = ["BACKENDS", "PanelFit", "fit_panel", "resolve_workers"]
