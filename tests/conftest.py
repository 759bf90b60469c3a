import os

import jax

# GP math runs in float64. The library never flips this global switch on import (that would
# silently change the user's other JAX code); the test session opts in, as users are told to.
jax.config.update("jax_enable_x64", True)

# CLI tests run the command in this process, and the command switches on JAX's persistent
# compilation cache for the rest of the session. Two full-suite runs then segfaulted inside
# jax's cache path (compiling and writing the sparse predictive in test_sparse_wiring), while
# the same test passes on its own. The suite runs without the persistent cache; the test of
# the workers' cache (test_parallel) sets its own folder.
os.environ.setdefault("AUTOGP_CACHE_DIR", "off")
