"""A handshake-era MCP server with completions and resource subscriptions, over stdio.

``server/discover`` is "Method not found" (as server-everything's, by the proxy's own gate
:func:`~toolwatch.injection.proxy.era.discover_refused`), so an ``auto`` client settles on the
handshake era, the proxy's shared session too; ``touch`` sends its session an update of
each resource subscribed and says its tools changed; a completion is the value with 1 and 2.

Run: ``python tests/support/subscribing_server.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from toolwatch.injection.proxy.era import discover_refused


class Subscribing:
    """The low-level server; its lifespan is one connection's, with its subscriptions."""

    def __init__(self) -> None:
        self.server: Server[Any] = Server(
            "subscribing",
            lifespan=self._lifespan,
            on_list_tools=self._list,
            on_call_tool=self._call,
            on_list_resources=self._resources,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_completion=self._complete,
        )

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        yield {"subscribed": set()}

    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="touch", input_schema={"type": "object"})]
        )

    async def _resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="memo://a", name="a")])

    async def _subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> Any:
        ctx.lifespan_context["subscribed"].add(params.uri)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> Any:
        ctx.lifespan_context["subscribed"].discard(params.uri)
        return types.EmptyResult()

    async def _complete(self, ctx: Any, params: types.CompleteRequestParams) -> Any:
        value = params.argument.value
        return types.CompleteResult(completion=types.Completion(values=[value + "1", value + "2"]))

    async def _call(self, ctx: Any, params: Any) -> types.CallToolResult:
        for uri in sorted(ctx.lifespan_context["subscribed"]):
            await ctx.session.send_resource_updated(uri)
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(type="text", text="touched")])


async def main() -> None:
    server = Subscribing().server
    async with stdio_server() as (read, write), discover_refused(read, write) as gated:
        await server.run(gated, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
