"""A 2026-07-28 client's log lines for its own request, through the proxy's shared upstream
connection.

From 2026-07-28 a client asks for ``notifications/message`` per request (``_meta``
``io.modelcontextprotocol/logLevel``); the server MUST NOT send a line for a request without
it, and sends a request's lines only on the stream that carries its answer. Nothing in a line
names its request: over streamable HTTP the request's SSE stream ties them (and the mcp SDK's
client hands the line on without it), over stdio and in process nothing does (the spec defines
no ``relatedRequestId``). The proxy's 2026-07-28 clients share one upstream connection, so it
used to withhold every opt-in, and a client got no line through the proxy that it got directly.

What can be known on any transport: a request's lines arrive before its answer, on the one
connection in receive order. So while one request carrying the opt-in is in flight, every line
is that request's. :class:`LogLines` keeps it so. A request's opt-in is passed on when no other
request's is in flight: that request *holds* the connection's lines, which reach its client on
its own stream, at the level it asked, before its answer. While another request holds them,
the opt-in is withheld (the server then sends that request none, as if it logged nothing):
counted (:attr:`LogLines.withheld`) and said. A line that arrives while no request holds the
lines (a server sending lines nobody asked for; a handshake-era upstream, whose lines follow
its session's level, not a request's opt-in) belongs to no client: counted by reason
(:attr:`LogLines.dropped`) and said, never relayed. Lines are seen with the SDK's receive-order
notification intercept, before the answer after them resolves its request. Nothing of a line
is logged: its level and data are the upstream's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from pydantic import BaseModel, ValidationError

from toolwatch.words import counted

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_P = TypeVar("_P", bound=BaseModel)
_LINE = "notifications/message"
#: Lines waiting for their client, at most, per request; more are dropped and counted.
MAX_WAITING = 1024
#: Reasons of :attr:`LogLines.dropped`.
UNTIED = "arrived while no request held the lines"
OVERFLOW = f"more than {MAX_WAITING} waited for a slow client"
INVALID = "not a valid notifications/message"
BELOW = "below the level the client asked for"
CLIENT_GONE = "the client's stream had closed"

Send = MemoryObjectSendStream[Mapping[str, Any] | None]
Receive = MemoryObjectReceiveStream[Mapping[str, Any] | None]


def log_level(ctx: ServerRequestContext[Any] | None) -> str | None:
    """The level a client's request asked its lines at (2026-07-28), or ``None``."""
    if ctx is None:
        return None
    level = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
    return level if isinstance(level, str) else None


def with_opt_in(params: _P | None, keep: bool) -> _P | None:
    """``params`` with the client's log opt-in kept in its ``_meta``, or taken out."""
    meta = getattr(params, "meta", None)
    if params is None or keep or not meta or types.LOG_LEVEL_META_KEY not in meta:
        return params
    rest = {k: v for k, v in meta.items() if k != types.LOG_LEVEL_META_KEY}
    return params.model_copy(update={"meta": rest or None})


class LogLines:
    """Which request holds one upstream connection's log lines, and what became of the rest."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._holder: Send | None = None
        #: Lines relayed to the client whose request they belong to.
        self.relayed = 0
        #: Requests whose log opt-in was not passed on (another request held the lines, or
        #: the upstream speaks the handshake era): their clients got no line.
        self.withheld = 0
        #: Lines relayed to no client, by reason.
        self.dropped: Counter[str] = Counter()

    def watch(self, session: ClientSession) -> None:
        """See every line ``session`` receives, in receive order (the SDK's intercept)."""
        inner = session._intercept_notification

        def intercept(method: str, params: Mapping[str, Any] | None) -> bool:
            if method != _LINE:
                return inner(method, params)
            self._arrived(params)
            return True

        session._intercept_notification = intercept  # type: ignore[method-assign]

    def _arrived(self, params: Mapping[str, Any] | None) -> None:
        holder = self._holder
        if holder is None:
            self._drop(UNTIED)
            return
        try:
            holder.send_nowait(params)
        except anyio.WouldBlock:
            self._drop(OVERFLOW)

    def _drop(self, reason: str) -> None:
        self.dropped[reason] += 1
        total = sum(self.dropped.values())
        if said_at(total):
            logger.warning(
                "upstream %s: a log line (notifications/message) %s, relayed to no client "
                "(%s so far)",
                self.name,
                reason,
                counted(total, "such line"),
            )

    async def forward(
        self,
        ctx: ServerRequestContext[Any] | None,
        call: Callable[[bool], Awaitable[_T]],
        *,
        modern: bool,
    ) -> _T:
        """``call(passed)`` — the request made upstream with the client's log opt-in (``True``)
        or without it — holding the lines for ``ctx``'s client when it asked and may have them."""
        level = log_level(ctx)
        if ctx is None or level is None:
            return await call(False)
        if not modern or self._holder is not None:
            self.withheld += 1
            why = "another request's are being relayed" if modern else "it speaks the handshake era"
            log = logger.warning if said_at(self.withheld) else logger.debug
            log(
                "upstream %s: a 2026-07-28 client's request asked for log lines; not passed on, "
                "because on the one shared connection %s (%s so far)",
                self.name,
                why,
                counted(self.withheld, "request"),
            )
            return await call(False)
        send, receive = anyio.create_memory_object_stream[Mapping[str, Any] | None](MAX_WAITING)
        self._holder = send
        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._relay, ctx, receive)
            try:
                result = await call(True)
            except Exception as exc:  # raised after the relay is done: its lines come first
                failed = exc
            finally:
                self._holder = None
                send.close()  # the relay delivers what waits, then ends
        if failed is not None:
            raise failed
        return result

    async def _relay(self, ctx: ServerRequestContext[Any], receive: Receive) -> None:
        """Each line of ``ctx``'s request to its client, on the request's stream."""
        allowed = allowed_log_levels(ctx.protocol_version, ctx.meta)
        gone = False
        async with receive:
            async for raw in receive:
                if gone:
                    self._drop(CLIENT_GONE)
                    continue
                try:
                    params = types.LoggingMessageNotificationParams.model_validate(raw or {})
                except ValidationError:
                    self._drop(INVALID)
                    continue
                if params.level not in allowed:
                    self._drop(BELOW)
                    continue
                line = types.LoggingMessageNotification(params=params)
                try:
                    await ctx.session.send_notification(line, related_request_id=ctx.request_id)
                except Exception:  # the client went away: the rest go nowhere either
                    gone = True
                    self._drop(CLIENT_GONE)
                    continue
                self.relayed += 1


def said_at(count: int) -> bool:
    """Whether the ``count``-th of something is said (1st, 2nd, 4th, 8th, …): every one
    counted, the log not flooded by a chatty upstream."""
    return count & (count - 1) == 0
