"""Config sections derived from settings classes, and settings built back from a section.

The engine declares each of its settings once (:mod:`autogp.inference.settings`). A section
derived from a settings class copies its fields, specs and all; it may swap a setting for the
keys a user writes instead and add keys of its own (the product's, not the engine's), and it
keeps the class it came from as ``SETTINGS``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, fields, make_dataclass
from typing import Any

from autogp.setting import as_members, spec_of

# A field as make_dataclass takes it: (name, type, dataclasses.field(...)).
FieldDecl = tuple[str, Any, Any]


def section_from(
    settings: type,
    name: str,
    doc: str,
    *,
    module: str,
    swap: Mapping[str, Sequence[FieldDecl]] | None = None,
    extra: Sequence[FieldDecl] = (),
    bases: tuple[type, ...] = (),
) -> type:
    """A frozen section class ``module.name`` with a key for every setting of ``settings`` (in
    their order; nested settings classes are left to sections of their own), the fields of
    ``swap[setting]`` in place of that setting, then ``extra``."""
    swap = swap or {}
    declared: list[FieldDecl] = []
    for f in fields(settings):
        if spec_of(f) is None:
            continue
        if f.name in swap:
            declared.extend(swap[f.name])
        else:
            declared.append((f.name, f.type, field(default=f.default, metadata=f.metadata)))
    declared.extend(extra)
    return make_dataclass(
        name, declared, bases=bases, frozen=True,
        namespace={"__module__": module, "__doc__": doc, "SETTINGS": settings,
                   "__post_init__": as_members},
    )


def settings_from(section: Any, settings: type, **given: Any) -> Any:
    """``settings`` built from ``section``'s keys of the same names and ``given``."""
    shared = {f.name: getattr(section, f.name) for f in fields(settings) if f.name not in given}
    return settings(**shared, **given)


__all__ = ["FieldDecl", "section_from", "settings_from"]
