"""What the collector counts, where it can be read: ``GET /metrics`` (Prometheus text) while it
runs, and ``toolwatch store info`` from the store's ``ingest`` table after it is gone — the
same numbers: received, stored, rejected and ignored by reason, duplicates, refused requests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.collector import (
    JS,
    PB,
    T0,
    SpanSpec,
    call,
    json_request,
    pb_request,
    post,
    scrape_metrics,
)
from toolwatch.cli import main
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.otlp.ingest import ingest_summary
from toolwatch.collector.otlp.stats import CollectorStats, ingest_row
from toolwatch.collector.store import Store
from toolwatch.collector.store.parquet_store import INGEST
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


_FLAGGED = (
    "2 spans end before they start: stored without a duration (did the sender's clock step "
    "back during the call?); 1 span has no end time: stored without a duration (end each "
    "span before exporting it)"
)


@pytest.mark.parametrize("content_type", [PB, JS])
def test_a_span_ending_before_it_starts_is_stored_and_counted_as_flagged(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    content_type: str,
) -> None:
    """A clock step mid-call gives end < start: the call is stored (null duration, the
    stream's order intact), the answer warns with rejected_spans 0, and the flaw is counted by
    reason in the stats, /metrics, the ingest row and store info, once (a retry is a
    duplicate); a span with no end time likewise."""
    store = Store(tmp_path / "store")
    specs = [
        SpanSpec(call(seq=0)),
        SpanSpec(call(seq=1), end_ns=T0 - 2_000_000),
        SpanSpec(call(seq=2), end_ns=T0 - 1),
        SpanSpec(call(seq=3), end_ns=0),
    ]
    body = (pb_request if content_type == PB else json_request)(specs)
    with Collector(store, compact_interval=None) as collector:
        first, retry = (post(collector.url, body, content_type) for _ in range(2))
        assert (first.status, retry.status) == (200, 200)
        assert decode_success(content_type, first.body) == (0, _FLAGGED)
        assert decode_success(content_type, retry.body) == (0, "")  # all duplicates
        assert collector.stats.flagged_by == {"end_before_start": 2, "no_end_time": 1}
        assert (collector.stats.flagged_spans, collector.stats.rejected_spans) == (3, 0)
        lines = set(scrape_metrics(collector.port)[1].splitlines())
    for line in (
        'toolwatch_collector_spans_flagged_total{reason="end_before_start"} 2.0',
        'toolwatch_collector_spans_flagged_total{reason="no_end_time"} 1.0',
        "toolwatch_collector_spans_stored_total 4.0",
        "toolwatch_collector_spans_duplicate_total 4.0",
    ):
        assert line in lines, line
    assert not any(line.startswith("toolwatch_collector_spans_rejected_total{") for line in lines)
    warned = [m for m in caplog.messages if "stored without a duration" in m]
    assert len(warned) == 1 and warned[0].endswith(f": {_FLAGGED}")  # "request from <client>"
    rows = store.query("SELECT seq, duration_us FROM calls ORDER BY seq").to_pylist()
    assert [(r["seq"], r["duration_us"]) for r in rows] == [
        (0, 2500),
        (1, None),
        (2, None),
        (3, None),
    ]
    ingest = store.query("SELECT flagged_spans, flagged_by FROM ingest WHERE final").to_pylist()
    assert ingest == [
        {"flagged_spans": 3, "flagged_by": '{"end_before_start": 2, "no_end_time": 1}'}
    ]
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "8 spans received in 2 requests: 4 stored (4 calls, 0 tool listings), 0 rejected" in out
    assert "  calls kept without a duration by reason: end_before_start 2, no_end_time 1\n" in out


def test_store_info_reads_ingest_rows_written_before_the_flagged_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older collector's ingest row has no flagged columns: it reads as none flagged, and
    the totals with a newer run's row are the newer run's flags."""
    store = Store(tmp_path / "store")
    started = datetime(2026, 8, 1, tzinfo=UTC)
    old = ingest_row(CollectorStats(requests=1, spans=2), "old", "u", started, final=True)
    del old["flagged_spans"], old["flagged_by"]
    part = store.root / INGEST / "date=2026-08-01"
    part.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([old]), part / "part-old.parquet")
    new = CollectorStats(requests=1, spans=1, flagged_spans=1, flagged_by={"no_end_time": 1})
    store.append(INGEST, [ingest_row(new, "new", "u", started, final=True)])
    summary = ingest_summary(store)
    assert summary is not None
    assert (summary["runs"], summary["spans"], summary["flagged_spans"]) == (2, 3, 1)
    assert summary["flagged_by"] == {"no_end_time": 1}
    assert main(["store", "info", "--store", str(store.root)]) == 0
    assert "calls kept without a duration by reason: no_end_time 1" in capsys.readouterr().out


def test_store_info_json_gives_the_texts_figures_as_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``store info --json``: the same facts as the text (a collector's store: its tables, its
    ingest counts by reason, an unfinished write), keys as ARCHITECTURE documents them."""
    store = Store(tmp_path / "store")
    for _ in range(2):
        with Collector(store, token="t0k", compact_interval=None) as collector:
            _traffic(collector)
    (store.files("calls")[0].parent / "part-x.parquet.tmp").write_bytes(b"")  # a crashed write
    assert main(["store", "info", "--store", str(store.root)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert main(["store", "info", "--json", "--store", str(store.root)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert list(facts) == ["store", "tables", "unfinished_writes", "ingest", "imported"]
    assert facts["store"] == str(store.root) == text[0].removeprefix("store ")
    header = text[1].split()
    shown = {line.split()[0]: line.split() for line in text[3 : 3 + len(facts["tables"])]}
    for table in facts["tables"]:
        assert list(table) == header
        cells = shown[table["table"]]
        assert [str(table[k]) for k in ("files", "rows", "partitions")] == [
            cells[header.index(k)] for k in ("files", "rows", "partitions")
        ]
    assert {t["table"]: t["rows"] for t in facts["tables"]} == {"calls": 6, "ingest": 2}
    assert facts["unfinished_writes"] == 1
    assert "1 unfinished write (*.parquet.tmp), invisible to readers" in text
    ingest = facts["ingest"]
    assert (ingest["runs"], ingest["spans"], ingest["requests"]) == (2, 24, 8)
    assert (ingest["stored_spans"], ingest["calls"], ingest["tool_listings"]) == (6, 6, 0)
    assert (ingest["rejected_spans"], ingest["ignored_spans"], ingest["duplicate_spans"]) == (
        4,
        8,
        6,
    )
    assert ingest["rejected_by"] == {"missing:gen_ai.conversation.id": 4}
    assert ingest["ignored_by"] == {"not_a_tool_call": 8}
    assert ingest["refused_by"] == {"401": 2, "415": 2}
    assert datetime.fromisoformat(ingest["last"]).tzinfo is not None
    assert f"last counted {datetime.fromisoformat(ingest['last']):%Y-%m-%d %H:%M:%S} UTC" in (
        "\n".join(text)
    )
    assert "24 spans received in 8 requests: 6 stored (6 calls, 0 tool listings)" in "\n".join(text)
    assert facts["imported"] == {"unflagged_forks": {}, "without_result": 0, "pending": 0}
