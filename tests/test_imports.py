"""The package's import structure: every module imports on its own, no import cycles, and no
private name crosses a module boundary."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autogp"
# Private modules other modules may import (the float64 context is shared by every entry point).
SHARED_PRIVATE_MODULES = {"autogp._x64", "autogp._threefry"}
# Import cycles still to be removed, each a sorted list of modules (none left).
KNOWN_CYCLES: list[list[str]] = []
# Optional dependencies: a module that needs one is skipped when it is not installed.
OPTIONAL = {"autogp.parallel.dask_backend": "distributed"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, module, name)`` of each absolute import of an autogp module anywhere in the file
    (functions included), except under ``if TYPE_CHECKING:``; ``name`` is None for ``import``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names if a.name.startswith("autogp")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "autogp" or node.module.startswith("autogp."):
                out += [(node.lineno, node.module, a.name) for a in node.names]
    return out


def test_every_module_imports_on_its_own():
    """Each module imported first in a fresh interpreter (autogp's modules dropped from
    ``sys.modules`` before each), so an import order that only works from elsewhere fails."""
    names = [m for m, dep in ((m, OPTIONAL.get(m)) for m in _modules())
             if dep is None or importlib.util.find_spec(dep) is not None]
    script = (
        "import importlib, json, sys, traceback\n"
        "failed = {}\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m == 'autogp' or m.startswith('autogp.')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:\n"
        "        failed[name] = traceback.format_exc(limit=-3)\n"
        "print(json.dumps(failed))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=PACKAGE.parent, timeout=600, check=True)
    failed = json.loads(run.stdout.strip().splitlines()[-1])
    assert not failed, "\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_no_import_cycles():
    """The graph of imports between autogp modules (function-level imports included) has no
    cycles beyond :data:`KNOWN_CYCLES`."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for _, target, name in _imports(path):
            sub = f"{target}.{name}" if name is not None else target
            edges[module].add(sub if sub in modules else target)
    # Tarjan's strongly connected components.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    assert [c for c in cycles if c not in KNOWN_CYCLES] == []


def test_no_private_names_imported_across_modules():
    """No module imports a ``_private`` name (or a name from a ``_private`` module) of another
    autogp module."""
    found = []
    for module, path in _modules().items():
        for line, target, name in _imports(path):
            private_module = any(p.startswith("_") for p in target.split("."))
            if private_module and target not in SHARED_PRIVATE_MODULES:
                found.append(f"{module}:{line} imports from {target}")
            if name is not None and name.startswith("_") and not name.startswith("__"):
                found.append(f"{module}:{line} imports {target}.{name}")
    assert found == []
