"""``toolwatch workbench``'s output paths: one it cannot use is said before the first run, in
one line, exit 1 (output it cannot use, as every command says it), nothing run nor stored."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

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
