"""A 2026-07-28 upstream's change notifications, relayed to the proxy's 2026-07-28 clients.

From 2026-07-28 a server's ``listChanged`` (and ``resources.subscribe``) flags say whether it
serves ``subscriptions/listen``: the stream on which its ``*/list_changed`` and
``resources/updated`` notifications reach a client. The proxy served no such stream, so it
announced ``listChanged: false`` whatever the upstream said, and a client never learnt that
the upstream's tools had changed. Now, when the upstream's flags say it serves the stream,
every ``subscriptions/listen`` of a client opens one on the upstream with the same filter,
acknowledges what the upstream honoured, and relays its events (:class:`ListenRelay`); the
proxy announces the upstream's own flags (:func:`upstream_flags`).

A handshake-era (pre-2026) client hears of changes on its own upstream session
(:mod:`.sessions`), which in front of a 2026-07-28 upstream is not known to offer them: there
it is told ``listChanged: false``, a flag the proxy could not keep being a promise it breaks.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client.subscriptions import SubscriptionLost
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolwatch.injection.proxy.upstream import Upstream, UpstreamUnavailable

logger = logging.getLogger(__name__)


def relays_changes(upstream: Upstream) -> bool:
    """Whether the upstream (a 2026-07-28 connection) serves ``subscriptions/listen``."""
    client = upstream.client
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = client.server_capabilities
    return any(
        (
            caps.tools is not None and caps.tools.list_changed,
            caps.prompts is not None and caps.prompts.list_changed,
            caps.resources is not None
            and (caps.resources.list_changed or caps.resources.subscribe),
        )
    )


def upstream_flags(
    own: types.ServerCapabilities, upstream: types.ServerCapabilities
) -> types.ServerCapabilities:
    """``own`` (what the proxy serves) with the upstream's change flags: the SDK derives every
    one of them from serving ``subscriptions/listen``, the upstream may say less."""
    update: dict[str, Any] = {}
    if own.tools is not None:
        flag = upstream.tools.list_changed if upstream.tools else None
        update["tools"] = own.tools.model_copy(update={"list_changed": flag})
    if own.prompts is not None:
        flag = upstream.prompts.list_changed if upstream.prompts else None
        update["prompts"] = own.prompts.model_copy(update={"list_changed": flag})
    if own.resources is not None:
        theirs = upstream.resources
        update["resources"] = own.resources.model_copy(
            update={
                "list_changed": theirs.list_changed if theirs else None,
                "subscribe": theirs.subscribe if theirs else None,
            }
        )
    return own.model_copy(update=update)


class ListenRelay:
    """Serves a client's ``subscriptions/listen`` with one of the upstream's: the same filter,
    the upstream's acknowledgement, its events; its graceful close closes the client's stream,
    a dropped one ends the client's with the proxy's ``-32603`` (the client re-listens)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    async def __call__(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        asked = params.notifications
        client = await self.upstream.connected()
        try:
            async with client.listen(
                tools_list_changed=asked.tools_list_changed is True,
                prompts_list_changed=asked.prompts_list_changed is True,
                resources_list_changed=asked.resources_list_changed is True,
                resource_subscriptions=asked.resource_subscriptions or (),
            ) as subscription:
                return await self._relay(ctx, params, subscription)
        except (SubscriptionLost, MCPError) as exc:
            if isinstance(exc, MCPError) and exc.error.code != types.CONNECTION_CLOSED:
                raise  # the upstream's own refusal
            raise UpstreamUnavailable(
                f"upstream {self.upstream.name}: its subscriptions/listen stream ended "
                "without its graceful close"
            ) from exc

    async def _relay(
        self,
        ctx: ServerRequestContext[Any],
        params: types.SubscriptionsListenRequestParams,
        subscription: Any,
    ) -> types.SubscriptionsListenResult:
        bus = InMemorySubscriptionBus()
        handler = ListenHandler(bus)
        honoured = params.model_copy(update={"notifications": subscription.honored})
        lost: list[SubscriptionLost] = []
        result: list[types.SubscriptionsListenResult] = []

        async def pump() -> None:
            # Starts after the handler below has subscribed to the bus (it does so before its
            # first await), so no event and no close can come before its stream exists.
            try:
                async for event in subscription:
                    await bus.publish(event)
            except SubscriptionLost as exc:
                lost.append(exc)
                tg.cancel_scope.cancel()
                return
            handler.close()  # the upstream closed its stream: so does the proxy

        async def serve() -> None:
            result.append(await handler(ctx, honoured))
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            tg.start_soon(pump)
        if lost:
            raise lost[0]
        return result[0]
