"""Spans from other senders: semantic-conventions tool spans become call records (sizes null,
``fields_present`` says what the span carried), and everything that is no call made by this
client is ignored *by reason* — the MCP SDK's own spans, SERVER spans, an agent framework's
INTERNAL tool steps, HTTP spans — counted in the stats and on ``/metrics``, never silently.
Tool spans missing what a record needs are rejected through ``partial_success`` naming the
attribute.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from support.canary import assert_absent, assert_store_clean, make_canary
from support.collector import JS, PB, SpanSpec, json_request, pb_request, post, rows
from toolwatch.cli import main
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.otlp.mapping import SDK_SCOPE
from toolwatch.collector.store import Store
from toolwatch.conventions import (
    ATTR_CONVERSATION_ID,
    ATTR_ERROR_TYPE,
    ATTR_MCP_METHOD,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_TOOL_CALL_ID,
    ATTR_TOOL_NAME,
)

KIND_INTERNAL, KIND_SERVER, KIND_CLIENT = 1, 2, 3
TESTS = Path(__file__).resolve().parents[2]


def semconv(tool: str = "search", session: str | None = "conv-1", **extra: Any) -> dict[str, Any]:
    """A tool span as the GenAI/MCP conventions describe it: no toolwatch attribute."""
    attrs: dict[str, Any] = {
        ATTR_MCP_METHOD: "tools/call",
        ATTR_OPERATION: "execute_tool",
        ATTR_TOOL_NAME: tool,
        ATTR_RESPONSE_ID: "resp-1",
        ATTR_TOOL_CALL_ID: "call-1",
    }
    if session is not None:
        attrs[ATTR_CONVERSATION_ID] = session
    attrs.update(extra)
    return attrs


def with_kind(body_spans: list[SpanSpec], kinds: list[int], encoding: str) -> bytes:
    """A request whose spans have the given kinds (the support builders send CLIENT)."""
    if encoding == JS:
        doc = json.loads(json_request(body_spans, scope="other.sender"))
        for span, kind in zip(
            doc["resourceSpans"][0]["scopeSpans"][0]["spans"], kinds, strict=True
        ):
            span["kind"] = kind
        return json.dumps(doc).encode()
    request = ExportTraceServiceRequest.FromString(pb_request(body_spans, scope="other.sender"))
    for span, kind in zip(request.resource_spans[0].scope_spans[0].spans, kinds, strict=True):
        span.kind = kind  # type: ignore[assignment]
    return request.SerializeToString()


def _metrics(collector: Collector) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type", "").startswith("text/plain")
        return response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("encoding", [PB, JS])
def test_semconv_client_spans_become_records_with_null_sizes(
    collector: Collector, store: Store, encoding: str
) -> None:
    specs = [
        SpanSpec(semconv("search")),
        SpanSpec(semconv("write_file", **{ATTR_ERROR_TYPE: "tool_error"}), status=2),
        SpanSpec(semconv("read_file")),
    ]
    body = with_kind(specs, [KIND_CLIENT, KIND_CLIENT, 0], encoding)  # 0: kind left out
    reply = post(collector.url, body, encoding)
    assert reply.status == 200
    assert decode_success(encoding, reply.body) == (0, "")
    got = {r["tool"]: r for r in rows(store)}
    assert set(got) == {"search", "write_file", "read_file"}
    row = got["search"]
    assert (row["input_bytes"], row["output_bytes"], row["seq"], row["server"]) == (
        None,
        None,
        None,
        None,
    )
    assert (row["session_id"], row["response_id"], row["call_id"]) == ("conv-1", "resp-1", "call-1")
    assert row["fields_present"] == "session_id,tool,response_id,call_id,service"
    assert row["source"] == "otlp" and row["duration_us"] == 2500
    failed = got["write_file"]
    assert failed["failed"] and failed["error_type"] == "tool_error"
    assert failed["fields_present"] == "session_id,tool,error_type,response_id,call_id,service"
    assert collector.stats.stored_spans == 3 and collector.stats.calls == 3


@pytest.mark.parametrize("encoding", [PB, JS])
def test_a_span_with_only_a_json_rpc_code_has_that_code_as_its_failure_class(
    collector: Collector, store: Store, encoding: str
) -> None:
    # the MCP conventions' client span: error.type SHOULD be the code's string, and the code
    # is in rpc.response.status_code (older senders: rpc.jsonrpc.error_code, an integer); a
    # sender that sets only the code still tells which failure it was
    specs = [
        SpanSpec(semconv("a", **{"rpc.response.status_code": "-32602"}), status=2),
        SpanSpec(semconv("b", **{"rpc.jsonrpc.error_code": -32603}), status=2),
        SpanSpec(semconv("c", **{ATTR_ERROR_TYPE: "tool_error", "rpc.jsonrpc.error_code": -1})),
        SpanSpec(semconv("d")),
    ]
    body = with_kind(specs, [KIND_CLIENT] * 4, encoding)
    reply = post(collector.url, body, encoding)
    assert (reply.status, decode_success(encoding, reply.body)) == (200, (0, ""))
    got = {r["tool"]: (r["failed"], r["error_type"]) for r in rows(store)}
    assert got == {
        "a": (True, "-32602"),
        "b": (True, "-32603"),
        "c": (True, "tool_error"),  # error.type, when there, is the class
        "d": (False, None),
    }
    present = {r["tool"]: r["fields_present"].split(",") for r in rows(store)}
    assert "error_type:rpc.response.status_code" in present["a"]
    assert "error_type:rpc.jsonrpc.error_code" in present["b"]
    assert "error_type" in present["c"]


def test_a_tool_span_without_a_conversation_is_rejected_naming_it(
    collector: Collector, store: Store
) -> None:
    specs = [SpanSpec(semconv(session=None)), SpanSpec(semconv("ok"))]
    reply = post(collector.url, pb_request(specs, scope="other.sender"))
    rejected, message = decode_success(PB, reply.body)
    assert reply.status == 200 and rejected == 1
    assert (
        "missing attribute gen_ai.conversation.id, session.id, mcp.session.id, "
        "service.instance.id or process.pid (session_id)" in message
    )
    assert [r["tool"] for r in rows(store)] == ["ok"]  # the other span of the request stands
    assert collector.stats.rejected_by == {"missing:gen_ai.conversation.id": 1}
    assert (
        'toolwatch_collector_spans_rejected_total{reason="missing:gen_ai.conversation.id"} 1.0'
        in _metrics(collector)
    )


def test_the_stop_line_counts_spans_by_reason(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="toolwatch.collector.otlp.server")
    with Collector(store, compact_interval=None) as collector:
        specs = [SpanSpec(semconv(session=None)), SpanSpec(semconv("ok"))]
        assert post(collector.url, pb_request(specs, scope="other.sender")).status == 200
    line = next(r.getMessage() for r in caplog.records if "collector stopped" in r.getMessage())
    assert "1 span rejected (missing:gen_ai.conversation.id: 1), 0 ignored, 0 duplicates" in line


@pytest.mark.parametrize("encoding", [PB, JS])
def test_spans_that_are_no_call_of_this_client_are_ignored_by_reason(
    collector: Collector, store: Store, encoding: str
) -> None:
    specs = [
        SpanSpec(semconv("on_the_server")),  # SERVER: the tool ran on the other side
        # INTERNAL without mcp.method.name: an agent framework's own step
        SpanSpec({k: v for k, v in semconv("framework_step").items() if k != ATTR_MCP_METHOD}),
        SpanSpec({"http.request.method": "GET", "url.full": "https://example.org"}),
        SpanSpec({ATTR_OPERATION: "chat", ATTR_CONVERSATION_ID: "c"}),  # a model call
    ]
    body = with_kind(specs, [KIND_SERVER, KIND_INTERNAL, KIND_CLIENT, KIND_CLIENT], encoding)
    reply = post(collector.url, body, encoding)
    assert reply.status == 200 and decode_success(encoding, reply.body) == (0, "")
    assert rows(store) == []
    assert collector.stats.ignored_by == {
        "server_span": 1,
        "internal_tool_span": 1,
        "not_a_tool_call": 2,
    }
    text = _metrics(collector)
    assert 'toolwatch_collector_spans_ignored_total{reason="server_span"} 1.0' in text
    assert 'toolwatch_collector_spans_ignored_total{reason="not_a_tool_call"} 2.0' in text
    assert "toolwatch_collector_spans_received_total 4.0" in text


def test_openinference_tool_spans_are_ignored_named_and_their_content_never_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # OpenInference's TOOL span (its semantic conventions: openinference.span.kind, tool.name,
    # the arguments and result as input.value / output.value): its own convention, INTERNAL, a
    # framework's tool step; ignored, and store info names it so its user knows why
    canary = make_canary()
    span = {
        "openinference.span.kind": "TOOL",
        "tool.name": "get_weather",
        "input.value": canary,
        "input.mime_type": "application/json",
        "output.value": canary,
        "session.id": "s1",
    }
    store = Store(tmp_path / "store")
    with Collector(store, compact_interval=None) as collector:
        body = with_kind([SpanSpec(span, name="get_weather")], [KIND_INTERNAL], PB)
        reply = post(collector.url, body, PB)
        assert (reply.status, decode_success(PB, reply.body)) == (200, (0, ""))
        assert collector.stats.ignored_by == {"not_a_tool_call": 1}
    assert rows(store) == []
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "not_a_tool_call 1" in out
    assert "OpenInference's openinference.span.kind=TOOL" in out
    assert_store_clean(store, canary)
    assert_absent(out, canary, "store info")


@pytest.mark.parametrize("encoding", [PB, JS])
def test_an_mcp_call_merged_into_the_frameworks_internal_span_is_a_call(
    collector: Collector, store: Store, encoding: str
) -> None:
    """The MCP conventions: an MCP instrumentation that finds the framework's ``execute_tool``
    span (INTERNAL) open adds ``mcp.method.name`` and its other attributes to it instead of
    making a CLIENT span of its own; that span is then the only record of the call."""
    merged = semconv("merged_call")
    local = {k: v for k, v in semconv("local_step").items() if k != ATTR_MCP_METHOD}
    body = with_kind([SpanSpec(merged), SpanSpec(local)], [KIND_INTERNAL, KIND_INTERNAL], encoding)
    reply = post(collector.url, body, encoding)
    assert reply.status == 200 and decode_success(encoding, reply.body) == (0, "")
    assert [(r["tool"], r["session_id"]) for r in rows(store)] == [("merged_call", "conv-1")]
    assert collector.stats.ignored_by == {"internal_tool_span": 1}
    assert collector.stats.calls == 1


#: Run in a child process: the SDK traces through the *global* provider, settable only once.
_SDK_SPANS = """
import sys, anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)
from mcp import Client
from support.mcp_test_server import build_server

async def main():
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "hello"})
        await client.call_tool("fail", {"reason": "no"})
        try:
            await client.call_tool("reject", {"value": "v"})  # a JSON-RPC error
        except Exception:
            pass

anyio.run(main)
spans = memory.get_finished_spans()
for s in spans:
    op = s.attributes.get("gen_ai.operation.name")
    print(s.instrumentation_scope.name, s.kind.name, s.name, op, file=sys.stderr)
sys.stdout.buffer.write(encode_spans(spans).SerializeToString())
"""


def test_the_mcp_sdks_own_spans_are_ignored_not_mistaken_for_calls(
    collector: Collector, store: Store
) -> None:
    """The real MCP SDK (client and server spans, JSON-RPC in memory) through the real OTLP
    encoder: its SERVER spans look like semconv tool spans but are no client call, and its
    CLIENT spans carry no conversation; both are ignored as the SDK's own."""
    out = subprocess.run(
        [sys.executable, "-c", _SDK_SPANS],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        check=True,
    )
    listing = out.stderr.decode().splitlines()
    assert {line.split()[0] for line in listing} == {SDK_SCOPE}  # the scope relied on
    assert any(line.split()[1:3] == ["SERVER", "tools/call"] for line in listing), listing
    assert any(line.endswith("execute_tool") for line in listing)  # semconv look-alikes
    reply = post(collector.url, out.stdout, PB)
    assert reply.status == 200 and decode_success(PB, reply.body) == (0, "")
    assert rows(store) == []
    assert collector.stats.ignored_by == {"mcp_sdk_span": len(listing)}
