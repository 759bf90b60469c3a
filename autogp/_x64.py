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

Where float64 runs: when JAX's default backend is not the CPU (a TPU has no float64 linear
algebra: solves and factorisations fail or crash there), the body also runs with the CPU as
JAX's default device (``jax.default_device``, as local as ``enable_x64``), and autogp says so
once per process. The processes autogp starts for a panel inherit ``JAX_PLATFORMS=cpu`` from
then on, so that they do not try to open an accelerator the calling process holds. Without a
CPU device (``JAX_PLATFORMS=tpu``) the work is refused with :class:`Float64Unavailable`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import jax

P = ParamSpec("P")
R = TypeVar("R")

_announced = False


class Float64Unavailable(RuntimeError):
    """JAX's default device cannot do float64 linear algebra and no CPU device is available."""


def float64_device() -> jax.Device | None:
    """The device autogp's float64 work runs on: ``None`` (JAX's default) when the default
    backend is the CPU, else the first CPU device."""
    backend = jax.default_backend()
    if backend == "cpu":
        return None
    try:
        return jax.devices("cpu")[0]
    except RuntimeError:
        raise Float64Unavailable(
            f"JAX's default backend is {backend}, which has no float64 linear algebra, and no "
            f"CPU device is available to JAX: allow it with JAX_PLATFORMS={backend},cpu (or "
            f"JAX_PLATFORMS=cpu)"
        ) from None


def float64_platform() -> str:
    """The platform autogp's programs are compiled and exported for: the CPU's when
    :func:`float64_device` moves them there, else JAX's default backend."""
    device = float64_device()
    return jax.default_backend() if device is None else device.platform


def _announce(device: jax.Device) -> None:
    global _announced
    if _announced:
        return
    _announced = True
    os.environ["JAX_PLATFORMS"] = "cpu"
    warnings.warn(
        f"JAX's default backend is {jax.default_backend()}, which has no float64 linear "
        f"algebra; autogp runs its float64 work on the CPU ({device})",
        RuntimeWarning,
        stacklevel=4,
    )


@contextlib.contextmanager
def x64() -> Iterator[None]:
    """Run the body with JAX's float64 mode enabled, on the CPU when JAX's default device is
    an accelerator (both restored on exit)."""
    device = float64_device()
    with jax.enable_x64(True):
        if device is None:
            yield
            return
        _announce(device)
        with jax.default_device(device):
            yield


def with_x64(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run ``fn`` inside :func:`x64`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with x64():
            return fn(*args, **kwargs)

    return wrapper


__all__ = ["Float64Unavailable", "float64_device", "float64_platform", "with_x64", "x64"]
