"""A hermetic MCP server for the instrumentation tests (real ``MCPServer``, no network).

Run as a stdio subprocess (``python tests/mcp_test_server.py``) or import :func:`build_server`
for the in-memory transport. Every tool's result is fully determined by its arguments, so the
tests can compute the expected byte sizes on their own:

* ``echo(text)``             → one text block ``text``;
* ``fail(reason)``           → ``is_error=True``, one text block ``"failed: " + reason``;
* ``crash(note)``            → raises ``ValueError`` (the server turns it into ``is_error``);
* ``reject(value)``          → raises ``MCPError(-32602, ...)`` (a JSON-RPC error response);
* ``slow(seconds, text)``    → sleeps, then one text block ``text`` (for client timeouts);
* ``picture(n)``             → one image block with the bytes ``0..n-1`` (base64 on the wire);
* ``structured(n, text)``    → no blocks, structured content ``{"n": n, "text": text}``;
* ``labelled(text, label)``  → one text block ``text`` with ``_meta["toolwatch/label"] = label``;
* ``described(text)``        → (optional) ``text``; its description is chosen by the caller.
"""

from __future__ import annotations

import sys

import anyio
from mcp import MCPError
from mcp.server.mcpserver import Image, MCPServer
from mcp.types import CallToolResult, TextContent

from toolwatch.conventions import LABEL_META_KEY

SERVER_NAME = "toolwatch-test-server"


def build_server(name: str = SERVER_NAME, described: str | None = None) -> MCPServer:
    """A fresh server with the test tools (a new instance per test keeps state apart).

    ``described``: also offer a tool ``described(text)`` (echo) with this description, for
    checking that descriptions never leave the client.
    """
    server = MCPServer(name)

    @server.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Return a tool error (is_error) carrying the reason.")
    def fail(reason: str) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="failed: " + reason)], is_error=True
        )

    @server.tool(description="Raise inside the tool.")
    def crash(note: str) -> str:
        raise ValueError("crash requested: " + note)

    @server.tool(description="Answer with a JSON-RPC error.")
    def reject(value: str) -> str:
        raise MCPError(code=-32602, message="rejected value " + value)

    @server.tool(description="Sleep, then return the text.")
    async def slow(seconds: float, text: str) -> str:
        await anyio.sleep(seconds)
        return text

    @server.tool(description="Return an image of n bytes.")
    def picture(n: int) -> Image:
        return Image(data=bytes(i % 256 for i in range(n)), format="png")

    @server.tool(description="Return structured content only.")
    def structured(n: int, text: str) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"n": n, "text": text})

    @server.tool(description="Return the text with a toolwatch ground-truth label.")
    def labelled(text: str, label: str) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=text)], _meta={LABEL_META_KEY: label}
        )

    if described is not None:
        server.add_tool(lambda text: text, name="described", description=described)
    return server


if __name__ == "__main__":  # python mcp_test_server.py [NAME [DESCRIPTION]]
    build_server(
        sys.argv[1] if len(sys.argv) > 1 else SERVER_NAME,
        sys.argv[2] if len(sys.argv) > 2 else None,
    ).run("stdio")
