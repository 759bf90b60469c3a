"""Starting worker processes that neither run the user's script again nor outlive the run.

Python's ``spawn`` start method (multiprocessing's, and so ``dask.distributed``'s) imports the
parent's ``__main__`` module in every new process, so that functions defined there can be
unpickled. For a plain script without an ``if __name__ == "__main__":`` guard (how nearly every
forecasting script is written) that runs the whole script again in each worker: duplicate
output, then multiprocessing's "bootstrapping phase" RuntimeError. autogp's workers only run
autogp's own functions, so they never need the user's ``__main__``: :func:`main_module_hidden`
starts them with it out of sight.

A worker blocked waiting for its next task does not notice that the process that started it
was killed (SIGKILL from a batch scheduler or the out-of-memory killer: no cleanup runs), since
it holds its own copy of its task queue's pipe. :func:`exit_with` gives each worker a thread
that ends it within :data:`WATCH_SECONDS` of that process's death.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import types
from collections.abc import Iterator

#: How often a worker checks that the process that started it is alive.
WATCH_SECONDS = 1.0


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Processes spawned inside this block do not import the caller's ``__main__``.

    ``multiprocessing.spawn`` tells a new process to run the parent's main module (by path,
    or by name under ``python -m``) when ``sys.modules["__main__"]`` has a ``__file__`` or a
    ``__spec__``; a bare stand-in module has neither. Only the ``sys.modules`` entry changes:
    the script's own globals (``__file__`` included) are untouched, and the entry is restored
    on exit. Interactive sessions (no file) are left as they are.
    """
    main = sys.modules.get("__main__")
    if main is None or not (getattr(main, "__file__", None)
                            or getattr(getattr(main, "__spec__", None), "name", None)):
        yield
        return
    stand_in = types.ModuleType("__main__")
    sys.modules["__main__"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("__main__") is stand_in:
            sys.modules["__main__"] = main


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


__all__ = ["WATCH_SECONDS", "exit_with", "main_module_hidden", "process_alive"]
