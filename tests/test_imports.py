"""The package's import structure: every module imports on its own, no import cycles between
modules or between packages, every import points down the layer order, and no private name
crosses a module boundary."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autogp"
# Private modules other modules may import (the float64 context is shared by every entry point).
SHARED_PRIVATE_MODULES = {"autogp._x64", "autogp._threefry", "autogp._xla"}
# Import cycles still to be removed, each a sorted list of modules (none left).
KNOWN_CYCLES: list[list[str]] = []
# The layers of autogp, lowest first: a module may import from its own package or from a package
# in a lower layer, never from its own layer or above. Top-level modules (``autogp/setting.py``)
# count as packages of their own; "autogp" is the package's front door (``autogp/__init__.py``).
LAYERS: list[tuple[str, ...]] = [
    ("version", "_x64", "_threefry", "_xla", "setting"),
    ("data", "kernels"),
    ("evaluator", "statespace"),  # statespace: the Kalman-filter likelihood, beside the dense one
    ("inference",),
    ("config",),
    ("pipeline",),  # one series: data -> Posterior, and the .autogp file of posteriors
    ("parallel",),  # many series on several cores or machines
    ("forecast",),  # the AutoGP estimator: panels, forecasts, updates, model files
    ("plots",),
    ("experiments",),
    ("autogp",),
    ("integrations",),  # autogp inside other libraries (statsforecast); the front door skips it
    ("cli",),
]
# Package-level cycles still to be removed, each a sorted list of packages, and the imports
# behind them that may point up the layers meanwhile (importing module, imported package).
KNOWN_PACKAGE_CYCLES: list[list[str]] = []
KNOWN_UPWARD: set[tuple[str, str]] = set()
# Optional dependencies: a module that needs one is skipped when it is not installed.
OPTIONAL = {"autogp.parallel.dask_backend": "distributed",
            "autogp.integrations.statsforecast": "statsforecast"}


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


def _package(module: str) -> str:
    """The package a module belongs to: ``autogp.forecast.model`` -> ``forecast``,
    ``autogp.plots`` -> ``plots``, ``autogp`` -> ``autogp``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_edges() -> dict[str, set[str]]:
    """The imports between autogp modules (function-level imports included): ``from autogp
    import plots`` is an edge to ``autogp.plots``, ``from autogp.data import X`` one to
    ``autogp.data`` (or to ``autogp.data.X`` where that is a module)."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for _, target, name in _imports(path):
            sub = f"{target}.{name}" if name is not None else target
            edges[module].add(sub if sub in modules else target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


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
    assert [c for c in _cycles(_module_edges()) if c not in KNOWN_CYCLES] == []


def test_no_package_cycles():
    """The graph of imports between autogp's packages (an edge wherever one module of a package
    imports a module of another) has no cycles beyond :data:`KNOWN_PACKAGE_CYCLES`."""
    packages: dict[str, set[str]] = {}
    for module, targets in _module_edges().items():
        here = _package(module)
        packages.setdefault(here, set()).update(_package(t) for t in targets)
    for here, targets in packages.items():
        targets.discard(here)
    assert [c for c in _cycles(packages) if c not in KNOWN_PACKAGE_CYCLES] == []


def test_imports_point_down_the_layers():
    """Every package is in :data:`LAYERS`, and every import between packages goes to a lower
    layer (the exceptions in :data:`KNOWN_UPWARD` aside)."""
    layer = {p: i for i, names in enumerate(LAYERS) for p in names}
    edges = _module_edges()
    unlisted = sorted({_package(m) for m in edges} - set(layer))
    assert unlisted == [], f"packages missing from LAYERS: {unlisted}"
    upward = sorted(
        f"{module} imports {target} ({_package(module)} may not import {_package(target)})"
        for module, targets in edges.items()
        for target in targets
        if _package(target) != _package(module)
        and layer[_package(target)] >= layer[_package(module)]
        and (module, _package(target)) not in KNOWN_UPWARD
    )
    assert upward == []


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


# Modules still reaching into JAX's private names (none: the greedy search, which counts its
# compilations by a jitted function's private cache size, lives in lab/, outside the package).
KNOWN_PRIVATE_JAX: set[str] = set()
_PRIVATE_JAX = re.compile(
    r"\bjax(lib)?\._src\b|\._cache_size\b|\b(jax|jaxlib|jnp|lax|mlir|xla_client)(\.\w+)*\._[A-Za-z]")


def test_no_private_jax_names():
    """No module uses JAX's private modules or attributes (``jax._src``, ``f._cache_size()``,
    ``jax.something._private``): they change without notice between JAX versions."""
    found = [
        f"{module}:{number}: {line.strip()}"
        for module, path in _modules().items() if module not in KNOWN_PRIVATE_JAX
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _PRIVATE_JAX.search(line)
    ]
    assert found == []
