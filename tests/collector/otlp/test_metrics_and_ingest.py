"""What the collector counts, where it can be read: ``GET /metrics`` (Prometheus text) while it
runs, and ``toolwatch store info`` from the store's ``ingest`` table after it is gone — the
same numbers: received, stored, rejected and ignored by reason, duplicates, refused requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.collector import PB, T0, SpanSpec, call, pb_request, post, scrape_metrics
from toolwatch.cli import main
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.store import Store
from toolwatch.conventions import ATTR_CONVERSATION_ID


def _traffic(collector: Collector) -> None:
    no_conversation = call()
    del no_conversation[ATTR_CONVERSATION_ID]
    body = pb_request(
        [
            SpanSpec(call(seq=0)),
            SpanSpec(call(seq=1)),
            SpanSpec(call(seq=2)),
            SpanSpec(no_conversation),
            SpanSpec({"http.request.method": "GET"}),
            SpanSpec({"http.request.method": "POST"}),
        ]
    )
    headers = {"Authorization": "Bearer t0k"}
    assert post(collector.url, body, headers=headers).status == 200
    assert post(collector.url, body, headers=headers).status == 200  # a retry: all duplicates
    assert post(collector.url, b"x", "text/plain", headers=headers).status == 415
    assert post(collector.url, body).status == 401  # no token


def test_metrics_show_every_counter_by_reason(tmp_path: Path) -> None:
    with Collector(Store(tmp_path / "store"), token="t0k", compact_interval=None) as collector:
        _traffic(collector)
        assert scrape_metrics(collector.port)[0] == 401  # behind the token, like the traces
        status, text = scrape_metrics(collector.port, "t0k")
    assert status == 200
    lines = set(text.splitlines())
    for line in (
        "toolwatch_collector_spans_received_total 12.0",
        "toolwatch_collector_spans_stored_total 3.0",
        "toolwatch_collector_calls_stored_total 3.0",
        "toolwatch_collector_spans_duplicate_total 3.0",
        'toolwatch_collector_spans_rejected_total{reason="missing:gen_ai.conversation.id"} 2.0',
        'toolwatch_collector_spans_ignored_total{reason="not_a_tool_call"} 4.0',
        'toolwatch_collector_requests_refused_total{status="415"} 1.0',
        'toolwatch_collector_requests_refused_total{status="401"} 1.0',
        "toolwatch_collector_queue_spans 0.0",
        "toolwatch_collector_queue_bytes 0.0",
    ):
        assert line in lines, line
    assert any(line.startswith("toolwatch_collector_commit_seconds_count 2") for line in lines)
    assert "gen_ai.tool.name" not in text.replace("missing:gen_ai.conversation.id", "")


def test_store_info_reports_the_same_counts_after_the_collector_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "store")
    for _ in range(2):  # two runs; the second one's spans are new (fresh ids)
        with Collector(store, token="t0k", compact_interval=None) as collector:
            _traffic(collector)
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "ingest: 2 collector runs" in out
    assert (
        "24 spans received in 8 requests: 6 stored (6 calls, 0 tool listings), 4 rejected, "
        "8 ignored, 6 duplicates dropped" in out
    )
    assert "rejected by reason: missing:gen_ai.conversation.id 4" in out
    assert "ignored by reason: not_a_tool_call 8" in out
    assert "refused requests by status: 401 2, 415 2" in out


def test_store_info_says_why_the_mcp_sdks_own_spans_gave_no_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user who turned on only the MCP SDK's tracing saw "0 calls" and "ignored by reason:
    mcp_sdk_span", with nothing saying what to do; now a line says it, and only then."""
    store = Store(tmp_path / "store")
    spec = SpanSpec({"mcp.method.name": "tools/call"}, name="MCP send tools/call x")
    sdk = pb_request([spec], scope="mcp-python-sdk")
    with Collector(store, compact_interval=None) as collector:
        assert post(collector.url, sdk).status == 200
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "ignored by reason: mcp_sdk_span 1" in out
    assert "instrument the client with toolwatch.instrumentation.instrument()" in out
    with Collector(store, compact_interval=None) as collector:  # now calls arrive too
        assert post(collector.url, pb_request([SpanSpec(call(seq=0))])).status == 200
    assert main(["store", "info", "--store", str(store.root)]) == 0
    assert "instrument the client" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kind", "reason", "says"),
    [
        (1, "internal_tool_span", "an agent framework's own tool steps"),
        (2, "server_span", "recorded where the tool ran; export the client's spans"),
    ],
)
def test_store_info_says_why_semconv_tool_spans_of_another_kind_gave_no_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: int, reason: str, says: str
) -> None:
    """Tool spans of kind INTERNAL (a framework's step) or SERVER (the tool's side) alone left
    "0 calls" and a reason with nothing saying what it means; now a line says it."""
    store = Store(tmp_path / "store")
    spec = SpanSpec({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "x"}, kind=kind)
    with Collector(store, compact_interval=None) as collector:
        assert post(collector.url, pb_request([spec], scope="a.framework")).status == 200
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert f"ignored by reason: {reason} 1" in out
    assert f"  {reason}: " in out and says in out


def test_a_span_ending_before_it_starts_is_counted_in_the_answer_and_the_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Such a span was stored with a null duration and nothing said: it is rejected in
    ``partial_success`` and counted by its reason on ``/metrics`` and in ``store info``."""
    store = Store(tmp_path / "store")
    backwards = SpanSpec(call(seq=1), end_ns=T0 - 2_000_000)
    with Collector(store, compact_interval=None) as collector:
        reply = post(collector.url, pb_request([SpanSpec(call(seq=0)), backwards]))
        assert reply.status == 200
        rejected, message = decode_success(PB, reply.body)
        assert rejected == 1 and "span ends before it starts" in message
        text = scrape_metrics(collector.port)[1]
    line = 'toolwatch_collector_spans_rejected_total{reason="before_start:endTimeUnixNano"} 1.0'
    assert line in text.splitlines()
    assert store.query("SELECT seq FROM calls").to_pylist() == [{"seq": 0}]
    assert main(["store", "info", "--store", str(store.root)]) == 0
    assert "rejected by reason: before_start:endTimeUnixNano 1" in capsys.readouterr().out
