"""Node packages the tests run (the OpenTelemetry sender, the reference MCP server): installed
from their pinned lockfile on first use, skipped where node/npm are missing — except under
``CI=true``, where ``.ci/run`` installs them and a missing one is a failure, as the browser's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def installed_node(package_dir: Path) -> str:
    """The ``node`` executable, with ``package_dir``'s lockfile installed (``npm ci``, again
    only when the lockfile is newer than the install)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but node/npm are not installed (.ci/run runs npm ci)")
        pytest.skip("node/npm are not installed")
    lock = package_dir / "package-lock.json"
    stamp = package_dir / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=package_dir, check=True, timeout=600
        )
    return node
