"""Progress through the fault proxy: a client that sends a ``progressToken`` gets the
upstream's ``notifications/progress`` as a direct connection would; one that sends none gets
none, and the upstream is asked without a token. (The proxy used to drop the token, so a long
call — server-everything's ``trigger-long-running-operation`` — went silent.)"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from toolwatch.injection.proxy.proxy import run_proxy

#: A stdio upstream whose tool reports three steps and says whether it was asked for them.
UPSTREAM = textwrap.dedent(
    """
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("progressing")

    @server.tool(description="Reports progress in three steps.")
    async def work(steps: int, ctx: Context) -> str:
        asked = (ctx.request_context.meta or {}).get("progress_token") is not None
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"done in {steps}, asked={asked}"

    server.run("stdio")
    """
)


async def _run(target: Any, mode: str, *, want_progress: bool) -> tuple[str, list[Any]]:
    seen: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(target, mode=mode) as client:
        result = await client.call_tool(
            "work", {"steps": 3}, progress_callback=on_progress if want_progress else None
        )
    return result.content[0].text, seen  # type: ignore[union-attr]


def test_progress_reaches_the_client_as_over_a_direct_connection(tmp_path: Path) -> None:
    """The client's leg in process with JSON-RPC framing (``legacy``), the upstream's over
    stdio. An in-process 2026 client dispatches directly, with no ``progressToken`` for the
    proxy to see or relay; over real stdio and HTTP both eras are relayed."""
    mode = "legacy"
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    upstream = StdioServerParameters(command=sys.executable, args=[str(script)])
    steps = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

    async def main() -> None:
        direct = await _run(upstream, "legacy", want_progress=True)
        async with run_proxy(None, upstream) as proxy:
            proxied = await _run(proxy, mode, want_progress=True)
            quiet = await _run(proxy, mode, want_progress=False)
        assert direct == ("done in 3, asked=True", steps)
        assert proxied == direct
        assert quiet == ("done in 3, asked=False", [])  # no token asked of the upstream

    anyio.run(main)
