"""The ``local`` backend: a panel's chunks in spawned processes of this machine."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from autogp.data import TimeSeries
from autogp.inference.posterior import Posterior
from autogp.parallel.spawning import main_module_hidden
from autogp.parallel.work import AfterFit, chunk_ids, fit_chunk, single_thread_env
from autogp_launcher.worker import start_worker


def map_chunks(
    fn: Callable[..., Any], chunks: Sequence[Any], *args: Any, workers: int
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(chunk, *args)`` for every chunk in ``workers`` spawned processes (single-threaded
    XLA each) and yield ``(chunk index, result)`` as chunks finish; ``fn`` and its arguments
    must be picklable.

    The workers never import the caller's ``__main__`` (an unguarded script is not run again
    in them: :func:`~autogp.parallel.spawning.main_module_hidden`) and each ends itself
    within seconds of this process's death (:func:`autogp_launcher.worker.start_worker`).
    If the caller stops early (an error, Ctrl-C), chunks not started are cancelled and the
    worker processes are ended, so only the chunks in flight are lost.
    """
    worker_env = single_thread_env()
    saved = {k: os.environ.get(k) for k in worker_env}
    os.environ.update(worker_env)  # inherited by the spawned workers
    before = set(multiprocessing.active_children())
    context = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context,
                                                  initializer=start_worker,
                                                  initargs=(os.getpid(),))
    finished = False
    try:
        with main_module_hidden():  # the pool starts its processes as tasks are submitted
            pending = {pool.submit(fn, chunk, *args): i for i, chunk in enumerate(chunks)}
        for done in concurrent.futures.as_completed(pending):
            yield pending[done], done.result()
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            pool.shutdown(wait=False, cancel_futures=True)
            for child in set(multiprocessing.active_children()) - before:
                child.terminate()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_local(
    chunks: Sequence[Sequence[TimeSeries | Posterior]],
    config: Mapping[str, Any],
    *,
    panel: bool,
    workers: int,
    after: AfterFit | None = None,
) -> Iterator[tuple[int, list[Any]]]:
    """Run :func:`~autogp.parallel.work.fit_chunk` for every chunk in ``workers`` spawned processes
    (:func:`map_chunks`) and yield ``(chunk index, results)`` as chunks finish; ``after``: the
    work each fit is followed by (each task carries its own series' part of it)."""
    tasks = [(list(c), None if after is None else after.of(chunk_ids(c))) for c in chunks]
    yield from map_chunks(_fit_task, tasks, dict(config), panel, workers=workers)


def _fit_task(task: tuple[list[TimeSeries | Posterior], AfterFit | None],
              config: Mapping[str, Any], panel: bool) -> list[Any]:
    chunk, after = task
    return fit_chunk(chunk, config, panel, after)


__all__ = ["map_chunks", "run_local"]
