"""A 2026-07-28 upstream's change notifications through the real fault proxy, over real HTTP
on both sides: the proxy announced ``listChanged: false`` (and served no
``subscriptions/listen``) whatever the upstream said, so a client never heard of a change."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent, ToolsListChanged
from mcp_types import METHOD_NOT_FOUND

from toolwatch.injection.proxy.proxy import http_server, run_proxy


def changing_upstream(*, subscriptions: bool = True) -> MCPServer:
    """An upstream whose tools announce a change of its tools and an update of its memo."""
    server = MCPServer("changing", subscriptions=None if subscriptions else False)

    @server.tool(description="Adds a tool.")
    async def grow(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool(description="Rewrites the memo.")
    async def touch(ctx: Context) -> str:
        await ctx.notify_resource_updated("memo://today")
        return "touched"

    @server.resource("memo://today", description="A memo.")
    def memo() -> str:
        return "remember the milk"

    return server


def flags(client: Client) -> dict[str, Any]:
    caps = client.server_capabilities
    return {
        kind: getattr(caps, kind).model_dump(exclude_none=True)
        for kind in ("tools", "prompts", "resources")
        if getattr(caps, kind) is not None
    }


def test_a_2026_client_gets_the_upstreams_flags_and_its_change_notifications() -> None:
    events: list[ServerEvent] = []

    async def main() -> None:
        async with (
            http_server(changing_upstream()) as upstream,
            run_proxy(None, upstream.url) as proxy,
            http_server(proxy) as front,
            Client(upstream.url) as direct,
            Client(front.url) as client,
        ):
            assert client.protocol_version == "2026-07-28"
            assert flags(client) == flags(direct)
            assert flags(client)["tools"] == {"list_changed": True}
            async with client.listen(
                tools_list_changed=True, resource_subscriptions=["memo://today"]
            ) as subscription:
                assert subscription.honored.tools_list_changed is True
                assert subscription.honored.resource_subscriptions == ["memo://today"]
                with anyio.fail_after(10):
                    for tool in ("grow", "touch"):
                        await client.call_tool(tool, {})
                        events.append(await subscription.__anext__())
            async with Client(front.url, mode="legacy") as legacy:
                # What this upstream offers the handshake era is not known: no promise.
                assert flags(legacy)["tools"] == {"list_changed": False}

    anyio.run(main)
    assert events == [ToolsListChanged(), ResourceUpdated(uri="memo://today")]


def test_an_upstream_that_serves_no_listen_stream_is_passed_through_as_such() -> None:
    async def main() -> None:
        async with (
            http_server(changing_upstream(subscriptions=False)) as upstream,
            run_proxy(None, upstream.url) as proxy,
            http_server(proxy) as front,
            Client(upstream.url) as direct,
            Client(front.url) as client,
        ):
            assert flags(client) == flags(direct)
            assert flags(client)["tools"] == {"list_changed": False}
            with pytest.raises(MCPError) as info:
                async with client.listen(tools_list_changed=True):
                    pass
            assert info.value.error.code == METHOD_NOT_FOUND

    anyio.run(main)
