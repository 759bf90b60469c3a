"""How a config section declares its keys, and the error a bad config raises.

A section is a frozen dataclass whose fields are settings (:func:`autogp.setting.setting`: a
value with its spec) or nested sections (:func:`section`). A section may define
``validate(prefix)`` for checks across its keys; :func:`autogp.config.build.build` calls it
after building the section.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any


class ConfigError(ValueError):
    """An invalid configuration; the message names the key, the allowed values and the value."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def section(cls: type, doc: str, default: Any = None) -> Any:
    """A nested section field; its default is ``default()`` or else ``cls()``."""
    return field(default_factory=default or cls, metadata={"section": cls, "doc": doc})


__all__ = ["ConfigError", "section"]
