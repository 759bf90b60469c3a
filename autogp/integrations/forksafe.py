"""JAX work in a forked process: a fresh helper process does it.

statsforecast's ``n_jobs > 1`` runs its models in ``multiprocessing.Pool`` and
``concurrent.futures.ProcessPoolExecutor`` workers, which fork on Linux (Python's default start
method there before 3.14). A forked child copies its parent's memory but has only the thread
that forked: when the parent's JAX runtime was running, the child inherits XLA's thread pools
and locks without the threads behind them, and its first JAX call can wait forever (JAX warns
"os.fork() was called ... this will likely lead to a deadlock").

:func:`call` runs a function in this process, unless this process was forked from one that
had imported this module (autogp, and so JAX, was loaded there): then it runs it in this
process's helper, a new interpreter started by ``subprocess`` (fork and exec: none of this
process's JAX state is used) on the first such call and kept for the next ones, so a pool worker
starts one helper however many series it is given. The helper imports autogp afresh and loads
its compiled programs from the persistent compilation cache; it runs the same code on the same
arguments, so it gives the bits this process would. JAX has no public way to ask whether its
runtime had started in the parent, so every such forked child uses a helper: a start of a
few seconds per worker, against a hang.

The helper reads pickled ``(function, args, kwargs)`` requests on its stdin and writes pickled
replies on its original stdout (its ``print`` output goes to stderr); an exception raised there
is raised here, with the helper's traceback as a note. It ends when its stdin closes (this
process ended, however) or within a second of this process's death.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO, Any, TypeVar

R = TypeVar("R")

#: How often a helper checks that the process that started it is alive.
WATCH_SECONDS = 1.0
#: JAX settings of this process that its helper is started with (as JAX's environment
#: variables), so that the helper runs JAX as this process would.
JAX_SETTINGS = ("jax_enable_x64", "jax_platforms", "jax_compilation_cache_dir",
                "jax_persistent_cache_min_compile_time_secs")

_forked = False
_helper: Helper | None = None
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _forked, _helper, _lock
    _forked = True
    _helper = None  # the parent's helper (if any) answers the parent, not this process
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked() -> bool:
    """Whether this process was forked from one that had imported this module."""
    return _forked


def call(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)``, in this process or, in a forked one (:func:`forked`), in its
    helper process. ``fn`` must be importable by name (a module-level function) and its
    arguments and result picklable."""
    if not _forked:
        return fn(*args, **kwargs)
    global _helper
    with _lock:
        if _helper is None or not _helper.alive():
            _helper = Helper()
        return _helper.run(fn, args, kwargs)


def helper_environment() -> dict[str, str]:
    """The helper's environment: this process's, single-threaded BLAS and XLA products as in
    autogp's panel workers (:func:`autogp.parallel.work.single_thread_env`), and this
    process's :data:`JAX_SETTINGS`."""
    import jax

    from autogp.parallel.work import single_thread_env

    env = dict(os.environ)
    env.update(single_thread_env(os.environ))
    for name in JAX_SETTINGS:
        value = getattr(jax.config, name, None)
        if value is not None and value != "":
            env[name.upper()] = str(value)
    return env


class Helper:
    """A fresh interpreter that runs :func:`call`'s functions for this process (:func:`serve`)."""

    def __init__(self) -> None:
        code = (
            "import os, sys\n"
            "replies = os.fdopen(os.dup(1), 'wb')\n"
            "os.dup2(2, 1)\n"
            f"sys.path[:0] = {[p for p in sys.path if isinstance(p, str)]!r}\n"
            "from autogp.integrations.forksafe import serve\n"
            f"serve(sys.stdin.buffer, replies, parent={os.getpid()})\n"
        )
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=helper_environment())

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        """``fn(*args, **kwargs)`` in the helper: its result, or its exception raised here."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            pickle.dump((fn, args, kwargs), self.process.stdin, pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
            reply = pickle.load(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.process.wait()
            raise RuntimeError(f"autogp's helper process (pid {self.process.pid}) ended with "
                               f"exit code {code} while running {fn.__qualname__}") from None
        ok, value, where = reply
        if ok:
            return value
        value.add_note(f"raised in autogp's helper process (pid {self.process.pid}):\n{where}")
        raise value


def serve(requests: IO[bytes], replies: IO[bytes], parent: int | None = None) -> None:
    """The helper's loop: run each pickled ``(fn, args, kwargs)`` of ``requests`` and write
    ``(True, result, "")`` or ``(False, exception, traceback)`` to ``replies``, until
    ``requests`` closes; with ``parent``, end this process within :data:`WATCH_SECONDS` of
    that process's death."""
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True,
                         name="autogp-helper-exit-with-parent").start()
    while True:
        try:
            fn, args, kwargs = pickle.load(requests)
        except EOFError:
            return
        try:
            reply = (True, fn(*args, **kwargs), "")
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, exc, traceback.format_exc())
        try:
            data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
            text = reply[2] or f"{type(exc).__name__}: {exc}"
            data = pickle.dumps((False, RuntimeError(text.strip().splitlines()[-1]), text))
        replies.write(data)
        replies.flush()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(70)  # EX_SOFTWARE: the process it worked for is gone


__all__ = ["JAX_SETTINGS", "WATCH_SECONDS", "Helper", "call", "forked", "helper_environment",
           "serve"]
