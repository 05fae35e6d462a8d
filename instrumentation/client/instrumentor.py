"""The MCP client instrumentor: one content-free CLIENT span per tool call.

Where the calls go through in mcp 2.3 (checked by introspection, see ARCHITECTURE.md):
``mcp.Client.call_tool`` → ``ClientSession.call_tool`` (once per round: input-required
rounds and the ``HEADER_MISMATCH`` re-send are extra rounds) → the dispatcher. Wrapping
``ClientSession.call_tool`` therefore catches both the unified ``Client`` and raw sessions;
``Client.call_tool`` is wrapped too so that one logical call through ``Client`` is one span
however many rounds it takes (its rounds then open no span of their own).

Everything recorded is shape: sizes (``record.arguments_size`` / ``record.result_size``), the
failure class, ids. Arguments, results and exception messages are never put on a span, and
nothing here keeps a reference to them after the size is computed.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final
from weakref import WeakKeyDictionary

import mcp.client.client
import wrapt
from mcp import StdioServerParameters
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import is_instrumentation_enabled, unwrap
from opentelemetry.trace import ProxyTracerProvider, Span, SpanKind, Status, StatusCode, Tracer

from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_LABEL,
    ATTR_MCP_METHOD,
    ATTR_MCP_PROTOCOL_VERSION,
    ATTR_MCP_SERVER,
    ATTR_NETWORK_TRANSPORT,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_SESSION_POSITION,
    ATTR_SOURCE,
    ATTR_TOOL_NAME,
    ERROR_TYPE_TOOL_ERROR,
    METHOD_TOOLS_CALL,
    METHOD_TOOLS_LIST,
    OPERATION_EXECUTE_TOOL,
    SPAN_NAME_TOOLS_LIST,
)
from toolwatch.instrumentation.client import context as ctx
from toolwatch.instrumentation.client import sdk_hooks
from toolwatch.instrumentation.client.attributes import (
    context_attributes,
    error_attributes,
    fit_strings,
    result_attributes,
    tool_span_name,
)
from toolwatch.instrumentation.client.listing import record_listing
from toolwatch.instrumentation.client.provenance import ProvenanceHook, ProvenanceSpec, install
from toolwatch.instrumentation.client.sdk_hooks import IN_FLIGHT, OPEN_CALLS, InFlight
from toolwatch.instrumentation.export.otlp import TRACER_NAME, fallback_provider
from toolwatch.record import arguments_size
from toolwatch.words import counted

log = logging.getLogger(__name__)

INSTRUMENTS: tuple[str, ...] = ("mcp >= 2.3, < 3",)
SOURCE_OTLP = "otlp"
TRANSPORT_PIPE = "pipe"  # stdio, per the semantic conventions
TRANSPORT_TCP = "tcp"  # streamable HTTP and SSE


try:
    _VERSION: str | None = metadata.version("toolwatch")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    _VERSION = None


# ---------------------------------------------------------------------------- state


@dataclass(slots=True)
class _Settings:
    tracer_provider: trace.TracerProvider | None
    server_name: str | None
    tracer: Tracer | None = None  # resolved on first use (see _tracer)
    provenance: ProvenanceHook | None = None  # argument provenance (see .provenance)


@dataclass(slots=True)
class _SessionInfo:
    server_name: str | None = None
    transport: str | None = None
    #: attributes every span of the session shares, cached once the session has negotiated
    #: its protocol (they cannot change after that) for the settings in ``cached_for``
    attributes: dict[str, Any] | None = None
    cached_for: _Settings | None = None


_settings: _Settings | None = None
_sessions: WeakKeyDictionary[Any, _SessionInfo] = WeakKeyDictionary()


def describe_session(
    session: Any, *, server_name: str | None = None, transport: str | None = None
) -> None:
    """Name the MCP server and transport of a session (``mcp.Client`` or ``ClientSession``).

    The server name declared here wins over the server's own ``serverInfo`` name (use the name
    the agent's configuration gives the server). ``transport`` is a ``network.transport``
    value: ``pipe`` for stdio, ``tcp`` for HTTP. ``mcp.Client`` sessions get the transport
    automatically (from a URL, stdio parameters, or the SDK's ``sse_client`` /
    ``streamable_http_client``); raw ``ClientSession`` users and other transports declare it here.
    """
    if isinstance(session, mcp.client.client.Client):
        try:
            session = session.session
        except RuntimeError as exc:
            raise RuntimeError(
                "describe_session: the Client is not connected yet; call it inside `async with`"
            ) from exc
    info = _sessions.get(session)
    if info is None:
        info = _sessions[session] = _SessionInfo()
    if server_name is not None:
        info.server_name = server_name
    if transport is not None:
        info.transport = transport
    info.attributes = None  # recomputed at the next span


# ---------------------------------------------------------------------------- helpers


def _tracer(settings: _Settings) -> Tracer:
    tracer = settings.tracer
    if tracer is None:
        provider = settings.tracer_provider
        if provider is None and isinstance(trace.get_tracer_provider(), ProxyTracerProvider):
            provider = fallback_provider()  # nobody configured an SDK: export on our own
        tracer = trace.get_tracer(TRACER_NAME, _VERSION, tracer_provider=provider)
        settings.tracer = tracer
    return tracer


def _server_name(settings: _Settings, session: Any, info: _SessionInfo | None) -> str | None:
    if info is not None and info.server_name:
        return info.server_name
    server_info = getattr(session, "server_info", None)
    name = getattr(server_info, "name", None)
    if isinstance(name, str) and name:
        return name
    return settings.server_name


def _session_attributes(settings: _Settings, session: Any) -> dict[str, Any]:
    """Source, server, transport and protocol version: shared by every span of a session.

    Read-only for callers (it may be the cached dict): copy it before adding to it.
    """
    info = _sessions.get(session)
    if info is not None and info.attributes is not None and info.cached_for is settings:
        return info.attributes
    attrs: dict[str, Any] = {ATTR_SOURCE: SOURCE_OTLP}
    server = _server_name(settings, session, info)
    if server is not None:
        attrs[ATTR_MCP_SERVER] = server
    if info is not None and info.transport:
        attrs[ATTR_NETWORK_TRANSPORT] = info.transport
    version = getattr(session, "protocol_version", None)
    if isinstance(version, str):
        attrs[ATTR_MCP_PROTOCOL_VERSION] = version
        # negotiated: server info and version are final; describe_session() resets the cache
        if info is None:
            info = _sessions[session] = _SessionInfo()
        info.attributes, info.cached_for = attrs, settings
    return attrs


# ---------------------------------------------------------------------------- the span

_unrecorded_lock = threading.Lock()
_unrecorded = 0


def unrecorded_spans() -> int:
    """Calls and listings (since the process started) whose span could not be started — the
    call then ran untraced — or not ended cleanly: an error of the OpenTelemetry set-up, e.g.
    a sampler or span processor that raises. The first is logged at WARNING, the rest at
    DEBUG; the agent's call never sees the error."""
    return _unrecorded


def _count_unrecorded(what: str, method: str, exc: Exception) -> None:
    global _unrecorded
    with _unrecorded_lock:
        _unrecorded += 1
        count = _unrecorded
    level = logging.WARNING if count == 1 else logging.DEBUG
    if not log.isEnabledFor(level):  # after the first, on every call's path: words only if shown
        return
    # the exception's type only: its message could quote an argument or a result
    log.log(
        level,
        "toolwatch: could not %s the span of a %s (%s); %s unrecorded so far",
        what,
        method,
        type(exc).__name__,
        counted(count, "span"),
    )


def _call_attributes(
    settings: _Settings, where: ctx.CallContext, name: str, arguments: Any, attrs: dict[str, Any]
) -> None:
    """Add a tools/call span's own start attributes to ``attrs``."""
    attrs[ATTR_OPERATION] = OPERATION_EXECUTE_TOOL
    attrs[ATTR_TOOL_NAME] = name
    attrs[ATTR_SESSION_POSITION] = where[3]
    if where[2] is not None:  # a listing is not issued by a model response
        attrs[ATTR_RESPONSE_ID] = where[2]
    try:
        attrs[ATTR_ARGUMENTS_SIZE] = arguments_size(arguments)
    except Exception:
        # Arguments that are not JSON (a tuple key, circular) have no size (any depth has): it is
        # left off the span (the record's input_bytes is null, fields_present says so), and
        # provenance, which walks a JSON tree, does not look at them (a cycle never ends).
        return
    if settings.provenance is not None:  # before the span starts: not in its duration
        settings.provenance.check(where, name, arguments, attrs)


_OpenCalls = list[tuple[InFlight, str | None]]
_Opened = tuple[Span, otel_context.Context, ctx.CallContext, dict[str, Any], dict[str, Any]]


def _open(
    settings: _Settings, session: Any, in_flight: InFlight, name: str | None, arguments: Any
) -> _Opened | None:
    """Start the span of a call (``name`` set) or a listing: (span, parent context, where,
    start attributes, late attributes known so far); None, counted, when it cannot start."""
    try:
        tracer = settings.tracer or _tracer(settings)
        where = ctx.resolve(take_position=name is not None)
        attrs = context_attributes(
            where, {**_session_attributes(settings, session), ATTR_MCP_METHOD: in_flight.method}
        )
        if name is not None:
            _call_attributes(settings, where, name, arguments, attrs)
        fit_strings(attrs)  # names and ids from the server or the agent: any length, any text
        parent = otel_context.get_current()
        # start_span, not start_as_current_span: use_span's generator context manager costs
        # more than attaching the context by hand (in _traced)
        span = tracer.start_span(
            SPAN_NAME_TOOLS_LIST if name is None else tool_span_name(name),
            parent,
            SpanKind.CLIENT,
            attrs,
        )
        late: dict[str, Any] = {}
        if name is not None and where[2] is None and span.is_recording():
            late[ATTR_RESPONSE_ID] = (
                f"{ctx.SYNTHETIC_RESPONSE_PREFIX}{span.get_span_context().span_id:016x}"
            )
    except Exception as exc:  # telemetry must never break the agent's call
        _count_unrecorded("start", in_flight.method, exc)
        return None
    return span, parent, where, attrs, late


def _enter(session: Any, in_flight: InFlight, name: str | None) -> _OpenCalls | None:
    """List an open call (or listing: ``name`` None) under its session, for injection
    announcements (``note_injection``) and a lost connection (``observe_request_post``)."""
    try:
        open_calls = OPEN_CALLS.get(session)
        if open_calls is None:
            open_calls = OPEN_CALLS[session] = []
    except TypeError:  # a session that cannot be weakly referenced: no announcements
        return None
    open_calls.append((in_flight, name))
    return open_calls


def _failed(in_flight: InFlight, exc: BaseException, late: dict[str, Any]) -> None:
    """The late attributes of a call that raised."""
    if in_flight.received is not None:  # a result arrived, then the SDK refused it
        try:
            result_attributes(in_flight.received, late)
        except Exception as err:
            log.debug("toolwatch: could not measure a refused result (%s)", type(err).__name__)
    try:
        error_attributes(exc, late, lost=in_flight.lost)  # after: its own label wins
    except Exception:
        late[ATTR_ERROR_TYPE] = type(exc).__name__


def _answered(
    settings: _Settings,
    span: Span,
    in_flight: InFlight,
    name: str | None,
    attrs: dict[str, Any],
    result: Any,
    late: dict[str, Any],
) -> None:
    """The late attributes (or listing events) of a call or listing that returned."""
    try:
        if name is None:
            record_listing(_tracer(settings), span, attrs, result)
        elif result_attributes(result, late):
            late[ATTR_ERROR_TYPE] = ERROR_TYPE_TOOL_ERROR
    except Exception as exc:
        log.warning(
            "toolwatch: could not measure a %s result (%s)", in_flight.method, type(exc).__name__
        )


def _close(
    span: Span,
    in_flight: InFlight,
    late: dict[str, Any],
    open_calls: _OpenCalls | None,
) -> None:
    """Take the call off its session's open calls and end its span; never raises."""
    try:
        if open_calls is not None:  # by identity: parallel calls of one tool may look equal
            for i, (call, _) in enumerate(open_calls):
                if call is in_flight:
                    del open_calls[i]
                    break
        if in_flight.request_id is not None:
            late[ATTR_JSONRPC_REQUEST_ID] = in_flight.request_id
        if in_flight.label is not None and ATTR_LABEL not in late:
            late[ATTR_LABEL] = in_flight.label  # e.g. a call that timed out before its answer
        if late:
            span.set_attributes(fit_strings(late))  # a server's label or error class
        if ATTR_ERROR_TYPE in late:
            span.set_status(Status(StatusCode.ERROR))  # no description: may carry content
        span.end()
    except Exception as exc:
        _count_unrecorded("end", in_flight.method, exc)


async def _traced(
    settings: _Settings,
    session: Any,
    in_flight: InFlight,
    name: str | None,
    arguments: Any,
    wrapped: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run one ``tools/call`` (``name`` set) or ``tools/list`` (``name`` None) inside our span.

    Every step of ours is guarded: an error in it is logged (by type) and, when it costs the
    span, counted (:func:`unrecorded_spans`); the agent's call never sees it.
    """
    opened = _open(settings, session, in_flight, name, arguments)
    del arguments  # only its size (and its provenance numbers) are kept
    # set even without a span: a Client call's session rounds then open none of their own
    in_flight_token = IN_FLIGHT.set(in_flight)
    if opened is None:
        try:
            return await wrapped(*args, **kwargs)
        finally:
            IN_FLIGHT.reset(in_flight_token)
    span, parent, where, attrs, late = opened
    kept = None  # the result, for the provenance window once the span has ended
    open_calls = _enter(session, in_flight, name)
    # The span is made current so that the SDK's send span nests under it and the W3C trace
    # context the SDK injects into the request carries it to the server.
    context_token = otel_context.attach(trace.set_span_in_context(span, parent))
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _failed(in_flight, exc, late)
        raise
    else:
        _answered(settings, span, in_flight, name, attrs, result, late)
        kept = result if name is not None else None
        return result
    finally:
        otel_context.detach(context_token)
        IN_FLIGHT.reset(in_flight_token)
        _close(span, in_flight, late, open_calls)
        if kept is not None and settings.provenance is not None and name is not None:
            settings.provenance.ingest(where, name, kept, attrs)  # guarded: logs, never raises


# ---------------------------------------------------------------------------- wrappers


def _call_tool(
    wrapped: Callable[..., Awaitable[Any]],
    session: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    client_call: bool,
) -> Awaitable[Any]:
    # Plain function returning the awaitable: no extra coroutine frame on the hot path.
    settings = _settings
    name = kwargs["name"] if "name" in kwargs else (args[0] if args else None)
    if settings is None or session is None or not isinstance(name, str):
        return wrapped(*args, **kwargs)  # let the SDK report a bad call or an unentered Client
    if not is_instrumentation_enabled():  # inside OTel's suppress_instrumentation()
        return wrapped(*args, **kwargs)
    arguments = kwargs.get("arguments", args[1] if len(args) > 1 else None)
    in_flight = (
        InFlight(METHOD_TOOLS_CALL, session, name) if client_call else InFlight(METHOD_TOOLS_CALL)
    )
    return _traced(settings, session, in_flight, name, arguments, wrapped, args, kwargs)


def _wrap_session_call_tool(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Awaitable[Any]:
    outer = IN_FLIGHT.get()
    if outer is not None and outer.session is instance:
        name = kwargs["name"] if "name" in kwargs else (args[0] if args else None)
        if name == outer.tool:
            return wrapped(*args, **kwargs)  # a round of a Client.call_tool whose span is open
    return _call_tool(wrapped, instance, args, kwargs, client_call=False)


def _wrap_client_call_tool(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Awaitable[Any]:
    session = getattr(instance, "_session", None)  # None until entered: the SDK raises then
    return _call_tool(wrapped, session, args, kwargs, client_call=True)


def _wrap_session_list_tools(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Awaitable[Any]:
    settings = _settings
    if settings is None or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    in_flight = InFlight(METHOD_TOOLS_LIST)
    return _traced(settings, instance, in_flight, None, None, wrapped, args, kwargs)


# ---------------------------------------------------------------------------- transports


#: the SDK's HTTP client transports an agent may build itself: (module, function)
_HTTP_TRANSPORTS: Final = (
    ("mcp.client.sse", "sse_client"),
    ("mcp.client.streamable_http", "streamable_http_client"),
)


def _http_transport(target: object) -> bool:
    """Whether ``target`` is a transport made by one of the SDK's HTTP clients
    (``Client(sse_client(url))``): an ``@asynccontextmanager`` instance keeps the generator
    function it runs as ``func``, and the SDK's decorated function keeps it as ``__wrapped__``.
    A module nobody imported made no transport (and is not imported here)."""
    func = getattr(target, "func", None)
    if func is None:
        return False
    for module_name, name in _HTTP_TRANSPORTS:
        module = sys.modules.get(module_name)
        made_by = getattr(getattr(module, name, None), "__wrapped__", None)
        if made_by is not None and func is made_by:
            return True
    return False


async def _wrap_client_aenter(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    try:  # before entering: an @asynccontextmanager forgets its function once entered
        target = instance.server
        transport = (
            TRANSPORT_PIPE
            if isinstance(target, StdioServerParameters)
            else TRANSPORT_TCP
            if isinstance(target, str) or _http_transport(target)
            else None  # in-process server or another caller-built transport: unknown
        )
    except Exception:
        log.debug("toolwatch: could not read the transport of a Client", exc_info=True)
        transport = None
    client = await wrapped(*args, **kwargs)
    try:
        if transport is not None:
            info = _sessions.get(instance.session)
            if info is None:
                _sessions[instance.session] = _SessionInfo(transport=transport)
            elif info.transport is None:
                info.transport = transport
    except Exception:
        log.debug("toolwatch: could not note the transport of a Client", exc_info=True)
    return client


# ---------------------------------------------------------------------------- instrumentor

#: (module, class, method, wrapper); ``_uninstrument`` restores exactly these.
_WRAPPED: tuple[tuple[str, str, str, Callable[..., Any]], ...] = (
    ("mcp.client.session", "ClientSession", "call_tool", _wrap_session_call_tool),
    ("mcp.client.session", "ClientSession", "list_tools", _wrap_session_list_tools),
    ("mcp.client.client", "Client", "call_tool", _wrap_client_call_tool),
    ("mcp.client.client", "Client", "__aenter__", _wrap_client_aenter),
)


class ToolwatchMCPInstrumentor(BaseInstrumentor):
    """OpenTelemetry instrumentor for mcp 2.x clients (entry point ``mcp_toolwatch``).

    ``instrument(tracer_provider=..., server_name=...)``: ``server_name`` is used when a
    session's server neither identifies itself nor was named with :func:`describe_session`.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return INSTRUMENTS

    def _instrument(self, **kwargs: Any) -> None:
        global _settings
        for module, owner, method, wrapper in _WRAPPED:
            wrapt.wrap_function_wrapper(module, f"{owner}.{method}", wrapper)
        sdk_hooks.install()
        _settings = _Settings(kwargs.get("tracer_provider"), kwargs.get("server_name"))
        _settings.provenance = install(kwargs.get("provenance"))

    def _uninstrument(self, **kwargs: Any) -> None:
        global _settings
        _settings = None
        install(False)
        for module, owner, method, _ in _WRAPPED:
            unwrap(getattr(importlib.import_module(module), owner), method)
        sdk_hooks.uninstall()


def instrument(
    tracer_provider: trace.TracerProvider | None = None,
    server_name: str | None = None,
    provenance: ProvenanceSpec = None,
) -> None:
    """Instrument mcp clients (re-instrumenting with these settings if already instrumented).

    ``tracer_provider``: where spans go; default the global provider, or — when no SDK was
    configured at all — toolwatch's own OTLP exporter (see :func:`fallback_provider`).
    ``provenance``: see :func:`toolwatch.instrumentation.client.provenance.install`.
    """
    instrumentor = ToolwatchMCPInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(
        tracer_provider=tracer_provider, server_name=server_name, provenance=provenance
    )


def uninstrument() -> None:
    """Remove every wrapper; calls made afterwards leave no span."""
    instrumentor = ToolwatchMCPInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
