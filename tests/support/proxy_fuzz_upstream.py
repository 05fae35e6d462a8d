"""A small real MCP server (``MCPServer``, the SDK's FastMCP) for the proxy fuzz, over stdio.

Results are determined by the arguments, so a well-behaved client can check every answer:

* ``echo(text)``          → one text block ``text``;
* ``slow(seconds, text)`` → sleeps (at most 5 s), then ``text``: a call to disconnect from;
* ``chatty(text)``        → three log lines (``notifications/message``), then ``text``;
* ``ask()``               → asks its client who it is (elicitation: mid-call in the handshake
  era, an ``InputRequiredResult`` with a ``requestState`` on 2026-07-28), then ``hi NAME``;
* ``fail(reason)``        → ``is_error`` with ``failed: reason``.

Run: ``python tests/support/proxy_fuzz_upstream.py``.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


class Who(BaseModel):
    name: str


def _ask_name() -> Elicit[Who]:
    return Elicit("Who are you?", Who)


def build_server() -> MCPServer:
    """The fuzz upstream's tools (see the module docstring)."""
    server = MCPServer("proxy-fuzz-upstream")

    @server.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Sleep (at most 5 s), then return the text.")
    async def slow(seconds: float, text: str) -> str:
        await anyio.sleep(min(max(seconds, 0.0), 5.0))
        return text

    @server.tool(description="Log three lines, then return the text.")
    async def chatty(text: str, ctx: Context) -> str:
        for i in range(3):
            await ctx.info(f"line {i}")
        return text

    @server.tool(description="Ask the client who it is.")
    async def ask(who: Annotated[Who, Resolve(_ask_name)]) -> str:
        return f"hi {who.name}"

    @server.tool(description="Return a tool error carrying the reason.")
    def fail(reason: str) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="failed: " + reason)], is_error=True
        )

    return server


if __name__ == "__main__":
    build_server().run("stdio")
