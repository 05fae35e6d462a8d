"""Send stored, imported or simulated call records to an OTLP/HTTP endpoint as spans.

Each record becomes the span the instrumentation would have sent for that call: the same name,
kind, attributes, ids and — unlike live spans — its *original* start and end times. The
record → attribute mapping is read from :data:`toolwatch.record.CALL_FIELDS` (``attribute``
column); the collector maps back with the same table, so a record survives the round trip.
Fields without an attribute travel in the span itself: ``trace_id``/``span_id`` as the span's
ids, ``start_time``/``duration_us`` as its times (no duration: end = start plus the marker
attribute ``record.ATTR_DURATION_UNKNOWN``, which the collector maps back to a null duration),
``failed`` as ERROR status, ``service`` as the resource's ``service.name`` (records are grouped
by service).

Spans are exported synchronously in batches (no queue that could drop spans); a batch the
endpoint refuses stops the replay with :class:`ReplayError` saying how many were accepted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from toolwatch.conventions import (
    ATTR_DURATION_UNKNOWN,
    ATTR_MCP_METHOD,
    ATTR_OPERATION,
    ATTR_SERVICE_NAME,
    METHOD_TOOLS_CALL,
    OPERATION_EXECUTE_TOOL,
    span_name,
)
from toolwatch.instrumentation.export.otlp import traces_url
from toolwatch.record import CALL_FIELDS, EPOCH, CallRecord, Field

log = logging.getLogger(__name__)

REPLAY_TRACER_NAME = "toolwatch.replay"
DEFAULT_BATCH = 1_000
#: Attributes that belong to the resource, not the span.
RESOURCE_ATTRIBUTES = frozenset({ATTR_SERVICE_NAME})
#: Fields that travel as span attributes, straight from the record table.
SPAN_ATTRIBUTE_FIELDS: tuple[Field, ...] = tuple(
    f for f in CALL_FIELDS if f.attribute is not None and f.attribute not in RESOURCE_ATTRIBUTES
)
_REQUIRED = tuple(f.name for f in CALL_FIELDS if not f.nullable)
_TRACE_ID = re.compile(r"^[0-9a-fA-F]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-fA-F]{16}$")


class ReplayError(ValueError):
    """A record cannot be sent, or the endpoint refused a batch; the message says which."""


def record_attributes(record: CallRecord | Mapping[str, Any]) -> dict[str, Any]:
    """The span attributes of a record (``None`` values are left out), per CALL_FIELDS, plus
    the unknown-duration marker when the record has no duration."""
    attrs: dict[str, Any] = {
        ATTR_MCP_METHOD: METHOD_TOOLS_CALL,
        ATTR_OPERATION: OPERATION_EXECUTE_TOOL,
    }
    for f in SPAN_ATTRIBUTE_FIELDS:
        value = _value(record, f.name)
        if value is None:
            continue
        assert f.attribute is not None
        attrs[f.attribute] = _coerce(value, f)
    if _value(record, "duration_us") is None:
        attrs[ATTR_DURATION_UNKNOWN] = True
    return attrs


def _value(record: CallRecord | Mapping[str, Any], name: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name)


def _coerce(value: Any, f: Field) -> Any:
    if f.arrow in ("int64", "int32"):
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise TypeError(f"field {f.name!r} must be an integer, got {value!r}")
        return int(value)
    if f.arrow == "bool":
        if not isinstance(value, bool | int):
            raise TypeError(f"field {f.name!r} must be a boolean, got {value!r}")
        return bool(value)
    return str(value)


def _time_ns(value: Any) -> int:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise TypeError(f"start_time {value!r} is not an ISO 8601 time") from exc
    if not isinstance(value, datetime):
        raise TypeError(f"start_time must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # the record's times are UTC
    return ((value - EPOCH) // timedelta(microseconds=1)) * 1000


class _PresetIds(IdGenerator):
    """Hands out the ids of the record being replayed (one span at a time)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id


class _Collect(SpanProcessor):
    def __init__(self, sink: list[ReadableSpan]) -> None:
        self._sink = sink

    def on_end(self, span: ReadableSpan) -> None:
        self._sink.append(span)


def send_records(
    records: Iterable[CallRecord | Mapping[str, Any]],
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    batch: int = DEFAULT_BATCH,
    timeout: float = 30.0,
    on_progress: Callable[[int], None] | None = None,
) -> int:
    """Send records as OTLP spans with their original times; returns how many were accepted.

    ``endpoint``: base URL (``http://127.0.0.1:4318``) or the ``/v1/traces`` URL.
    ``headers``: e.g. ``{"Authorization": "Bearer <token>"}``. ``batch``: spans per request.
    ``on_progress(sent_so_far)`` is called after every accepted batch (for a progress bar).
    Raises :class:`ReplayError` for a malformed record (naming its index and field) or a
    refused batch; spans of earlier batches stay sent.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    url = traces_url(endpoint)
    exporter = OTLPSpanExporter(
        endpoint=url, headers=dict(headers) if headers else None, timeout=timeout
    )
    ids = _PresetIds()
    pending: list[ReadableSpan] = []
    tracers: dict[str | None, Tracer] = {}
    sent = 0

    def flush() -> None:
        nonlocal sent
        if not pending:
            return
        if exporter.export(pending) is not SpanExportResult.SUCCESS:
            raise ReplayError(
                f"could not deliver a batch of {len(pending)} spans to {url} (refused or "
                f"unreachable; {sent} spans were accepted before it)"
            )
        sent += len(pending)
        pending.clear()
        if on_progress is not None:
            on_progress(sent)

    def tracer_for(service: str | None) -> Tracer:
        tracer = tracers.get(service)
        if tracer is None:
            resource = Resource({ATTR_SERVICE_NAME: service} if service is not None else {})
            provider = TracerProvider(
                resource=resource, id_generator=ids, sampler=ALWAYS_ON, shutdown_on_exit=False
            )
            provider.add_span_processor(_Collect(pending))
            tracer = tracers[service] = provider.get_tracer(REPLAY_TRACER_NAME)
        return tracer

    root = otel_context.Context()  # never a child of whatever span the caller is in
    try:
        for index, record in enumerate(records):
            try:
                start_ns, end_ns, failed, attrs = _prepare(record, ids)
                service = _value(record, "service")
            except (TypeError, ValueError) as exc:
                raise ReplayError(f"record {index}: {exc}") from exc
            span = tracer_for(None if service is None else str(service)).start_span(
                span_name(str(_value(record, "tool"))),
                context=root,
                kind=SpanKind.CLIENT,
                attributes=attrs,
                start_time=start_ns,
                record_exception=False,
                set_status_on_exception=False,
            )
            if failed:
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=end_ns)
            if len(pending) >= batch:
                flush()
        flush()
    finally:
        exporter.shutdown()
    log.info("replayed %d call records to %s", sent, url)
    return sent


def _prepare(
    record: CallRecord | Mapping[str, Any], ids: _PresetIds
) -> tuple[int, int, bool, dict[str, Any]]:
    if not isinstance(record, CallRecord | Mapping):
        raise TypeError(f"expected a CallRecord or a mapping, got {type(record).__name__}")
    missing: Sequence[str] = [n for n in _REQUIRED if _value(record, n) is None]
    if missing:
        raise ValueError(f"missing required field(s) {', '.join(repr(m) for m in missing)}")
    trace_id, span_id = str(_value(record, "trace_id")), str(_value(record, "span_id"))
    if not _TRACE_ID.match(trace_id) or int(trace_id, 16) == 0:
        raise ValueError(f"field 'trace_id' must be 32 hex digits, not all zero: {trace_id!r}")
    if not _SPAN_ID.match(span_id) or int(span_id, 16) == 0:
        raise ValueError(f"field 'span_id' must be 16 hex digits, not all zero: {span_id!r}")
    start_ns = _time_ns(_value(record, "start_time"))
    duration = _value(record, "duration_us")
    if duration is not None and (not isinstance(duration, int) or duration < 0):
        raise ValueError(f"field 'duration_us' must be a non-negative integer, got {duration!r}")
    attrs = record_attributes(record)
    end_ns = start_ns + (duration or 0) * 1000
    ids.trace_id, ids.span_id = int(trace_id, 16), int(span_id, 16)
    return start_ns, end_ns, bool(_value(record, "failed")), attrs
