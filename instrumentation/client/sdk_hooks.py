"""The mcp SDK (and asyncio) internals the instrumentor observes (never changes), and the
in-flight call state they feed.

Public ``ClientSession``/``Client`` methods are wrapped by the instrumentor itself. These hooks
reach private parts of mcp 2.x, which may move in any release, so each is listed in
:data:`PRIVATE_HOOKS` with what is lost without it; ``tests/instrumentation/test_sdk_hooks.py``
fails loudly when one is gone, and :func:`install` logs a WARNING (not a silent DEBUG line):

* ``mcp.shared.jsonrpc_dispatcher.otel_span`` — the SDK's send span; its attributes carry the
  request's JSON-RPC id (``jsonrpc.request.id`` on our span);
* ``ClientSession._intercept_notification`` — sees every server notification in receive order:
  a fault proxy's injection announcement (the label of a call that times out);
* ``ClientSession.validate_tool_result`` — sees a result *before* the output-schema check, which
  raises for a result without structured content (a B4 ``return_empty`` injection): the label
  and the result size are kept although the call then fails;
* ``StreamableHTTPTransport._run_request_post`` — sees a request's POST fail (the server died
  or refused the connection): the transport's task group then ends, cancelling the caller, so
  the call (and every call and listing open on its session) is marked as having lost its
  connection;
* ``StreamableHTTPTransport._resolve_abandoned_request`` — sees the transport give a request up
  (its SSE stream ended without the answer) with the SDK's own -32000 error;
* ``asyncio.timeouts.Timeout._on_timeout`` and ``asyncio.tasks._cancel_and_wait`` — see a
  deadline cancel its task (see :mod:`.deadlines`);
* ``Client._session`` (read by the instrumentor) — the unified client's session.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final
from weakref import WeakKeyDictionary

import wrapt
from mcp.types import CONNECTION_CLOSED, CallToolResult
from opentelemetry.instrumentation.utils import unwrap

from toolwatch.conventions import (
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_MCP_METHOD,
    INJECTION_NOTIFICATION,
    LABEL_META_KEY,
    REQUEST_META_KEY,
    TOOL_META_KEY,
)
from toolwatch.instrumentation.client.deadlines import observe_timeout, observe_wait_for_cancel
from toolwatch.words import counted

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class InFlight:
    """A span of ours in progress: receives the JSON-RPC id of the request it sends.

    ``session``/``tool`` are set for a ``Client.call_tool`` span, whose session rounds then
    open no span of their own. Compared by identity (``eq=False``): two parallel calls of one
    tool over in-process dispatch (no JSON-RPC id) have equal fields yet are two calls.
    """

    method: str
    session: Any = None
    tool: str | None = None
    request_id: str | None = None
    #: a ground-truth label announced by a fault proxy before the answer (see note_injection)
    label: str | None = None
    #: the result the SDK received before its output-schema check (see observe_validation):
    #: measured only when that check then refuses it
    received: Any = None
    #: the connection to the server was lost before the answer (see observe_request_post and
    #: observe_abandoned_request): the call's cancel or the SDK's -32000 is connection_closed
    lost: bool = False


IN_FLIGHT: ContextVar[InFlight | None] = ContextVar("toolwatch_in_flight", default=None)
#: tools/call and tools/list spans open per ClientSession, with the call's tool name (None for
#: a listing): a call's injection announcement, and every request a lost connection ends
OPEN_CALLS: WeakKeyDictionary[Any, list[tuple[InFlight, str | None]]] = WeakKeyDictionary()
_active = False


def observe_send_span(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Read the JSON-RPC request id off the SDK's own send span, without changing it."""
    in_flight = IN_FLIGHT.get()
    if in_flight is not None:
        attributes = kwargs.get("attributes")
        # dict first: an exact type match skips the ABC's Python-level __instancecheck__
        if (
            isinstance(attributes, (dict, Mapping))
            and attributes.get(ATTR_MCP_METHOD) == in_flight.method
        ):
            request_id = attributes.get(ATTR_JSONRPC_REQUEST_ID)
            if request_id is not None:
                in_flight.request_id = str(request_id)
    return wrapped(*args, **kwargs)


def note_injection(session: Any, params: Any) -> None:
    """Give the announced label to the open call it names: by JSON-RPC id when the span knows
    it, else (in-process transports mint ids the span never sees) the session's one open
    call of that tool without an id. Ambiguous or unknown announcements are ignored."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if not isinstance(meta, Mapping):
        return
    label, request_id, tool = (
        meta.get(LABEL_META_KEY),
        meta.get(REQUEST_META_KEY),
        meta.get(TOOL_META_KEY),
    )
    calls = OPEN_CALLS.get(session)
    if not isinstance(label, str) or not calls:
        return
    rid = None if request_id is None or isinstance(request_id, bool) else str(request_id)
    calls = [(c, n) for c, n in calls if n is not None]  # a listing has no label
    match = [c for c, _ in calls if rid is not None and c.request_id == rid]
    if not match:
        match = [c for c, n in calls if c.request_id is None and n == tool]
    if len(match) == 1:
        match[0].label = label
    elif log.isEnabledFor(logging.DEBUG):  # on a proxy's hot path: its words only when shown
        log.debug(
            "toolwatch: injection announcement matches %s; ignored",
            counted(len(match), "open call"),
        )


def observe_notification(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """See a fault proxy's injection announcement (runs in receive order, so before the
    call's answer or its timeout), without consuming or changing any notification."""
    method = args[0] if args else kwargs.get("method")
    if method == INJECTION_NOTIFICATION and _active:
        try:
            note_injection(instance, args[1] if len(args) > 1 else kwargs.get("params"))
        except Exception:
            log.debug("toolwatch: could not read an injection announcement", exc_info=True)
    return wrapped(*args, **kwargs)


def observe_validation(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Keep the result the SDK is about to check against the tool's output schema (which
    raises for an injected empty result: the call still gets its label and size, measured
    then — a result that passes is measured once, as the call's answer)."""
    in_flight = IN_FLIGHT.get()
    result = args[1] if len(args) > 1 else kwargs.get("result")
    if in_flight is not None and isinstance(result, CallToolResult):
        in_flight.received = result
    return wrapped(*args, **kwargs)


async def observe_request_post(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A request's POST that raises (the server died mid-call, or is gone) ends the streamable
    HTTP transport's task group, which cancels the calls waiting on it: mark the call that sent
    it (the POST runs in a copy of its context) and every call and listing open on its session
    as lost (a listing's POST may be the one that fails first, and the calls' then never do)."""
    try:
        return await wrapped(*args, **kwargs)
    except Exception:
        in_flight = IN_FLIGHT.get()
        if in_flight is not None:
            in_flight.lost = True
            for calls in list(OPEN_CALLS.values()):
                if any(call is in_flight for call, _ in calls):
                    for call, _ in calls:
                        call.lost = True
                    break
        raise


def observe_abandoned_request(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """The transport answers a request it gave up on with the SDK's -32000 (its SSE stream
    ended without the answer): mark the call that sent that request as lost."""
    request_id = args[1] if len(args) > 1 else kwargs.get("request_id")
    in_flight = IN_FLIGHT.get()
    if (
        kwargs.get("code", CONNECTION_CLOSED) == CONNECTION_CLOSED
        and in_flight is not None
        and in_flight.request_id in (None, str(request_id))
    ):
        in_flight.lost = True
    return wrapped(*args, **kwargs)


@dataclass(frozen=True, slots=True)
class Hook:
    """One private mcp attribute the instrumentation wraps, and what is lost without it."""

    module: str
    name: str  # "Class.method" or a module-level function
    wrapper: Callable[..., Any]
    loses: str


PRIVATE_HOOKS: Final[tuple[Hook, ...]] = (
    Hook(
        "mcp.shared.jsonrpc_dispatcher",
        "otel_span",
        observe_send_span,
        "spans get no jsonrpc.request.id",
    ),
    Hook(
        "mcp.client.session",
        "ClientSession._intercept_notification",
        observe_notification,
        "labels announced by a fault proxy before a timeout are not seen",
    ),
    Hook(
        "mcp.client.session",
        "ClientSession.validate_tool_result",
        observe_validation,
        "calls failing the output-schema check lose their label and result size",
    ),
    Hook(
        "mcp.client.streamable_http",
        "StreamableHTTPTransport._run_request_post",
        observe_request_post,
        "a call whose HTTP server dies before answering is cancelled, not connection_closed",
    ),
    Hook(
        "mcp.client.streamable_http",
        "StreamableHTTPTransport._resolve_abandoned_request",
        observe_abandoned_request,
        "a call whose SSE stream ends before the answer is -32000, not connection_closed",
    ),
    Hook(
        "asyncio.timeouts",
        "Timeout._on_timeout",
        observe_timeout,
        "a call ended by asyncio.timeout (wait_for from 3.12) is cancelled, not timeout",
    ),
    Hook(
        "asyncio.tasks",
        "_cancel_and_wait",
        observe_wait_for_cancel,
        "a call ended by asyncio.wait_for on Python 3.11 is cancelled, not timeout",
    ),
)
#: attributes the instrumentation reads (not wraps) on SDK objects
PRIVATE_ATTRIBUTES: Final[tuple[tuple[str, str, str], ...]] = (
    ("mcp.client.client", "Client", "_session"),
)


def install() -> list[Hook]:
    """Wrap every hook present; returns the ones missing (each logged as a WARNING)."""
    global _active
    missing = []
    for hook in PRIVATE_HOOKS:
        try:
            wrapt.wrap_function_wrapper(hook.module, hook.name, hook.wrapper)
        except (AttributeError, ImportError):
            missing.append(hook)
            log.warning(
                "toolwatch: this mcp has no %s.%s (a private hook): %s",
                hook.module,
                hook.name,
                hook.loses,
            )
    _active = True
    return missing


def uninstall() -> None:
    global _active
    _active = False
    for hook in PRIVATE_HOOKS:
        owner_name, _, attr = hook.name.rpartition(".")
        try:
            owner: Any = importlib.import_module(hook.module)
            if owner_name:
                owner = getattr(owner, owner_name)
        except (AttributeError, ImportError):
            continue
        unwrap(owner, attr)
