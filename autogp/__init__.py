"""autogp: automatic covariance-structure discovery and forecasting for time series.

The public API is what this module re-exports::

    import autogp

    model = autogp.AutoGP(particles=16, seed=0).fit(df)   # df: ds, y (optional unique_id)
    forecast = model.predict(18, level=[80, 95])
    print(model.explain())
    model.save("model.autogp")
    same = autogp.load("model.autogp")

plus ``read_csv`` (data loading), ``load_config`` (TOML configuration) and ``parse``/``to_text``
(kernel expressions). GP computations run in float64 inside each call; importing autogp
changes no JAX configuration flag. It does change one thing for the whole process: it registers
a CPU lowering of JAX's Threefry hash (``jax.extend.random.threefry2x32_p``) that computes the
same bits and compiles faster, so CPU programs lowered afterwards, the user's own included,
draw the same random numbers with a different compile time (``autogp._threefry`` says why).
"""

from autogp._threefry import install as install_threefry_lowering
from autogp.config import load_config
from autogp.data import read_csv
from autogp.forecast import AutoGP, load
from autogp.kernels import parse, to_text
from autogp.version import __version__

install_threefry_lowering()  # importing a module lowers nothing; every program lowered from now on

__all__ = ["AutoGP", "__version__", "load", "load_config", "parse", "read_csv", "to_text"]
