"""``$TOOLWATCH_LOG_LEVEL``: the log level of a command run without ``-v``, so a program that
starts toolwatch as a child (the demo's stdio MCP servers) keeps the child's INFO lines off its
own stderr; a name that is no level is bad usage in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

START_LINE = "INFO toolwatch.injection.commands.serve_scenario: serving scenario a2-legal-01"


def serve(level: str | None) -> subprocess.CompletedProcess[str]:
    """``toolwatch serve-scenario`` over stdio, its client gone at once (stdin closed)."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLWATCH_LOG_LEVEL"}
    if level is not None:
        env["TOOLWATCH_LOG_LEVEL"] = level
    return subprocess.run(
        [sys.executable, "-m", "toolwatch", "serve-scenario", "a2-legal-01"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(("level", "shown"), [(None, True), ("", True), ("warning", False)])
def test_the_level_keeps_a_commands_info_lines_off_stderr(level: str | None, shown: bool) -> None:
    done = serve(level)
    assert done.returncode == 0, done.stderr
    assert (START_LINE in done.stderr) is shown, done.stderr


def test_a_name_that_is_no_level_is_bad_usage_in_one_line() -> None:
    done = serve("loud")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "toolwatch serve-scenario: $TOOLWATCH_LOG_LEVEL 'loud' is not a log level "
        "(DEBUG, INFO, WARNING, ERROR)"
    ]
