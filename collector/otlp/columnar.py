"""Column-wise mapping of protobuf requests (the collector's fast path).

The request is first parsed as ``ExportTraceServiceRequest`` (validation: malformed → 400),
then :mod:`toolwatch.collector.otlp.wire` reads every span's ids, times, kind, status and the
record's attributes as arrays, and the call columns are built from those arrays directly,
following :data:`toolwatch.collector.otlp.mapping.CALL_PLAN`. Which spans are tool calls follows
:func:`~toolwatch.collector.otlp.mapping.span_role` (toolwatch's marker, or a semantic-conventions
CLIENT tool span). A span is mapped here only when every value is exactly of the expected type
and valid; any other span of interest (tools/list events, an odd type, a missing or
out-of-range value, a malformed id, a repeated key) goes to the reference
:func:`~toolwatch.collector.otlp.mapping.map_span`, which decides and words the rejection. Rows keep
the request's span order. A property test checks that both paths give identical results.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolwatch.collector.otlp.decode import (
    SPAN_KIND_CLIENT,
    SPAN_KIND_INTERNAL,
    SPAN_KIND_SERVER,
    STATUS_CODE_ERROR,
    attributes_dict,
    iter_protobuf_spans,
    parse_protobuf,
    span_data,
)
from toolwatch.collector.otlp.flaws import flaw_code, flaw_codes
from toolwatch.collector.otlp.mapping import (
    ATTRIBUTE_PLANS,
    CALL_ATTRIBUTES,
    CLIENT_KINDS,
    DERIVED_KEYS,
    ERROR_FIELD,
    IGNORED_INTERNAL,
    IGNORED_OTHER,
    IGNORED_SDK,
    IGNORED_SERVER,
    INT32_MAX,
    KEY_PLANS,
    PRESENCE_BITS,
    SDK_SCOPE,
    SEMCONV_MARKERS,
    FieldPlan,
    Mapped,
    Reasons,
    Rejected,
    convert,
    fields_present_text,
    map_span_safely,
    map_spans,
    rows_table,
)
from toolwatch.collector.otlp.wire import (
    ANY_BOOL,
    ANY_INT,
    ANY_STRING,
    WireAttr,
    WireError,
    WireSpans,
    all_zero,
    binary_array,
    equals_text,
    hex_array,
    scan_more_keys,
    scan_spans,
)
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.conventions import (
    ATTR_DURATION_UNKNOWN,
    ATTR_MCP_METHOD,
    ATTR_SESSION_POSITION,
    ATTR_TOOL_NAME,
    TOOL_CALL_MARKER,
)
from toolwatch.record import MAX_STRING_BYTES

#: every attribute the fast path reads for every span: the record's and the replay's marker
SCAN_KEYS = (*CALL_ATTRIBUTES, ATTR_DURATION_UNKNOWN)
#: read only for spans without toolwatch's marker (toolwatch's own spans never need them)
SEMCONV_KEYS = tuple(key for key, _ in SEMCONV_MARKERS)

log = logging.getLogger(__name__)

_KIND = {"string": ANY_STRING, "int64": ANY_INT, "int32": ANY_INT, "bool": ANY_BOOL}
_TOP = {"int64": 2**63 - 1, "int32": INT32_MAX}
#: the Arrow type of a column as built here (cast to the record's type at the end)
_ARROW = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int64(), "bool": pa.bool_()}


def map_protobuf(body: bytes) -> Mapped:
    """Map a protobuf ``ExportTraceServiceRequest`` body; :class:`OtlpError` (400) if malformed."""
    return map_parsed([(body, parse_protobuf(body))])[0]


def warm_up() -> None:
    """Map one small request of toolwatch's shape, so the compiled wire walks are loaded (or,
    the first time after an install, compiled: seconds, holding the GIL) before the collector
    serves, not during its first request."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = bytes(range(1, 17)), bytes(range(1, 9))
    span.name, span.kind = "tools/call warm-up", SPAN_KIND_CLIENT
    span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    span.status.code = STATUS_CODE_ERROR
    for key, field, value in (
        (TOOL_CALL_MARKER, "bool_value", True),
        (ATTR_DURATION_UNKNOWN, "bool_value", False),
        (ATTR_TOOL_NAME, "string_value", "warm-up"),
        (ATTR_SESSION_POSITION, "int_value", 1),
    ):
        attribute = span.attributes.add(key=key)
        setattr(attribute.value, field, value)
    map_protobuf(request.SerializeToString())


def map_parsed(items: Sequence[tuple[bytes, ExportTraceServiceRequest]]) -> list[Mapped]:
    """Map several already-validated requests in one pass; one :class:`Mapped` per request."""
    if not items:
        return []
    requests = [request for _, request in items]
    try:  # (the mapping reads more keys of other senders' spans: a surprise can come late)
        ws = scan_spans([body for body, _ in items], SCAN_KEYS)
        _check_layout(requests, ws)
        return _map(requests, ws)
    except (WireError, IndexError) as exc:
        if len(items) > 1:
            return [m for item in items for m in map_parsed([item])]
        log.debug("columnar path declined (%s); mapping span by span", exc)
        return [map_spans(iter_protobuf_spans(items[0][1]))]


def _check_layout(requests: Sequence[ExportTraceServiceRequest], ws: WireSpans) -> None:
    counts = [len(ss.spans) for q in requests for rs in q.resource_spans for ss in rs.scope_spans]
    seen = np.bincount(ws.scope, minlength=len(counts)) if ws.n else np.zeros(len(counts))
    if len(seen) != len(counts) or seen.tolist() != counts:
        raise WireError("span layout differs from the protobuf parse")


class _Columns:
    """Full-length (one entry per span) attribute columns plus the spans they disqualify."""

    def __init__(self, ws: WireSpans, candidate: np.ndarray, scope_resource: list[int]):
        self.ws = ws
        self.candidate = candidate
        self.scope_resource = scope_resource
        self.slow = np.zeros(ws.n, bool)
        self.columns: dict[str, pa.Array] = {}
        self.present = np.zeros(ws.n, np.int64)  # bits: mapping.PRESENCE_TOKENS
        self.every = np.ones(ws.n, bool)  # (a column with a value in every span)

    def build(self, index: int, plan: FieldPlan, resources: list[dict[str, Any]]) -> None:
        """The column of :data:`ATTRIBUTE_PLANS` [index] (one entry per span), its presence
        bits; marks spans the reference must decide."""
        if plan.fallbacks:
            self._build_keys(index, plan, resources)
            return
        column, valued, _ = self._column(plan, resources)
        bit = np.int64(1 << PRESENCE_BITS[index][0])
        self.present |= bit if valued is self.every else np.where(valued, bit, np.int64(0))
        self.columns[plan.name] = column

    def _build_keys(self, index: int, plan: FieldPlan, resources: list[dict[str, Any]]) -> None:
        """A field with fallbacks: each span takes the first key its span or resource holds
        (``mapping.resolve``). Each key's column is built as if optional; a required field
        whose chosen key gave no value (none held, or an empty string) is the reference's to
        reject."""
        n = self.ws.n
        chosen = np.zeros(n, bool)
        valued_any = np.zeros(n, bool)
        column: pa.Array | None = None
        for bit, key_plan in zip(PRESENCE_BITS[index], KEY_PLANS[index], strict=True):
            if column is not None and chosen[self.candidate].all():
                break  # the usual case: every call found its key already
            if key_plan.attribute in DERIVED_KEYS:
                break  # composed from several attributes: the reference's (required: slow)
            key_column, valued, found = self._column(replace(key_plan, nullable=True), resources)
            take = found & ~chosen
            column = (
                key_column if column is None else pc.if_else(pa.array(take), key_column, column)
            )
            self.present |= np.where(valued & take, np.int64(1 << bit), np.int64(0))
            valued_any |= valued & take
            chosen |= found
        if not plan.nullable:
            self.slow |= self.candidate & ~valued_any
        assert column is not None
        self.columns[plan.name] = column

    def _column(
        self, plan: FieldPlan, resources: list[dict[str, Any]]
    ) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """(column, spans that got a value, spans whose span or resource holds the attribute
        at all) of one attribute; marks spans the reference must decide."""
        assert plan.attribute is not None
        ws, n = self.ws, self.ws.n
        attr = ws.attrs[plan.attribute]
        expected = _KIND[plan.kind]
        if attr.span.size == n and (attr.kind == expected).all() and _is_range(attr.span):
            column = self._dense(plan, attr)  # the usual case: once in every span, right kind
            if column is not None:
                return column, self.every, self.every
        if not attr.span.size:  # in no span: the resource's value or the default everywhere
            return self._absent(plan, resources)
        nonempty = attr.kind != 0
        present = np.zeros(n, bool)
        present[attr.span[nonempty]] = True
        self.slow[attr.span[nonempty & (attr.kind != expected)]] = True
        sel = np.flatnonzero(attr.kind == expected)
        at = attr.span[sel]
        valued = np.zeros(n, bool)  # the span's own value is a value (not an empty string)
        valued[at] = True
        if plan.kind == "string":
            self.slow[at[attr.length[sel] > MAX_STRING_BYTES]] = True
            values = binary_array(ws.buf, attr.pos[sel], attr.length[sel]).cast(pa.string())
            empty = attr.length[sel] == 0
            if not plan.nullable:
                self.slow[at[empty]] = True
            valued[at[empty]] = False
            index = np.full(n, -1, np.int64)
            index[at] = np.arange(sel.size)
            index[at[empty]] = -1  # an empty optional string is no value (and no fallback)
            column = values.take(pa.array(index, mask=index < 0))
            self._check_allowed(plan, column)
        else:
            raw = attr.num[sel]
            vals = np.zeros(n, np.int64)
            if plan.kind == "bool":
                vals[at] = raw != 0
                column = pa.array(vals.astype(bool), mask=~valued, type=pa.bool_())
            else:
                signed = raw.view(np.int64)
                self.slow[at[(signed < 0) | (signed > _TOP[plan.kind])]] = True
                vals[at] = signed
                column = pa.array(vals, mask=~valued, type=pa.int64())
        missing = self.candidate & ~present
        found = present
        if missing.any():
            column, from_resource, held = self._fallback(plan, column, present, missing, resources)
            valued |= from_resource
            found = present | held
        return column, valued, found

    def _absent(
        self, plan: FieldPlan, resources: list[dict[str, Any]]
    ) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """The column of an attribute no span carries (what the general path gives, cheaper)."""
        n = self.ws.n
        valued = found = np.zeros(n, bool)
        column: pa.Array = pa.nulls(n, _ARROW[plan.kind])
        if self.candidate.any():
            column, valued, found = self._fallback(plan, column, valued, self.candidate, resources)
        return column, valued, found

    def _dense(self, plan: FieldPlan, attr: WireAttr) -> pa.Array | None:
        """The column when span i holds entry i; None when an entry needs the general path."""
        if plan.kind == "string":
            if (attr.length == 0).any() or (attr.length > MAX_STRING_BYTES).any():
                return None  # empty strings are no value: the general path handles them
            column = binary_array(self.ws.buf, attr.pos, attr.length).cast(pa.string())
            self._check_allowed(plan, column)
            return column
        if plan.kind == "bool":
            return pa.array(attr.num != 0)
        signed = attr.num.view(np.int64)
        self.slow[(signed < 0) | (signed > _TOP[plan.kind])] = True
        return pa.array(signed)

    def _check_allowed(self, plan: FieldPlan, column: pa.Array) -> None:
        if plan.allowed is not None:
            allowed = pc.is_in(column, value_set=pa.array(plan.allowed))
            bad = pc.and_(column.is_valid(), pc.invert(allowed))
            self.slow[bad.to_numpy(zero_copy_only=False)] = True

    def _fallback(
        self,
        plan: FieldPlan,
        column: pa.Array,
        present: np.ndarray,
        missing: np.ndarray,
        resources: list[dict[str, Any]],
    ) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """Spans without the attribute take their resource's value, else the default.

        Also returns which spans got a value from their resource (for ``fields_present``) and
        which spans' resource holds the attribute at all (for a field's fallbacks).
        """
        per_scope: list[Any] = []
        from_scope: list[bool] = []
        held_scope: list[bool] = []
        for scope_no, resource_no in enumerate(self.scope_resource):
            raw = resources[resource_no].get(plan.attribute or "")
            try:
                value = convert(plan, raw)
            except Rejected:
                value = None
                self.slow[missing & (self.ws.scope == scope_no)] = True
            per_scope.append(value)
            from_scope.append(raw is not None and value is not None)
            held_scope.append(raw is not None)
        from_resource = ~present & np.array(from_scope or [False])[self.ws.scope]
        held = ~present & np.array(held_scope or [False])[self.ws.scope]
        if all(v == per_scope[0] and type(v) is type(per_scope[0]) for v in per_scope):
            fill = pa.repeat(pa.scalar(per_scope[0], type=column.type), self.ws.n)
        else:
            fill = pa.array(per_scope, type=column.type).take(pa.array(self.ws.scope))
        if not present.any():
            return fill, from_resource, held
        return pc.if_else(pa.array(present), column, fill), from_resource, held


def _is_range(index: np.ndarray) -> bool:
    """``index`` is exactly 0, 1, ..., len - 1."""
    return bool(index.size == 0 or (index[0] == 0 and (np.diff(index) == 1).all()))


def _has(ws: WireSpans, key: str) -> np.ndarray:
    """Spans carrying the attribute ``key`` (any value, even an empty one)."""
    out = np.zeros(ws.n, bool)
    out[ws.attrs[key].span] = True
    return out


def _valued(ws: WireSpans, key: str) -> np.ndarray:
    """Spans whose attribute ``key`` holds a value (an empty ``AnyValue`` is none)."""
    out = np.zeros(ws.n, bool)
    attr = ws.attrs[key]
    out[attr.span[attr.kind != 0]] = True
    return out


def _map(requests: Sequence[ExportTraceServiceRequest], ws: WireSpans) -> list[Mapped]:
    n = ws.n
    spans_of_scope: list[Any] = []  # the protobuf span list of each scope
    names: list[str] = []
    scope_resource: list[int] = []
    scope_request: list[int] = []
    resources: list[dict[str, Any]] = []
    for q, request in enumerate(requests):
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                spans_of_scope.append(ss.spans)
                names.append(ss.scope.name)
                scope_resource.append(len(resources))
                scope_request.append(q)
            resources.append(attributes_dict(rs.resource.attributes))
    owner = np.array(scope_request or [0], np.int64)[ws.scope]  # request of each span
    sdk = np.array([name == SDK_SCOPE for name in names] or [False])[ws.scope]
    # span_role, column-wise: what is decided here, and what the reference must decide
    marker = _has(ws, TOOL_CALL_MARKER)
    semconv_key = np.zeros(n, bool)
    semconv = np.zeros(n, bool)
    mcp_call = np.zeros(n, bool)
    unmarked = ~sdk & ~marker & ~ws.has_events  # (spans with events go one by one anyway)
    if unmarked.any():  # another sender's spans: are they semantic-conventions tool spans?
        scan_more_keys(ws, SEMCONV_KEYS, unmarked)
        for key, value in SEMCONV_MARKERS:
            semconv_key |= _has(ws, key)
            marked = equals_text(ws.buf, ws.attrs[key], value, n)
            semconv |= marked
            if key == ATTR_MCP_METHOD:
                mcp_call = marked
    for plan in ATTRIBUTE_PLANS:  # a field's fallbacks, read where its own attribute is not
        if plan.fallbacks:
            scan_more_keys(ws, plan.fallbacks, ~sdk & ~_valued(ws, str(plan.attribute)))
    interesting = ~sdk & (marker | ws.has_events | semconv_key)
    odd_kind = (ws.kind < 0) | (ws.kind > 5) | (ws.status < 0) | (ws.status > 2)
    slow = interesting & (ws.has_events | ws.odd | odd_kind)
    # a CLIENT call, or the MCP conventions' merged form (mapping.is_merged_mcp_call)
    client = np.isin(ws.kind, list(CLIENT_KINDS)) | (mcp_call & (ws.kind == SPAN_KIND_INTERNAL))
    is_call = interesting & ~slow & (marker | (semconv & client))
    reason_masks = {
        IGNORED_SDK: sdk,
        IGNORED_OTHER: ~sdk & ~slow & ~marker & ~semconv & ~ws.has_events,
        IGNORED_SERVER: interesting & ~slow & ~marker & semconv & (ws.kind == SPAN_KIND_SERVER),
        IGNORED_INTERNAL: interesting
        & ~slow
        & ~marker
        & semconv
        & ~client
        & (ws.kind != SPAN_KIND_SERVER),
    }
    candidate = is_call | slow
    cols = _Columns(ws, candidate, scope_resource)
    slow |= candidate & ((ws.trace_len != 16) | (ws.span_len != 8) | (ws.start_ns == 0))
    # (protobuf times are u64 nanoseconds, at most year 2554: always below MAX_TIME_NS)
    maybe = np.flatnonzero(candidate & ~slow)
    zero = all_zero(ws.buf, ws.trace_pos[maybe], 16) | all_zero(ws.buf, ws.span_pos[maybe], 8)
    slow[maybe[zero]] = True
    for index, plan in enumerate(ATTRIBUTE_PLANS):
        cols.build(index, plan, resources)
    slow |= cols.slow
    slow &= candidate
    fast = np.flatnonzero(candidate & ~slow)
    calls = _fast_table(ws, fast, cols.columns, cols.present)

    # the reference mapping decides every other span of interest
    first = np.concatenate([[0], np.cumsum(np.bincount(ws.scope, minlength=len(names)))])
    slow_rows: list[dict[str, Any]] = []
    slow_at: list[int] = []
    slow_flaws: list[int] = []
    q_count = len(requests)
    lists: list[list[dict[str, Any]]] = [[] for _ in range(q_count)]
    reasons = [Reasons() for _ in range(q_count)]
    ignored_by: list[dict[str, int]] = [{} for _ in range(q_count)]
    for reason, mask in reason_masks.items():
        for q, count in enumerate(np.bincount(owner[mask], minlength=q_count).tolist()):
            if count:
                ignored_by[q][reason] = count
    for i in np.flatnonzero(slow).tolist():
        scope_no = int(ws.scope[i])
        q = scope_request[scope_no]
        span = spans_of_scope[scope_no][i - int(first[scope_no])]
        data = span_data(span, names[scope_no], resources[scope_resource[scope_no]])
        try:
            out = map_span_safely(data)
        except Rejected as exc:
            reasons[q].reject(data.span_id, exc)
            continue
        if isinstance(out, str):
            ignored_by[q][out] = ignored_by[q].get(out, 0) + 1
            continue
        call, listed = out
        if call is not None:
            slow_rows.append(call)
            slow_at.append(i)
            slow_flaws.append(flaw_code(data.start_ns, data.end_ns))
        lists[q].extend(listed)
    at = fast
    flaws = flaw_codes(ws.start_ns[fast], ws.end_ns[fast])
    if slow_rows:
        both = pa.concat_tables([calls, rows_table(slow_rows, CALLS_SCHEMA)])
        at = np.concatenate([fast, np.array(slow_at, np.int64)])
        order = np.argsort(at, kind="stable")
        calls = both.take(pa.array(order))
        at = at[order]
        flaws = np.concatenate([flaws, np.array(slow_flaws, np.int8)])[order]
    # rows are in span order and each request's spans are contiguous: split by request
    bounds = np.searchsorted(owner[at], np.arange(q_count + 1)) if at.size else [0] * (q_count + 1)
    totals = np.bincount(owner, minlength=q_count) if n else np.zeros(q_count, np.int64)
    columnar = np.bincount(owner[fast], minlength=q_count)
    return [
        Mapped(
            calls.slice(int(bounds[q]), int(bounds[q + 1] - bounds[q])),
            rows_table(lists[q], TOOL_LISTS_SCHEMA),
            spans=int(totals[q]),
            reasons=reasons[q].items,
            columnar=int(columnar[q]),
            rejected_by=reasons[q].counts,
            ignored_by=ignored_by[q],
            flaws=flaws[int(bounds[q]) : int(bounds[q + 1])],
        )
        for q in range(q_count)
    ]


def _fields_present(masks: np.ndarray) -> pa.Array:
    """The ``fields_present`` text of each presence mask (a few distinct masks per request)."""
    if not masks.size:
        return pa.array([], pa.string())
    distinct, index = np.unique(masks, return_inverse=True)
    texts = pa.array([fields_present_text(int(m)) for m in distinct.tolist()], pa.string())
    return texts.take(pa.array(index.astype(np.int64)))


def _fast_table(
    ws: WireSpans, fast: np.ndarray, columns: dict[str, pa.Array], present: np.ndarray
) -> pa.Table:
    if fast.size == ws.n:  # every span mapped here: the columns are the table
        columns = dict(columns)
    else:
        take = pa.array(fast, pa.int64())
        columns = {name: column.take(take) for name, column in columns.items()}
    start_ns = ws.start_ns[fast]
    end_ns = ws.end_ns[fast]
    marker = ws.attrs[ATTR_DURATION_UNKNOWN]  # a bool true, as the reference reads it
    unknown = np.zeros(ws.n, bool)
    unknown[marker.span[(marker.kind == ANY_BOOL) & (marker.num != 0)]] = True
    has_duration = (end_ns >= start_ns) & ~unknown[fast]
    duration = np.where(has_duration, (end_ns - start_ns) // np.uint64(1000), 0).astype(np.int64)
    error = columns[ERROR_FIELD]
    status_error = ws.status[fast] == STATUS_CODE_ERROR
    intrinsic: dict[str, pa.Array] = {
        "trace_id": hex_array(ws.buf, ws.trace_pos[fast], 16),
        "span_id": hex_array(ws.buf, ws.span_pos[fast], 8),
        "start_time": pa.array((start_ns // np.uint64(1000)).astype(np.int64)),
        "duration_us": pa.array(duration, mask=~has_duration),
        "failed": pc.or_(error.is_valid(), pa.array(status_error)),
        "fields_present": _fields_present(present[fast]),
        "received_time": pa.nulls(fast.size, pa.timestamp("us", tz="UTC")),  # the writer's
    }
    arrays = []
    for f in CALLS_SCHEMA:
        array = intrinsic[f.name] if f.name in intrinsic else columns[f.name]
        arrays.append(array.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=CALLS_SCHEMA)
