"""What a stdio upstream writes that answers no request, and the answers that are no JSON-RPC.

The SDK's stdio client parses each line the upstream writes to stdout; a line that is not a
JSON-RPC message is logged and dropped, so the request it answered waited for the client's
timeout (an HTTP upstream's unusable answer fails its request at once). :func:`watched_stdio`
wraps the stdio transport and keeps the ids of the requests in flight:

- a line that is no JSON-RPC message but is a JSON object shaped like an answer (``jsonrpc``,
  ``result`` or ``error``, no ``method``) whose ``id`` is in flight becomes a JSON-RPC error
  for that request, which :class:`.upstream.Upstream` reports as an unusable stdio answer;
- any other such line (a log line, ``{"foo": 1}``, an answer nested deeper than Python's JSON
  parser goes) cannot be tied to a request: it is counted and said, and the requests in flight
  keep waiting (their real answer may still come);
- a valid answer whose id was never sent (or was already answered) is counted and said; one for
  a request the client cancelled is a late answer the spec allows (debug only).

Only error types and counts are logged, never the line (it may hold a tool's result).
"""

from __future__ import annotations

import json
import logging
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from toolwatch.injection.proxy.sdk_logs import describe_exception
from toolwatch.injection.proxy.stdio_stop import noting_upstreams

logger = logging.getLogger(__name__)

#: ``data`` key of the error :class:`StdioWatch` puts in place of an answer that is no JSON-RPC.
UNUSABLE_KEY = "toolwatch/unusable-stdio-answer"
#: Kinds of :attr:`StdioWatch.stray` (the counts the proxy keeps per upstream).
NOT_JSON_RPC_ANSWERED = "not JSON-RPC, answered as an error"
NOT_JSON_RPC_UNTIED = "not JSON-RPC, tied to no request"
UNKNOWN_ID = "answer to no request in flight"
_ANSWER_KEYS = ("jsonrpc", "result", "error")
_CANCELLED_KEPT = 256


class StdioWatch:
    """The requests in flight on one stdio connection, and what came back tied to none."""

    def __init__(self, name: str, stray: Counter[str]) -> None:
        self.name = name
        self.stray = stray  # shared across reconnects: the upstream's running counts
        self.in_flight: set[types.RequestId] = set()
        self._cancelled: deque[types.RequestId] = deque(maxlen=_CANCELLED_KEPT)

    def outbound(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self.in_flight.add(coerce_request_id(message.id))
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and message.params
        ):
            request = message.params.get("requestId")
            if isinstance(request, str | int) and not isinstance(request, bool):
                key = coerce_request_id(request)
                self.in_flight.discard(key)
                self._cancelled.append(key)

    def inbound(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        if isinstance(item, Exception):
            return self._not_json_rpc(item)
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return item
        if message.id is None:
            self._say(UNKNOWN_ID, "an error answer without an id")
            return item
        key = coerce_request_id(message.id)
        if key in self.in_flight:
            self.in_flight.discard(key)
        elif key in self._cancelled:
            logger.debug("upstream %s: late answer to a cancelled request", self.name)
        else:
            self._say(UNKNOWN_ID, "an answer whose id matches no request in flight")
        return item

    def _not_json_rpc(self, exc: Exception) -> SessionMessage | Exception:
        what = describe_exception(exc)
        request = _answered_id(exc)
        if request is not None and coerce_request_id(request) in self._cancelled:
            logger.debug("upstream %s: late answer (%s) to a cancelled request", self.name, what)
            return exc
        if request is None or coerce_request_id(request) not in self.in_flight:
            self._say(NOT_JSON_RPC_UNTIED, f"a line that is not JSON-RPC ({what})")
            return exc
        self.in_flight.discard(coerce_request_id(request))
        self.stray[NOT_JSON_RPC_ANSWERED] += 1
        reason = f"a line that is not JSON-RPC ({what})"
        logger.warning(
            "upstream %s answered a request with %s; that call gets a JSON-RPC error",
            self.name,
            reason,
        )
        error = types.ErrorData(
            code=types.INTERNAL_ERROR, message=reason, data={UNUSABLE_KEY: reason}
        )
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request, error=error))

    def _say(self, kind: str, what: str) -> None:
        self.stray[kind] += 1
        logger.warning(
            "upstream %s wrote %s; ignored, the calls in flight wait on (%d so far)",
            self.name,
            what,
            self.stray[kind],
        )


def _answered_id(exc: Exception) -> types.RequestId | None:
    """The ``id`` of a line the SDK could not parse, when the line reads as an answer (a JSON
    object with ``jsonrpc``, ``result`` or ``error`` and no ``method``); else ``None``."""
    if not isinstance(exc, ValidationError):
        return None
    line: Any = None
    for error in exc.errors():
        value = error.get("input")
        if isinstance(value, dict):
            line = value
            break
        if error["type"] == "json_invalid" and isinstance(value, str):
            try:  # Python's parser takes what pydantic's refuses (a lone surrogate)
                line = json.loads(value)
            except (ValueError, RecursionError):  # nested past the parser: tied to nothing
                return None
            break
    if not isinstance(line, dict) or "method" in line:
        return None
    if not any(key in line for key in _ANSWER_KEYS):
        return None
    request = line.get("id")
    if isinstance(request, str | int) and not isinstance(request, bool):
        return request
    return None


class _WatchedRead:
    """The transport's read stream, each item seen by :meth:`StdioWatch.inbound`."""

    def __init__(self, inner: Any, watch: StdioWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def receive(self) -> SessionMessage | Exception:
        return self._watch.inbound(await self._inner.receive())

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class Outbound(Protocol):
    """Whatever notes what a connection sends (:class:`StdioWatch`, the stdio front's lines)."""

    def outbound(self, item: SessionMessage) -> None: ...


class WatchedWrite:
    """A transport's write stream, each message seen by ``watch.outbound`` before it is sent."""

    def __init__(self, inner: Any, watch: Outbound) -> None:
        self._inner = inner
        self._watch = watch

    async def send(self, item: SessionMessage, /) -> None:
        self._watch.outbound(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def watched_stdio(
    params: StdioServerParameters, watch: StdioWatch
) -> AsyncIterator[tuple[_WatchedRead, WatchedWrite]]:
    """The SDK's stdio transport to ``params``, watched by ``watch``; its process noted as an
    upstream a stop signal reaches (:mod:`.stdio_stop`)."""
    async with AsyncExitStack() as stack:
        with noting_upstreams():  # only while it starts: the note is the spawn's
            read, write = await stack.enter_async_context(stdio_client(params))
        yield _WatchedRead(read, watch), WatchedWrite(write, watch)
