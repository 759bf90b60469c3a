"""The first step of every worker process autogp starts, before the ``autogp`` package (and so
JAX) is imported there: a thread that ends the worker once the process that started it is gone.

A worker blocked waiting for its next task does not notice that the process that started it was
killed (SIGKILL from a batch scheduler or the out-of-memory killer: no cleanup runs), since it
holds its own copy of its task queue's pipe. The watch starts before the seconds a worker spends
importing JAX, so a worker killed in that time ends as promptly as one that is fitting.
"""

from __future__ import annotations

import os
import threading
import time

from autogp_launcher import quiet_xla_logs

#: How often a worker checks that the process that started it is alive.
WATCH_SECONDS = 1.0


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie that has not been reaped counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux): kill(0) said it exists


def exit_with(pid: int, *, every: float = WATCH_SECONDS) -> threading.Thread:
    """A daemon thread that ends this process (``os._exit``) once process ``pid`` is gone: it
    died, or this process was handed to another parent. Call it in a worker with the pid of
    the process that started the run."""

    def watch() -> None:
        direct = os.getppid() == pid
        # A child of ``pid`` watches its parent id (a dead parent's pid may be reused by then;
        # the new parent is init or a subreaper); a grandchild watches the pid itself.
        while os.getppid() == pid if direct else process_alive(pid):
            time.sleep(every)
        os._exit(70)  # EX_SOFTWARE: the run it worked for is gone, nothing to hand back

    thread = threading.Thread(target=watch, name="autogp-exit-with-parent", daemon=True)
    thread.start()
    return thread


def start_worker(parent: int) -> None:
    """A process pool's initializer: watch ``parent`` (:func:`exit_with`), then quiet XLA's
    logs (:func:`autogp.parallel.work.quiet_xla_logs`, which imports JAX)."""
    quiet_xla_logs()  # the variable, before JAX loads
    exit_with(parent)
    from autogp.parallel.work import quiet_xla_logs as quiet_absl_logs

    quiet_absl_logs()


__all__ = ["WATCH_SECONDS", "exit_with", "process_alive", "start_worker"]
