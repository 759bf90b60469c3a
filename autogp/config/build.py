"""Building a tree of sections from plain data: type coercion, range checks, unknown keys with
the nearest valid one, dotted-key overrides and reading TOML. Generic: every check is read from
the fields' :class:`autogp.setting.Spec`; the sections themselves are in
:mod:`autogp.config.sections` and :mod:`autogp.config.search`."""

from __future__ import annotations

import difflib
import enum
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from autogp.config.keys import ConfigError
from autogp.setting import Spec

# How a config file is decoded: UTF-8 without the byte-order mark that Notepad writes, which
# tomllib refuses ("Invalid statement (at line 1, column 1)").
TOML_ENCODING = "utf-8-sig"


def _type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(v), type(v).__name__
    )


def coerce(value: Any, sp: Spec, key: str) -> Any:
    """``value`` checked against ``sp`` for ``key``: ints stay ints, lists become tuples and
    the choices of an enumeration its members."""

    def wrong(extra: str = "") -> ConfigError:
        return ConfigError(
            f"{key} = {value!r} has the wrong type: expected {sp.allowed()}, got "
            f"{_type_name(value)}{extra}",
            key=key,
        )

    def out_of_range() -> ConfigError:
        return ConfigError(f"{key} = {value!r} is out of range: expected {sp.allowed()}", key=key)

    if (
        value is None
        or (value is False and sp.optional and sp.kind == "str")
        or (value == "" and sp.optional)
    ):
        if sp.optional:
            return None
        raise ConfigError(f"{key} must be set: expected {sp.allowed()}", key=key)
    if sp.kind == "bool":
        if not isinstance(value, bool):
            raise wrong()
        return value
    if sp.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong()
        if not sp.in_range(value):
            raise out_of_range()
        return int(value)
    if sp.kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong()
        v = float(value)
        if not math.isfinite(v) or not sp.in_range(v):
            raise out_of_range()
        return v
    if sp.kind == "str":
        if not isinstance(value, str):
            raise wrong()
        return value
    if sp.kind == "choice":
        if not isinstance(value, str):
            raise wrong()
        if value not in sp.choices:
            close = difflib.get_close_matches(value, sp.choices, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"{key} = {value!r} is not allowed: expected {sp.allowed()}{hint}", key=key
            )
        return sp.enum(value) if sp.enum is not None else value
    if sp.kind == "list":
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise wrong()
        assert sp.item is not None
        return tuple(coerce(v, sp.item, f"{key}[{i}]") for i, v in enumerate(value))
    raise AssertionError(sp.kind)  # pragma: no cover


def _all_keys(cls: type, prefix: str = "") -> list[str]:
    out = []
    for f in fields(cls):
        full = f"{prefix}{f.name}"
        out.append(full)
        if "section" in f.metadata:
            out.extend(_all_keys(f.metadata["section"], full + "."))
    return out


# Common names for parameters whose short grammar names difflib would not find.
_ALIASES = {
    "lengthscale": "l",
    "length_scale": "l",
    "ls": "l",
    "amplitude": "amp",
    "variance": "amp",
    "noise_variance": "noise",
    "changepoint": "location",
    "change_point": "location",
}


def _unknown(key: str, cls: type, prefix: str, root: type) -> ConfigError:
    names = [f.name for f in fields(cls)]
    name = key.rsplit(".", 1)[-1]
    alias = _ALIASES.get(name.lower())
    close = [alias] if alias in names else difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close:  # a case slip (lin vs LIN)?
        close = [n for n in names if n.lower() == name.lower()]
    if close:
        hint = f"did you mean {prefix + close[0]!r}?"
    else:
        # Maybe it belongs to another section (max_depth under [smc]).
        everywhere = _all_keys(root)
        tails = {k.rsplit(".", 1)[-1]: k for k in everywhere}
        other = difflib.get_close_matches(name, list(tails), n=1, cutoff=0.8)
        hint = (
            f"did you mean {tails[other[0]]!r}?"
            if other
            else f"valid keys here: {', '.join(names)}"
        )
    where = f"[{prefix[:-1]}]" if prefix else "the top level"
    return ConfigError(f"unknown key {key!r} in {where}; {hint}", key=key)


def _build(cls: type, data: Any, prefix: str, base: Any, root: type) -> Any:
    """``cls`` from a mapping; keys not given keep ``base``'s values (or the class defaults)."""
    if isinstance(data, cls):
        data = to_dict(data)
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{prefix[:-1]} must be a table (a [section] in TOML), got {_type_name(data)} {data!r}",
            key=prefix[:-1],
        )
    names = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if not isinstance(k, str) or k not in names:
            raise _unknown(str(key), cls, prefix, root)
        f = names[k]
        if "section" in f.metadata:
            default = f.default_factory()  # type: ignore[misc]
            kwargs[k] = _build(f.metadata["section"], v, key + ".", default, root)
        else:
            kwargs[k] = coerce(v, f.metadata["spec"], key)
    obj = replace(base, **kwargs) if base is not None else cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        validate(prefix[:-1] if prefix else "config")
    return obj


def build(root: type, data: Any) -> Any:
    """A validated ``root`` section tree from a nested mapping (missing keys: defaults)."""
    return _build(root, data, "", None, root)


def to_dict(obj: Any) -> Any:
    """A section tree as nested plain dicts (lists for sequences, ``None`` for unset keys)."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple | list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as ``{"section.key": value}``."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    cur = d
    for i, p in enumerate(parts[:-1]):
        nxt = cur.get(p)
        if nxt is None:
            nxt = cur[p] = {}
        elif not isinstance(nxt, dict):
            raise ConfigError(
                f"override {key!r}: {'.'.join(parts[: i + 1])} is not a section", key=key
            )
        cur = nxt
    cur[parts[-1]] = value


def _deep_copy(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, Mapping) else v for k, v in d.items()}


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``["smc.num_particles=32", "data.path=x.csv"]`` -> ``{"smc.num_particles": 32, ...}``.

    Values are read as TOML values (``32``, ``0.5``, ``true``, ``[80, 95]``, ``"text"``); a
    value that is not valid TOML is taken as a plain string.
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value, e.g. seed=1")
        key, text = (s.strip() for s in item.split("=", 1))
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        out[key] = value
    return out


def load(
    root: type,
    source: str | Path | Mapping[str, Any] | Any | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Any:
    """A validated ``root`` from a TOML path, a nested dict, a ``root`` instance or ``None``
    (the defaults), with dotted-key ``overrides`` applied on top."""
    origin = ""
    if source is None:
        data: dict[str, Any] = {}
    elif isinstance(source, root):
        data = to_dict(source)
    elif isinstance(source, Mapping):
        data = _deep_copy(source)
    elif isinstance(source, str | Path):
        path = Path(source)
        origin = f"{path}: "
        try:
            data = tomllib.loads(path.read_bytes().decode(TOML_ENCODING))
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    else:
        raise ConfigError(
            f"load_config expects a path, a dict or None, got {type(source).__name__}"
        )
    for key, value in (overrides or {}).items():
        _set_dotted(data, key, value)
    try:
        return build(root, data)
    except ConfigError as exc:
        if not origin:
            raise
        raise ConfigError(origin + str(exc), key=exc.key) from None


def loads(root: type, text: str) -> Any:
    """:func:`load` for TOML text."""
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))  # a marked file read as UTF-8
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    return load(root, data)


__all__ = ["build", "coerce", "flatten", "load", "loads", "parse_overrides", "to_dict"]
