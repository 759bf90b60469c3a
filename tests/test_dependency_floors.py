"""pyproject.toml's version floors and constraints/minimum.txt, which pins them to test them
together (README, Tests), say the same thing: every requirement has a floor (``>=``), the file
pins each name at its floor, and pins nothing that is not a requirement."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)$")


def floors(pyproject: str) -> tuple[dict[str, Version], list[str]]:
    """Each requirement's floor by name (the dependencies and every extra's), and the problems:
    a requirement without exactly one ``>=``, one name with two floors."""
    project = tomllib.loads(pyproject)["project"]
    groups = {"dependencies": project["dependencies"], **project.get("optional-dependencies", {})}
    found: dict[str, Version] = {}
    problems = []
    for group, lines in groups.items():
        for line in lines:
            req = Requirement(line)
            name = canonicalize_name(req.name)
            specs = list(req.specifier)
            if len(specs) != 1 or specs[0].operator != ">=":
                problems.append(f"{group}: {line!r} has no single >= floor")
                continue
            floor = Version(specs[0].version)
            if found.setdefault(name, floor) != floor:
                problems.append(f"{group}: {name} has floors {found[name]} and {floor}")
    return found, problems


def pins(constraints: str) -> tuple[dict[str, Version], list[str]]:
    """The ``name==version`` lines of a constraints file (comments and blank lines aside), and
    the lines that are not such a pin or pin a name twice."""
    found: dict[str, Version] = {}
    problems = []
    for line in constraints.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        if match is None:
            problems.append(f"{line!r} is not name==version")
            continue
        name = canonicalize_name(match[1])
        if name in found:
            problems.append(f"{name} is pinned twice")
        found[name] = Version(match[2])
    return found, problems


def mismatches(pyproject: str, constraints: str) -> list[str]:
    """Everything on which the floors and the pins disagree (empty: they agree)."""
    want, problems = floors(pyproject)
    have, pin_problems = pins(constraints)
    problems += pin_problems
    for name in sorted(want.keys() - have.keys()):
        problems.append(f"{name}: floor {want[name]} is not pinned")
    for name in sorted(have.keys() - want.keys()):
        problems.append(f"{name}=={have[name]} is pinned but not a requirement")
    for name in sorted(want.keys() & have.keys()):
        if want[name] != have[name]:
            problems.append(f"{name}: floor {want[name]}, pinned {have[name]}")
    return problems


def test_the_minimum_versions_file_pins_exactly_the_floors():
    pyproject = (ROOT / "pyproject.toml").read_text()
    constraints = (ROOT / "constraints" / "minimum.txt").read_text()
    assert mismatches(pyproject, constraints) == []
    # the library's own floors are all there (not only the extras')
    want, _ = floors(pyproject)
    assert {"jax", "jaxlib", "numpy", "equinox"} <= want.keys()


def test_a_disagreement_is_found():
    pyproject = """
[project]
dependencies = ["jax>=0.8.0", "NumPy>=2.0", "scipy", "pandas>=2,<3"]
[project.optional-dependencies]
test = ["dask[distributed]>=2024.1.0", "Pytest>=8"]
dask = ["dask[distributed]>=2024.2"]
"""
    constraints = """
# a comment
jax==0.7.2
numpy==2.0.0  # equal to the floor 2.0
pytest==8.0.0
pytest==8.0.0
dask==2024.1.0
distributed==2024.1.0
matplotlib>=3.8
"""
    assert mismatches(pyproject, constraints) == [
        "dependencies: 'scipy' has no single >= floor",
        "dependencies: 'pandas>=2,<3' has no single >= floor",
        "dask: dask has floors 2024.1.0 and 2024.2",
        "pytest is pinned twice",
        "'matplotlib>=3.8' is not name==version",
        "distributed==2024.1.0 is pinned but not a requirement",
        "jax: floor 0.8.0, pinned 0.7.2",
    ]
