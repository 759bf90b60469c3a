import os
import tempfile

import jax

# GP math runs in float64. The library never flips this global switch on import (that would
# silently change the user's other JAX code); the test session opts in, as users are told to.
jax.config.update("jax_enable_x64", True)

# CLI tests run in this process and switch on JAX's persistent compilation cache. Give the
# session a cache folder of its own: sharing the user's ~/.cache/autogp/jax with a benchmark
# running at the same time crashed a cache write (a segfault inside jax's compilation cache).
if "AUTOGP_CACHE_DIR" not in os.environ:
    os.environ["AUTOGP_CACHE_DIR"] = tempfile.mkdtemp(prefix="autogp-test-cache-")
