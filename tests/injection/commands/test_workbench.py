"""``toolwatch workbench``'s output paths: one it cannot use is said before the first run, in
one line, exit 1 (output it cannot use, as every command says it), nothing run nor stored."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.disk import NOBODY, as_unprivileged, world_readable_dir
from support.workbench import scenario
from toolwatch.cli import main as cli_main
from toolwatch.injection.faults.codec import scenario_to_json


@pytest.fixture(autouse=True)
def _sdk_log_level_restored() -> Iterator[None]:
    """``workbench`` quiets the in-process servers' INFO (``mcp.server`` at WARNING) for the
    rest of its process: run in the tests' process, that level is put back, or later tests of
    the SDK's log lines (tests/injection/proxy) see none."""
    logger = logging.getLogger("mcp.server")
    level = logger.level
    yield
    logger.setLevel(level)


def test_suite_json_it_cannot_write_is_refused_before_the_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``suite --json FILE`` is written after the whole suite: a path it could never write
    failed then (exit 1 with the OS's words, the summary lost); it is now said first, in one
    line, exit 1, nothing run nor stored."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "a2.json").write_text(json.dumps(scenario_to_json(scenario("A2"))))
    store = tmp_path / "s"
    for out, why in [
        (tmp_path / "no-dir" / "out.json", f"no directory {tmp_path / 'no-dir'}"),
        (folder, "it is a directory"),
    ]:
        argv = ["workbench", "suite", "--scenarios", str(folder), "--agents", "naive"]
        argv += ["--store", str(store), "--no-telemetry", "--json", str(out)]
        assert cli_main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err == f"toolwatch workbench: --json: cannot write {out}: {why}"
    assert not store.exists()


@pytest.mark.parametrize("what", ["read-only file", "read-only folder"])
def test_suite_json_without_permission_is_refused_as_a_normal_user(what: str) -> None:
    """The permission half of the check binds only for a normal user (root may write
    anything): the command is run as one (``nobody``, when the tests run as root), so a
    read-only ``--json`` file, or a new one in a folder it cannot write, is one line and exit
    1 before the first run: nothing stored, no progress bar, no summary."""
    with world_readable_dir() as root:
        folder = root / "scenarios"
        folder.mkdir()
        (folder / "a2.json").write_text(json.dumps(scenario_to_json(scenario("A2"))))
        outputs = root / "out"
        outputs.mkdir(mode=0o755 if what == "read-only folder" else 0o777)
        outputs.chmod(0o755 if what == "read-only folder" else 0o777)
        out = outputs / "summary.json"
        if what == "read-only file":
            out.write_text("{}\n")
            out.chmod(0o444)
            if os.geteuid() == 0:
                os.chown(out, NOBODY, NOBODY)  # its own file: only the mode says no
        store = outputs / "store"
        argv = [sys.executable, "-m", "toolwatch", "workbench", "suite", "--agents", "naive"]
        argv += ["--scenarios", str(folder), "--store", str(store), "--no-telemetry"]
        done = subprocess.run(
            as_unprivileged([*argv, "--json", str(out)]),
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(root)},
            timeout=120,
        )
        why = "permission denied" if what == "read-only file" else f"{outputs} is not writable"
        assert done.stderr == f"toolwatch workbench: --json: cannot write {out}: {why}\n"
        assert done.returncode == 1 and done.stdout == ""
        assert not store.exists()
        assert not out.exists() or out.read_text() == "{}\n"
