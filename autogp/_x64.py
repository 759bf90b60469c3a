"""Float64 for autogp's public entry points, without touching jax's global flag.

Gaussian-process linear algebra needs float64, but flipping ``jax_enable_x64`` on import would
silently change every other JAX program in the user's process. Instead each public entry point
(the :class:`autogp.AutoGP` methods, the command line) runs its JAX work inside
``jax.enable_x64(True)``, a context manager local to the calling thread::

    from autogp._x64 import x64, with_x64

    with x64():
        ...                      # jnp arrays default to float64 here

    @with_x64
    def fit(...): ...            # the whole call runs with float64 enabled

Nesting is fine; on exit the previous setting is restored.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import jax

P = ParamSpec("P")
R = TypeVar("R")


@contextlib.contextmanager
def x64() -> Iterator[None]:
    """Run the body with JAX's float64 mode enabled (restored on exit)."""
    with jax.enable_x64(True):
        yield


def with_x64(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run ``fn`` inside :func:`x64`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return wrapper


__all__ = ["with_x64", "x64"]
