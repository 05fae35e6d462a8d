"""The other OTLP signals (logs, metrics) arriving where traces are expected.

An SDK whose logs or metrics exporter points at ``/v1/traces`` (its endpoint set to the traces
URL) sends an ``ExportLogsServiceRequest`` or ``ExportMetricsServiceRequest``. OTLP/JSON names
the signal in its top-level key; protobuf does not: the three requests share their first two
levels (field 1 the resource's envelope, in it field 1 the resource and field 2 the scope's),
so a logs or metrics body either fails the trace parse ("wire format was corrupt") or parses as
spans that are no spans, which were ignored with a 200 and nothing said.

:func:`protobuf_signal` tells them apart: a body that parses as the other signal's request
with at least one log record (metric), each with a time (each data point, for a metric), and
*nothing unknown* anywhere in it. No span passes: a log record's times are fields 1 and 11
(fixed64), a span's 1 and 11 its trace id and events (length-delimited), so a span read as a
log record has no time; its start and end (fixed64 fields 7 and 8) are unknown to a metric
(its 7 is the sum, a message). The other way round, a span parsed from a log record has no
trace id, one parsed from a metric no start time, which is what :func:`looks_like_spans`
checks before paying for the second parse.
"""

from __future__ import annotations

from typing import Final

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

#: The top-level fields of the other signals' OTLP/JSON exports (both spellings).
JSON_KEYS: Final = (
    "resourceLogs",
    "resource_logs",
    "resourceMetrics",
    "resource_metrics",
    "resourceProfiles",
    "resource_profiles",
)
#: What a sender of another signal should do (the end of every such refusal).
ADVICE: Final = (
    "this endpoint receives traces only (resourceSpans); send logs and metrics elsewhere or "
    "turn their exporters off (OTEL_LOGS_EXPORTER=none, OTEL_METRICS_EXPORTER=none)"
)
#: ``POST /v1/logs`` and ``/v1/metrics`` (an SDK pointed here for every signal): the 404's
#: message, naming the signal and the variable that turns its exporter off.
PATHS: Final = {
    "/v1/logs": "logs",
    "/v1/metrics": "metrics",
}


def other_path_message(signal: str) -> str:
    """The 404 message of ``POST /v1/<signal>``."""
    return (
        f"not found: this collector receives traces only (POST /v1/traces), not {signal}; "
        f"send {signal} elsewhere or turn the {signal} exporter off "
        f"(OTEL_{signal.upper()}_EXPORTER=none)"
    )


def protobuf_message(signal: str) -> str:
    """The 400 message of a protobuf ``signal`` export posted to ``/v1/traces``."""
    kind = "Logs" if signal == "logs" else "Metrics"
    return f"an Export{kind}ServiceRequest ({signal}) is not a trace export: {ADVICE}"


def looks_like_spans(request: ExportTraceServiceRequest) -> bool:
    """Whether the first span of a parsed trace request has a trace id and a start time (what
    no log record or metric read as a span has): the usual request, checked in microseconds."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                return len(span.trace_id) == 16 and span.start_time_unix_nano != 0
    return True  # no span at all: an empty export is a success whatever it was meant to be


def _clean(message: Message) -> bool:
    """No unknown field in ``message`` nor in any message inside it."""
    if len(unknown_fields.UnknownFieldSet(message)):
        return False
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None:  # (OTLP's messages have no map fields)
            items = (value,) if isinstance(value, Message) else value  # protobuf 5 and 7 alike
            if not all(_clean(item) for item in items):
                return False
    return True


def _logs(body: bytes) -> bool:
    """Log records, each with a time and ids of the right size (or none), nothing unknown."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    return (
        bool(records)
        and all(
            (r.time_unix_nano or r.observed_time_unix_nano)
            and len(r.trace_id) in (0, 16)
            and len(r.span_id) in (0, 8)
            for r in records
        )
        and _clean(request)
    )


def _metrics(body: bytes) -> bool:
    """Metrics, each with data whose every point has a time, nothing unknown."""
    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    metrics = [m for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    for metric in metrics:
        kind = metric.WhichOneof("data")
        if kind is None:
            return False
        points = getattr(metric, kind).data_points
        if not points or not all(p.time_unix_nano for p in points):
            return False
    return bool(metrics) and _clean(request)


def protobuf_signal(body: bytes) -> str | None:
    """``"logs"`` or ``"metrics"`` when ``body`` is a well-formed export of that signal (see the
    module's docstring), else None."""
    for signal, check in (("logs", _logs), ("metrics", _metrics)):
        try:
            if check(body):
                return signal
        except DecodeError:
            continue
    return None
