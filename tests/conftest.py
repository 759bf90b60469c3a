import jax

# GP math runs in float64. The library never flips this global switch on import (that would
# silently change the user's other JAX code); the test session opts in, as users are told to.
jax.config.update("jax_enable_x64", True)
