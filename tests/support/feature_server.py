"""An MCP server using the SDK's less common features, for the instrumentation tests.

Run as a stdio subprocess (``python feature_server.py stdio``), over streamable HTTP
(``python feature_server.py http PORT``) or import :func:`build_feature_server` in memory.
Every result is determined by the arguments, so the tests can predict the byte sizes:

* ``typed(text)``       → a ``Reply`` (output schema): a JSON text block of ``{"text": text}``
  and the same object as structured content;
* ``bare(text)``        → no blocks, structured content ``{"text": text}`` (output schema);
* ``chatty(text, n)``   → ``n`` progress notifications and ``n`` log messages quoting ``text``,
  then one text block ``text``;
* ``slow(seconds)``     → sleeps, then ``"done"``;
* ``stall(seconds)``    → one progress notification (to a client that asked for progress, the
  answer's SSE stream has begun over HTTP), then as ``slow``;
* ``fail(text)``        → ``is_error=True`` with one text block ``text``;
* ``reject(text, code)`` → a JSON-RPC error ``code`` (-32602 by default) quoting ``text``;
* ``die(text)``         → the server process exits mid-call (stdio and HTTP only);
* ``sized(n, text)``    → one text block: ``text`` repeated ``n`` times (concurrency);
* :data:`LONG_NAME`     → echo, under a 300-character name with non-ASCII letters.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
from mcp import MCPError, StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

FEATURE_SERVER_NAME = "toolwatch-feature-server"
#: 300 characters (Greek, CJK, an accent): 3 bytes or 2 bytes each in UTF-8
LONG_NAME = ("ε工é" * 100)[:300]


class Reply(BaseModel):
    text: str


def build_feature_server(name: str = FEATURE_SERVER_NAME) -> MCPServer:
    """A fresh server with the feature tools."""
    server = MCPServer(name)

    @server.tool(description="Return a typed reply (text block and structured content).")
    def typed(text: str) -> Reply:
        return Reply(text=text)

    @server.tool(description="Return structured content only.")
    def bare(text: str) -> Annotated[CallToolResult, Reply]:
        return CallToolResult(content=[], structured_content={"text": text})

    @server.tool(description="Report progress and log while working.")
    async def chatty(text: str, n: int, ctx: Context) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n, message=f"step {i}: {text}")
            with warnings.catch_warnings():  # logging is deprecated from 2026-07-28 on
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await ctx.log("info", f"log {i}: {text}")
        return text

    @server.tool(description="Sleep, then answer.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    @server.tool(description="Report progress once, then sleep and answer.")
    async def stall(seconds: float, ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await anyio.sleep(seconds)
        return "done"

    @server.tool(description="Return a tool error (is_error).")
    def fail(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    @server.tool(description="Answer with a JSON-RPC error.")
    def reject(text: str, code: int = -32602) -> str:
        raise MCPError(code=code, message="rejected " + text)

    @server.tool(description="Exit the server process mid-call.")
    def die(text: str) -> str:
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Return the text n times.")
    async def sized(n: int, text: str) -> str:
        await anyio.sleep(0.001 * (n % 7))  # answers arrive out of order
        return text * n

    server.add_tool(lambda text: text, name=LONG_NAME, description="Echo, long name.")
    return server


@contextmanager
def feature_server_over_http() -> Iterator[str]:
    """The feature server in a child process over streamable HTTP; yields its MCP URL."""
    with feature_server_process_over_http() as (url, _):
        yield url


@contextmanager
def feature_server_process_over_http(
    transport: str = "http", *, list_delay: float = 0.0
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """As :func:`feature_server_over_http`, with the server's process (to kill it mid-call).

    ``transport``: ``http`` (streamable HTTP, yields its ``/mcp`` URL) or ``sse`` (the legacy
    SSE transport, yields its ``/sse`` URL); ``list_delay``: seconds each ``tools/list`` waits
    before answering (to kill the server while a listing waits).
    """
    from support.collector_process import free_port  # not on the child's path

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, transport, str(port), str(list_delay)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "the HTTP feature server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP feature server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}", proc
    finally:
        proc.kill()
        proc.wait()


def feature_server_over_stdio() -> StdioServerParameters:
    """How to start the feature server as a stdio subprocess."""
    return StdioServerParameters(command=sys.executable, args=[__file__, "stdio"])


if __name__ == "__main__":  # python feature_server.py stdio | http|sse PORT [LIST_DELAY]
    built = build_feature_server()
    if sys.argv[1:2] in (["http"], ["sse"]):
        import uvicorn

        delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
        if delay:
            listed = built.list_tools

            async def slow_listing() -> list[Any]:
                await anyio.sleep(delay)
                return await listed()

            built.list_tools = slow_listing  # type: ignore[method-assign]
        uvicorn.run(
            built.sse_app() if sys.argv[1] == "sse" else built.streamable_http_app(),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
        )
    else:
        built.run("stdio")
