"""One setting, declared once: its type, default, allowed values and doc, as a dataclass field.

A settings class is a frozen dataclass whose fields are made by :func:`setting`. The TOML key,
its line in ``describe()``, its validation and its part in the compiled programs' keys are all
read from the :class:`Spec` in the field's metadata, so adding a setting is one field. Modes are
``enum.StrEnum`` classes: a member equals its string, and a settings file gives the string.

This module sits below both the engine (:mod:`autogp.inference.settings`) and the user config
(:mod:`autogp.config`), which derives its [smc] and [refine] sections from the engine's classes.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

KINDS = ("int", "float", "bool", "str", "choice", "list")


@dataclass(frozen=True)
class Spec:
    """What one setting accepts.

    ``kind``: one of :data:`KINDS`; a ``choice`` takes one of ``choices`` (the values of
    ``enum`` when the choices are an enumeration, which values are then turned into).
    ``in_programs``: False for a setting read on the host only (schedules, padding, a choice
    between programs), which the compiled programs' keys leave out so that fits differing in it
    share their programs.
    """

    kind: str
    doc: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (omit the key in TOML)
    item: Spec | None = None  # list items
    enum: type[enum.StrEnum] | None = None
    in_programs: bool = True

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Spec.kind = {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"a choice needs choices ({self.doc!r})")
        if self.kind == "list" and self.item is None:
            raise ValueError(f"a list needs an item spec ({self.doc!r})")

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

    def choice(self, value: Any, name: str) -> Any:
        """``value`` as a member of ``enum`` (or itself for plain choices); ValueError naming
        ``name`` and the choices for anything else."""
        if isinstance(value, str) and value in self.choices:
            return self.enum(value) if self.enum is not None else value
        raise ValueError(f"{name} = {value!r} is not allowed: expected {self.allowed()}")


def _kind_of(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, enum.Enum):
        return "choice"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, str):
        return "str"
    raise TypeError(f"cannot tell the kind of a setting from its default {default!r}; "
                    f"pass kind=")


def setting(default: Any, doc: str, *, kind: str | None = None, **spec: Any) -> Any:
    """A dataclass field declaring one setting: its default (immutable), a one-line doc and
    what it accepts (:class:`Spec`'s fields: ``lo``, ``hi``, ``choices``, ...).

    The kind is read from the default when not given: a ``StrEnum`` member makes a choice
    among that enumeration's values.
    """
    kind = kind or _kind_of(default)
    if isinstance(default, enum.StrEnum):
        enum_cls = type(default)
        spec.setdefault("enum", enum_cls)
        spec.setdefault("choices", tuple(member.value for member in enum_cls))
    return dataclasses.field(default=default, metadata={"spec": Spec(kind, doc, **spec)})


def spec_of(field: dataclasses.Field) -> Spec | None:
    """The spec of a field made by :func:`setting` (None for other fields)."""
    return field.metadata.get("spec")


def as_members(obj: Any) -> None:
    """Turn the strings in ``obj``'s enumeration fields into members (for a frozen dataclass's
    ``__post_init__``), so equal settings hash and pickle alike however they were given."""
    for f in dataclasses.fields(obj):
        sp = spec_of(f)
        if sp is not None and sp.enum is not None:
            value = getattr(obj, f.name)
            if type(value) is not sp.enum:
                object.__setattr__(obj, f.name, sp.choice(value, f"{type(obj).__name__}.{f.name}"))


__all__ = ["KINDS", "Spec", "as_members", "setting", "spec_of"]
