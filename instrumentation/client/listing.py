"""``tools/list`` on a span: one event per listed tool, its name and digest, never its
description or schema (``record.tool_digest``), so a changed tool is visible and its text is not.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.types import ListToolsResult
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer

from toolwatch.conventions import (
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
    SPAN_NAME_TOOLS_LIST,
)
from toolwatch.record import fit_string, tool_digest

#: tools/list events per span; the SDK keeps at most 128 events per span by default, so longer
#: listings continue on child spans of the same name and attributes.
MAX_TOOL_EVENTS_PER_SPAN: Final = 100


def record_listing(tracer: Tracer, span: Span, attrs: dict[str, Any], result: object) -> None:
    """One event per listed tool: its name and digest, never its description or schema."""
    if not isinstance(result, ListToolsResult) or not span.is_recording():
        return
    events = [
        {
            ATTR_TOOL_NAME: fit_string(tool.name),  # the server's name: any length
            ATTR_TOOL_DIGEST: tool_digest(tool.name, tool.description, tool.input_schema),
        }
        for tool in result.tools
    ]
    first, rest = events[:MAX_TOOL_EVENTS_PER_SPAN], events[MAX_TOOL_EVENTS_PER_SPAN:]
    for event in first:
        span.add_event(EVENT_TOOL_LISTED, event)
    parent = trace.set_span_in_context(span)
    for start in range(0, len(rest), MAX_TOOL_EVENTS_PER_SPAN):
        more = tracer.start_span(
            SPAN_NAME_TOOLS_LIST, context=parent, kind=SpanKind.CLIENT, attributes=attrs
        )
        for event in rest[start : start + MAX_TOOL_EVENTS_PER_SPAN]:
            more.add_event(EVENT_TOOL_LISTED, event)
        more.end()
