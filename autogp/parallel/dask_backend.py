"""The ``dask`` backend: a panel's chunks as tasks on a ``dask.distributed`` cluster.

One task per chunk of series. Without a scheduler address (and no client) a ``LocalCluster``
of ``workers`` single-threaded worker processes is started for the run and closed after it.
Every worker runs XLA single-threaded and keeps its own JAX compilation cache
(:class:`AutoGPWorkerSetup`). A task whose worker dies is rerun elsewhere by the scheduler and a
task that raises is retried (``retries``); results are collected by chunk, so no series is lost
or counted twice.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dask.config
import distributed
from distributed.diagnostics.plugin import WorkerPlugin

from autogp.config import ConfigError
from autogp.data import TimeSeries
from autogp.parallel.spawning import main_module_hidden
from autogp.parallel.work import (
    AfterFit,
    chunk_ids,
    compilation_cache_root,
    fit_chunk,
    quiet_xla_logs,
    single_thread_env,
)


def worker_cache_dir(worker_name: str) -> Path | None:
    """The JAX compilation cache of one worker: ``$AUTOGP_CACHE_DIR`` (default
    ``~/.cache/autogp/jax``) / ``dask-worker-<name>``; None when the cache is off."""
    base = compilation_cache_root()
    if base is None:
        return None
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(worker_name)).strip("_") or "worker"
    return Path(base) / f"dask-worker-{safe}"


class AutoGPWorkerSetup(WorkerPlugin):
    """A Dask worker plugin: single-threaded XLA and a JAX compilation cache, per worker
    (:func:`worker_cache_dir`: workers may run on other machines, with other processors,
    over one shared home) or, with ``shared``, this machine's own
    (:func:`~autogp.parallel.work.compilation_cache_root`, as the process pool's workers and
    the calling process use: the workers of a ``LocalCluster`` autogp starts here then load
    what was compiled here before).

    Runs when a worker joins (or when registered), before autogp's first computation there;
    the environment variables take effect when JAX starts its CPU backend in that process.
    """

    name = "autogp-worker-setup"

    def __init__(self, shared: bool = False) -> None:
        self.shared = shared

    def setup(self, worker: Any) -> None:
        os.environ.update(single_thread_env())
        quiet_xla_logs()
        root = compilation_cache_root()
        where = worker_cache_dir(worker.name) if not self.shared or root is None else Path(root)
        if where is None:
            return
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError:
            return  # read-only home: run without the cache
        import jax

        jax.config.update("jax_compilation_cache_dir", str(where))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


# Dask's housekeeping timers, slowed down for the LocalCluster autogp starts. With every core
# busy fitting, each wake-up of a worker's event loop (a 20 ms health tick, a 10 ms profiler
# sample) must take the GIL from the task thread and wait for a free core to run: measured on
# 100 M3 series with 2 workers on 2 cores, the defaults cost 15% over the process pool, these
# settings 8% (scripts/bench_panel.py). A cluster the user starts keeps its own settings.
QUIET_WORKERS = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
}


def start_local_cluster(workers: int) -> Any:
    """A ``LocalCluster`` of ``workers`` single-threaded worker processes (XLA single-threaded
    from the start through the workers' environment) with quiet housekeeping
    (:data:`QUIET_WORKERS`; the nannies hand the settings in force to their workers). The
    processes do not import the caller's ``__main__`` (an unguarded script is not run again:
    :func:`~autogp.parallel.spawning.main_module_hidden`), and each ends when the process that
    started it dies (``distributed`` gives every process it starts a pipe from its parent)."""
    with dask.config.set(QUIET_WORKERS), main_module_hidden():
        return distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            env=single_thread_env(),
            dashboard_address=":0",  # any free port: clusters may run side by side
            silence_logs=logging.ERROR,
        )


def run_dask(
    chunks: Sequence[Sequence[TimeSeries]],
    config: Mapping[str, Any],
    *,
    panel: bool,
    workers: int,
    scheduler: str | None = None,
    client: Any = None,
    retries: int = 3,
    after: AfterFit | None = None,
) -> Iterator[tuple[int, list[Any]]]:
    """Run :func:`~autogp.parallel.work.fit_chunk` for every chunk on a Dask cluster and yield
    ``(chunk index, results)`` as chunks finish (``after``: the work each fit is followed by;
    each task carries its own series' part of it).

    ``client``: a ``dask.distributed.Client`` to use (left open); otherwise one is made for
    ``scheduler`` (an address such as ``tcp://host:8786``) or for a new ``LocalCluster`` of
    ``workers`` workers, and closed at the end. Stopping early cancels the chunks not done.
    """
    own: list[Any] = []
    here = False  # a LocalCluster of this call's: its workers share this machine's cache
    try:
        if client is None:
            if scheduler:
                try:
                    client = distributed.Client(scheduler, timeout="30s")
                except OSError as exc:
                    raise ConfigError(
                        f"cannot reach the Dask scheduler at {scheduler!r} ({exc})",
                        key="smc.scheduler",
                    ) from None
            else:
                cluster = start_local_cluster(workers)
                own.append(cluster)
                here = True
                client = distributed.Client(cluster)
            own.insert(0, client)
        client.register_plugin(AutoGPWorkerSetup(shared=here), name=AutoGPWorkerSetup.name)
        run = uuid.uuid4().hex[:12]
        extra = ([] if after is None else [after.of(chunk_ids(c))] for c in chunks)
        futures = {
            client.submit(fit_chunk, list(chunk), dict(config), panel, *more, retries=retries,
                          key=f"autogp-chunk-{run}-{i}", pure=False): i
            for i, (chunk, more) in enumerate(zip(chunks, extra, strict=True))
        }
        try:
            for future in distributed.as_completed(list(futures)):
                yield futures[future], future.result()
                future.release()
        finally:
            client.cancel(list(futures))
    finally:
        for thing in own:
            thing.close()


__all__ = [
    "QUIET_WORKERS", "AutoGPWorkerSetup", "run_dask", "start_local_cluster", "worker_cache_dir",
]
