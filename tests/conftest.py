import atexit
import os
import shutil
import tempfile

# The suite compiles hundreds of programs and runs each on toy data: XLA:CPU's backend (LLVM)
# optimisation is a large part of every compile and buys nothing at these sizes, and its
# fusion emitters compile the round programs more slowly than the classic elemental emitters.
# Neither changes a result. Single-threaded products for every program, not only autogp's
# (``autogp._xla``): the two test processes share two cores. (That flag does not stop
# jaxlib's batched LAPACK kernels from splitting a batch over XLA's intra-op pool, where two
# independent calls in one program can deadlock it; tests and scripts call LAPACK one matrix
# at a time through ``autogp.evaluator.linalg``, as autogp does.) Set before JAX starts its
# backend; autogp's worker processes and the scripts' subprocesses inherit them through the
# environment.
_FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false",
                 "--xla_cpu_multi_thread_eigen=false")
for _flag in _FAST_COMPILE:
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), _flag]))

# A developer's quick settings for scripts (autogp.config.SETTINGS_ENV) must not reach the tests.
os.environ.pop("AUTOGP_SET", None)

import jax  # noqa: E402
import pytest  # noqa: E402
from jax._src import compilation_cache  # noqa: E402

from autogp.inference import exported  # noqa: E402

# GP math runs in float64. The library never flips this global switch on import (that would
# silently change the user's other JAX code); the test session opts in, as users are told to.
jax.config.update("jax_enable_x64", True)

# Most of the suite's time is XLA compiling the same few programs again: after the caches are
# freed (below), in CLI runs and in worker processes. One persistent compilation cache for the
# whole session, in a fresh folder deleted at exit, turns those into loads; nothing is read
# from a user's cache. pytest-xdist's test processes and autogp's worker processes
# (test_parallel) inherit it through the environment; the process that made it deletes it.
SESSION_CACHE = os.environ.get("AUTOGP_TEST_SESSION_CACHE", "")
if not SESSION_CACHE:
    SESSION_CACHE = tempfile.mkdtemp(prefix="autogp-test-cache-")
    os.environ["AUTOGP_TEST_SESSION_CACHE"] = SESSION_CACHE
    atexit.register(shutil.rmtree, SESSION_CACHE, ignore_errors=True)
os.environ["AUTOGP_CACHE_DIR"] = SESSION_CACHE
os.environ["JAX_COMPILATION_CACHE_DIR"] = SESSION_CACHE
jax.config.update("jax_compilation_cache_dir", SESSION_CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


@pytest.fixture(autouse=True)
def session_cache_restored():
    """CLI tests run the command in this process, and the command points JAX's persistent
    cache at whatever folder the test set (some set a temporary folder, deleted after the
    test). Point it back at the session's folder after every test, so no test compiles into
    another test's folder."""
    yield
    if jax.config.jax_compilation_cache_dir != SESSION_CACHE:
        jax.config.update("jax_compilation_cache_dir", SESSION_CACHE)
        compilation_cache.reset_cache()


def _memory_mappings() -> int | None:
    """This process's memory mappings (Linux's ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


#: Free compiled programs once the process holds this many mappings: well under the kernel's
#: default limit of 65,530, with room for the mappings the largest test module adds.
FREE_ABOVE_MAPPINGS = 25_000


@pytest.fixture(autouse=True, scope="module")
def compiled_programs_freed_when_mappings_pile_up():
    """Every compiled XLA:CPU program keeps a few memory mappings alive, and the suite compiles
    thousands of them in one process: past the kernel's limit of 65,530 mappings
    (``vm.max_map_count``) XLA's compiler crashes in whichever test compiles next. After a
    module that leaves more than ``FREE_ABOVE_MAPPINGS`` (always, where the count cannot be
    read), the compiled programs are dropped: JAX's caches and the exported round programs
    (``autogp.inference.exported``), which are held outside them, so clearing JAX's caches
    alone is not enough. Freeing only when needed keeps the programs that later modules share."""
    yield
    mappings = _memory_mappings()
    if mappings is None or mappings > FREE_ABOVE_MAPPINGS:
        jax.clear_caches()
        exported.forget()
