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

Spans are exported synchronously in batches (no queue that could drop spans), as OTLP/HTTP
protobuf, gzipped, on one keep-alive connection. Each response is read: spans the endpoint
rejects through ``partial_success`` are counted with its message (:class:`ReplayReport`); a
batch accepted whole with a warning (``rejected_spans`` 0 and a message, OTLP's warning form)
is counted, and each distinct warning logged once; a
503/429/502/504 or a dropped connection is retried (``Retry-After`` honoured) until
``timeout``, and any other refusal stops the replay with :class:`ReplayError` saying how many
were accepted. A fields-less record (``fields_present`` and other intrinsic columns) travels in
the span itself or not at all. Strings (names, ids, the service) are fitted as the
instrumentation fits them (:func:`toolwatch.record.fit_string`: valid UTF-8, at most
:data:`~toolwatch.record.MAX_STRING_BYTES` bytes — the collector rejects a span carrying a
longer one); every cut is counted in :attr:`ReplayReport.cut` and logged.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from google.rpc import status_pb2
from opentelemetry import context as otel_context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from toolwatch.conventions import (
    ATTR_DURATION_UNKNOWN,
    ATTR_MCP_METHOD,
    ATTR_OPERATION,
    ATTR_SERVICE_NAME,
    ATTR_TOOL_NAME,
    METHOD_TOOLS_CALL,
    OPERATION_EXECUTE_TOOL,
    span_name,
)
from toolwatch.instrumentation.export.otlp import traces_url
from toolwatch.record import (
    CALL_FIELDS,
    EPOCH,
    MAX_STRING_BYTES,
    TRUNCATION_MARK,
    CallRecord,
    Field,
    fit_string,
    utf8_size,
)
from toolwatch.words import counted, noun_for

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


_RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: distinct endpoint warnings said (and kept in the report), and how much of each
MAX_WARNINGS = 5
MAX_WARNING_CHARS = 500


class ReplayError(ValueError):
    """A record cannot be sent, or the endpoint refused a batch; the message says which."""


@dataclass(slots=True)
class ReplayReport:
    """What a replay delivered: spans sent, rejected by the endpoint (``partial_success``),
    and the strings cut to ``MAX_STRING_BYTES`` on the way, by record field."""

    sent: int = 0
    rejected: int = 0
    messages: list[str] = field(default_factory=list)  # the endpoint's, first few
    cut: dict[str, int] = field(default_factory=dict)  # field name -> strings cut
    #: batches accepted whole with a warning (``partial_success`` with rejected 0 and a
    #: message, e.g. spans ending before they start, stored without a duration)
    warned: int = 0
    warnings: list[str] = field(default_factory=list)  # the distinct warnings, first few

    @property
    def accepted(self) -> int:
        return self.sent - self.rejected

    def cut_text(self) -> str | None:
        """One line saying which strings were cut, or None when none was."""
        if not self.cut:
            return None
        fields = ", ".join(f"{name} {n:,}" for name, n in sorted(self.cut.items()))
        return (
            f"{counted(sum(self.cut.values()), 'string')} longer than {MAX_STRING_BYTES:,} "
            "bytes cut "
            f"as the instrumentation cuts them, ending {TRUNCATION_MARK!r} ({fields})"
        )


class _Poster:
    """POSTs OTLP protobuf bodies to one URL over a keep-alive connection, with retries."""

    def __init__(self, url: str, headers: Mapping[str, str] | None, timeout: float) -> None:
        parts = urlsplit(url)
        self.url = url
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.headers = {
            "Content-Type": "application/x-protobuf",
            "Content-Encoding": "gzip",
            "User-Agent": "toolwatch-replay",
            **dict(headers or {}),
        }
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self._conn = cls(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def post(self, body: bytes) -> tuple[int, str]:
        """(rejected spans, the endpoint's message) of an accepted request; ReplayError if it
        was refused or the endpoint stayed unreachable or busy for ``timeout`` seconds."""
        payload = gzip.compress(body, compresslevel=5)
        deadline = time.monotonic() + self.timeout
        delay = 0.25
        while True:
            try:
                conn = self._connection()
                conn.request("POST", self.path, body=payload, headers=self.headers)
                response = conn.getresponse()
                status, data = response.status, response.read()
                retry_after = response.getheader("Retry-After")
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                problem = f"unreachable ({exc})"
                status, data, retry_after = 0, b"", None
            else:
                if 200 <= status < 300:
                    return _partial_success(data)
                problem = f"HTTP {status}: {_status_message(data)}"
            if status and status not in _RETRY_STATUSES:
                raise ReplayError(f"{self.url} refused a batch: {problem}")
            wait = _seconds(retry_after, delay)
            if time.monotonic() + wait > deadline:
                raise ReplayError(f"{self.url} {problem}; gave up after {self.timeout:g} s")
            time.sleep(wait)
            delay = min(delay * 2, 5.0)


def _seconds(retry_after: str | None, default: float) -> float:
    try:
        return min(max(float(retry_after), 0.0), 30.0) if retry_after else default
    except ValueError:
        return default


def _partial_success(data: bytes) -> tuple[int, str]:
    response = ExportTraceServiceResponse()
    try:
        response.ParseFromString(data)
    except Exception:  # a non-OTLP 200 body (some proxies): nothing rejected that we can tell
        return 0, ""
    ps = response.partial_success
    return int(ps.rejected_spans), ps.error_message


def _status_message(data: bytes) -> str:
    status = status_pb2.Status()
    try:
        status.ParseFromString(data)
    except Exception:
        return data[:200].decode("utf-8", "replace").strip() or "(no message)"
    return status.message or data[:200].decode("utf-8", "replace").strip() or "(no message)"


def record_attributes(
    record: CallRecord | Mapping[str, Any], cut: dict[str, int] | None = None
) -> dict[str, Any]:
    """The span attributes of a record (``None`` values are left out), per CALL_FIELDS, plus
    the unknown-duration marker when the record has no duration. Strings are fitted as the
    instrumentation fits them (:func:`fit`); each field cut is counted in ``cut``."""
    attrs: dict[str, Any] = {
        ATTR_MCP_METHOD: METHOD_TOOLS_CALL,
        ATTR_OPERATION: OPERATION_EXECUTE_TOOL,
    }
    for f in SPAN_ATTRIBUTE_FIELDS:
        value = _value(record, f.name)
        if value is None:
            continue
        assert f.attribute is not None
        coerced = _coerce(value, f)
        attrs[f.attribute] = fit(coerced, f.name, cut) if isinstance(coerced, str) else coerced
    if _value(record, "duration_us") is None:
        attrs[ATTR_DURATION_UNKNOWN] = True
    return attrs


def fit(value: str, name: str, cut: dict[str, int] | None = None) -> str:
    """``value`` as the instrumentation sends it (``record.fit_string``); a cut one (over
    ``MAX_STRING_BYTES``, which the collector would reject) is counted under ``name``."""
    if (
        cut is not None
        and len(value) * 4 > MAX_STRING_BYTES
        and utf8_size(value) > MAX_STRING_BYTES
    ):
        cut[name] = cut.get(name, 0) + 1
    return fit_string(value)


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
    """Send records as OTLP spans with their original times; returns how many were accepted
    (sent minus those the endpoint rejected; see :func:`replay_records` for the details).

    ``endpoint``: base URL (``http://127.0.0.1:4318``) or the ``/v1/traces`` URL.
    ``headers``: e.g. ``{"Authorization": "Bearer <token>"}``. ``batch``: spans per request.
    ``on_progress(sent_so_far)`` is called after every accepted batch (for a progress bar).
    Raises :class:`ReplayError` for a malformed record (naming its index and field) or a
    refused batch; spans of earlier batches stay sent.
    """
    report = replay_records(
        records, endpoint, headers=headers, batch=batch, timeout=timeout, on_progress=on_progress
    )
    return report.accepted


def replay_records(
    records: Iterable[CallRecord | Mapping[str, Any]],
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    batch: int = DEFAULT_BATCH,
    timeout: float = 30.0,
    on_progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    """:func:`send_records`, returning the :class:`ReplayReport` (sent, rejected, messages)."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    url = traces_url(endpoint)
    poster = _Poster(url, headers, timeout)
    ids = _PresetIds()
    pending: list[ReadableSpan] = []
    tracers: dict[str | None, Tracer] = {}
    report = ReplayReport()

    def flush() -> None:
        if not pending:
            return
        try:
            rejected, message = poster.post(encode_spans(pending).SerializeToString())
        except ReplayError as exc:
            raise ReplayError(
                f"could not deliver a batch of {counted(len(pending), 'span')} ({exc}); "
                f"{counted(report.sent, 'span')} were accepted before it"
            ) from None
        report.sent += len(pending)
        if rejected:
            report.rejected += rejected
            if len(report.messages) < 5:
                report.messages.append(message or f"{counted(rejected, 'span')} rejected")
        elif message:
            _warned(report, url, message)
        pending.clear()
        if on_progress is not None:
            on_progress(report.sent)

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
                start_ns, end_ns, failed, attrs = _prepare(record, ids, report.cut)
                service = _value(record, "service")
            except (TypeError, ValueError) as exc:
                raise ReplayError(f"record {index}: {exc}") from exc
            if service is not None:
                service = fit(str(service), "service", report.cut)
            span = tracer_for(service).start_span(
                span_name(attrs[ATTR_TOOL_NAME]),  # the tool fitted as its attribute is
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
        poster.close()
    if report.rejected:
        log.warning(
            "replayed %s to %s: %d rejected (%s)",
            counted(report.sent, "call record"),
            url,
            report.rejected,
            "; ".join(report.messages),
        )
    else:
        log.info(
            "replayed %s to %s%s",
            counted(report.sent, "call record"),
            url,
            f" ({counted(report.warned, 'batch', 'batches')} accepted with a warning)"
            if report.warned
            else "",
        )
    if report.cut:
        log.warning(
            "replayed %s to %s: %s",
            counted(report.sent, "call record"),
            url,
            report.cut_text(),
        )
    return report


def _warned(report: ReplayReport, url: str, message: str) -> None:
    """Count a batch the endpoint accepted whole with a warning; say each distinct warning
    once (the first :data:`MAX_WARNINGS`), however many batches repeat it."""
    report.warned += 1
    text = message[:MAX_WARNING_CHARS]
    if text in report.warnings or len(report.warnings) >= MAX_WARNINGS:
        return
    report.warnings.append(text)
    log.warning("%s accepted every span but warned (said once): %s", url, text)


def _prepare(
    record: CallRecord | Mapping[str, Any], ids: _PresetIds, cut: dict[str, int]
) -> tuple[int, int, bool, dict[str, Any]]:
    if not isinstance(record, CallRecord | Mapping):
        raise TypeError(f"expected a CallRecord or a mapping, got {type(record).__name__}")
    missing: Sequence[str] = [n for n in _REQUIRED if _value(record, n) is None]
    if missing:
        raise ValueError(
            f"missing required {noun_for(len(missing), 'field')} "
            f"{', '.join(repr(m) for m in missing)}"
        )
    trace_id, span_id = str(_value(record, "trace_id")), str(_value(record, "span_id"))
    if not _TRACE_ID.match(trace_id) or int(trace_id, 16) == 0:
        raise ValueError(f"field 'trace_id' must be 32 hex digits, not all zero: {trace_id!r}")
    if not _SPAN_ID.match(span_id) or int(span_id, 16) == 0:
        raise ValueError(f"field 'span_id' must be 16 hex digits, not all zero: {span_id!r}")
    start_ns = _time_ns(_value(record, "start_time"))
    duration = _value(record, "duration_us")
    if duration is not None and (not isinstance(duration, int) or duration < 0):
        raise ValueError(f"field 'duration_us' must be a non-negative integer, got {duration!r}")
    attrs = record_attributes(record, cut)
    end_ns = start_ns + (duration or 0) * 1000
    ids.trace_id, ids.span_id = int(trace_id, 16), int(span_id, 16)
    return start_ns, end_ns, bool(_value(record, "failed")), attrs
