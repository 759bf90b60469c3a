"""Starting worker processes that never run the user's script again.

Python's ``spawn`` start method (multiprocessing's, and so ``dask.distributed``'s) imports the
parent's ``__main__`` module in every new process, so that functions defined there can be
unpickled. For a plain script without an ``if __name__ == "__main__":`` guard (how nearly every
forecasting script is written) that runs the whole script again in each worker: duplicate
output, then multiprocessing's "bootstrapping phase" RuntimeError. autogp's workers only run
autogp's own functions, so they never need the user's ``__main__``: :func:`main_module_hidden`
starts them with it out of sight.

That the workers do not outlive the run is their own first step (:mod:`autogp_launcher.worker`,
outside the package so that it runs before JAX is imported there).
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator


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


__all__ = ["main_module_hidden"]
