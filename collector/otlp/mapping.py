"""Span → call record (and tools/list span → tool_lists rows), driven by ``record.CALL_FIELDS``.

Each record field is filled either from a span attribute (the field table's ``attribute``
column, looked up on the span, then on its resource) or from the span itself (ids, times,
status): :data:`CALL_PLAN` and :data:`TOOL_LIST_PLAN` are derived from the field tables, so no
attribute name is written here. This module is the *reference* mapping, one span at a time;
:mod:`toolwatch.collector.otlp.columnar` maps protobuf requests column-wise and hands every span it
cannot map with certainty back to :func:`map_span`, so both paths give the same rows.

A span that carries the tool-call marker or tools/list events but cannot be mapped (a required
attribute missing, a value of the wrong type, a malformed id) is *rejected*: it is counted and
named in the OTLP ``partial_success`` message, never half-stored. Other spans (the MCP SDK's
own, an application's HTTP spans) are *ignored*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa

from toolwatch.collector.otlp.decode import STATUS_CODE_ERROR, EventData, SpanData
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.conventions import (
    ATTR_DURATION_UNKNOWN,
    ATTR_ERROR_TYPE,
    CLIENT_QUIRKS,
    DEST_SEEN_VALUES,
    EGRESS_CLASSES,
    ENCODINGS,
    EVENT_TOOL_LISTED,
    SOURCES,
    TOOL_CALL_MARKER,
)
from toolwatch.record import CALL_FIELDS, TOOL_LIST_FIELDS, Field

#: Instrumentation scope of the MCP SDK's own spans (they carry gen_ai.operation.name too).
SDK_SCOPE: Final = "mcp-python-sdk"
#: Fields computed from the span itself rather than from an attribute.
CALL_INTRINSICS: Final = frozenset({"trace_id", "span_id", "start_time", "duration_us", "failed"})
TOOL_LIST_INTRINSICS: Final = frozenset({"trace_id", "span_id", "listed_time"})
#: A record field whose attribute is absent takes this value (the default source of spans
#: received over OTLP is "otlp"; an absent flag means false).
DEFAULTS: Final[dict[str, Any]] = {"source": "otlp"}
#: Fields whose value must be one of a closed set.
ALLOWED: Final[dict[str, tuple[str, ...]]] = {
    "source": SOURCES,
    "client_quirk": CLIENT_QUIRKS,
    "egress": EGRESS_CLASSES,
    "reused_encoding": ENCODINGS,
    "dest_seen": DEST_SEEN_VALUES,
}
INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1
MAX_REASONS: Final = 5


class Rejected(ValueError):
    """This span cannot become a record; the message says why (names the attribute)."""


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """How one record field is filled: from ``attribute`` (converted to ``kind``) or intrinsic."""

    name: str
    kind: str
    attribute: str | None
    nullable: bool
    default: Any
    allowed: tuple[str, ...] | None

    @property
    def required(self) -> bool:
        return not self.nullable and self.default is None


def _plan(record_fields: tuple[Field, ...], intrinsics: frozenset[str]) -> tuple[FieldPlan, ...]:
    plans = []
    for f in record_fields:
        if f.attribute is None and f.name not in intrinsics:
            raise RuntimeError(f"record field {f.name!r} has neither an attribute nor a mapping")
        default = DEFAULTS.get(f.name)
        if default is None and f.arrow == "bool" and not f.nullable:
            default = False
        plans.append(
            FieldPlan(f.name, f.arrow, f.attribute, f.nullable, default, ALLOWED.get(f.name))
        )
    return tuple(plans)


CALL_PLAN: Final = _plan(CALL_FIELDS, CALL_INTRINSICS)
TOOL_LIST_PLAN: Final = _plan(TOOL_LIST_FIELDS, TOOL_LIST_INTRINSICS)
#: Attributes the call mapping reads into fields (the columnar path extracts these and
#: :data:`~toolwatch.record.ATTR_DURATION_UNKNOWN`, the replay's null-duration marker).
CALL_ATTRIBUTES: Final[tuple[str, ...]] = tuple(p.attribute for p in CALL_PLAN if p.attribute)
#: The field holding ``error.type``: its presence (or an ERROR status) makes a call failed.
ERROR_FIELD: Final = next(p.name for p in CALL_PLAN if p.attribute == ATTR_ERROR_TYPE)


def _type_name(value: Any) -> str:
    return {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes"}.get(
        type(value), "array" if isinstance(value, list) else "map"
    )


def convert(plan: FieldPlan, value: Any) -> Any:
    """An attribute value as the field's type; :class:`Rejected` if it cannot be one.

    Lenient only where encodings legitimately differ (an integer sent as a decimal string or
    an integral double, an id sent as a number); never guesses otherwise.
    """
    attr = plan.attribute
    if value is None:
        if plan.default is not None:
            return plan.default
        if plan.nullable:
            return None
        raise Rejected(f"missing attribute {attr} ({plan.name})")
    kind = plan.kind
    if kind == "string":
        if isinstance(value, str):
            out = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out = str(value)
        else:
            raise Rejected(f"attribute {attr} must be a string, got {_type_name(value)}")
        if not out:  # an empty string carries no value: absent if optional, an error if not
            if plan.nullable:
                return None
            raise Rejected(f"attribute {attr} ({plan.name}) is empty")
        if plan.allowed is not None and out not in plan.allowed:
            raise Rejected(f"attribute {attr}={out[:40]!r} is not one of {', '.join(plan.allowed)}")
        return out
    if kind in ("int64", "int32"):
        if isinstance(value, bool):
            raise Rejected(f"attribute {attr} must be an integer, got bool")
        integral_float = isinstance(value, float) and value.is_integer()
        if integral_float or (isinstance(value, str) and value.strip().isdigit()):
            value = int(value)
        if not isinstance(value, int):
            raise Rejected(f"attribute {attr} must be an integer, got {_type_name(value)}")
        top = INT32_MAX if kind == "int32" else INT64_MAX
        if not 0 <= value <= top:
            raise Rejected(f"attribute {attr}={value} is out of range 0..{top}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise Rejected(f"attribute {attr} must be a bool, got {_type_name(value)}")
        return value
    raise RuntimeError(f"no conversion for attribute kind {kind!r}")  # record.py changed


def _lookup(attribute: str, *scopes: Mapping[str, Any]) -> Any:
    for attrs in scopes:
        value = attrs.get(attribute)
        if value is not None:
            return value
    return None


def _ids(span: SpanData) -> tuple[str, str]:
    if len(span.trace_id) != 32 or span.trace_id == "0" * 32:
        raise Rejected(f"invalid trace id {span.trace_id!r}")
    if len(span.span_id) != 16 or span.span_id == "0" * 16:
        raise Rejected(f"invalid span id {span.span_id!r}")
    return span.trace_id, span.span_id


def call_row(span: SpanData) -> dict[str, Any]:
    """The call record of a tool-call span (times in µs since the epoch, UTC)."""
    trace_id, span_id = _ids(span)
    if span.start_ns <= 0:
        raise Rejected("span has no start time")
    row: dict[str, Any] = {}
    for plan in CALL_PLAN:
        if plan.attribute is not None:
            row[plan.name] = convert(plan, _lookup(plan.attribute, span.attributes, span.resource))
    row["trace_id"] = trace_id
    row["span_id"] = span_id
    row["start_time"] = span.start_ns // 1000
    unknown = span.end_ns < span.start_ns or span.attributes.get(ATTR_DURATION_UNKNOWN) is True
    row["duration_us"] = None if unknown else (span.end_ns - span.start_ns) // 1000
    row["failed"] = row[ERROR_FIELD] is not None or span.status_code == STATUS_CODE_ERROR
    return row


def listing_rows(span: SpanData, events: list[EventData]) -> list[dict[str, Any]]:
    """One tool_lists row per ``toolwatch.tool.listed`` event (a digest, never the text)."""
    trace_id, span_id = _ids(span)
    rows = []
    for i, event in enumerate(events):
        row: dict[str, Any] = {}
        for plan in TOOL_LIST_PLAN:
            if plan.attribute is not None:
                raw = _lookup(plan.attribute, event.attributes, span.attributes, span.resource)
                try:
                    row[plan.name] = convert(plan, raw)
                except Rejected as exc:
                    raise Rejected(f"tools/list event {i}: {exc}") from None
        when = event.time_ns or span.end_ns or span.start_ns
        if when <= 0:
            raise Rejected(f"tools/list event {i} has no time")
        row["trace_id"] = trace_id
        row["span_id"] = span_id
        row["listed_time"] = when // 1000
        rows.append(row)
    return rows


def map_span(span: SpanData) -> tuple[dict[str, Any] | None, list[dict[str, Any]]] | None:
    """(call row or None, tool_lists rows) for a span toolwatch keeps; None if it is ignored.

    Raises :class:`Rejected` when the span is ours but cannot be mapped; a tools/list span is
    taken whole or not at all (a partial list would look like tools disappearing).
    """
    if span.scope == SDK_SCOPE:
        return None
    listed = [e for e in span.events if e.name == EVENT_TOOL_LISTED]
    is_call = TOOL_CALL_MARKER in span.attributes
    if not is_call and not listed:
        return None
    call = call_row(span) if is_call else None
    return call, listing_rows(span, listed) if listed else []


# --------------------------------------------------------------------------- batches


@dataclass(slots=True)
class Mapped:
    """The outcome of one request: rows to store and what was rejected or ignored."""

    calls: pa.Table
    tool_lists: pa.Table
    spans: int = 0
    rejected: int = 0
    ignored: int = 0
    reasons: list[str] = field(default_factory=list)
    columnar: int = 0  # spans the columnar path mapped (the rest of interest went one by one)

    @property
    def rows(self) -> int:
        return self.calls.num_rows + self.tool_lists.num_rows

    def message(self) -> str:
        """The ``partial_success.error_message``: the first reasons, then a count."""
        if not self.rejected:
            return ""
        text = "; ".join(self.reasons[:MAX_REASONS])
        more = self.rejected - min(len(self.reasons), MAX_REASONS)
        return f"rejected {self.rejected} span(s): {text}" + (f"; and {more} more" if more else "")


class Reasons:
    """Collects rejection reasons, keeping only the first few (the count is kept elsewhere)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, span_id: str, reason: str) -> None:
        if len(self.items) < MAX_REASONS:
            self.items.append(f"span {span_id or '?'}: {reason}")


def rows_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def map_spans(spans: Iterable[SpanData]) -> Mapped:
    """Map decoded spans one by one (JSON requests, and the columnar path's leftovers)."""
    calls: list[dict[str, Any]] = []
    lists: list[dict[str, Any]] = []
    reasons = Reasons()
    total = rejected = ignored = 0
    for span in spans:
        total += 1
        try:
            out = map_span(span)
        except Rejected as exc:
            rejected += 1
            reasons.add(span.span_id, str(exc))
            continue
        if out is None:
            ignored += 1
            continue
        call, listed = out
        if call is not None:
            calls.append(call)
        lists.extend(listed)
    return Mapped(
        rows_table(calls, CALLS_SCHEMA),
        rows_table(lists, TOOL_LISTS_SCHEMA),
        spans=total,
        rejected=rejected,
        ignored=ignored,
        reasons=reasons.items,
    )
