"""Span → call record (and tools/list span → tool_lists rows), driven by ``record.CALL_FIELDS``.

Each record field is filled either from a span attribute (the field table's ``attribute``
column, looked up on the span, then on its resource; when neither has it, its ``fallbacks``
likewise, in order, the one used named in ``fields_present``: other senders spell the session
key differently) or from the span itself (ids, times, status): :data:`CALL_PLAN` and
:data:`TOOL_LIST_PLAN` are derived from the field tables, so no attribute name is written here.
This module is the *reference* mapping, one span at a time;
:mod:`toolwatch.collector.otlp.columnar` maps protobuf requests column-wise and hands every span it
cannot map with certainty back to :func:`map_span`, so both paths give the same rows.

Which spans are tool calls (:func:`span_role`):

* toolwatch's own spans carry the size marker (:data:`~toolwatch.conventions.TOOL_CALL_MARKER`);
* any other sender's span following the GenAI/MCP semantic conventions counts too — a CLIENT
  span (or one of unspecified kind, as hand-written OTLP/JSON has it) with
  ``gen_ai.operation.name=execute_tool`` or ``mcp.method.name=tools/call``. Its record has null
  sizes (and position, server, ...) when the span lacks them; ``fields_present`` says which
  fields the span carried;
* so does an INTERNAL span with ``mcp.method.name=tools/call``: the MCP conventions tell an MCP
  instrumentation that finds a GenAI ``execute_tool`` span (INTERNAL) already open to add its
  attributes to that span instead of making its own, so this *is* the MCP call;
* the MCP SDK's own spans (scope ``mcp-python-sdk``), SERVER spans (the tool ran on the other
  side) and other INTERNAL/PRODUCER/CONSUMER ``execute_tool`` spans (an agent framework's local
  tool step, or its wrapper around an MCP client span that is counted itself) are *ignored*,
  counted by reason (:data:`IGNORE_REASONS`), never stored.

A tool span that cannot be mapped (a required attribute missing, a value of the wrong type or
out of range, a malformed id, a time outside 1970..9999) is *rejected*: counted by category
and named in the OTLP ``partial_success`` message, never half-stored. A request's other spans
are unaffected. A call whose times give no duration (an end before its start, no end) is kept
and *flagged* instead (:mod:`toolwatch.collector.otlp.flaws`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch.collector.otlp.decode import (
    SPAN_KIND_CLIENT,
    SPAN_KIND_INTERNAL,
    SPAN_KIND_SERVER,
    SPAN_KIND_UNSPECIFIED,
    SPAN_KINDS,
    STATUS_CODE_ERROR,
    EventData,
    SpanData,
)
from toolwatch.collector.otlp.flaws import flaw_code, flaw_counts, flaw_message
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.conventions import (
    ATTR_DURATION_UNKNOWN,
    ATTR_ERROR_TYPE,
    ATTR_HOST_NAME,
    ATTR_MCP_METHOD,
    ATTR_OPERATION,
    ATTR_PROCESS_PID,
    CLIENT_QUIRKS,
    DEST_SEEN_VALUES,
    EGRESS_CLASSES,
    ENCODINGS,
    EVENT_TOOL_LISTED,
    METHOD_TOOLS_CALL,
    OPERATION_EXECUTE_TOOL,
    SOURCES,
    TOOL_CALL_MARKER,
)
from toolwatch.record import CALL_FIELDS, MAX_STRING_BYTES, TOOL_LIST_FIELDS, Field
from toolwatch.words import counted

log = logging.getLogger(__name__)

#: Instrumentation scope of the MCP SDK's own spans (they carry gen_ai.operation.name too).
SDK_SCOPE: Final = "mcp-python-sdk"
#: Fields computed from the span itself rather than from an attribute.
CALL_INTRINSICS: Final = frozenset(
    {
        "trace_id",
        "span_id",
        "start_time",
        "duration_us",
        "failed",
        "fields_present",
        "received_time",  # stamped by the writer when the row is stored (null until then)
    }
)
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
#: Span times toolwatch can store: from the epoch (exclusive) to the end of year 9999.
MAX_TIME_NS: Final = 253_402_300_800 * 10**9

# why a span was ignored (a closed set: they are metric labels)
IGNORED_SDK: Final = "mcp_sdk_span"
IGNORED_SERVER: Final = "server_span"
IGNORED_INTERNAL: Final = "internal_tool_span"
IGNORED_OTHER: Final = "not_a_tool_call"
IGNORE_REASONS: Final = (IGNORED_SDK, IGNORED_SERVER, IGNORED_INTERNAL, IGNORED_OTHER)
#: kinds of a semantic-conventions tool span that are calls made by this client
CLIENT_KINDS: Final = frozenset({SPAN_KIND_CLIENT, SPAN_KIND_UNSPECIFIED})


class Rejected(ValueError):
    """This span cannot become a record; the message says why (names the attribute).

    ``category`` is a short stable key (``missing:gen_ai.conversation.id``, ``range:...``)
    used to count rejections by reason; attribute names come from the record's closed set.
    ``hint``: what the sender should do about it, said once per reply (:class:`Reasons`).
    """

    def __init__(self, message: str, category: str, hint: str = "") -> None:
        super().__init__(message)
        self.category = category
        self.hint = hint


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """How one record field is filled: from ``attribute`` (converted to ``kind``) or intrinsic;
    when neither the span nor its resource has it, from the first of ``fallbacks`` that one
    has (each looked up on the span, then on the resource)."""

    name: str
    kind: str
    attribute: str | None
    nullable: bool
    default: Any
    allowed: tuple[str, ...] | None
    fallbacks: tuple[str, ...] = ()
    missing: str = ""  # the hint when none of its keys is there (record.Field.missing)

    @property
    def required(self) -> bool:
        return not self.nullable and self.default is None

    @property
    def keys(self) -> tuple[str, ...]:
        """The attributes the field may be read from, in the order they are tried."""
        return (self.attribute, *self.fallbacks) if self.attribute else ()


def _plan(record_fields: tuple[Field, ...], intrinsics: frozenset[str]) -> tuple[FieldPlan, ...]:
    plans = []
    for f in record_fields:
        if f.attribute is None and f.name not in intrinsics:
            raise RuntimeError(f"record field {f.name!r} has neither an attribute nor a mapping")
        default = DEFAULTS.get(f.name)
        if default is None and f.arrow == "bool" and not f.nullable:
            default = False
        if f.fallbacks and default is not None:  # a default would hide a missing fallback
            raise RuntimeError(f"record field {f.name!r} has both fallbacks and a default")
        plans.append(
            FieldPlan(
                f.name,
                f.arrow,
                f.attribute,
                f.nullable,
                default,
                ALLOWED.get(f.name),
                f.fallbacks,
                f.missing,
            )
        )
    return tuple(plans)


CALL_PLAN: Final = _plan(CALL_FIELDS, CALL_INTRINSICS)
TOOL_LIST_PLAN: Final = _plan(TOOL_LIST_FIELDS, TOOL_LIST_INTRINSICS)
#: The plans filled from attributes, in record order (bit i of a presence mask is plan i).
ATTRIBUTE_PLANS: Final = tuple(p for p in CALL_PLAN if p.attribute)
#: Attributes the call mapping reads into fields (the columnar path extracts these and
#: :data:`~toolwatch.record.ATTR_DURATION_UNKNOWN`, the replay's null-duration marker; a
#: field's fallbacks only for spans without its attribute).
CALL_ATTRIBUTES: Final[tuple[str, ...]] = tuple(p.attribute for p in ATTRIBUTE_PLANS if p.attribute)
#: For each of :data:`ATTRIBUTE_PLANS`, one plan per key it may be read from (its own first,
#: then one per fallback, whose conversion errors name that fallback).
KEY_PLANS: Final[tuple[tuple[FieldPlan, ...], ...]] = tuple(
    (p, *(replace(p, attribute=key, fallbacks=()) for key in p.fallbacks)) for p in ATTRIBUTE_PLANS
)
#: The ``fields_present`` token of each presence-mask bit: bit i is :data:`ATTRIBUTE_PLANS` [i]
#: read from its own attribute (the field's name); the bits after them a field read from a
#: fallback (``session_id:mcp.session.id``), so a record tells which key it got.
PRESENCE_TOKENS: Final[tuple[str, ...]] = (
    *(p.name for p in ATTRIBUTE_PLANS),
    *(f"{p.name}:{key}" for p in ATTRIBUTE_PLANS for key in p.fallbacks),
)
#: For each of :data:`ATTRIBUTE_PLANS`, the presence bit of each of its :data:`KEY_PLANS`.
PRESENCE_BITS: Final[tuple[tuple[int, ...], ...]] = tuple(
    (i, *(PRESENCE_TOKENS.index(f"{p.name}:{key}") for key in p.fallbacks))
    for i, p in enumerate(ATTRIBUTE_PLANS)
)
if len(PRESENCE_TOKENS) > 63:  # the masks are int64 arrays on the columnar path
    raise RuntimeError("too many presence tokens for a 64-bit mask")
#: Attributes that make a span a semantic-conventions tool span, with the value they need.
SEMCONV_MARKERS: Final = (
    (ATTR_OPERATION, OPERATION_EXECUTE_TOOL),
    (ATTR_MCP_METHOD, METHOD_TOOLS_CALL),
)
#: The field holding ``error.type``: its presence (or an ERROR status) makes a call failed.
ERROR_FIELD: Final = next(p.name for p in CALL_PLAN if p.attribute == ATTR_ERROR_TYPE)


def fields_present_text(mask: int) -> str:
    """The ``fields_present`` value of a presence mask (bits: :data:`PRESENCE_TOKENS`), in
    record order."""
    return ",".join(
        PRESENCE_TOKENS[bit] for bits in PRESENCE_BITS for bit in bits if mask >> bit & 1
    )


def _spelt(keys: tuple[str, ...]) -> str:
    """``a``, ``a or b``, ``a, b or c``: the attributes a missing field could have come from."""
    return keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} or {keys[-1]}"


def _type_name(value: Any) -> str:
    return {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes"}.get(
        type(value), "array" if isinstance(value, list) else "map"
    )


def _is_ascii_decimal(value: str) -> bool:
    return value.isascii() and value.isdecimal()


def convert(plan: FieldPlan, value: Any) -> Any:
    """An attribute value as the field's type; :class:`Rejected` if it cannot be one.

    Lenient only where encodings legitimately differ (an integer sent as an ASCII decimal
    string or an integral double, an id sent as a number); never guesses otherwise.
    """
    attr = plan.attribute
    if value is None:
        if plan.default is not None:
            return plan.default
        if plan.nullable:
            return None
        keys = plan.keys or (str(attr),)
        raise Rejected(
            f"missing attribute {_spelt(keys)} ({plan.name})", f"missing:{attr}", plan.missing
        )
    kind = plan.kind
    if kind == "string":
        if isinstance(value, str):
            out = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out = str(value)
        else:
            raise Rejected(
                f"attribute {attr} must be a string, got {_type_name(value)}", f"type:{attr}"
            )
        if not out:  # an empty string carries no value: absent if optional, an error if not
            if plan.nullable:
                return None
            raise Rejected(f"attribute {attr} ({plan.name}) is empty", f"empty:{attr}")
        if len(out) * 4 > MAX_STRING_BYTES and len(out.encode()) > MAX_STRING_BYTES:
            raise Rejected(
                f"attribute {attr} is {counted(len(out.encode()), 'byte')}, over the "
                f"{MAX_STRING_BYTES:,}-byte limit",
                f"too_long:{attr}",
            )
        if plan.allowed is not None and out not in plan.allowed:
            raise Rejected(
                f"attribute {attr}={out[:40]!r} is not one of {', '.join(plan.allowed)}",
                f"value:{attr}",
            )
        return out
    if kind in ("int64", "int32"):
        if isinstance(value, bool):
            raise Rejected(f"attribute {attr} must be an integer, got bool", f"type:{attr}")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, str):
            text = value.strip()
            if not _is_ascii_decimal(text) or len(text) > 20:
                raise Rejected(
                    f"attribute {attr} must be an integer, got the string {value[:20]!r}",
                    f"type:{attr}",
                )
            value = int(text)
        if not isinstance(value, int):
            raise Rejected(
                f"attribute {attr} must be an integer, got {_type_name(value)}", f"type:{attr}"
            )
        top = INT32_MAX if kind == "int32" else INT64_MAX
        if not 0 <= value <= top:
            raise Rejected(f"attribute {attr}={value} is out of range 0..{top}", f"range:{attr}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise Rejected(
                f"attribute {attr} must be a bool, got {_type_name(value)}", f"type:{attr}"
            )
        return value
    raise RuntimeError(f"no conversion for attribute kind {kind!r}")  # record.py changed


def _lookup(attribute: str, *scopes: Mapping[str, Any]) -> Any:
    for attrs in scopes:
        value = attrs.get(attribute)
        if value is not None:
            return value
    return None


def resolve(plans: tuple[FieldPlan, ...], *scopes: Mapping[str, Any]) -> tuple[int, FieldPlan, Any]:
    """(index, plan, raw value) of the first of a field's :data:`KEY_PLANS` whose attribute
    one of ``scopes`` holds; (0, its own plan, None) when none does. The first key present
    decides, even when its value is then rejected (empty, wrong type): a sender that set the
    conversation wrongly is told so, not quietly keyed by its MCP session."""
    for k, plan in enumerate(plans):
        raw = _lookup(str(plan.attribute), *scopes)
        if raw is not None:
            return k, plan, raw
    return 0, plans[0], None


#: Session keys not stored as sent but derived: ``process.pid`` alone repeats across hosts and
#: restarts, so the key is ``<pid>@<host.name>`` (the columnar path leaves these to the
#: reference: only a stdio client's spans without a ``service.instance.id`` get here).
DERIVED_KEYS: Final = frozenset({ATTR_PROCESS_PID})


def process_key(pid: Any, *scopes: Mapping[str, Any]) -> str:
    """The session key of a span whose only key is its process id: ``<pid>@<host.name>``
    (just the pid when no scope names the host). Identifiers of the process, never content."""
    plan = FieldPlan("session_id", "int64", ATTR_PROCESS_PID, False, None, None)
    number = convert(plan, pid)  # an integer, as the conventions type it (or its decimal text)
    host = _lookup(ATTR_HOST_NAME, *scopes)
    return f"{number}@{host}" if isinstance(host, str) and host else str(number)


def _ids(span: SpanData) -> tuple[str, str]:
    if len(span.trace_id) != 32 or span.trace_id == "0" * 32:
        raise Rejected(f"invalid trace id {span.trace_id[:40]!r}", "trace_id")
    if len(span.span_id) != 16 or span.span_id == "0" * 16:
        raise Rejected(f"invalid span id {span.span_id[:40]!r}", "span_id")
    return span.trace_id, span.span_id


def _check_time(ns: int, what: str) -> None:
    if not 0 < ns < MAX_TIME_NS:
        raise Rejected(f"{what} {ns} is out of range (1970 to 9999)", f"range:{what}")


def call_row(span: SpanData) -> dict[str, Any]:
    """The call record of a tool-call span (times in µs since the epoch, UTC)."""
    trace_id, span_id = _ids(span)
    if span.kind not in SPAN_KINDS:
        raise Rejected(f"span kind {span.kind} is not an OTLP SpanKind (0 to 5)", "range:kind")
    if span.start_ns == 0:
        raise Rejected("span has no start time", "missing:startTimeUnixNano")
    _check_time(span.start_ns, "startTimeUnixNano")
    if span.end_ns:
        _check_time(span.end_ns, "endTimeUnixNano")
    row: dict[str, Any] = {}
    mask = 0
    for i, plans in enumerate(KEY_PLANS):
        k, plan, raw = resolve(plans, span.attributes, span.resource)
        if raw is not None and plan.attribute in DERIVED_KEYS:
            raw = process_key(raw, span.attributes, span.resource)
        value = row[plan.name] = convert(plan, raw)
        if raw is not None and value is not None:
            mask |= 1 << PRESENCE_BITS[i][k]
    row["trace_id"] = trace_id
    row["span_id"] = span_id
    row["start_time"] = span.start_ns // 1000
    # end < start (a clock step mid-call) or no end: kept, flagged by map_spans (flaws.py)
    unknown = span.end_ns < span.start_ns or span.attributes.get(ATTR_DURATION_UNKNOWN) is True
    row["duration_us"] = None if unknown else (span.end_ns - span.start_ns) // 1000
    row["failed"] = row[ERROR_FIELD] is not None or span.status_code == STATUS_CODE_ERROR
    row["fields_present"] = fields_present_text(mask)
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
                    raise Rejected(f"tools/list event {i}: {exc}", exc.category, exc.hint) from None
        when = event.time_ns or span.end_ns or span.start_ns
        if not 0 < when < MAX_TIME_NS:
            raise Rejected(f"tools/list event {i} has no usable time", "range:timeUnixNano")
        row["trace_id"] = trace_id
        row["span_id"] = span_id
        row["listed_time"] = when // 1000
        rows.append(row)
    return rows


def _is_semconv_tool_span(attributes: Mapping[str, Any]) -> bool:
    return any(attributes.get(key) == value for key, value in SEMCONV_MARKERS)


def is_merged_mcp_call(kind: int, attributes: Mapping[str, Any]) -> bool:
    """An MCP tool call recorded on the framework's INTERNAL ``execute_tool`` span (the MCP
    conventions' merged form), not a local step of the framework's own."""
    return kind == SPAN_KIND_INTERNAL and attributes.get(ATTR_MCP_METHOD) == METHOD_TOOLS_CALL


def span_role(span: SpanData) -> str | None:
    """``None`` for a span toolwatch maps (a tool call or a tools/list with events), else the
    reason it is ignored (one of :data:`IGNORE_REASONS`)."""
    if span.scope == SDK_SCOPE:
        return IGNORED_SDK
    if TOOL_CALL_MARKER in span.attributes:
        return None
    if any(e.name == EVENT_TOOL_LISTED for e in span.events):
        return None
    if not _is_semconv_tool_span(span.attributes):
        return IGNORED_OTHER
    if span.kind in CLIENT_KINDS or span.kind not in SPAN_KINDS:
        return None  # a kind OTLP does not define: mapped, so the span is rejected, not ignored
    if is_merged_mcp_call(span.kind, span.attributes):
        return None
    return IGNORED_SERVER if span.kind == SPAN_KIND_SERVER else IGNORED_INTERNAL


def map_span(span: SpanData) -> tuple[dict[str, Any] | None, list[dict[str, Any]]] | str:
    """(call row or None, tool_lists rows) for a span toolwatch keeps, else the reason it is
    ignored (:func:`span_role`).

    Raises :class:`Rejected` when the span is a tool span but cannot be mapped; a tools/list
    span is taken whole or not at all (a partial list would look like tools disappearing).
    """
    reason = span_role(span)
    if reason is not None:
        return reason
    listed = [e for e in span.events if e.name == EVENT_TOOL_LISTED]
    is_call = TOOL_CALL_MARKER in span.attributes or _is_semconv_tool_span(span.attributes)
    call = call_row(span) if is_call else None
    return call, listing_rows(span, listed) if listed else []


def map_span_safely(span: SpanData) -> tuple[dict[str, Any] | None, list[dict[str, Any]]] | str:
    """:func:`map_span`, with any unexpected error on this span turned into a rejection (one
    span never fails its request)."""
    try:
        return map_span(span)
    except Rejected:
        raise
    except (ValueError, OverflowError, TypeError, UnicodeError) as exc:
        log.debug("span %s could not be mapped", span.span_id, exc_info=True)
        raise Rejected(f"span could not be mapped ({type(exc).__name__})", "invalid") from exc


# --------------------------------------------------------------------------- batches


@dataclass(slots=True)
class Mapped:
    """The outcome of one request: rows to store and what was rejected or ignored."""

    calls: pa.Table
    tool_lists: pa.Table
    spans: int = 0
    reasons: list[str] = field(default_factory=list)
    columnar: int = 0  # spans the columnar path mapped (the rest of interest went one by one)
    rejected_by: dict[str, int] = field(default_factory=dict)  # category -> spans
    ignored_by: dict[str, int] = field(default_factory=dict)  # reason -> spans
    duplicates: int = 0  # spans already stored (an exporter's retry); set by the writer
    #: each calls row's flaw code (flaws.FLAW_REASONS; the writer drops a duplicate's too)
    flaws: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    @property
    def rejected(self) -> int:
        """Spans rejected, whatever the reason."""
        return sum(self.rejected_by.values())

    @property
    def ignored(self) -> int:
        """Spans ignored (not tool calls), whatever the reason."""
        return sum(self.ignored_by.values())

    @property
    def flagged_by(self) -> dict[str, int]:
        """Calls stored without a duration, by flaw reason (a subset of the stored)."""
        return flaw_counts(self.flaws)

    @property
    def rows(self) -> int:
        return self.calls.num_rows + self.tool_lists.num_rows

    def message(self) -> str:
        """The ``partial_success.error_message``: the first reasons, then a count; then the
        calls kept with a flaw (a warning: OTLP lets it stand with ``rejected_spans`` 0)."""
        flagged = flaw_message(self.flagged_by)
        if not self.rejected:
            return flagged
        text = "; ".join(self.reasons[:MAX_REASONS])
        more = self.rejected - min(len(self.reasons), MAX_REASONS)
        text = f"rejected {counted(self.rejected, 'span')}: {text}" + (
            f"; and {more} more" if more else ""
        )
        return f"{text}; {flagged}" if flagged else text


class Reasons:
    """Collects rejection reasons, keeping only the first few, and counts every category; a
    rejection's hint follows the first reason it comes with only (a batch of stdio calls is
    told once what to set, not once per span)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.counts: dict[str, int] = {}
        self.hints: set[str] = set()

    def add(self, span_id: str, reason: str, category: str = "invalid", hint: str = "") -> None:
        self.counts[category] = self.counts.get(category, 0) + 1
        if len(self.items) < MAX_REASONS:
            if hint and hint not in self.hints:
                self.hints.add(hint)
                reason = f"{reason} — {hint}"
            self.items.append(f"span {span_id[:40] or '?'}: {reason}")

    def reject(self, span_id: str, exc: Rejected) -> None:
        """Count and keep a :class:`Rejected` span (its message, category and hint)."""
        self.add(span_id, str(exc), exc.category, exc.hint)


def rows_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def map_spans(spans: Iterable[SpanData]) -> Mapped:
    """Map decoded spans one by one (JSON requests, and the columnar path's leftovers)."""
    calls: list[dict[str, Any]] = []
    flaws: list[int] = []
    lists: list[dict[str, Any]] = []
    reasons = Reasons()
    ignored: dict[str, int] = {}
    total = 0
    for span in spans:
        total += 1
        try:
            out = map_span_safely(span)
        except Rejected as exc:
            reasons.reject(span.span_id, exc)
            continue
        if isinstance(out, str):
            ignored[out] = ignored.get(out, 0) + 1
            continue
        call, listed = out
        if call is not None:
            calls.append(call)
            flaws.append(flaw_code(span.start_ns, span.end_ns))
        lists.extend(listed)
    return Mapped(
        rows_table(calls, CALLS_SCHEMA),
        rows_table(lists, TOOL_LISTS_SCHEMA),
        spans=total,
        reasons=reasons.items,
        rejected_by=reasons.counts,
        ignored_by=ignored,
        flaws=np.array(flaws, np.int8),
    )
