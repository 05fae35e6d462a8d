"""The instrumentation at the *low* end of the versions it supports: a venv with exactly the
floors of ``pyproject.toml`` (``floor-requirements.txt``: mcp 2.3.0 — the only 2.x release on
PyPI here, so both ends of the mcp range are one release —, OpenTelemetry API/SDK/exporter
1.30.0, opentelemetry-instrumentation 0.51b0, wrapt 1.16, jsonschema 4.20) runs the
instrumentation tests; this suite's own venv holds the newest versions (the high end).

The venv is kept in ``.venv-floor/`` and rebuilt only when the floors change (first run ≈ 30 s
to install, then ≈ 25 s of tests). ``TOOLWATCH_SKIP_FLOOR=1`` skips it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from support.paths import REPO

FLOORS = REPO / "tests" / "instrumentation" / "floor-requirements.txt"
VENV = REPO / ".venv-floor"
#: the instrumentation tests that need no extra (the collector is not installed there)
TESTS = (
    "tests/instrumentation/test_instrumentor.py",
    "tests/instrumentation/test_zero_code.py",
    "tests/instrumentation/test_otlp_export.py",
    "tests/instrumentation/test_export_api.py",
    "tests/instrumentation/test_sdk_hooks.py",
)
TOOLS = ("pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100")


def _floor_venv() -> str:
    stamp = hashlib.sha256((FLOORS.read_text() + " ".join(TOOLS)).encode()).hexdigest()
    python = VENV / "bin" / "python"
    marker = VENV / "floor.sha256"
    if python.exists() and marker.exists() and marker.read_text() == stamp:
        return str(python)
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
    install = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "-c",
        str(FLOORS),
        "-e",
        str(REPO),
        *TOOLS,
    ]
    out = subprocess.run(install, capture_output=True, text=True, timeout=900)
    if out.returncode:
        shutil.rmtree(VENV, ignore_errors=True)
        pytest.fail(f"cannot install the floor versions: {out.stderr[-2000:]}")
    marker.write_text(stamp)
    return str(python)


@pytest.mark.skipif(bool(os.environ.get("TOOLWATCH_SKIP_FLOOR")), reason="TOOLWATCH_SKIP_FLOOR")
def test_instrumentation_passes_at_the_floor_versions() -> None:
    python = _floor_venv()
    versions = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v;"
         "print(v('mcp'), v('opentelemetry-sdk'), v('opentelemetry-instrumentation'), v('wrapt'))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert versions == ["2.3.0", "1.30.0", "0.51b0", "1.16.0"], versions
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and " failed" not in out.stdout
