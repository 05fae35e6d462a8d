"""ruff, mypy and the import contracts stay clean: house style is checked by CI, not memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO

ROOT = REPO
BIN = Path(sys.executable).parent


def _run(*cmd: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


def test_ruff_check_and_format_are_clean() -> None:
    lint = _run(str(BIN / "ruff"), "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.fixture(scope="module")
def mypy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repo root *is* the toolwatch package (package-dir mapping), which mypy can only see
    under its real name: the root linked as <tmp>/toolwatch, and one cache for both runs."""
    tmp = tmp_path_factory.mktemp("mypy")
    (tmp / "toolwatch").symlink_to(ROOT, target_is_directory=True)
    return tmp


def _mypy(tmp: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": path}
    config = ("--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp / "cache"))
    return _run(str(BIN / "mypy"), *config, *args, env=env)


def test_mypy_is_clean(mypy_root: Path) -> None:
    out = _mypy(mypy_root, "-p", "toolwatch", path=str(mypy_root))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_mypy_is_clean_on_the_benchmarks(mypy_root: Path) -> None:
    """The benchmarks are scripts beside the package (each imports ``targets`` from its own
    folder): checked as top-level modules, with the same settings as the package."""
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").glob("*.py"))
    assert "benchmarks/bench_scanner.py" in scripts
    bases = os.pathsep.join([str(mypy_root), str(ROOT / "benchmarks")])
    out = _mypy(mypy_root, "--explicit-package-bases", *scripts, path=bases)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"no issues found in {len(scripts)} source files" in out.stdout


def test_import_contracts_hold() -> None:
    """The layering in pyproject.toml ([tool.importlinter]) is checked by a tool, not by hope."""
    out = _run(str(BIN / "lint-imports"), "--no-cache")
    assert out.returncode == 0, out.stdout + out.stderr
    assert ", 0 broken." in out.stdout
