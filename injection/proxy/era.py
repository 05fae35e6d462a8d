"""A client in ``auto`` mode settles on its upstream's protocol era through the proxy.

The mcp 2.3 server (the proxy's) speaks both eras; a handshake-era upstream
(``@modelcontextprotocol/server-everything``) answers the ``auto`` client's opening
``server/discover`` probe with "Method not found", and the client falls back to
``initialize``. Through the proxy the probe succeeded, so the client settled on 2026-07-28:
no upstream session of its own, so none of the server's requests, and the tools the server
offers by the client's capabilities hidden. In front of such an upstream the stdio proxy now
answers that probe as the upstream did, before its server sees it (the first request of a
stdio connection fixes its era), and the client falls back, as directly, to the handshake
era and its own upstream session (:mod:`.sessions`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCError, JSONRPCRequest

_PROBE = "server/discover"

Read = MemoryObjectReceiveStream[SessionMessage | Exception]
Write = MemoryObjectSendStream[SessionMessage]


@asynccontextmanager
async def discover_refused(read: Read, write: Write) -> AsyncIterator[Read]:
    """``read`` with each ``server/discover`` answered "Method not found" on ``write`` (as a
    handshake-era server does) instead of passed on; everything else passes unchanged."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)

    async def pump() -> None:
        async with send, read:
            async for item in read:
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, JSONRPCRequest) and message.method == _PROBE:
                    error = types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")
                    refusal = JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
                    await write.send(SessionMessage(refusal))
                    continue
                await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield receive
        finally:
            tg.cancel_scope.cancel()
