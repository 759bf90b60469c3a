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


@pytest.fixture(autouse=True, scope="module")
def compiled_programs_freed_after_each_module():
    """Every compiled XLA:CPU program keeps a few memory mappings alive, and the suite compiles
    thousands of them in one process. Full runs segfaulted inside XLA's compiler at about 91%,
    in whichever test compiled next (test_sparse_wiring four times, test_sparse once, even a
    plain broadcast), which fits running into the kernel's limit of 65,530 mappings
    (``vm.max_map_count``). Dropping the compiled programs after each module keeps the count
    bounded; a test module that wants to see no recompilation still sees its own cache.
    The exported round programs (``autogp.inference.exported``) are held outside JAX's caches:
    without ``exported.forget()`` the count still reached 36,000 after four SMC modules."""
    yield
    jax.clear_caches()
    exported.forget()
