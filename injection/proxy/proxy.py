"""The fault proxy: a real MCP server in front of a real upstream MCP server.

The proxy forwards ``tools/list`` and ``tools/call`` (and resources / prompts when the upstream
has them) from any client to the upstream, which it reaches over stdio (a command it starts),
streamable HTTP (a URL) or in process (a server object). With no fault due, the client gets
what the upstream returned (only the upstream's ``serverInfo`` stamp is re-issued by the
proxy's own runner, era-correctly: see :func:`_unstamp`). A scenario arms one fault; the
proxy counts the calls of each tool (and the ``tools/list`` responses), asks the fault engine
(:mod:`.faults`) what each call becomes, and labels every injected response so detection can
be scored later.

Occurrences are counted per proxy, across all clients of that proxy. A handshake-era client
gets an upstream session of its own, so what the server asks of its client reaches that client
(:mod:`.sessions`); a 2026-07-28 client's later rounds of a call (answering the server's
``InputRequiredResult``) reach the upstream whole and are the same call (:mod:`.rounds`), and
its request's log lines reach it, one request at a time on the shared connection
(:mod:`.log_lines`). An upstream that dies is
reported as a JSON-RPC error naming it, and is reconnected (restarted, for a command) on the
next request (:mod:`.upstream`), so the proxy keeps serving.
"""

from __future__ import annotations

import logging
import signal
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
from mcp import MCPDeprecationWarning, MCPError
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.edits import tool_in
from toolwatch.injection.faults.effects import CallPlan, announce_injection
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.fit import upstream_problems
from toolwatch.injection.faults.scenario import Scenario, ScenarioError
from toolwatch.injection.faults.server import scenario_server
from toolwatch.injection.proxy.era import discover_refused
from toolwatch.injection.proxy.listen import ListenRelay, relays_changes, upstream_flags
from toolwatch.injection.proxy.log_lines import with_opt_in
from toolwatch.injection.proxy.options import MAX_OPEN
from toolwatch.injection.proxy.outcomes import Outcomes
from toolwatch.injection.proxy.rounds import Rounds, is_retry, upstream_params
from toolwatch.injection.proxy.serving import HttpServer as HttpServer
from toolwatch.injection.proxy.serving import http_server as http_server
from toolwatch.injection.proxy.serving import lowlevel
from toolwatch.injection.proxy.sessions import ClientSessions, own_session
from toolwatch.injection.proxy.stdio_front import screened_stdio
from toolwatch.injection.proxy.upstream import (
    CallResult,
    Upstream,
    UpstreamTarget,
    UpstreamUnavailable,
)

logger = logging.getLogger(__name__)

Transport = Literal["stdio", "http"]
_T = TypeVar("_T")
_R = TypeVar("_R", bound=types.Result)
#: A 2026-07-28 server may answer these by asking the client for input (relayed as it is).
_READ_RESULT: TypeAdapter[types.ReadResourceResult | types.InputRequiredResult] = TypeAdapter(
    types.ReadResourceResult | types.InputRequiredResult
)
_PROMPT_RESULT: TypeAdapter[types.GetPromptResult | types.InputRequiredResult] = TypeAdapter(
    types.GetPromptResult | types.InputRequiredResult
)
#: ``data`` key of the JSON-RPC error the proxy sends when the upstream cannot be reached.
UPSTREAM_UNAVAILABLE_KEY = "toolwatch/upstream"
#: The most ``tools/list`` pages read at start (a cursor that never ends stops there).
_START_PAGES = 100


# --------------------------------------------------------------------------------------------
# The proxy server
# --------------------------------------------------------------------------------------------


class FaultProxy(Server[Any]):
    """A low-level ``Server`` forwarding to an :class:`Upstream`, with at most one armed fault.

    ``mcp.Client(proxy)`` connects to it in process; :func:`serve` runs it over stdio or
    streamable HTTP.
    """

    def __init__(
        self,
        upstream: Upstream,
        scenario: Scenario | None = None,
        *,
        seed: int = 0,
        injection_log: str | Path | None = None,
        sessions: ClientSessions | None = None,
    ) -> None:
        """``sessions``: each handshake-era client's own upstream session (without it, every
        client shares ``upstream``, which offers no client capability)."""
        client = upstream.client
        info = client.server_info or types.Implementation(name="upstream", version="")
        caps = client.server_capabilities
        #: The protocol version the upstream agreed to with the proxy (its era, which a
        #: reconnect keeps).
        self.upstream_version = client.protocol_version
        self._upstream_caps = caps
        self._relays_changes = relays_changes(upstream)
        self.sessions = sessions
        #: A handshake-era upstream's change notices reach a handshake-era client on its own
        #: session (:mod:`.sessions`), so its flags, subscriptions and completions pass through.
        self._relays_handshake = sessions is not None and self.upstream_era_is_handshake
        subscribes = self._relays_handshake and bool(caps.resources and caps.resources.subscribe)
        relayed: dict[str, Any] = {}
        if sessions is not None:  # a handshake-era client's own session carries these
            relayed["on_roots_list_changed"] = self._roots_changed
            if caps.logging is not None:
                relayed["on_set_logging_level"] = self._set_logging_level
        with warnings.catch_warnings():  # deprecated from 2026-07-28, still the 2025 protocol
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            super().__init__(
                info.name,
                version=info.version,
                title=info.title,
                description=info.description,
                instructions=client.instructions,
                website_url=info.website_url,
                icons=info.icons,
                get_tool_input_schema=self._advertised_input_schema,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_list_resources=self._list_resources if caps.resources else None,
                on_read_resource=self._read_resource if caps.resources else None,
                on_list_resource_templates=self._list_resource_templates
                if caps.resources
                else None,
                on_list_prompts=self._list_prompts if caps.prompts else None,
                on_get_prompt=self._get_prompt if caps.prompts else None,
                on_subscribe_resource=self._subscribe if subscribes else None,
                on_unsubscribe_resource=self._unsubscribe if subscribes else None,
                on_subscriptions_listen=self._listen if self._relays_changes else None,
                on_completion=self._complete if caps.completions is not None else None,
                **relayed,
            )
        self.upstream = upstream
        self.scenario = scenario
        self.seed = seed
        self.engine = FaultEngine.for_scenario(scenario, seed=seed) if scenario else None
        self.calls: Counter[str] = Counter()
        self.rounds = Rounds()
        self.listings = 0
        #: What each due fault came to, and the injection log (:mod:`.outcomes`).
        self.outcomes = Outcomes(scenario, self.engine, injection_log)
        self.injections = self.outcomes.injections
        self._upstream_tools: list[dict[str, Any]] = []
        self._input_schemas: dict[str, dict[str, Any]] = {}
        self._listing_poisoned = False
        self.log = self.outcomes.log

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """The SDK's capabilities, with the upstream's change flags passed through when the
        proxy relays its change notifications: a 2026-07-28 upstream's to a 2026-07-28 client
        (:mod:`.listen`), a handshake-era upstream's to a handshake-era one (:mod:`.sessions`)."""
        own = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        modern = protocol_version in MODERN_PROTOCOL_VERSIONS
        if self._relays_changes if modern else self._relays_handshake:
            return upstream_flags(own, self._upstream_caps)
        return own

    @property
    def upstream_era_is_handshake(self) -> bool:
        """Whether the upstream answered the ``auto`` probe as a handshake-era server."""
        return self.upstream_version not in MODERN_PROTOCOL_VERSIONS

    # -- start-up ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Learn the upstream's tools and say which fault is armed (or that none is).

        A fault the upstream's listing says can never fire as written (its tool not listed,
        an A4 rename of an argument the tool does not have, a silent fault its declared
        output schema rejects) is :class:`ScenarioError` at that scenario field: proxying
        unchanged while the user believes a fault is armed would be a silent no-op.

        An upstream that completes the handshake but never answers ``tools/list`` would hold
        the start forever: after the connect timeout it is :class:`UpstreamUnavailable`.
        """
        timeout = self.upstream.connect_timeout
        listed = False
        try:
            with anyio.fail_after(timeout):
                cursor: str | None = None
                for _ in range(_START_PAGES):  # every page: the faulty tool may be on any
                    params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                    listing = await self.upstream.list_tools(params)
                    self._remember(listing)
                    self._advertise(listing)
                    cursor = listing.next_cursor
                    if cursor is None:
                        listed = True
                        break
        except TimeoutError as exc:
            raise UpstreamUnavailable(
                f"upstream {self.upstream.name} did not answer tools/list within {timeout:g} s"
            ) from exc
        except (UpstreamUnavailable, MCPError) as exc:
            logger.warning("could not list the upstream's tools at start: %s", exc)
        for line in self.armed():
            logger.info("%s", line)
        if self.scenario is not None and listed:
            problems = upstream_problems(self.scenario, self._upstream_tools, self.upstream.name)
            if problems:
                raise ScenarioError(self.scenario.source, problems)

    def armed(self) -> list[str]:
        """Lines describing what the proxy will do to traffic, and the protocol version the
        upstream agreed to (a handshake-era one is why clients settle on it: :mod:`.era`)."""
        era = ", handshake era" if self.upstream_era_is_handshake else ""
        target = f"proxy to {self.upstream.name} (upstream agreed to {self.upstream_version}{era})"
        if self.engine is None or self.scenario is None:
            return [f"{target}: transparent, no fault armed"]
        return [
            f"{target}: scenario {self.scenario.id} ({self.scenario.source}), seed {self.seed}",
            f"armed: {self.engine.describe()}",
        ]

    def _remember(self, listing: types.ListToolsResult) -> None:
        wire = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listing.tools]
        by_name = {t["name"]: t for t in self._upstream_tools}
        by_name.update({t["name"]: t for t in wire})
        self._upstream_tools = list(by_name.values())

    # -- forwarding ----------------------------------------------------------------------------

    async def _forward(
        self,
        ctx: ServerRequestContext[Any] | None,
        call: Callable[[Upstream, bool], Awaitable[_T]],
    ) -> _T:
        """``call(upstream, log_opt_in)`` on the upstream session of ``ctx``'s client (its own,
        for a handshake-era client: :mod:`.sessions`), noted as that client's call in flight
        meanwhile; on the shared session, with the client's log opt-in passed on when its
        request may hold the lines (:mod:`.log_lines`)."""
        try:
            sessions = self.sessions
            if sessions is None or ctx is None or not own_session(ctx):
                shared = self.upstream
                modern = not self.upstream_era_is_handshake
                return await shared.lines.forward(
                    ctx, lambda opt_in: call(shared, opt_in), modern=modern
                )
            upstream = await sessions.upstream_for(ctx)
            with sessions.serving(ctx):
                return await call(upstream, False)
        except UpstreamUnavailable as exc:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"toolwatch proxy: {exc}",
                data={UPSTREAM_UNAVAILABLE_KEY: "unavailable"},
            ) from exc

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listing = await self._listing(ctx, params)
        self._advertise(listing)
        return _unstamp(listing)

    def _advertise(self, listing: types.ListToolsResult) -> None:
        self._input_schemas.update({t.name: t.input_schema for t in listing.tools})

    def _advertised_input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of ``name`` in the last listing served (or, before any, the
        upstream's), for the SDK's ``Mcp-Param-*`` header check of a 2026-07-28 call over HTTP.

        Without it the SDK runs the ``tools/list`` handler itself before every such call: a
        listing no client sees, which the proxy would count (C2 would poison from the 2nd of
        them) and record as injected.
        """
        return self._input_schemas.get(name)

    async def _listing(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        result = await self._forward(ctx, lambda up, log: up.list_tools(with_opt_in(params, log)))
        self.listings += 1
        self._remember(result)
        engine = self.engine
        if engine is None or not engine.rewrites_listing:
            return result
        wire = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]
        target = engine.fault.tool
        effect = engine.rewrite_listing(
            wire, listing=self.listings, next_call=self.calls[target] + 1
        )
        self._listing_poisoned = engine.poisoned_after(wire, effect, self._listing_poisoned)
        # The listing depends on proxy state: tell clients not to cache it.
        update: dict[str, Any] = {"ttl_ms": 0}
        if effect.applied:
            self.outcomes.injected(target, self.listings, "listing", effect.note)
            update["tools"] = [types.Tool.model_validate(t) for t in effect.tools]
            update["meta"] = {**(result.meta or {}), LABEL_META_KEY: engine.label}
        elif effect.not_applicable and (tool_in(wire, target) or not _paged(params, result)):
            # due, but the listing lacks what it rewrites (a page of a paged one may lack the
            # tool: it can be on another page)
            self.outcomes.skipped(target, self.listings, effect.note, unit="tools/list")
        return result.model_copy(update=update)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> CallResult:
        # A client that asked for progress (a progressToken) gets the upstream's, relayed: the
        # upstream is asked with a token of the proxy's own. Without it the token was dropped
        # and a long call went silent (server-everything's trigger-long-running-operation).
        asked = (params.meta or {}).get("progress_token") is not None
        progress = ctx.session.report_progress if asked else None
        return _unstamp(await self._call(params, ctx, progress))

    async def _call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any],
        progress: ProgressFnT | None = None,
    ) -> CallResult:
        """One round of a call: a 2026-07-28 retry (answering the upstream's input request)
        continues its call (:mod:`.rounds`), any other round is the next occurrence."""
        name, arguments = params.name, params.arguments

        def upstream(args: dict[str, Any] | None) -> Awaitable[CallResult]:
            return self._forward(
                ctx, lambda up, log: up.call_tool(upstream_params(params, args, log), progress)
            )

        retry = is_retry(params)
        held = self.rounds.resume(params) if retry else None
        if not retry:
            self.calls[name] += 1
        n = held.occurrence if held is not None else self.calls[name]
        engine = self.engine
        if engine is None or not engine.targets(name):
            return await upstream(arguments)
        if held is not None:
            plan = held
        elif retry:  # its first round was not seen (or was forgotten): not faulted
            plan = CallPlan(name, n, False, dict(arguments or {}))
        else:
            plan = engine.plan(name, arguments, n, self._upstream_tools)
        if engine.counts_listings:
            result = await upstream(arguments)
            if not isinstance(result, types.CallToolResult):
                self.rounds.hold(params, result, plan)
                return result
            listed = engine.listed_call(_dump(result), poisoned=self._listing_poisoned)
            if not listed.applied:
                return result
            self.outcomes.injected(name, n, "under_listing", listed.note)
            return await listed.deliver()
        if not plan.due:
            return await upstream(arguments)
        upstream_result: types.CallToolResult | None = None
        if plan.call_upstream:
            raw = await upstream(plan.arguments)
            if not isinstance(raw, types.CallToolResult):
                self.rounds.hold(params, raw, plan)  # the fault meets the call's final result
                return raw
            upstream_result = raw
        effect = engine.apply(plan, None if upstream_result is None else _dump(upstream_result))
        if not effect.applied:
            self.outcomes.skipped(name, n, effect.note)  # counted, logged, in the log
            if upstream_result is not None:
                return upstream_result
            return await upstream(arguments)
        self.outcomes.injected(
            name, n, "reject" if plan.reject is not None else "call", effect.note
        )
        request = ctx
        return await effect.deliver(lambda: announce_injection(request, name, engine.label))

    async def _relay(
        self, ctx: ServerRequestContext[Any], request: Any, result_type: type[_R] | TypeAdapter[_R]
    ) -> _R:
        """Forward any other request unchanged (resources, prompts, ``logging/setLevel``), its
        log opt-in as a call's (:mod:`.log_lines`)."""

        def sent(log: bool) -> Any:
            return request.model_copy(update={"params": with_opt_in(request.params, log)})

        result = await self._forward(
            ctx, lambda up, log: up.send(lambda s: s.send_request(sent(log), result_type))
        )
        return _unstamp(result)

    async def _listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        return await self._forward(None, lambda up, _: ListenRelay(up)(ctx, params))

    async def _set_logging_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """On the client's own upstream session: its level is nobody else's (and is sent again
        to a session of the client's opened afresh: :mod:`.sessions`)."""
        result = await self._relay(ctx, types.SetLevelRequest(params=params), types.EmptyResult)
        if self.sessions is not None:
            self.sessions.remember_level(ctx, params)
        return result

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await self._relay(ctx, types.CompleteRequest(params=params), types.CompleteResult)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """On the client's own upstream session, whose ``resources/updated`` reach it (and are
        subscribed again on a session of the client's opened afresh: :mod:`.sessions`)."""
        result = await self._relay(ctx, types.SubscribeRequest(params=params), types.EmptyResult)
        if self.sessions is not None:
            self.sessions.remember_subscription(ctx, params.uri, subscribed=True)
        return result

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        result = await self._relay(ctx, types.UnsubscribeRequest(params=params), types.EmptyResult)
        if self.sessions is not None:
            self.sessions.remember_subscription(ctx, params.uri, subscribed=False)
        return result

    async def _roots_changed(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams | None
    ) -> None:
        """Told to the client's own upstream session, if it has one open (one opened later
        asks for the roots afresh)."""
        upstream = self.sessions.session_of(ctx) if self.sessions is not None else None
        if upstream is None:
            return
        change = types.RootsListChangedNotification(params=params)
        try:
            await upstream.send(lambda s: s.send_notification(change))
        except (UpstreamUnavailable, MCPError) as exc:
            logger.warning("could not tell upstream %s that roots changed: %s", upstream.name, exc)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await self._relay(
            ctx, types.ListResourcesRequest(params=params), types.ListResourcesResult
        )

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return await self._relay(
            ctx,
            types.ListResourceTemplatesRequest(params=params),
            types.ListResourceTemplatesResult,
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        return await self._relay(ctx, types.ReadResourceRequest(params=params), _READ_RESULT)

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return await self._relay(
            ctx, types.ListPromptsRequest(params=params), types.ListPromptsResult
        )

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        return await self._relay(ctx, types.GetPromptRequest(params=params), _PROMPT_RESULT)


def _unstamp(result: _R) -> _R:
    """Drop the upstream's ``serverInfo`` stamp: the proxy's own runner stamps the same
    identity when the client speaks the 2026 protocol, and nothing for an older client,
    exactly as the upstream would for a direct connection in that era."""
    meta = result.meta
    if not meta or types.SERVER_INFO_META_KEY not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


def _paged(params: types.PaginatedRequestParams | None, result: types.ListToolsResult) -> bool:
    """Whether ``result`` is one page of a listing in several."""
    return bool(params is not None and params.cursor) or result.next_cursor is not None


def _dump(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


@asynccontextmanager
async def run_proxy(
    scenario: Scenario | None,
    upstream: UpstreamTarget | None = None,
    *,
    seed: int = 0,
    injection_log: str | Path | None = None,
    connect_timeout: float = 30.0,
    max_client_sessions: int = MAX_OPEN,
) -> AsyncIterator[FaultProxy]:
    """Connect to ``upstream`` and yield a :class:`FaultProxy` (an MCP ``Server``).

    ``upstream`` is a URL, ``StdioServerParameters``, or a server object; when omitted, the
    scenario's own tools are served in process (fully offline). ``max_client_sessions``:
    handshake-era clients' own upstream sessions open at once, at most (:mod:`.sessions`). Raises
    :class:`UpstreamUnavailable` when the upstream cannot be reached at start, or does not
    answer ``tools/list`` within ``connect_timeout`` seconds.
    """
    if upstream is None:
        if scenario is None:
            raise ValueError("run_proxy needs an upstream or a scenario to serve")
        upstream = scenario_server(scenario)
    async with (
        Upstream(upstream, connect_timeout=connect_timeout) as up,
        ClientSessions(up, max_open=max_client_sessions) as sessions,
    ):
        proxy = FaultProxy(up, scenario, seed=seed, injection_log=injection_log, sessions=sessions)
        await proxy.start()
        yield proxy


# --------------------------------------------------------------------------------------------
# Serving a server (the proxy, or a scenario server) over stdio or streamable HTTP
# --------------------------------------------------------------------------------------------


async def serve(
    server: Server[Any] | MCPServer,
    transport: Transport = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    on_listening: Callable[[str], None] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> signal.Signals | None:
    """Serve until the client disconnects (stdio) or the process is stopped by a signal (HTTP:
    which one is returned; over stdio a caller's :func:`.stdio_stop.stopped_by_signals` knows).
    Over HTTP at most ``max_sessions`` are open at once, and one idle ``session_idle_timeout``
    seconds is closed (:func:`http_server`)."""
    if transport == "stdio":
        low = lowlevel(server)
        async with screened_stdio() as (read, write):  # bad lines answered, as JSON-RPC asks
            if isinstance(server, FaultProxy) and server.upstream_era_is_handshake:
                async with discover_refused(read, write) as gated:  # settles as directly
                    await low.run(gated, write, low.create_initialization_options())
                return None
            await low.run(read, write, low.create_initialization_options())
        return None
    async with http_server(
        server,
        host=host,
        port=port,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    ) as endpoint:
        if on_listening is not None:
            on_listening(endpoint.url)
        await endpoint.wait_closed()
    return endpoint.stopped_by
