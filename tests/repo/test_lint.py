"""ruff, mypy and the import contracts stay clean: house style is checked by CI, not memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_mypy_is_clean(tmp_path: Path) -> None:
    # The repo root *is* the toolwatch package (package-dir mapping), which mypy can only see
    # under its real name: link the root as <tmp>/toolwatch and check the package from there.
    (tmp_path / "toolwatch").symlink_to(ROOT, target_is_directory=True)
    env = {**os.environ, "MYPYPATH": str(tmp_path)}
    out = _run(
        str(BIN / "mypy"),
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(tmp_path / ".mypy_cache"),
        "-p",
        "toolwatch",
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_import_contracts_hold() -> None:
    """The layering in pyproject.toml ([tool.importlinter]) is checked by a tool, not by hope."""
    out = _run(str(BIN / "lint-imports"), "--no-cache")
    assert out.returncode == 0, out.stdout + out.stderr
    assert ", 0 broken." in out.stdout
