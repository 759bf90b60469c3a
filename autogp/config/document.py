"""A section tree written out: the table of every key (default, allowed values, doc) and TOML
text, plain or with each key commented. Generic over the root section class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any

from autogp.config.build import flatten, to_dict
from autogp.setting import Spec


def describe(root: type) -> list[tuple[str, Any, str, str]]:
    """Every key of ``root``: ``(full key, default, allowed values, doc)``."""
    rows: list[tuple[str, Any, str, str]] = []

    def walk(cls: type, prefix: str) -> None:
        for f in fields(cls):
            if "section" in f.metadata:
                walk(f.metadata["section"], f"{prefix}{f.name}.")
            else:
                sp: Spec = f.metadata["spec"]
                default = f.default if f.default is not MISSING else None
                rows.append((prefix + f.name, to_dict(default), sp.allowed(), sp.doc))

    walk(root, "")
    # Section defaults that differ from the class default (the priors) come from instances.
    defaults = flatten(to_dict(root()))
    return [(k, defaults.get(k, d), a, doc) for k, d, a, doc in rows]


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        escaped = v.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        escaped = escaped.replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(
    d: Mapping[str, Any], root: type, docs: Mapping[str, tuple[str, str]] | None = None
) -> str:
    """A nested dict of ``root``'s keys as TOML (unset keys are left out); ``docs`` maps full
    keys to ``(doc, allowed)`` written as a comment above each key."""
    lines: list[str] = []
    # An unset key whose default is set (a disabled output file) is written as false.
    defaults = flatten(to_dict(root()))

    def emit(table: Mapping[str, Any], prefix: str) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        subs = {k: v for k, v in table.items() if isinstance(v, Mapping)}
        if prefix and (scalars or not subs):
            lines.append(f"\n[{prefix}]")
        for k, v in scalars.items():
            full = f"{prefix}.{k}" if prefix else k
            if docs and full in docs:
                doc, allowed = docs[full]
                lines.append(f"# {doc}. Allowed: {allowed}.")
            if v is None and defaults.get(full) is not None:
                lines.append(f"{k} = false")
            elif v is None:
                lines.append(f"# {k} = (unset)")
            else:
                lines.append(f"{k} = {_toml_value(v)}")
        for k, v in subs.items():
            emit(v, f"{prefix}.{k}" if prefix else k)

    emit(d, "")
    return "\n".join(lines).lstrip("\n") + "\n"


def default_toml(root: type) -> str:
    """``root``'s defaults as a TOML file, each key commented with its doc and range."""
    docs = {k: (doc, allowed) for k, _, allowed, doc in describe(root)}
    return to_toml(to_dict(root()), root, docs)


__all__ = ["default_toml", "describe", "to_toml"]
