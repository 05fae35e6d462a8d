"""Connection hygiene for the collector's HTTP listener: slow clients cannot starve fast ones.

uvicorn has no timeout for a request's headers or body, and no bound on connections below the
process's file-descriptor limit (past it ``accept()`` fails and asyncio stops accepting for a
second at a time, logging each failure). :class:`ConnectionGuard` tracks every connection's
phase through a subclass of uvicorn's h11 protocol (:func:`guarded_protocol`):

* a connection waiting for a request's headers (new, or idle after a response) is closed after
  ``header_timeout`` seconds;
* a request whose body is being read is closed when no byte arrived for ``body_timeout``
  seconds, or when the whole body has not arrived within ``body_deadline`` seconds (a sender
  trickling a byte just inside the silence allowed would otherwise hold its connection and its
  byte reservation for ever); the receiver answers 408 first when it can (:func:`within`);
* at most ``max_connections`` are open (by default below the descriptor limit, which is raised
  to the hard limit at start): one more evicts the oldest connection still sending headers or a
  body, so a well-behaved client always gets in, in milliseconds.

Log lines that an attacker can repeat at will are rate-limited (:class:`RateLimiter`): one per
kind per interval, then a count of the ones suppressed.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

from toolwatch.collector.otlp.decode import OtlpError
from toolwatch.collector.otlp.defaults import (
    DEFAULT_BODY_DEADLINE,
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
)
from toolwatch.log_limits import Window

log = logging.getLogger(__name__)

#: connections asyncio accepts per event-loop round; it accepts a whole round (and the next
#: ones) before the protocol sees any of them, so the cap leaves room for four rounds
ACCEPT_BACKLOG: Final = 64
#: descriptors kept free when sizing the connection cap: the store, logs, threads, and
#: connections accepted but not yet seen by the guard
FD_RESERVE: Final = 128 + 4 * ACCEPT_BACKLOG
_SWEEP_EVERY: Final = 0.5

WAITING, BODY, BUSY = "waiting", "body", "busy"


def raise_fd_limit(wanted: int = 65_536) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` towards the hard limit; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


class _RateLimitFilter(logging.Filter):
    """A logging filter applying :class:`RateLimiter` semantics to a third-party logger."""

    def __init__(self, interval: float = 10.0) -> None:
        super().__init__()
        self._window = Window(interval)

    def filter(self, record: logging.LogRecord) -> bool:
        suffix = self._window.admit((record.name, str(record.msg)))
        if suffix is None:
            return False
        if suffix:
            record.msg = f"{record.msg}{suffix}"
        return True


_THIRD_PARTY_FILTER = _RateLimitFilter()


def rate_limit_third_party_logs() -> None:
    """Rate-limit uvicorn's per-request warnings and asyncio's accept errors (idempotent)."""
    for name in ("uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if _THIRD_PARTY_FILTER not in logger.filters:
            logger.addFilter(_THIRD_PARTY_FILTER)


@dataclass(slots=True)
class _State:
    phase: str
    since: float  # when the phase began
    last_data: float


class ConnectionGuard:
    """Every open connection's phase; closes slow ones and evicts under pressure."""

    def __init__(
        self,
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        body_deadline: float = DEFAULT_BODY_DEADLINE,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self.max_connections = max(2, max_connections)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.body_deadline = body_deadline
        self.on_close = on_close  # called with the reason of every connection it closes
        self.connections: dict[Any, _State] = {}  # insertion order: oldest first
        self._sweeper: asyncio.TimerHandle | None = None

    # -- called by the protocol (event-loop thread only) --

    def opened(self, conn: Any) -> None:
        now = time.monotonic()
        self.connections[conn] = _State(WAITING, now, now)
        if len(self.connections) > self.max_connections:
            victim = self._oldest_slow(exclude=conn)
            self._close(victim if victim is not None else conn, "evicted")
        if self._sweeper is None:
            self._schedule(conn.loop)

    def closed(self, conn: Any) -> None:
        self.connections.pop(conn, None)

    def phase(self, conn: Any, phase: str) -> None:
        state = self.connections.get(conn)
        if state is not None and state.phase != phase:
            state.phase, state.since = phase, time.monotonic()

    def data(self, conn: Any) -> None:
        state = self.connections.get(conn)
        if state is not None:
            state.last_data = time.monotonic()

    # -- housekeeping --

    def _oldest_slow(self, exclude: Any) -> Any:
        """The longest-open connection not being answered (insertion order is age order)."""
        for conn, state in self.connections.items():
            if conn is not exclude and state.phase != BUSY:
                return conn
        return None

    def _close(self, conn: Any, reason: str) -> None:
        self.connections.pop(conn, None)
        transport = getattr(conn, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()
        if self.on_close is not None:
            self.on_close(reason)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweeper = loop.call_later(_SWEEP_EVERY, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        for conn, state in list(self.connections.items()):
            if state.phase == WAITING and now - state.since > self.header_timeout:
                self._close(conn, "header_timeout")
            elif state.phase == BODY and now - state.last_data > self.body_timeout:
                self._close(conn, "body_timeout")
            elif state.phase == BODY and now - state.since > self.body_deadline:
                self._close(conn, "body_deadline")
        self._schedule(loop)


def guarded_protocol(guard: ConnectionGuard) -> type[H11Protocol]:
    """uvicorn's h11 protocol, reporting each connection's phase to ``guard``."""

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            guard.opened(self)

        def connection_lost(self, exc: Exception | None) -> None:
            guard.closed(self)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            guard.data(self)
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                guard.phase(self, WAITING)
            else:
                guard.phase(self, BODY if cycle.more_body else BUSY)

        def on_response_complete(self) -> None:
            guard.phase(self, WAITING)
            super().on_response_complete()

    return GuardedH11Protocol


async def within(chunks: AsyncIterator[bytes], gap: float, deadline: float) -> AsyncIterator[bytes]:
    """The chunks of a body, each within ``gap`` seconds of the previous one and all within
    ``deadline`` seconds of the first read (else 408, its ``reason`` saying which).

    One timer per request, moved on at every chunk (no task per chunk: a thousand slow
    clients must cost the event loop little)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    try:
        async with asyncio.timeout(min(gap, deadline)) as timer:
            async for chunk in chunks:
                timer.reschedule(min(loop.time() + gap, end))
                yield chunk
    except TimeoutError:
        if loop.time() >= end:
            raise OtlpError(
                408, f"body not complete within {deadline:g} s", reason="body_deadline"
            ) from None
        raise OtlpError(
            408, f"no body bytes received for {gap:g} s", reason="body_timeout"
        ) from None


def return_large_blocks_to_the_os(threshold: int = 8 << 20, trim: int = 32 << 20) -> bool:
    """Ask glibc to serve allocations of ``threshold`` bytes and more with ``mmap`` (freed
    straight back to the OS) instead of the heap, whose dynamic threshold otherwise keeps the
    memory of a burst of large requests (a 15 MiB attribute ...) long after they are gone.
    Setting it fixes the heap's trim threshold too: ``trim`` keeps it high, so ordinary
    traffic does not pay for trimming and re-growing the heap. Best effort: False where it is
    not glibc. Process-wide, and harmless for other code."""
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        if name is None:
            return False
        libc = ctypes.CDLL(name)
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_mmap_threshold, threshold)) and bool(
            libc.mallopt(m_trim_threshold, trim)
        )
    except (OSError, AttributeError):
        return False


def default_max_connections() -> int:
    """Connections allowed: below the (raised) descriptor limit, at most 4,096."""
    soft = raise_fd_limit()
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(16, min(DEFAULT_MAX_CONNECTIONS, int(soft) - FD_RESERVE))
