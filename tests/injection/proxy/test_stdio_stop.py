"""A stdio ``toolwatch proxy`` stopped by SIGTERM, as a real process in front of an upstream that
does not exit when its stdin closes (as a Node server-everything with timers sometimes did not):
the proxy died of the signal at once, and its upstream processes (in groups of their own, which
the signal never reaches) were left running."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import signal
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.client.stdio as sdk_stdio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from support.proxy_fuzz_http import PROBE_INITIALIZE
from support.proxy_process import ProxyProcess, gone_within, lingering_upstream, noted_pids
from toolwatch.injection.proxy import stdio_stop


@pytest.fixture
def lingering(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The lingering upstream script and the directory of its pids (killed at the end)."""
    with lingering_upstream(tmp_path) as found:
        yield found


def test_a_client_that_leaves_leaves_no_upstream_behind(
    tmp_path: Path, lingering: tuple[Path, Path]
) -> None:
    """The mcp client closes the proxy's stdin, then sends SIGTERM 2 s later, while the proxy
    still waits (2 s for each upstream, its own session's first) for its upstreams to exit."""
    script, pids = lingering
    upstream = f"{sys.executable} {script}"
    command = [sys.executable, "-m", "toolwatch", "proxy", "--upstream-cmd", upstream]
    params = StdioServerParameters(
        command="sh", args=["-c", 'exec "$@" 2>proxy.err', "sh", *command], cwd=str(tmp_path)
    )

    async def main() -> Any:
        async with Client(params, mode="legacy") as client:  # its own upstream process too
            return (await client.call_tool("echo", {"text": "hi"})).content[0].text  # type: ignore[union-attr]

    assert anyio.run(main) == "hi"
    started = noted_pids(pids)
    log = (tmp_path / "proxy.err").read_text()
    assert len(started) == 2, log  # the shared upstream and the client's own
    assert gone_within(started, 10), log
    assert "SIGTERM received: stopped " in log  # both upstreams or the one still closing
    assert "Traceback" not in log


INIT = PROBE_INITIALIZE


@pytest.mark.parametrize("stdin", ["open", "closed"])
def test_sigterm_stops_the_upstreams_at_once_and_exits_0(
    tmp_path: Path, lingering: tuple[Path, Path], stdin: str
) -> None:
    """SIGTERM with the client still connected (a service manager's stop: the proxy must not
    wait for a line that never comes), or just after it closed the proxy's stdin."""
    script, pids = lingering
    proxy = ProxyProcess(tmp_path, "stdio", upstream=script)
    assert proxy.proc.stdin is not None and proxy.proc.stdout is not None
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}  # opens the client's own
    for message in (INIT, initialized, listing):
        proxy.proc.stdin.write(json.dumps(message).encode() + b"\n")
        proxy.proc.stdin.flush()
    answers = [json.loads(proxy.proc.stdout.readline()) for _ in range(2)]
    assert [a["id"] for a in answers] == [1, 2] and len(noted_pids(pids)) == 2
    if stdin == "closed":
        proxy.proc.stdin.close()
    proxy.proc.send_signal(signal.SIGTERM)
    try:
        proxy.proc.wait(10)
    finally:
        log = proxy.stop()
    assert proxy.proc.returncode == 0, log
    assert gone_within(noted_pids(pids), 5), log
    assert "SIGTERM received: stopped 2 upstream process groups, shutting down" in log, log
    assert "Traceback" not in log


#: A2 on the fuzz upstream's ``echo``: every call answered with a JSON-RPC 503 (labelled).
ECHO_A2 = {
    "format": "toolwatch-scenario/1",
    "id": "echo-a2",
    "fault_type": "A2",
    "domain": "test",
    "task": "Echo a word.",
    "tools": [
        {
            "name": "echo",
            "description": "Return the text unchanged.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "response": {"structured": {"result": "hi"}},
        }
    ],
    "fault": {
        "tool": "echo",
        "action": "replace_with_error",
        "occurrence": {"from": 1},
        "params": {"as": "jsonrpc", "status": 503, "jsonrpc_code": -32603},
    },
    "scoring": {
        "minimum_pass_criterion": "The agent says the echo failed.",
        "clear_failure_signal": "The agent makes up the echo.",
        "acceptable_behaviors": ["Retries the echo.", "Says the echo failed."],
    },
    "checks": {
        "endpoint_allowlist": [],
        "expected_value": {"tool": "echo", "pointer": "/result", "value": "hi"},
    },
}


def test_ctrl_c_exits_130_with_the_injection_log_and_summary_written(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) with a client connected: exit 130 as every toolwatch command interrupted
    (it was 0), the run summary and a last "stopped" line said, every injection in the log."""
    (tmp_path / "echo.json").write_text(json.dumps(ECHO_A2))
    log = tmp_path / "injections.jsonl"
    extra = ["--scenario", str(tmp_path / "echo.json"), "--injection-log", str(log)]
    proxy = ProxyProcess(tmp_path, "stdio", extra=extra)
    assert proxy.proc.stdin is not None and proxy.proc.stdout is not None
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    calls = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo",
         "arguments": {"text": "hi"}}}
        for n in (2, 3)
    ]  # fmt: skip
    for message in (INIT, initialized, *calls):
        proxy.proc.stdin.write(json.dumps(message).encode() + b"\n")
        proxy.proc.stdin.flush()
    answers = [json.loads(proxy.proc.stdout.readline()) for _ in range(3)]
    assert [a["error"]["data"]["toolwatch/label"] for a in answers[1:]] == ["A2:echo-a2"] * 2
    proxy.proc.send_signal(signal.SIGINT)
    try:
        proxy.proc.wait(10)
    finally:
        text = proxy.stop()
    assert proxy.proc.returncode == 130, text
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["occurrence"], r["outcome"]) for r in rows] == [(1, "injected"), (2, "injected")]
    lines = text.rstrip().splitlines()
    assert "SIGINT received: stopped " in text and "Traceback" not in text
    assert "run summary: 2 injections made, 0 not applicable" in lines[-2]
    assert lines[-1].endswith("fault proxy stopped by SIGINT")


def test_the_sdk_still_spawns_upstreams_through_the_function_stdio_stop_wraps() -> None:
    """mcp's public API hands a stdio client's process to no one, so ``stdio_stop`` wraps the
    SDK's private spawn function to reach the upstreams on a stop signal. Pinned here: an SDK
    that renames it, or spawns otherwise, fails this test by name, not deep in a stop."""
    version = importlib.metadata.version("mcp")
    spawn = getattr(sdk_stdio, stdio_stop.SPAWN_FUNCTION, None)
    assert stdio_stop.SPAWN_NOTED and getattr(spawn, "toolwatch_notes", False), (
        f"mcp {version} has no mcp.client.stdio.{stdio_stop.SPAWN_FUNCTION} to wrap: "
        "injection/proxy/stdio_stop.py can no longer stop upstream processes on a signal"
    )
    idle = StdioServerParameters(command=sys.executable, args=["-c", "input()"])

    async def main() -> int:
        with stdio_stop.noting_upstreams():
            async with stdio_client(idle):
                return len(list(stdio_stop._UPSTREAMS))

    assert anyio.run(main) >= 1, (
        f"mcp {version}'s stdio_client no longer starts its process through "
        f"{stdio_stop.SPAWN_FUNCTION}: injection/proxy/stdio_stop.py notes no upstream"
    )


def test_an_sdk_without_the_spawn_function_is_said_not_passed_over(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """It used to return quietly: the upstreams then outlived a stopped proxy unannounced."""
    assert stdio_stop._wrap_spawn(types.SimpleNamespace()) is False
    monkeypatch.setattr(stdio_stop, "SPAWN_NOTED", False)

    async def main() -> None:
        async with stdio_stop.stopped_by_signals():
            pass
        async with stdio_stop.stopped_by_signals(upstreams=False):  # none to reach
            pass

    with caplog.at_level(logging.WARNING, logger=stdio_stop.__name__):
        anyio.run(main)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1, said
    assert said[0].startswith(f"mcp {importlib.metadata.version('mcp')}'s stdio client does ")
    assert "_create_platform_compatible_process: a stop signal cannot stop" in said[0]
