"""XLA:CPU compile options of every autogp program: the same bits in every process.

Panel workers run with ``--xla_cpu_multi_thread_eigen=false`` for their whole process (one
series per core scales better than two threads on one series), and that flag changes the code
XLA:CPU emits for matrix products, so their last digits differ from those of the same program
compiled with XLA's default. An SMC fit does not forgive that: resampling and the structure
moves' accept/reject decisions turn a last-digit difference into a different set of particles
and a different forecast (``benchmarks/choose_defaults/m3_other_training/README.md``).
autogp's programs are therefore compiled with the single-threaded products everywhere, as a
per-program option: the user's own JAX programs keep XLA's defaults, and a fit gives the same
bits in the calling process as in a panel worker or a Dask worker.

Only top-level programs carry the option (JAX refuses it on a ``jit`` nested in another), so
functions that run inside other programs, such as the state-space likelihood inside the
full-resolution stage's optimiser, keep plain ``jax.jit``; the program around them sets it.

``AUTOGP_MULTI_THREAD_EIGEN=1`` compiles them with XLA's default (multi-threaded) products
instead, set explicitly so that the comparison holds whatever the process's ``XLA_FLAGS`` say
(read when autogp's modules are imported and when a fit's programs are compiled).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import jax

ENV_MULTI_THREAD = "AUTOGP_MULTI_THREAD_EIGEN"


def compiler_options() -> dict[str, Any]:
    """The XLA compile options of autogp's programs (``jax.jit(..., compiler_options=...)``,
    ``Lowered.compile(compiler_options=...)``)."""
    return {"xla_cpu_multi_thread_eigen": os.environ.get(ENV_MULTI_THREAD, "") == "1"}


def jit(fun: Callable | None = None, **kwargs: Any) -> Any:
    """``jax.jit`` with :func:`compiler_options`, as a decorator (with or without arguments)."""
    if fun is None:
        return functools.partial(jit, **kwargs)
    return jax.jit(fun, compiler_options=compiler_options(), **kwargs)


__all__ = ["ENV_MULTI_THREAD", "compiler_options", "jit"]
