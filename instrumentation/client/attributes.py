"""What goes on a span, from a call's shape only: the conversation and agent it belongs to,
its result's size and label, its failure class, its span name.

Values are computed here and nothing of the content is kept; the instrumentor
(:mod:`.instrumentor`) decides when each is taken and puts them on its span, every string
first fitted to what a record can hold (:func:`fit_strings`: a server's 5,000-byte label or
tool name would get the whole span rejected by the collector after the exporter counted it
as delivered).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any, Final

from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

from toolwatch.conventions import (
    ATTR_AGENT_ID,
    ATTR_CONVERSATION_ID,
    ATTR_ERROR_TYPE,
    ATTR_LABEL,
    ATTR_RESULT_SIZE,
    ERROR_TYPE_CANCELLED,
    ERROR_TYPE_CONNECTION_CLOSED,
    ERROR_TYPE_TIMEOUT,
    LABEL_META_KEY,
    span_name,
)
from toolwatch.instrumentation.client.context import CallContext
from toolwatch.instrumentation.client.deadlines import deadline_cancelled
from toolwatch.record import MAX_STRING_BYTES, fit_string, result_size

#: ``span_name(tool)`` per tool seen (bounded: names come from the agent, not from input)
_SPAN_NAMES: dict[str, str] = {}
_MAX_SPAN_NAMES: Final = 4_096
#: the message of the error the mcp SDK raises itself when the connection closes (its code is
#: -32000, which servers also send): compared, never exported
_SDK_CLOSED_MESSAGE: Final = "Connection closed"


def error_type_of(exc: BaseException, *, lost: bool = False) -> str:
    """``error.type`` of a failed call: ``timeout``, ``cancelled``, ``connection_closed``, the
    JSON-RPC code, or the class name.

    A cancelled call is ``cancelled`` rather than its class name: the class is the event
    loop's (``CancelledError`` on asyncio, ``Cancelled`` on trio), not the call's; a cancel a
    deadline sent (``fail_after``, ``asyncio.wait_for``: :mod:`.deadlines`) is ``timeout``. The
    SDK's own "Connection closed" error is told from a server's JSON-RPC error of the same code
    by its fixed message (a server that sends that very message is taken at its word).
    ``lost``: the transport lost the call's connection (``sdk_hooks.InFlight.lost``), so its
    cancel, or the -32000 the transport answered it with, is ``connection_closed``.
    """
    if isinstance(exc, MCPError):
        code = exc.code
        if code == REQUEST_TIMEOUT:
            return ERROR_TYPE_TIMEOUT
        if code == CONNECTION_CLOSED and (lost or exc.message == _SDK_CLOSED_MESSAGE):
            return ERROR_TYPE_CONNECTION_CLOSED
        return str(code)
    if isinstance(exc, TimeoutError):
        return ERROR_TYPE_TIMEOUT
    if isinstance(exc, asyncio.CancelledError) or _trio_cancelled(exc):
        if lost:
            return ERROR_TYPE_CONNECTION_CLOSED
        return ERROR_TYPE_TIMEOUT if deadline_cancelled(exc) else ERROR_TYPE_CANCELLED
    return type(exc).__name__


def _trio_cancelled(exc: BaseException) -> bool:
    """``trio.Cancelled`` (anyio's trio backend), without importing trio when nobody has."""
    trio = sys.modules.get("trio")
    return trio is not None and isinstance(exc, trio.Cancelled)


def fit_strings(attrs: dict[str, Any]) -> dict[str, Any]:
    """Fit every string value of ``attrs`` (in place; returned) with ``record.fit_string``:
    valid UTF-8, at most ``record.MAX_STRING_BYTES`` bytes, a cut one marked."""
    for key, value in attrs.items():
        # an ASCII string (isascii is O(1)) no longer than the limit is the usual case
        if type(value) is str and (len(value) > MAX_STRING_BYTES or not value.isascii()):
            attrs[key] = fit_string(value)
    return attrs


def tool_span_name(tool: str) -> str:
    """``span_name(tool)`` (the tool name fitted as its attribute is), cached per tool."""
    name = _SPAN_NAMES.get(tool)
    if name is None:
        name = span_name(fit_string(tool))
        if len(_SPAN_NAMES) < _MAX_SPAN_NAMES:
            _SPAN_NAMES[tool] = name
    return name


def context_attributes(call: CallContext, attrs: dict[str, Any]) -> dict[str, Any]:
    """Add the conversation and the agent to ``attrs`` (returned)."""
    attrs[ATTR_CONVERSATION_ID] = call[0]
    if call[1] is not None:
        attrs[ATTR_AGENT_ID] = call[1]
    return attrs


def result_attributes(result: object, attrs: dict[str, Any]) -> bool:
    """Add the result's size and label to ``attrs``; True if it is a tool error."""
    if not isinstance(result, CallToolResult):
        return False  # an input-required round or an extension's claimed shape: no size
    attrs[ATTR_RESULT_SIZE] = result_size(result.content, result.structured_content)
    meta = result.meta
    if meta:
        label = meta.get(LABEL_META_KEY)
        if isinstance(label, str):
            attrs[ATTR_LABEL] = label
    return bool(result.is_error)


def error_attributes(exc: BaseException, attrs: dict[str, Any], *, lost: bool = False) -> None:
    """``error.type`` of a raised call (``lost``: see :func:`error_type_of`), and the
    ground-truth label a fault proxy put in a JSON-RPC error's ``data`` (never the message)."""
    attrs[ATTR_ERROR_TYPE] = error_type_of(exc, lost=lost)
    data = exc.data if isinstance(exc, MCPError) else None
    label = data.get(LABEL_META_KEY) if isinstance(data, Mapping) else None
    if isinstance(label, str):
        attrs[ATTR_LABEL] = label
