"""A 2026-07-28 client that asks for log lines (``_meta`` ``io.modelcontextprotocol/logLevel``)
gets its request's ``notifications/message`` through the fault proxy as directly: for a tool
call, a prompt and a resource, at the level it asked, before the answer, over every transport.
(The proxy used to withhold the opt-in of a call, so a client got no line; a prompt's or a
resource's went up, and the shared session dropped the lines uncounted.) On the one shared
upstream connection one request holds the lines at a time: another's opt-in is withheld,
counted; a line no request asked for is counted, never relayed."""

from __future__ import annotations

import logging
import runpy
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from toolwatch.injection.proxy.log_lines import UNTIED
from toolwatch.injection.proxy.proxy import http_server, run_proxy

#: An upstream whose tool, prompt and resource log at three levels (the SDK sends a request's
#: lines only when it opted in, at or above its level); ``wait`` logs, waits for ``go``, logs.
UPSTREAM = textwrap.dedent(
    """
    import warnings

    import anyio
    from mcp import MCPError
    from mcp.server.mcpserver import Context, MCPServer

    warnings.simplefilter("ignore")
    go = anyio.Event()
    waiting = []


    def build():
        server = MCPServer("chatty")

        @server.tool()
        async def chatty(n: int, ctx: Context) -> str:
            for level in ("debug", "info", "error"):
                await ctx.log(level, f"call {n} {level}")
            return f"done {n}"

        @server.tool()
        async def fails(ctx: Context) -> str:
            await ctx.log("error", "about to fail")
            raise MCPError(code=-32602, message="no such thing")

        @server.tool()
        async def wait(who: str, ctx: Context) -> str:
            await ctx.log("info", f"{who} started")
            waiting.append(who)
            await go.wait()
            await ctx.log("info", f"{who} ended")
            return who

        @server.prompt()
        async def hello(ctx: Context) -> str:
            await ctx.log("info", "prompt line")
            return "hi"

        @server.resource("doc://{name}")
        async def doc(name: str, ctx: Context) -> str:
            await ctx.log("warning", f"read {name}")
            return name

        return server


    if __name__ == "__main__":
        build().run("stdio")
    """
)


async def _observe(target: Any, level: str | None = "info") -> list[Any]:
    """What a 2026-07-28 client sees, in order: each line and each answer."""
    seen: list[Any] = []

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append((params.level, params.data))

    async with Client(target, log_level=level, logging_callback=log) as client:  # type: ignore[arg-type]
        seen.append(client.protocol_version)
        for n in (1, 2):
            result = await client.call_tool("chatty", {"n": n})
            seen.append(result.content[0].text)  # type: ignore[union-attr]
        try:
            await client.call_tool("fails", {})
        except MCPError as exc:  # the upstream's own error, after its line
            seen.append((exc.error.code, exc.error.message))
        prompt = await client.get_prompt("hello")
        seen.append(prompt.messages[0].content.text)  # type: ignore[union-attr]
        resource = await client.read_resource("doc://x")
        seen.append(resource.contents[0].text)  # type: ignore[union-attr]
    return seen


@pytest.mark.parametrize(
    ("upstream", "leg"),
    [("in process", "in process"), ("http", "http"), ("stdio", "in process"), ("stdio", "http")],
)
def test_a_2026_client_gets_its_log_lines_as_directly(
    upstream: str, leg: str, tmp_path: Path
) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(UPSTREAM)
    server = runpy.run_path(str(script), run_name="chatty")["build"]()

    async def main() -> tuple[list[Any], list[Any], list[Any], Any]:
        async with http_server(server) as served:
            target: Any = {
                "in process": server,
                "http": served.url,
                "stdio": StdioServerParameters(command=sys.executable, args=[str(script)]),
            }[upstream]
            direct = await _observe(target)
            async with run_proxy(None, target) as proxy:
                if leg == "in process":
                    proxied = await _observe(proxy)
                    quiet = await _observe(proxy, level=None)
                else:
                    async with http_server(proxy) as endpoint:
                        proxied = await _observe(endpoint.url)
                        quiet = await _observe(endpoint.url, level=None)
                return direct, proxied, quiet, proxy.upstream.lines

    direct, proxied, quiet, lines = anyio.run(main)
    assert direct == [
        "2026-07-28",
        ("info", "call 1 info"),
        ("error", "call 1 error"),
        "done 1",
        ("info", "call 2 info"),
        ("error", "call 2 error"),
        "done 2",
        ("error", "about to fail"),
        (-32602, "no such thing"),
        ("info", "prompt line"),
        "hi",
        ("warning", "read x"),
        "x",
    ]
    assert proxied == direct
    lines_seen = [s for s in direct if isinstance(s, tuple) and isinstance(s[0], str)]
    assert quiet == [s for s in direct if s not in lines_seen]  # none asked, none sent
    assert (lines.relayed, lines.withheld, dict(lines.dropped)) == (7, 0, {})


def test_one_request_holds_the_lines_another_clients_opt_in_is_withheld_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two clients' calls in flight at once on the shared connection: the first holds the
    lines and gets all of its own; the second's opt-in is withheld (its server sends it none,
    so no line of one client reaches the other), counted and said."""
    script = tmp_path / "chatty.py"
    script.write_text(UPSTREAM)
    module = runpy.run_path(str(script), run_name="chatty")
    server, waiting, go = module["build"](), module["waiting"], module["go"]
    seen: dict[str, list[Any]] = {"first": [], "second": []}

    async def client(proxy: Any, who: str) -> None:
        async def log(params: types.LoggingMessageNotificationParams) -> None:
            seen[who].append(params.data)

        async with Client(proxy, log_level="info", logging_callback=log) as c:
            result = await c.call_tool("wait", {"who": who})
            seen[who].append(result.content[0].text)  # type: ignore[union-attr]

    async def main() -> Any:
        async with run_proxy(None, server) as proxy, anyio.create_task_group() as tg:
            tg.start_soon(client, proxy, "first")
            with anyio.fail_after(5):
                while waiting != ["first"]:
                    await anyio.sleep(0.01)
            tg.start_soon(client, proxy, "second")
            with anyio.fail_after(5):
                while waiting != ["first", "second"]:
                    await anyio.sleep(0.01)
            go.set()
        return proxy.upstream.lines

    with caplog.at_level(logging.WARNING, logger="toolwatch.injection.proxy.log_lines"):
        lines = anyio.run(main)
    assert seen == {"first": ["first started", "first ended", "first"], "second": ["second"]}
    assert (lines.relayed, lines.withheld, dict(lines.dropped)) == (2, 1, {})
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "not passed on" in said[0] and "another request" in said[0]


def _unasked() -> Server[Any]:
    """A server that sends a line for a request that asked for none (against the spec)."""

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        line = types.LoggingMessageNotificationParams(level="error", data="secret-line-9")
        note = types.LoggingMessageNotification(params=line)
        await ctx.session.send_notification(note, related_request_id=ctx.request_id)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    async def listing(ctx: Any, params: Any) -> types.ListToolsResult:
        tool = types.Tool(name="loud", input_schema={"type": "object"})
        return types.ListToolsResult(tools=[tool])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return Server("loud", on_list_tools=listing, on_call_tool=call)


def test_a_line_no_request_asked_for_is_counted_and_relayed_to_no_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = _unasked()
    seen: list[Any] = []

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        seen.append(params.data)

    async def main() -> Any:
        async with run_proxy(None, server) as proxy:
            async with Client(proxy, logging_callback=log) as client:
                for _ in range(3):
                    await client.call_tool("loud", {})
            return proxy.upstream.lines

    with caplog.at_level(logging.WARNING, logger="toolwatch.injection.proxy.log_lines"):
        lines = anyio.run(main)
    assert seen == []
    assert dict(lines.dropped) == {UNTIED: 3} and lines.relayed == 0
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2  # the 1st and 2nd said, the 3rd counted (4th, 8th, … said)
    assert "(2 such lines so far)" in said[1] and UNTIED in said[1]
    assert not any("secret-line-9" in s for s in said)
