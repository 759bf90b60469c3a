"""What a config key is: its spec (type, range, choices, doc) and how a section declares one.

A section is a frozen dataclass whose fields are made by :func:`key` (a value with its spec) or
:func:`section` (a nested section). A section may define ``validate(prefix)`` for checks across
its keys; :func:`autogp.config.build.build` calls it after building the section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ConfigError(ValueError):
    """An invalid configuration; the message names the key, the allowed values and the value."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class KeySpec:
    """What one key accepts. ``kind``: int, float, bool, str, choice, list."""

    kind: str
    doc: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (omit the key in TOML)
    item: KeySpec | None = None  # list items

    def allowed(self) -> str:
        """The allowed values in words, e.g. ``an integer in [1, 5]``."""
        if self.kind == "bool":
            text = "true or false"
        elif self.kind == "str":
            text = "a string"
        elif self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "list":
            assert self.item is not None
            text = "a list of " + self.item.allowed().removeprefix("an ").removeprefix("a ")
            text = text.replace("integer ", "integers ").replace("number ", "numbers ")
            text = text.replace("string", "strings").replace("list of one of", "list of")
        else:
            noun = "an integer" if self.kind == "int" else "a number"
            text = noun + self._range()
        if self.optional:
            text += " (or unset)"
        return text

    def _range(self) -> str:
        fmt = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
        if self.lo is not None and self.hi is not None:
            left = "(" if self.lo_open else "["
            right = ")" if self.hi_open else "]"
            return f" in {left}{fmt(self.lo)}, {fmt(self.hi)}{right}"
        if self.lo is not None:
            return f" {'>' if self.lo_open else '>='} {fmt(self.lo)}"
        if self.hi is not None:
            return f" {'<' if self.hi_open else '<='} {fmt(self.hi)}"
        return ""

    def in_range(self, v: float) -> bool:
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            return False
        return not (self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)))


def key(default: Any, doc: str, kind: str, **kw: Any) -> Any:
    """A config field with its spec in the metadata (immutable default)."""
    return field(default=default, metadata={"spec": KeySpec(kind, doc, **kw)})


def section(cls: type, doc: str, default: Any = None) -> Any:
    """A nested section field; its default is ``default()`` or else ``cls()``."""
    return field(default_factory=default or cls, metadata={"section": cls, "doc": doc})


__all__ = ["ConfigError", "KeySpec", "key", "section"]
