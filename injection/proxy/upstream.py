"""The proxy's client side: one connection to the upstream MCP server (a command it starts over
stdio, a streamable-HTTP URL, or a server object in process), owned by one task so that a
crashed upstream is reported as :class:`UpstreamUnavailable` and reconnected (restarted, for a
command) on the next request.

An HTTP upstream with sessions that answers 404 to a request carrying its ``Mcp-Session-Id``
has forgotten the session (restarted, or expired it when idle): the spec says the client must
start a new one. The SDK only turns that 404 into a JSON-RPC error, which the proxy would pass
on for every later call, so :class:`_HttpWatch` notices the 404 and :meth:`Upstream.send`
opens a new session and sends the request again (the upstream did not run it).

Any other HTTP answer the SDK cannot use (an error status, HTML, a redirect it does not follow,
a body that is not JSON-RPC) it also turns into a JSON-RPC error of its own; passed on as is,
"Server returned an error response" would read as the proxy's own failure. Those
(:data:`_SDK_HTTP_FAILURES`) become :class:`UpstreamUnavailable` naming the upstream.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.dispatcher import ProgressFnT
from pydantic import TypeAdapter, ValidationError

from toolwatch.injection.proxy.log_lines import LogLines
from toolwatch.injection.proxy.sdk_logs import field_locations
from toolwatch.injection.proxy.stdio_watch import UNUSABLE_KEY, StdioWatch, watched_stdio

logger = logging.getLogger(__name__)

UpstreamTarget = str | StdioServerParameters | Server[Any] | MCPServer
_T = TypeVar("_T")
CallResult = types.CallToolResult | types.InputRequiredResult
_CALL_RESULT: TypeAdapter[CallResult] = TypeAdapter(CallResult)
CLIENT_INFO = types.Implementation(name="toolwatch-proxy", version="0.1.0")
#: Builds the proxy's ``Client`` for a transport target (the default: no client capabilities).
ClientFactory = Callable[[Any], Client]
#: The SDK's own HTTP client timeouts (``create_mcp_http_client``): 30 s, 300 s to read a stream.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_SESSION_HEADER = "mcp-session-id"


class UpstreamUnavailable(Exception):
    """The upstream server cannot be reached (not started, crashed, connection closed)."""


def describe_target(target: UpstreamTarget) -> str:
    """A short human name of an upstream (for logs and error messages)."""
    if isinstance(target, str):
        return target
    if isinstance(target, StdioServerParameters):
        return shlex.join([target.command, *target.args])
    return f"in-process server {target.name!r}"


def upstream_command(command_line: str) -> StdioServerParameters:
    """A stdio upstream from a shell-like command line; it inherits our environment."""
    parts = shlex.split(command_line)
    if not parts:
        raise ValueError("empty upstream command")
    return StdioServerParameters(command=parts[0], args=parts[1:], env=dict(os.environ))


def _tolerant(target: UpstreamTarget) -> UpstreamTarget:
    """A stdio upstream whose undecodable output bytes become U+FFFD instead of failing.

    With ``strict`` decoding (the SDK's default) one non-UTF-8 line kills the SDK's stdout
    reader without closing the connection, so that call and every later one would hang; with
    ``replace`` the client gets the response with the bad bytes replaced, and the proxy stays
    transparent for everything else.
    """
    if isinstance(target, StdioServerParameters) and target.encoding_error_handler == "strict":
        return target.model_copy(update={"encoding_error_handler": "replace"})
    return target


@dataclass
class _HttpWatch:
    """What the HTTP responses of one upstream connection said about its session."""

    session_lost: bool = False

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
            self.session_lost = True


@dataclass
class _Connection:
    client: Client
    closed: anyio.Event
    watch: _HttpWatch


class Upstream:
    """The proxy's client connection to the upstream, owned by one task so that it can be
    dropped and re-established (a crashed stdio server is restarted) without the proxy."""

    def __init__(
        self,
        target: UpstreamTarget,
        *,
        connect_timeout: float = 30.0,
        client: ClientFactory | None = None,
        stray: Counter[str] | None = None,
    ) -> None:
        """``client`` builds each connection's ``Client`` (a handshake-era client's own
        session, :mod:`.sessions`); ``stray`` is the counter to add stray stdio lines to."""
        self.target = _tolerant(target)
        self.name = describe_target(target)
        #: Which 2026-07-28 request holds the connection's log lines (:mod:`.log_lines`); only
        #: the default client (the proxy's shared session) reports to it.
        self.lines = LogLines(self.name)
        self._client = client or self._forwarding_client
        self.connect_timeout = connect_timeout
        self._conn: _Connection | None = None
        self._lock = anyio.Lock()
        self._stack = AsyncExitStack()
        self._tg: TaskGroup | None = None
        self.connects = 0
        #: What a stdio upstream wrote tied to no request, by kind (:mod:`.stdio_watch`).
        self.stray: Counter[str] = Counter() if stray is None else stray

    def _forwarding_client(self, target: Any) -> Client:
        client = _ForwardingClient(target, client_info=CLIENT_INFO)
        client.lines = self.lines
        return client

    async def __aenter__(self) -> Upstream:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        try:
            await self._connect()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.closed.set()
            self._conn = None
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
        await self._stack.aclose()

    async def _own(self, *, task_status: TaskStatus[_Connection]) -> None:
        started = False
        watch = _HttpWatch()
        try:
            async with AsyncExitStack() as stack:
                target: Any = self.target
                if isinstance(target, str):
                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            timeout=_HTTP_TIMEOUT, event_hooks={"response": [watch.on_response]}
                        )
                    )
                    target = streamable_http_client(target, http_client=http)
                elif isinstance(target, StdioServerParameters):
                    target = watched_stdio(target, StdioWatch(self.name, self.stray))
                client = await stack.enter_async_context(self._client(target))
                conn = _Connection(client, anyio.Event(), watch)
                started = True
                task_status.started(conn)
                await conn.closed.wait()
        except Exception as exc:
            if not started:
                raise
            logger.warning("upstream %s: connection ended with %s", self.name, _reason(exc))

    async def _connect(self) -> _Connection:
        assert self._tg is not None
        try:
            with anyio.fail_after(self.connect_timeout):
                conn: _Connection = await self._tg.start(self._own)
        except TimeoutError as exc:
            raise UpstreamUnavailable(
                f"cannot connect to upstream {self.name}: no answer within {self.connect_timeout} s"
            ) from exc
        except Exception as exc:
            raise UpstreamUnavailable(
                f"cannot connect to upstream {self.name}: {_reason(exc)}"
            ) from exc
        self._conn = conn
        self.connects += 1
        if self.connects > 1:
            logger.info("upstream %s: reconnected", self.name)
        return conn

    async def _connection(self) -> _Connection:
        if self._conn is not None:
            return self._conn
        async with self._lock:
            if self._conn is None:
                await self._connect()
            assert self._conn is not None
            return self._conn

    def _drop(self, conn: _Connection, reason: str) -> None:
        if self._conn is conn:
            logger.warning(
                "upstream %s failed (%s); reconnecting on the next request", self.name, reason
            )
            self._conn = None
            conn.closed.set()

    async def connected(self) -> Client:
        """The upstream's client, connecting (restarting a command) if the last one failed."""
        try:
            return (await self._connection()).client
        except UpstreamUnavailable:
            raise
        except Exception as exc:
            raise UpstreamUnavailable(f"upstream {self.name}: {_reason(exc)}") from exc

    @property
    def client(self) -> Client:
        if self._conn is None:
            raise UpstreamUnavailable(f"upstream {self.name} is not connected")
        return self._conn.client

    async def send(self, fn: Callable[[ClientSession], Awaitable[_T]]) -> _T:
        """Run one request on the upstream session; connection failures become
        :class:`UpstreamUnavailable` (and a reconnect), JSON-RPC errors pass through. A request
        the upstream refused for a forgotten session is sent once more on a new session."""
        conn = await self._connection()
        if conn.watch.session_lost:  # seen on another request (or the GET stream)
            self._drop(conn, _SESSION_LOST)
            conn = await self._connection()
        try:
            return await self._send_once(conn, fn)
        except _SessionLost:
            self._drop(conn, _SESSION_LOST)
        conn = await self._connection()
        try:
            return await self._send_once(conn, fn)
        except _SessionLost as exc:
            self._drop(conn, _SESSION_LOST)
            raise UpstreamUnavailable(f"upstream {self.name}: {_SESSION_LOST}") from exc

    async def _send_once(
        self, conn: _Connection, fn: Callable[[ClientSession], Awaitable[_T]]
    ) -> _T:
        try:
            return await fn(conn.client.session)
        except MCPError as exc:
            if conn.watch.session_lost:
                raise _SessionLost from exc
            if isinstance(exc.error.data, dict) and UNUSABLE_KEY in exc.error.data:
                raise UpstreamUnavailable(  # said by the watch, which made this error up
                    f"upstream {self.name}: unusable stdio answer: {exc.error.message}"
                ) from exc
            if exc.error.code != types.CONNECTION_CLOSED:
                failure = _http_failure(exc.error) if isinstance(self.target, str) else None
                if failure is None:
                    raise  # the upstream's own JSON-RPC error
                logger.warning("upstream %s: unusable HTTP answer: %s", self.name, failure)
                raise UpstreamUnavailable(
                    f"upstream {self.name}: unusable HTTP answer: {failure}"
                ) from exc
            self._drop(conn, exc.error.message)
            raise UpstreamUnavailable(f"upstream {self.name}: {exc.error.message}") from exc
        except ValidationError as exc:
            # Field locations only: pydantic messages would echo the result's content.
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"toolwatch proxy: upstream {self.name} sent an invalid result "
                f"(fields: {field_locations(exc)})",
            ) from exc
        except Exception as exc:
            self._drop(conn, _reason(exc))
            raise UpstreamUnavailable(f"upstream {self.name}: {_reason(exc)}") from exc

    async def list_tools(
        self, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await self.send(
            lambda s: s.send_request(types.ListToolsRequest(params=params), types.ListToolsResult)
        )

    async def call_tool(
        self, params: types.CallToolRequestParams, progress: ProgressFnT | None = None
    ) -> CallResult:
        """Call a tool; with ``progress``, the upstream's progress notifications go to it."""
        request = types.CallToolRequest(params=params)
        # The raw request, not ``call_tool``: the proxy must not validate or reshape results.
        return await self.send(
            lambda s: s.send_request(request, _CALL_RESULT, progress_callback=progress)
        )


class _ForwardingClient(Client):
    """A ``Client`` whose 2026-07-28 requests declare the client capabilities they carry (a
    proxied client's, :func:`.rounds.upstream_params`) rather than its own, which are none:
    that protocol declares them per request, and a server checks them before it asks for
    input. On a handshake-era session they are dropped (declared once, at ``initialize``).
    Its log lines go to ``lines`` (:mod:`.log_lines`)."""

    lines: LogLines | None = None

    async def _build_session(self, exit_stack: AsyncExitStack) -> ClientSession:
        session = await super()._build_session(exit_stack)
        if self.lines is not None:
            self.lines.watch(session)
        adopt = session.adopt

        def adopting(result: types.InitializeResult | types.DiscoverResult) -> None:
            adopt(result)  # the SDK sets the era's stamp here
            session._stamp = keeping_capabilities(session._stamp)

        session.adopt = adopting  # type: ignore[method-assign]
        return session


def keeping_capabilities(stamp: Callable[[dict[str, Any], Any], None]) -> Any:
    """``stamp`` (the SDK's per-request ``_meta`` envelope) keeping the request's own
    ``clientCapabilities`` when it stamps the 2026-07-28 envelope, dropping them otherwise."""

    def keep(data: dict[str, Any], opts: Any) -> None:
        params = data.get("params") or {}
        meta = params.get("_meta") or {}
        own = meta.pop(types.CLIENT_CAPABILITIES_META_KEY, None)
        if "_meta" in params and not meta:
            del params["_meta"]
        stamp(data, opts)
        stamped = (data.get("params") or {}).get("_meta") or {}
        if own is not None and types.PROTOCOL_VERSION_META_KEY in stamped:
            stamped[types.CLIENT_CAPABILITIES_META_KEY] = own

    return keep


#: How the SDK's HTTP client (mcp 2.3) words the JSON-RPC errors it makes up for an HTTP answer
#: it cannot use; the parse errors go on with pydantic's text, which quotes the body (dropped).
_SDK_HTTP_FAILURES = (
    "Server returned an error response",
    "Unexpected content type:",
    "Redirect to ",
    "Failed to parse SSE message",
    "Failed to parse JSON response",
    "server answered a request with 202 Accepted",
    "Session terminated",
)
_QUOTES_THE_BODY = ("Failed to parse",)


def _http_failure(error: types.ErrorData) -> str | None:
    """The SDK's words for an HTTP answer it could not use, or ``None`` for a real error."""
    message = error.message
    if not message.startswith(_SDK_HTTP_FAILURES):
        return None
    if message.startswith(_QUOTES_THE_BODY):
        return message.split(":", 1)[0]
    return message.splitlines()[0]


_SESSION_LOST = "it forgot the session (HTTP 404: restarted, or expired it)"


class _SessionLost(Exception):
    """The upstream answered 404 for the connection's session: nothing ran, a new one is due."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
