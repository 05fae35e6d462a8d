"""Logs and metrics sent to a collector that takes traces only: an SDK pointed here for every
signal (``/v1/logs``, ``/v1/metrics``) and one whose logs or metrics exporter points at
``/v1/traces`` itself. Each is refused with an OTLP ``google.rpc.Status`` in the request's
encoding naming the signal and what to turn off, counted as refused; a trace export, even an
empty one, is not mistaken for them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from support.collector import JS, PB, T0, SpanSpec, call, json_request, pb_request, post, rows
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_status, decode_success
from toolwatch.collector.store import Store

ADVICE = (
    "this endpoint receives traces only (resourceSpans); send logs and metrics elsewhere or "
    "turn their exporters off (OTEL_LOGS_EXPORTER=none, OTEL_METRICS_EXPORTER=none)"
)


@pytest.fixture
def collector(store: Store) -> Iterator[Collector]:
    with Collector(store, max_body=1 << 20, compact_interval=None) as c:
        yield c


def logs_request(*, with_trace_id: bool) -> bytes:
    """A logs export as an SDK writes it (with a trace id when a span was open)."""
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    rl.resource.attributes.add(key="service.name").value.string_value = "agent"
    record = rl.scope_logs.add().log_records.add(
        time_unix_nano=T0, observed_time_unix_nano=T0 + 1, severity_number=9, severity_text="INFO"
    )
    record.body.string_value = "tool finished"
    record.attributes.add(key="code.function").value.string_value = "run"
    if with_trace_id:
        record.trace_id, record.span_id, record.flags = bytes(range(1, 17)), bytes(range(1, 9)), 1
    return request.SerializeToString()


def metrics_request(kind: str) -> bytes:
    request = ExportMetricsServiceRequest()
    metric = request.resource_metrics.add().scope_metrics.add().metrics.add(name="calls", unit="1")
    if kind == "sum":
        metric.sum.data_points.add(as_int=3, time_unix_nano=T0)
        metric.sum.is_monotonic, metric.sum.aggregation_temporality = True, 2
    elif kind == "gauge":
        metric.gauge.data_points.add(as_double=0.5, time_unix_nano=T0)
    else:
        metric.histogram.data_points.add(
            count=2, sum=1.5, bucket_counts=[1, 1], explicit_bounds=[1.0], time_unix_nano=T0
        )
    return request.SerializeToString()


LOGS = "ExportLogsServiceRequest (logs)"
METRICS = "ExportMetricsServiceRequest (metrics)"


@pytest.mark.parametrize(
    ("body", "signal"),
    [
        pytest.param(logs_request(with_trace_id=False), LOGS, id="logs-read-as-spans"),
        pytest.param(logs_request(with_trace_id=True), LOGS, id="logs-failing-the-parse"),
        pytest.param(metrics_request("sum"), METRICS, id="sum"),
        pytest.param(metrics_request("gauge"), METRICS, id="gauge"),
        pytest.param(metrics_request("histogram"), METRICS, id="histogram"),
    ],
)
def test_a_protobuf_logs_or_metrics_export_to_the_traces_path_is_400_naming_it(
    collector: Collector, store: Store, body: bytes, signal: str
) -> None:
    """Protobuf does not carry its message type: a logs export without trace ids parsed as a
    trace export of spans that are none (200, each span ignored, nothing said), one with them
    failed as "Wire format was corrupt". Both now name the signal and what to turn off."""
    for gzipped in (False, True):
        reply = post(collector.url, body, PB, gzip_body=gzipped)
        assert reply.status == 400 and reply.content_type == PB
        assert decode_status(PB, reply.body) == (3, f"an {signal} is not a trace export: {ADVICE}")
    assert collector.stats.refused == {400: 2}
    assert (collector.stats.spans, collector.stats.ignored_spans) == (0, 0)
    assert post(collector.url, pb_request([SpanSpec(call())])).status == 200  # still serving
    assert len(rows(store)) == 1


def test_trace_exports_are_not_taken_for_another_signal(collector: Collector) -> None:
    """An empty export is a success (OTLP), however it is spelled; a span with no trace id or
    no start time is still a span: rejected by the mapping, not refused as a logs export."""
    empty = ExportTraceServiceRequest()
    empty.resource_spans.add().scope_spans.add().scope.name = "x"
    for body in (b"", empty.SerializeToString()):
        reply = post(collector.url, body)
        assert reply.status == 200 and decode_success(PB, reply.body) == (0, "")
    no_start = SpanSpec(call(seq=1), start_ns=0)
    no_trace_id = SpanSpec(call(seq=2))
    no_trace_id.trace_id = b""
    reply = post(collector.url, pb_request([no_start, no_trace_id]))
    assert reply.status == 200
    rejected, message = decode_success(PB, reply.body)
    assert rejected == 2 and "no start time" in message and "invalid trace id" in message
    assert collector.stats.refused == {}


@pytest.mark.parametrize(
    "key", ["resourceLogs", "resource_logs", "resourceMetrics", "resource_metrics"]
)
def test_a_json_logs_or_metrics_export_to_the_traces_path_is_400_saying_so(
    collector: Collector, key: str
) -> None:
    """Read as a trace export with unknown fields, it got 200 and was dropped without a word.
    It is a 400 naming the signal and what to do; counted as refused."""
    doc = {key: [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "x"}}]}]}]}
    reply = post(collector.url, json.dumps(doc).encode(), JS)
    assert reply.status == 400 and reply.content_type == JS
    assert decode_status(JS, reply.body)[1] == f"{key} is not a trace export: {ADVICE}"
    assert collector.stats.refused == {400: 1} and collector.stats.spans == 0
    both = {key: [], "resourceSpans": json.loads(json_request([SpanSpec(call())]))["resourceSpans"]}
    assert post(collector.url, json.dumps(both).encode(), JS).status == 200  # traces win


def test_the_other_signals_paths_answer_404_with_a_status_naming_the_signal(
    collector: Collector,
) -> None:
    """They were a text/plain 404; OTLP wants every 4xx body to be a ``google.rpc.Status`` in
    the request's encoding, and the answer names the signal's own exporter variable."""
    for signal in ("logs", "metrics"):
        for ctype in (PB, JS):
            reply = post(collector.url, b"", ctype, path=f"/v1/{signal}")
            assert reply.status == 404 and reply.content_type == ctype
            assert decode_status(ctype, reply.body) == (
                12,  # UNIMPLEMENTED
                f"not found: this collector receives traces only (POST /v1/traces), not "
                f"{signal}; send {signal} elsewhere or turn the {signal} exporter off "
                f"(OTEL_{signal.upper()}_EXPORTER=none)",
            )
    assert collector.stats.refused == {404: 4}


def test_the_python_sdks_log_and_metric_exporters_are_refused_and_counted(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    """The real OTLP/HTTP exporters of the OTel Python SDK, pointed at the traces URL (an
    endpoint set to it) and at their own paths: every export refused, counted, one warning
    line saying what to turn off."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    caplog.set_level(logging.WARNING, logger="toolwatch")
    for url in (collector.traces_url, collector.url + "/v1/logs"):
        logs = LoggerProvider()
        logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=url)))
        logs.get_logger("agent").emit(LogRecord(body="tool finished", attributes={"k": "v"}))
        logs.shutdown()
    for url in (collector.traces_url, collector.url + "/v1/metrics"):
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=url), export_interval_millis=10**8
        )
        meters = MeterProvider(metric_readers=[reader])
        meter = meters.get_meter("agent")
        meter.create_counter("calls").add(3)
        meter.create_histogram("latency").record(1.5)
        meters.shutdown()  # one export
    assert collector.stats.refused == {400: 2, 404: 2}
    assert collector.stats.spans == 0
    warned = caplog.text
    assert "400 an ExportLogsServiceRequest (logs) is not a trace export" in warned
    assert (
        "404 not found: this collector receives traces only (POST /v1/traces), not logs" in warned
    )
