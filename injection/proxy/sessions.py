"""One upstream session per handshake-era client, so the proxy is transparent to what a server
asks of its client.

A handshake-era (pre-2026) server asks its client things mid-call — ``sampling/createMessage``,
``elicitation/create``, ``roots/list`` — sends it ``notifications/message`` logging at the level
it set with ``logging/setLevel``, and offers tools by what the client declared
(``@modelcontextprotocol/server-everything`` registers ``trigger-sampling-request`` only for a
client with sampling). The proxy used to reach the upstream on one shared session declaring no
capability, so those tools were hidden, the requests never reached the client, log messages
were dropped, and one client's ``logging/setLevel`` would have been every client's.

Now each handshake-era client of the proxy gets its own upstream session (:class:`ClientSessions`):
opened on the client's first request after it initialised, in the handshake era too, declaring
exactly the capabilities the client declared, and closed when the client's connection closes.
The upstream's requests go to that client — on the stream of its call in flight, else on its
connection's own — and the client's answer (or error) goes back up unchanged; its log messages
follow the same way, and its change notices (:data:`RELAYED_NOTICES`) go on the connection.
A 2026-07-28 client keeps the shared session: that protocol has no server-to-client requests
(a server asks with an ``InputRequiredResult``, which is forwarded).

At most :data:`MAX_OPEN` such sessions are open at once (``max_open``): each may be an upstream
process the proxy started, and most clients leave without closing their connection (no HTTP
``DELETE``), which the SDK forgets only after 30 idle minutes, so a client opening sessions in
a loop used to start one upstream process each, without bound. Past the bound the session idle
longest (no call in flight) is closed, counted (:attr:`ClientSessions.closed_idle`) and said;
its client gets a fresh one on its next request, with the log level it set sent again and the
resources it subscribed to subscribed again. When
every open session has a call in flight, the new client's request is refused with the proxy's
upstream error (``-32603``, :class:`.UpstreamUnavailable`) naming the bound.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, MCPError
from mcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.validation import wants_sampling_tools
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from toolwatch.injection.proxy.log_lines import said_at
from toolwatch.injection.proxy.options import MAX_OPEN
from toolwatch.injection.proxy.sdk_logs import field_locations
from toolwatch.injection.proxy.upstream import CLIENT_INFO, Upstream, UpstreamUnavailable
from toolwatch.words import counted

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=BaseModel)
#: Where a client's own upstream session is kept in its ``Connection.state``.
_STATE_KEY = "toolwatch/upstream-session"
#: The upstream's notices relayed to the client whose session they arrive on (log messages
#: and progress have their own paths; a cancellation is the SDK's own business).
RELAYED_NOTICES = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
    types.ResourceUpdatedNotification,
    types.ElicitCompleteNotification,
)


def own_session(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this request's client gets an upstream session of its own (handshake era)."""
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


def _connection(ctx: ServerRequestContext[Any]) -> Connection:
    # The low-level context does not expose it (mcp 2.3); the session holds it.
    return ctx.session._connection


@dataclass
class _Client:
    """One handshake-era client of the proxy: its upstream session and its calls in flight."""

    connection: Connection
    upstream: Upstream | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    calls: list[ServerRequestContext[Any]] = field(default_factory=list)
    #: Set to close the upstream session (the connection closed, or room was made).
    release: anyio.Event = field(default_factory=anyio.Event)
    #: The log level the client last set, sent again to a session opened afresh.
    level: types.SetLevelRequestParams | None = None
    #: The resources the client subscribed to, subscribed again on a session opened afresh.
    subscribed: set[str] = field(default_factory=set)

    @contextmanager
    def serving(self, ctx: ServerRequestContext[Any]) -> Iterator[None]:
        self.calls.append(ctx)
        try:
            yield
        finally:
            self.calls.remove(ctx)

    async def ask(
        self, request: types.ServerRequest, result_type: type[_M]
    ) -> _M | types.ErrorData:
        """``request`` to the client — on the stream of its latest call in flight (where a
        direct server would send it, related to the call), else on its connection's — and
        its answer; its JSON-RPC error is the answer too, passed back up unchanged."""
        try:
            if self.calls:
                ctx = self.calls[-1]
                related = ServerMessageMetadata(related_request_id=ctx.request_id)
                return await ctx.session.send_request(request, result_type, metadata=related)
            return await self.connection.send_request(request, result_type=result_type)
        except MCPError as exc:
            return exc.error
        except ValidationError as exc:  # field locations only: the message quotes the answer
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"toolwatch proxy: the client answered {request.method} with an "
                f"invalid result (fields: {field_locations(exc)})",
            )

    async def tell(self, notification: types.ServerNotification) -> None:
        """``notification`` to the client, on the same stream :meth:`ask` would use."""
        if self.calls:
            ctx = self.calls[-1]
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
            return
        data = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self.connection.notify(data["method"], data.get("params"))

    # -- the upstream session's callbacks ----------------------------------------------------

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        request = types.CreateMessageRequest(params=params)
        if wants_sampling_tools(params.tools, params.tool_choice):
            return await self.ask(request, types.CreateMessageResultWithTools)
        return await self.ask(request, types.CreateMessageResult)

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self.ask(types.ElicitRequest(params=params), types.ElicitResult)

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return await self.ask(types.ListRootsRequest(), types.ListRootsResult)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self.tell(types.LoggingMessageNotification(params=params))

    async def changed(self, message: IncomingMessage) -> None:
        """The upstream's change notices (:data:`RELAYED_NOTICES`) to the client, on its
        connection as a direct server sends them: they belong to no call of the client's."""
        if isinstance(message, RELAYED_NOTICES):
            data = message.model_dump(by_alias=True, mode="json", exclude_none=True)
            await self.connection.notify(data["method"], data.get("params"))

    def client(self, target: Any) -> Client:
        """The upstream ``Client`` for this client: the handshake era, the client's own
        capabilities declared (not the SDK's, which it derives from the callbacks set), every
        request of the upstream relayed."""
        declared = self.connection.client_capabilities or types.ClientCapabilities()
        client = _DeclaringClient(
            target,
            client_info=CLIENT_INFO,
            mode="legacy",
            sampling_callback=self.sampling,
            elicitation_callback=self.elicitation,
            list_roots_callback=self.roots,
            logging_callback=self.log,
            message_handler=self.changed,
        )
        client.declared = declared
        return client


class _DeclaringClient(Client):
    """A ``Client`` whose session declares ``declared`` as its capabilities."""

    declared: types.ClientCapabilities = types.ClientCapabilities()

    async def _build_session(self, exit_stack: Any) -> ClientSession:
        session = await super()._build_session(exit_stack)
        declared = self.declared
        session._build_capabilities = lambda version: declared  # type: ignore[method-assign]
        return session


class ClientSessions:
    """The upstream sessions of a proxy's handshake-era clients, one each, each owned by a
    task of its own (a session's task group must be left by the task that entered it), closed
    with the client's connection (its ``exit_stack``) or when this context closes."""

    def __init__(self, shared: Upstream, *, max_open: int = MAX_OPEN) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {max_open}")
        self.shared = shared
        self.max_open = max_open
        self._stack = AsyncExitStack()
        self._tg: TaskGroup | None = None
        #: Clients with a session open (or opening), the one used longest ago first.
        self._open: dict[int, _Client] = {}
        #: Sessions opened so far (each client's first, and again after one failed to open).
        self.opened = 0
        #: Sessions closed to make room for another client's (:data:`MAX_OPEN`).
        self.closed_idle = 0

    async def __aenter__(self) -> ClientSessions:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(self, *exc: object) -> None:
        # Closed apart from the block's exception (as :class:`.Upstream` does): a task group
        # would wrap it in an ExceptionGroup.
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
        await self._stack.aclose()

    def _client(self, ctx: ServerRequestContext[Any]) -> _Client:
        connection = _connection(ctx)
        found = connection.state.get(_STATE_KEY)
        if not isinstance(found, _Client):
            found = connection.state[_STATE_KEY] = _Client(connection)
        return found

    async def upstream_for(self, ctx: ServerRequestContext[Any]) -> Upstream:
        """The client's own upstream session, opened on its first request.

        Raises :class:`.UpstreamUnavailable` when it cannot be opened (the next request tries
        again)."""
        client = self._client(ctx)
        async with client.lock:
            key = id(client)
            if client.upstream is None:
                if self._tg is None:
                    raise RuntimeError("ClientSessions is used outside its async with block")
                self._make_room(client)
                try:
                    client.upstream = await self._tg.start(self._own, client)
                except BaseException:
                    self._open.pop(key, None)
                    raise
                if client.level is not None:
                    await self._set_level(client.upstream, client.level)
                for uri in sorted(client.subscribed):
                    await self._subscribe(client.upstream, uri)
            self._open[key] = self._open.pop(key, client)  # the most recently used now
            return client.upstream

    def remember_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> None:
        """Note the log level the client set, to send again to a session opened afresh."""
        self._client(ctx).level = params

    def _make_room(self, client: _Client) -> None:
        """Reserve a place for ``client``'s session, closing the one idle longest if the bound
        is reached; :class:`.UpstreamUnavailable` when every open one has a call in flight."""
        while len(self._open) >= self.max_open:
            idle = next(
                (c for c in self._open.values() if c.upstream is not None and not c.calls), None
            )
            if idle is None:
                raise UpstreamUnavailable(
                    f"{counted(len(self._open), 'client')} have an upstream session of their own "
                    "open, "
                    f"each with a call in flight (at most {self.max_open} at once); try again "
                    "when one ends"
                )
            del self._open[id(idle)]
            idle.upstream = None
            idle.release.set()
            self.closed_idle += 1
            log = logger.warning if said_at(self.closed_idle) else logger.debug
            log(
                "closed the upstream session idle longest to open another client's (at most %d "
                "open at once; %d closed so far); its client gets a new one on its next request",
                self.max_open,
                self.closed_idle,
            )
        self._open[id(client)] = client

    def remember_subscription(
        self, ctx: ServerRequestContext[Any], uri: str, *, subscribed: bool
    ) -> None:
        """Note a resource the client subscribed to (or no longer), to subscribe again on a
        session opened afresh."""
        uris = self._client(ctx).subscribed
        if subscribed:
            uris.add(uri)
        else:
            uris.discard(uri)

    async def _subscribe(self, upstream: Upstream, uri: str) -> None:
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        try:
            await upstream.send(lambda s: s.send_request(request, types.EmptyResult))
        except (UpstreamUnavailable, MCPError) as exc:
            logger.warning("could not subscribe a resource again on %s: %s", upstream.name, exc)

    async def _set_level(self, upstream: Upstream, level: types.SetLevelRequestParams) -> None:
        request = types.SetLevelRequest(params=level)
        try:
            await upstream.send(lambda s: s.send_request(request, types.EmptyResult))
        except (UpstreamUnavailable, MCPError) as exc:
            logger.warning("could not set the log level again on %s: %s", upstream.name, exc)

    @contextmanager
    def serving(self, ctx: ServerRequestContext[Any]) -> Iterator[None]:
        """Note ``ctx`` as the client's call in flight, where the upstream's requests go."""
        with self._client(ctx).serving(ctx):
            yield

    def session_of(self, ctx: ServerRequestContext[Any]) -> Upstream | None:
        """The client's upstream session if it has one open (else ``None``)."""
        found = _connection(ctx).state.get(_STATE_KEY)
        return found.upstream if isinstance(found, _Client) else None

    async def _own(self, client: _Client, *, task_status: TaskStatus[Upstream]) -> None:
        shared = self.shared
        closed = client.release = anyio.Event()
        upstream = Upstream(
            shared.target,
            connect_timeout=shared.connect_timeout,
            client=client.client,
            stray=shared.stray,
        )
        async with upstream:
            self.opened += 1
            client.connection.exit_stack.callback(closed.set)
            task_status.started(upstream)
            await closed.wait()
        if client.upstream is upstream:  # not closed to make room (then the place is free)
            client.upstream = None
            self._open.pop(id(client), None)
