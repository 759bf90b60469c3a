"""How a message tells the user to change a setting: in the words of the interface in use.

The readers serve the Python API (``read_csv(path, time_col='date')``) and the command line
(``--time-col date``), so a message that suggests a setting spells it with :func:`option`,
and the interface that shows the message chooses the spelling (:func:`spelled_as`). The
choice lives in a context variable: it holds for the calling thread only and is restored on
exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

#: ``spelling(name, value)`` -> the text a user types to set ``name`` (a reader argument such
#: as ``time_col``) to ``value``; ``value`` is :data:`NAME_ONLY` when only the name is wanted.
Spelling = Callable[[str, Any], str]

NAME_ONLY: Any = object()


def python_spelling(name: str, value: Any) -> str:
    """Keyword-argument spelling: ``time_col='date'``."""
    return name if value is NAME_ONLY else f"{name}={value!r}"


_spelling: ContextVar[Spelling] = ContextVar("autogp_option_spelling", default=python_spelling)


def option(name: str, value: Any = NAME_ONLY) -> str:
    """The setting ``name`` (set to ``value``) as the user's interface spells it."""
    return _spelling.get()(name, value)


@contextlib.contextmanager
def spelled_as(spelling: Spelling) -> Iterator[None]:
    """Messages raised in the body spell settings with ``spelling``."""
    token = _spelling.set(spelling)
    try:
        yield
    finally:
        _spelling.reset(token)


__all__ = ["NAME_ONLY", "Spelling", "option", "python_spelling", "spelled_as"]
