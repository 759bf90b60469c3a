"""The ``autogp`` console script: sets XLA's C++ log level, then runs :mod:`autogp.cli.main`.

XLA reads ``TF_CPP_MIN_LOG_LEVEL`` once, when JAX's native library loads (setting it later, or
``jax_logging_level``, leaves those messages on), and importing anything inside the ``autogp``
package imports JAX first. So the command line starts here, outside the package, and sets it
before: on a loaded machine a compile over two minutes otherwise prints XLA's
``slow_operation_alarm`` block ("Very slow compile? If you want to file a bug ...") at ERROR
level, which reads as a failure. A value the user set is kept
(:data:`autogp.parallel.work.QUIET_XLA_ENV` is the setting; worker processes get it too).
"""

from __future__ import annotations

import os

#: Kept equal to :data:`autogp.parallel.work.QUIET_XLA_ENV` (a test checks it): importing
#: that module would import JAX before the variable is set.
QUIET_XLA_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def quiet_xla_logs() -> None:
    """XLA's C++ logging at FATAL only in this process (unless the user set a level): call
    before JAX is imported."""
    for name, value in QUIET_XLA_ENV.items():
        os.environ.setdefault(name, value)


def main() -> None:
    """Run the command line with XLA's C++ logging quiet (:func:`quiet_xla_logs`)."""
    quiet_xla_logs()
    from autogp.cli.main import app

    app(prog_name="autogp")
