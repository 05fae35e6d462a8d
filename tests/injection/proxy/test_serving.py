"""``toolwatch proxy --transport http`` stopped by a service manager (SIGTERM) or Ctrl-C
(SIGINT), as a real process: uvicorn raised the signal again after its graceful shutdown, so the
proxy died of it (exit -15) before closing its upstreams, and their processes were left behind.
Ctrl-C is exit 130, as for every toolwatch command (it was 0, as if nothing had stopped it).
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest
from mcp import Client

from support.proxy_process import ProxyProcess, gone_within


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
    assert proxy.proc.returncode == (130 if stop == signal.SIGINT else 0), log
    assert f"{stop.name} received: stopped serving, shutting down" in log
    assert log.rstrip().splitlines()[-1].endswith(f"fault proxy stopped by {stop.name}")
    assert "Traceback" not in log
    assert gone_within(tree[1:], 10)  # no upstream left behind
