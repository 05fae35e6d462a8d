"""A real third-party MCP instrumentation: OpenLLMetry's ``opentelemetry-instrumentation-mcp``
0.62.4 on an mcp 1.30 client, over stdio and in memory, exported by the standard OTLP/HTTP
protobuf exporter — its requests recorded byte for byte in ``openllmetry/`` (README there: the
package cannot run on toolwatch's mcp 2.x). Its tool spans follow conventions of its own
(INTERNAL ``<tool>.tool`` with ``traceloop.*``, no ``gen_ai.*``, no session), so none is a call:
each span is counted as ignored by reason, the progress line counts them, and ``store info``
says why there are no calls and what to do. The arguments and results those spans carry (a
fresh canary put in place of the recorded placeholder) reach no file of the store, no answer,
no log line and no metric.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from support.canary import assert_absent, assert_store_clean, make_canary
from support.collector import PB, post, rows, scrape_metrics
from toolwatch.cli import main
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.store import Store

RECORDED = Path(__file__).parent / "openllmetry"
PLACEHOLDER = "@@CANARY@@"  # record.py's argument text
#: spans in each recorded request: stdio has ResponseStreamWriter spans too
SPANS = {"stdio-0.pb": 9, "memory-0.pb": 5}


def _with(canary: str, attributes: list[KeyValue]) -> None:
    for kv in attributes:
        if kv.value.HasField("string_value"):
            kv.value.string_value = kv.value.string_value.replace(PLACEHOLDER, canary)


def recorded(name: str, canary: str) -> bytes:
    """A recorded request with the canary wherever the placeholder was (arguments, results,
    the error status's message)."""
    request = ExportTraceServiceRequest.FromString((RECORDED / name).read_bytes())
    for rs in request.resource_spans:
        _with(canary, rs.resource.attributes)  # type: ignore[arg-type]
        for ss in rs.scope_spans:
            for span in ss.spans:
                _with(canary, span.attributes)  # type: ignore[arg-type]
                for event in span.events:
                    _with(canary, event.attributes)  # type: ignore[arg-type]
                span.status.message = span.status.message.replace(PLACEHOLDER, canary)
    return request.SerializeToString()


def test_openllmetry_tool_spans_are_counted_explained_and_their_content_kept_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="toolwatch")
    canary = make_canary()
    store = Store(tmp_path / "store")
    answers = []
    with Collector(store, compact_interval=None) as collector:
        for name in SPANS:
            body = recorded(name, canary)
            assert body.count(canary.encode()) == 5  # input/output of echo and fail, a status
            reply = post(collector.url, body, PB)
            assert reply.status == 200
            assert decode_success(reply.content_type, reply.body) == (0, "")
            answers.append(reply.body)
        total = sum(SPANS.values())
        assert collector.stats.spans == total and collector.stats.calls == 0
        assert collector.stats.ignored_by == {"not_a_tool_call": total}
        status, metrics = scrape_metrics(collector.port)
        assert status == 200 and f'ignored_total{{reason="not_a_tool_call"}} {total}.0' in metrics
    assert rows(store) == []
    progress = [r.getMessage() for r in caplog.records if "from 9 spans" in r.getMessage()]
    assert progress and "9 ignored" in progress[0], progress

    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert f"ignored by reason: not_a_tool_call {total}" in out
    assert "no span was a tool call by the OTel GenAI/MCP conventions" in out
    assert "OpenLLMetry's <tool>.tool spans" in out
    assert "instrument the client with toolwatch.instrumentation.instrument()" in out

    assert_store_clean(store, canary)
    assert_absent(caplog.text, canary, "the collector's log")
    assert_absent(out, canary, "store info")
    assert_absent(metrics, canary, "/metrics")
    for answer in answers:
        assert_absent(answer, canary, "an OTLP answer")
