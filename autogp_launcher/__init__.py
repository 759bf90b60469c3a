"""The ``autogp`` console script: sets XLA's C++ log level, then runs :mod:`autogp.cli.main`.

On a loaded machine a compile over two minutes prints XLA's ``slow_operation_alarm`` block
("Very slow compile? If you want to file a bug ...") at ERROR level, which reads as a failure.
XLA logs through two paths: one reads ``TF_CPP_MIN_LOG_LEVEL`` once, when JAX's native library
loads (setting it later, or ``jax_logging_level``, leaves its messages on), and importing
anything inside the ``autogp`` package imports JAX first; so the command line starts here,
outside the package, and sets it before. The other, absl's logging (which the alarm was seen to
use, the variable notwithstanding), takes its level at run time: the command line sets it
(:func:`autogp.parallel.work.quiet_xla_logs`). A value the user set is kept; worker processes
get the same (:data:`autogp.parallel.work.QUIET_XLA_ENV`).
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
    """Run the command line with XLA's C++ logging quiet (:func:`quiet_xla_logs`; the command
    line then quiets absl's logging too: :func:`autogp.parallel.work.quiet_xla_logs`)."""
    quiet_xla_logs()
    from autogp.cli.main import app

    app(prog_name="autogp")
