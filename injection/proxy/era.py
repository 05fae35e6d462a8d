"""A client in ``auto`` mode settles on its upstream's protocol era through the proxy.

The mcp 2.3 server (the proxy's) speaks both eras; a handshake-era upstream
(``@modelcontextprotocol/server-everything``) answers the ``auto`` client's opening
``server/discover`` probe with "Method not found", and the client falls back to
``initialize``. Through the proxy the probe succeeded, so the client settled on 2026-07-28:
no upstream session of its own, so none of the server's requests, and the tools the server
offers by the client's capabilities hidden. In front of such an upstream the proxy now
answers that probe as the upstream did, before its server sees it, and the client falls back,
as directly, to the handshake era and its own upstream session (:mod:`.sessions`): over stdio
on the connection's stream (its first request fixes its era, :func:`discover_refused`), over
streamable HTTP as the answer to the probe's POST (:func:`discover_refused_http`; there each
POST names its era, so refusing the probe is all it takes). A client that does not probe (an
explicit 2026-07-28 client) is served in that era, as before.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCError, JSONRPCRequest

from toolwatch.injection.proxy.http_checks import TOO_LARGE, read_whole_body, respond

_PROBE = "server/discover"
_REFUSAL = types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")

Read = MemoryObjectReceiveStream[SessionMessage | Exception]


class Write(Protocol):
    """Where the refusal goes: the transport's write stream, or a wrapper of it."""

    async def send(self, item: SessionMessage, /) -> None: ...


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
                    refusal = JSONRPCError(jsonrpc="2.0", id=message.id, error=_REFUSAL)
                    await write.send(SessionMessage(refusal))
                    continue
                await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield receive
        finally:
            tg.cancel_scope.cancel()


def _probe_id(body: bytes) -> int | str | None:
    """The id of the ``server/discover`` request ``body`` is, else ``None`` (read only when
    the method's name is in it: no other body is parsed)."""
    if _PROBE.encode() not in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != _PROBE:
        return None
    request = message.get("id")
    valid = isinstance(request, int | str) and not isinstance(request, bool)
    return request if valid else None


def discover_refused_http(app: Any) -> Any:
    """The ASGI ``app`` with each POSTed ``server/discover`` answered "Method not found" (as a
    handshake-era server does: ``200``, the JSON-RPC error for that id) instead of passed on;
    every other request reaches ``app`` as sent."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        read = await read_whole_body(receive)
        if read is None:  # over the limit (spec_checks, in front, refuses it first)
            await respond(send, TOO_LARGE)
            return
        body, replay = read
        request = _probe_id(body)
        if request is not None:
            refusal = JSONRPCError(jsonrpc="2.0", id=request, error=_REFUSAL)
            answer = refusal.model_dump_json(by_alias=True, exclude_none=True).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": answer})
            return
        await app(scope, replay, send)

    return serve
