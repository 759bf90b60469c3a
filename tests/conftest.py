import os

import jax
import pytest
from jax._src import compilation_cache

from autogp.inference import exported

# GP math runs in float64. The library never flips this global switch on import (that would
# silently change the user's other JAX code); the test session opts in, as users are told to.
jax.config.update("jax_enable_x64", True)

# The suite runs without JAX's persistent compilation cache; the test of the workers' cache
# (test_parallel) sets its own folder for the worker processes.
os.environ.setdefault("AUTOGP_CACHE_DIR", "off")


@pytest.fixture(autouse=True)
def no_persistent_cache_left_behind():
    """CLI tests run the command in this process, and the command switches on JAX's persistent
    cache for the whole process, in whatever folder the test set (test_parallel's is a
    temporary folder, deleted after its module). Switch it off again after every test, so no
    test compiles into another test's folder. (This alone did not stop the XLA
    segfault; see the next fixture.)"""
    yield
    if jax.config.jax_compilation_cache_dir is not None:
        jax.config.update("jax_compilation_cache_dir", None)
        compilation_cache.reset_cache()


def _memory_mappings() -> int | None:
    """This process's memory mappings (Linux's ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


#: Free compiled programs once the process holds this many mappings: well under the kernel's
#: default limit of 65,530, with room for the largest module (test_smc adds about 24,000).
FREE_ABOVE_MAPPINGS = 25_000


@pytest.fixture(autouse=True, scope="module")
def compiled_programs_freed_when_mappings_pile_up():
    """Every compiled XLA:CPU program keeps a few memory mappings alive, and the suite compiles
    thousands of them in one process. Full runs segfaulted inside XLA's compiler at about 91%,
    in whichever test compiled next (test_sparse_wiring four times, test_sparse once, even a
    plain broadcast), which fits running into the kernel's limit of 65,530 mappings
    (``vm.max_map_count``). After a module that leaves more than ``FREE_ABOVE_MAPPINGS``
    (always, where the count cannot be read), the compiled programs are dropped: JAX's caches
    and the exported round programs (``autogp.inference.exported``), which are held outside
    them (with only ``jax.clear_caches()`` after every module the count still reached 36,000
    after four SMC modules and the suite segfaulted at 92%). Freeing only when needed keeps the
    programs that later modules share, which freeing after every module recompiled."""
    yield
    mappings = _memory_mappings()
    if mappings is None or mappings > FREE_ABOVE_MAPPINGS:
        jax.clear_caches()
        exported.forget()
