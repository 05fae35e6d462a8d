"""``toolwatch proxy --transport http`` stopped by a service manager (SIGTERM) or Ctrl-C
(SIGINT), as a real process: uvicorn raised the signal again after its graceful shutdown, so the
proxy died of it (exit -15) before closing its upstreams, and their processes were left behind.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from support.proxy_process import ProxyProcess


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # not a zombie


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_is_a_clean_exit_with_the_upstreams_closed(
    tmp_path: Path, stop: signal.Signals
) -> None:
    proxy = ProxyProcess(tmp_path, "http")

    async def call() -> str:
        async with Client(proxy.url, mode="legacy") as client:  # its own upstream process too
            result = await client.call_tool("echo", {"text": "hi"})
            return result.content[0].text  # type: ignore[union-attr]

    try:
        assert anyio.run(call) == "hi"
        tree = proxy.tree()
        assert len(tree) >= 3  # the proxy, its shared upstream, the client's own
        proxy.proc.send_signal(stop)
        proxy.proc.wait(30)
    finally:
        log = proxy.stop()
    assert proxy.proc.returncode == 0, log
    assert f"{stop.name} received: stopped serving, shutting down" in log
    assert "Traceback" not in log
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in tree[1:]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in tree[1:])  # no upstream left behind
