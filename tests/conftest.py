import os

import jax
import pytest
from jax._src import compilation_cache

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
    test compiles into another test's folder. (This did not stop the XLA segfault in
    test_sparse_wiring described below; its cause is still open.)"""
    yield
    if jax.config.jax_compilation_cache_dir is not None:
        jax.config.update("jax_compilation_cache_dir", None)
        compilation_cache.reset_cache()


def pytest_collection_modifyitems(config, items):
    """Run test_sparse_wiring first. In full runs its first compilation of the sparse
    predictive segfaulted inside XLA (four runs on 2026-12-01, always there, whichever cache
    settings), while the file passes on its own; the cause is still open. Until it is found,
    the file runs before any other test has touched the process."""
    first = [item for item in items if item.nodeid.startswith("tests/test_sparse_wiring.py")]
    rest = [item for item in items if not item.nodeid.startswith("tests/test_sparse_wiring.py")]
    items[:] = first + rest
