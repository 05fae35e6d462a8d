"""A client's ``notifications/cancelled`` through the fault proxy reaches the upstream, as over a
direct connection: the upstream's tool stops its work. A proxy that dropped it left every
abandoned call running upstream (a long search, a slow fetch) until it finished by itself.
The client's leg is a real ``toolwatch proxy`` process over stdio and over HTTP, in both
protocol eras; the upstream a stdio server whose tool waits and notes how it ended."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.proxy_process import ProxyProcess

#: A stdio upstream whose ``wait`` tool notes that it started, then how it ended (a
#: cancellation, or 30 s later done), in files beside the script.
UPSTREAM = textwrap.dedent(
    """
    from pathlib import Path
    import anyio
    from mcp.server.mcpserver import MCPServer

    here = Path(__file__).parent
    server = MCPServer("waiting")

    @server.tool(description="Waits half a minute.")
    async def wait(tag: str) -> str:
        here.joinpath(f"started-{tag}").touch()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            here.joinpath(f"cancelled-{tag}").touch()
            raise
        return "done"

    server.run("stdio")
    """
)


def _appears(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def _abandon(target: Any, mode: str, here: Path, tag: str) -> tuple[bool, bool]:
    """Call ``wait`` and cancel the call once the upstream runs it; whether it started, and
    whether the upstream then saw its cancellation (within 10 s)."""
    async with Client(target, mode=mode) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "wait", {"tag": tag})
            started = await anyio.to_thread.run_sync(_appears, here / f"started-{tag}", 30)
            tg.cancel_scope.cancel()
        seen = await anyio.to_thread.run_sync(_appears, here / f"cancelled-{tag}", 10)
    return started, seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path, transport: str, mode: str) -> None:
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    if transport == "stdio":
        upstream = f"{sys.executable} {script}"
        args = ["-m", "toolwatch", "proxy", "--upstream-cmd", upstream]
        target: Any = StdioServerParameters(command=sys.executable, args=args)
        assert anyio.run(_abandon, target, mode, tmp_path, "proxied") == (True, True)
        return
    proxy = ProxyProcess(tmp_path / "proxy", "http", upstream=script)
    try:
        assert anyio.run(_abandon, proxy.url, mode, tmp_path, "proxied") == (True, True)
    finally:
        log = proxy.stop()
    assert "Traceback" not in log, log
