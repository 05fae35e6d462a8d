"""Serving an MCP server (the fault proxy, or a scenario server) over streamable HTTP.

:func:`http_server` runs the SDK's HTTP app behind what the transport spec asks of a server
(:mod:`.http_checks`), without the SDK's bare 500 to a request to resume a stream.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT

from toolwatch.injection.proxy.era import discover_refused_http
from toolwatch.injection.proxy.http_checks import spec_checks
from toolwatch.injection.proxy.session_slots import SessionSlots, with_session_slots

logger = logging.getLogger(__name__)
#: What stops the HTTP server gracefully (a service manager's stop, Ctrl-C).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def lowlevel(server: Server[Any] | MCPServer) -> Server[Any]:
    """The low-level ``Server`` that runs ``server``."""
    return server._lowlevel_server if isinstance(server, MCPServer) else server


@dataclass
class HttpServer:
    """A running streamable-HTTP endpoint (see :func:`http_server`)."""

    url: str
    done: anyio.Event
    _uvicorn: _Uvicorn | None = None

    async def wait_closed(self) -> None:
        await self.done.wait()

    @property
    def stopped_by(self) -> signal.Signals | None:
        """The stop signal that ended serving, if one did."""
        return None if self._uvicorn is None else self._uvicorn.stopped_by


def _no_resumption(app: Any) -> Any:
    """The ASGI ``app`` with a GET's ``Last-Event-ID`` dropped: nothing here keeps an event
    store (no event ids are sent), so a request to resume is served as a fresh stream, which
    the MCP transport spec allows; the SDK answered it with a bare 500."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and any(k == b"last-event-id" for k, _ in scope["headers"]):
            headers = [(k, v) for k, v in scope["headers"] if k != b"last-event-id"]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return serve


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, stopped gracefully by SIGTERM or SIGINT without raising the signal
    again afterwards (uvicorn does, so the process died of it, exit -15, before the proxy
    closed its upstreams): the caller's own shutdown runs, then exits by
    :func:`toolwatch.usage.exit_code`."""

    stopped_by: signal.Signals | None = None

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # as uvicorn: main only
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
        for caught in self._captured_signals[:1]:
            self.stopped_by = signal.Signals(caught)
            logger.info("%s received: stopped serving, shutting down", self.stopped_by.name)


@asynccontextmanager
async def http_server(
    server: Server[Any] | MCPServer,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> AsyncIterator[HttpServer]:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` (port 0: any free
    port; the real one is in the yielded URL) until the block exits. Past ``max_sessions``
    open sessions a new one is refused with 503 and ``Retry-After``: the seconds until the
    oldest idle session idles out (``session_idle_timeout``; :mod:`.session_slots`).

    A fault proxy in front of a handshake-era upstream refuses an ``auto`` client's
    ``server/discover`` probe as that upstream does (:mod:`.era`)."""
    sdk = server.streamable_http_app(
        host=host, max_sessions=max_sessions, session_idle_timeout=session_idle_timeout
    )
    app = _no_resumption(with_session_slots(sdk, SessionSlots(session_idle_timeout)))
    if getattr(server, "upstream_era_is_handshake", False):  # a FaultProxy (which imports this)
        app = discover_refused_http(app)
    app = spec_checks(app)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    uv = _Uvicorn(config)
    done = anyio.Event()

    async def run() -> None:
        try:
            await uv.serve(sockets=[sock])
        finally:
            sock.close()
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not uv.started and not done.is_set():
            await anyio.sleep(0.01)
        if done.is_set():
            raise OSError(f"could not serve HTTP on {host}:{bound}")
        host_part = f"[{host}]" if ":" in host else host
        try:
            yield HttpServer(f"http://{host_part}:{bound}/mcp", done, uv)
        finally:
            uv.should_exit = True
