"""The stdio front's answers to a client's lines that are no usable JSON-RPC message.

The SDK's stdio server drops such a line at DEBUG and answers nothing (checked directly with
mcp 2.3.0's ``MCPServer``: no answer, nothing on stderr), so a client whose request had a bad
id waited forever. :func:`screened_stdio` reads the client's lines before the SDK does and
answers each bad one once, as JSON-RPC 2.0 asks, instead of passing it on:

- a line that is not JSON: ``-32700`` Parse error, id ``null``;
- a JSON value that is no JSON-RPC message (an array — MCP has no batches —, a request whose
  ``method`` or ``params`` has the wrong type, no ``jsonrpc: "2.0"``): ``-32600`` Invalid
  Request, with the request's id when it is a string or an integer (the client waiting on it
  is answered), else ``null``;
- a request whose ``id`` is neither (an object, ``true``, ``1.5``, ``null``; the SDK reads it as
  a notification and would never answer): ``-32600``, id ``null``;
- an answer whose id matches no request this server sent on the connection: ``-32600``, id
  ``null`` (never that id: the client may have a request of its own with it in flight).

Not answered, but counted and said: a blank line (no message at all) and an error answer
whose id is ``null`` (answering one could loop forever with a peer that answers ours).
Everything else passes unchanged and the session goes on: the message the screen parsed is the
one the server reads (each line is parsed once; the SDK's own reader parsed it a second time).
Each bad line is counted by reason and said in a WARNING rate-limited per reason, and the
counts once more when the client leaves; never the line nor any part of it (it may hold a
tool's arguments).
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections import Counter, deque
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage

from toolwatch.injection.proxy.stdio_watch import WatchedWrite
from toolwatch.log_limits import RateLimiter

logger = logging.getLogger(__name__)

NOT_JSON = "a line that is not JSON"
NOT_JSON_RPC = "JSON that is no JSON-RPC message"
BATCH = "a JSON array (MCP has no batches)"
BAD_ID = "a request whose id is neither a string nor an integer"
STRAY_ANSWER = "an answer to no request this server sent"
BLANK = "a blank line"
NULL_ID_ERROR = "an error answer whose id is null"
_WARN_EVERY = 10.0  # seconds between two warnings of one reason (the count says the rest)
_SENT_KEPT = 4096  # ids of the server's own requests remembered, for answers that come late


@dataclass(frozen=True)
class Refusal:
    """What to do with one bad line: its reason, and the error to answer (``None``: none)."""

    reason: str
    code: int | None = None
    request: types.RequestId | None = None

    def answer(self) -> SessionMessage:
        label = "Parse error" if self.code == types.PARSE_ERROR else "Invalid Request"
        error = types.ErrorData(code=cast(int, self.code), message=f"{label}: {self.reason}")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=self.request, error=error))


class ClientLines:
    """One stdio client's lines judged, bad ones answered on the write stream and counted."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._sent: set[types.RequestId] = set()
        self._order: deque[types.RequestId] = deque()
        self._limited = RateLimiter(logger, _WARN_EVERY)
        self._write: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write: Any) -> None:
        """The stream bad lines are answered on (the transport's, known once it runs)."""
        self._write = write
        self._ready.set()

    def outbound(self, item: SessionMessage) -> None:
        """Note a request the server sends, so the client's answer to it is no stray."""
        if isinstance(item.message, types.JSONRPCRequest):
            key = coerce_request_id(item.message.id)
            if key not in self._sent:
                self._sent.add(key)
                self._order.append(key)
                if len(self._order) > _SENT_KEPT:
                    self._sent.discard(self._order.popleft())

    def judge(self, line: str) -> types.JSONRPCMessage | Refusal:
        """The line's message, parsed once (the server reads this very object), or what to
        do instead."""
        if not line.strip():
            return Refusal(BLANK)
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:  # what the SDK's reader catches: it would drop the line
            return _unreadable(line)
        if isinstance(message, types.JSONRPCNotification):
            # extra keys are dropped by the model: an invalid id is one (read again only when
            # the line can name a key "id": as written, or with an escape)
            raw = _loads(line) if '"id"' in line or "\\u" in line else None
            if isinstance(raw, dict) and "id" in raw:
                return Refusal(BAD_ID, types.INVALID_REQUEST)
        elif isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            if message.id is None:
                return Refusal(NULL_ID_ERROR)
            if coerce_request_id(message.id) not in self._sent:
                return Refusal(STRAY_ANSWER, types.INVALID_REQUEST)
        return message

    async def screen(
        self, stdin: AsyncIterable[str], read: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        """Each of ``stdin``'s messages the server should read, sent on ``read`` as parsed;
        each other line answered and counted. ``read`` is closed at the client's EOF."""
        async with read:
            async for line in stdin:
                judged = self.judge(line)
                if not isinstance(judged, Refusal):
                    await read.send(SessionMessage(judged))
                    continue
                self.counts[judged.reason] += 1
                answered = judged.code is not None
                self._warn(judged.reason, f"answered {judged.code}" if answered else "ignored")
                if answered:
                    await self._ready.wait()
                    try:
                        await self._write.send(judged.answer())
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return  # the server is done: nothing will read the rest

    def _warn(self, reason: str, done: str) -> None:
        """One WARNING per reason per :data:`_WARN_EVERY` s: a client can repeat bad lines."""
        count = self.counts[reason]
        self._limited.log(
            logging.WARNING, reason, "stdio client sent %s; %s (%d so far)", reason, done, count
        )

    def summary(self) -> None:
        """The counts, once, when the client leaves (the warnings above are rate-limited)."""
        if self.counts:
            said = ", ".join(f"{n} × {reason}" for reason, n in sorted(self.counts.items()))
            logger.warning("stdio client's unusable lines: %s", said)


def _loads(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _unreadable(line: str) -> Refusal:
    """A line the SDK cannot read: not JSON (Python's parser agrees), or no JSON-RPC message."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return Refusal(NOT_JSON, types.PARSE_ERROR)
    if isinstance(raw, list):
        return Refusal(BATCH, types.INVALID_REQUEST)
    request = raw.get("id") if isinstance(raw, dict) and "method" in raw else None
    return Refusal(NOT_JSON_RPC, types.INVALID_REQUEST, echoable_id(request))


def echoable_id(request: Any) -> types.RequestId | None:
    """``request`` when it is a valid id the answer can carry (no lone surrogate), else ``None``."""
    if isinstance(request, int) and not isinstance(request, bool):
        return request
    if isinstance(request, str):
        try:
            request.encode()
        except UnicodeEncodeError:
            return None
        return request
    return None


class _ThreadLines:
    """The client's lines, read by a daemon thread of their own. A session stopped by a signal
    (:mod:`.stdio_stop`) must not wait for a client that sends nothing: a read blocked in one of
    anyio's worker threads held the cancelled session, and then the exit (those threads are
    joined), until the client wrote or closed its end."""

    def __init__(self, text: io.TextIOWrapper) -> None:
        self._text = text
        self._send, self._receive = anyio.create_memory_object_stream[str](0)
        self._thread: threading.Thread | None = None

    def __aiter__(self) -> _ThreadLines:
        if self._thread is None:
            token = anyio.lowlevel.current_token()
            self._thread = threading.Thread(
                target=self._read, args=(token,), name="toolwatch stdin", daemon=True
            )
            self._thread.start()
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def close(self) -> None:
        """No more lines wanted: the reader stops at its next line (or EOF)."""
        self._receive.close()

    def _read(self, token: Any) -> None:
        try:
            while line := self._text.readline():
                anyio.from_thread.run(self._send.send, line, token=token)
        except (anyio.BrokenResourceError, RuntimeError, OSError, ValueError):
            return  # the session is over (its loop too, for RuntimeError): nothing reads on
        finally:
            with suppress(RuntimeError):  # EOF: the session ends as the SDK's would
                anyio.from_thread.run_sync(self._send.close, token=token)


@contextmanager
def _claimed_stdin() -> Iterator[Any]:
    """The client's stdin, read from a private duplicate while fd 0 points at the null device
    (as the SDK's stdio server does when it reads stdin itself: no child takes its bytes)."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    # closefd=False: the reading thread may still block on it after the session (the SDK's
    # reason), so the descriptor is never closed and reused under it
    buffer = os.fdopen(wire, "rb", closefd=False)
    lines = _ThreadLines(io.TextIOWrapper(buffer, encoding="utf-8", errors="replace"))
    try:
        yield lines
    finally:
        lines.close()
        os.dup2(wire, 0)


async def _no_lines() -> AsyncIterator[str]:
    """Nothing for the SDK's own reader: the screen reads the client (it parsed each line a
    second time)."""
    return
    yield  # pragma: no cover - makes this an async generator


@asynccontextmanager
async def screened_stdio(
    stdin: AsyncIterable[str] | None = None, stdout: Any = None
) -> AsyncIterator[tuple[Any, WatchedWrite]]:
    """The SDK's stdio transport with the client's unusable lines answered (module docstring):
    the SDK writes, the screen reads. ``stdin`` / ``stdout``: the process's own by default."""
    if stdin is None:
        with _claimed_stdin() as claimed:
            async with screened_stdio(claimed, stdout) as streams:
                yield streams
        return
    lines = ClientLines()
    send, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    async with (
        stdio_server(stdin=cast(Any, _no_lines()), stdout=stdout) as (unread, write),
        anyio.create_task_group() as screening,
    ):
        unread.close()
        lines.answer_on(write)
        screening.start_soon(lines.screen, stdin, send)
        try:
            yield read, WatchedWrite(write, lines)
        finally:
            screening.cancel_scope.cancel()  # the session is over: no more lines wanted
            read.close()
            lines.summary()
