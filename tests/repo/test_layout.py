"""The tree keeps the shape issue 11 gave it: rooms as packages, small modules, leaf commands."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from support.paths import REPO
from toolwatch.cli import COMMANDS

#: Modules that are data, not logic, and may be long.
DATA_MODULES = {"collector/sources/simulator/tools.py"}
MAX_LINES = 600
_SKIP = {"tests", "benchmarks", "build", "docs"}


def _package_dirs() -> set[str]:
    found = {"toolwatch"}
    for init in REPO.rglob("__init__.py"):
        rel = init.parent.relative_to(REPO)
        if rel.parts and (rel.parts[0] in _SKIP or rel.parts[0].startswith(".")):
            continue
        if rel.parts:
            found.add("toolwatch." + ".".join(rel.parts))
    return found


def test_every_package_of_the_tree_is_installed() -> None:
    """A wheel installs only the packages pyproject lists: the list is the tree."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _package_dirs()


def test_every_data_file_of_the_tree_is_in_the_wheel() -> None:
    """A wheel holds a package's non-Python files only if package-data names them: a scenario,
    schema or model file left out works from the checkout and is missing after pip install."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs: dict[str, list[str]] = setuptools["package-data"]
    left_out = []
    tops = [d for d in REPO.iterdir() if d.is_dir() and not d.name.startswith(".")]
    for path in sorted(f for d in tops if d.name not in _SKIP for f in d.rglob("*")):
        rel = path.relative_to(REPO)
        if not path.is_file() or rel.suffix in (".py", ".pyc") or rel.parts[0] in _SKIP:
            continue
        if any(
            p.startswith(".") or p == "__pycache__" or p.endswith(".egg-info") for p in rel.parts
        ):
            continue
        owner = next(
            (p for p in rel.parents if p != Path(".") and (REPO / p / "__init__.py").is_file()),
            None,
        )
        if owner is None:  # beside pyproject.toml: README, the project's own files
            continue
        package = "toolwatch." + ".".join(owner.parts)
        inside = rel.relative_to(owner).as_posix()
        if not any(fnmatch.fnmatch(inside, g) for g in globs.get(package, [])):
            left_out.append(str(rel))
    assert not left_out, f"add to [tool.setuptools.package-data]: {left_out}"


def test_no_module_is_a_grab_bag() -> None:
    long = []
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        if rel.parts[0] in _SKIP or rel.parts[0].startswith(".") or str(rel) in DATA_MODULES:
            continue
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            long.append(f"{rel}: {lines} lines")
    assert not long, f"split by job (≤ {MAX_LINES} lines): {long}"


def test_every_subcommand_is_a_leaf_module_of_a_commands_package() -> None:
    for name, (module, _, _) in COMMANDS.items():
        assert ".commands." in module, f"`toolwatch {name}` lives in {module}, not in a commands/"


def test_the_detection_surface_is_what_it_declares() -> None:
    import toolwatch.detection as detection

    assert sorted(detection.__all__) == sorted(detection._PUBLIC)
    for name in detection.__all__:
        assert getattr(detection, name) is not None
