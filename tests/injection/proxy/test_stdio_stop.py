"""A stdio ``toolwatch proxy`` stopped by SIGTERM, as a real process in front of an upstream that
does not exit when its stdin closes (as a Node server-everything with timers sometimes did not):
the proxy died of the signal at once, and its upstream processes (in groups of their own, which
the signal never reaches) were left running."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.proxy_fuzz_http import PROBE_INITIALIZE
from support.proxy_process import ProxyProcess, gone_within

#: An upstream that notes its pid and lingers a minute after its client leaves.
LINGERING = """
import os, time
from collections.abc import Iterator
from pathlib import Path
from mcp.server.mcpserver import MCPServer

Path(__file__).with_name("pids").joinpath(str(os.getpid())).touch()
server = MCPServer("lingering")


@server.tool()
def echo(text: str) -> str:
    return text


server.run("stdio")
time.sleep(60)
"""


@pytest.fixture
def lingering(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The upstream script and the directory of its pids; any still running at the end is
    killed (a failing test leaves them behind)."""
    script, pids = tmp_path / "lingering.py", tmp_path / "pids"
    script.write_text(LINGERING)
    pids.mkdir()
    yield script, pids
    for pid in _pids(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _pids(pids: Path) -> list[int]:
    return [int(p.name) for p in pids.iterdir()]


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
    started = _pids(pids)
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
    assert [a["id"] for a in answers] == [1, 2] and len(_pids(pids)) == 2
    if stdin == "closed":
        proxy.proc.stdin.close()
    proxy.proc.send_signal(signal.SIGTERM)
    try:
        proxy.proc.wait(10)
    finally:
        log = proxy.stop()
    assert proxy.proc.returncode == 0, log
    assert gone_within(_pids(pids), 5), log
    assert "SIGTERM received: stopped 2 upstream process groups, shutting down" in log, log
    assert "Traceback" not in log
