"""OTLP export helpers: configure_otlp (live spans) and send_records (replayed records), both
against a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from mcp import Client

from support.canary import assert_absent, make_canary
from support.mcp_test_server import build_server
from support.otlp_sink import OTLPSink
from toolwatch.conventions import (
    ATTR_AGENT_ID,
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_DURATION_UNKNOWN,
    ATTR_ERROR_TYPE,
    ATTR_LABEL,
    ATTR_MCP_METHOD,
    ATTR_MCP_SERVER,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_RESTAMPED,
    ATTR_RESULT_SIZE,
    ATTR_RESULT_TRUNCATED,
    ATTR_SESSION_POSITION,
    ATTR_SOURCE,
    ATTR_TOOL_CALL_ID,
    ATTR_TOOL_NAME,
)
from toolwatch.instrumentation import configure_otlp, instrument, send_records, uninstrument
from toolwatch.instrumentation.export.otlp import traces_url
from toolwatch.instrumentation.export.replay import (
    ReplayError,
    record_attributes,
    replay_records,
)
from toolwatch.record import MAX_STRING_BYTES, TRUNCATION_MARK, CallRecord, fit_string

T0 = datetime(2026, 3, 4, 5, 6, 7, 891_234, tzinfo=UTC)


def make_record(i: int, **changes: Any) -> CallRecord:
    values: dict[str, Any] = {
        "trace_id": f"{0xABC0 + i // 3:032x}",
        "span_id": f"{0x5000 + i:016x}",
        "session_id": f"sess-{i // 3}",
        "agent_id": "sub-1" if i % 4 == 3 else None,
        "seq": i % 3,
        "tool": ["Read", "WebFetch", "mcp__github__get_issue"][i % 3],
        "server": "github" if i % 3 == 2 else None,
        "start_time": T0 + timedelta(seconds=1.5 * i),
        "duration_us": 1_234 + i,
        "input_bytes": 100 + i,
        "output_bytes": None if i == 4 else 2_000 + i,
        "failed": i % 5 == 1,
        "error_type": "tool_error" if i % 5 == 1 else None,
        "response_id": f"msg_{i // 2}",
        "call_id": f"toolu_{i}",
        "source": "simulated",
        "service": "svc-a" if i < 4 else "svc-b",
        "restamped": i == 2,
        "output_truncated": i == 5,
        "label": "burst" if i == 6 else None,
    }
    values.update(changes)
    return CallRecord(**values)


def ns(dt: datetime) -> int:
    return int((dt - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1)) * 1000


# ------------------------------------------------------------------------------ replay


def test_send_records_keeps_times_ids_and_every_attribute() -> None:
    records = [make_record(i) for i in range(7)]
    with OTLPSink() as sink:
        progress: list[int] = []
        sent = send_records(records[:4], sink.url, batch=3, on_progress=progress.append)
        sent += send_records([r.as_dict() for r in records[4:]], sink.url + "/v1/traces")
        spans = sink.spans()
    assert sent == 7 and progress == [3, 4]
    assert len(sink.received) == 3  # 3 + 1, then one request for the dict records
    by_id = {s["span_id"]: s for s in spans}
    assert len(by_id) == 7
    for r in records:
        span = by_id[r.span_id]
        assert span["name"] == f"tools/call {r.tool}"
        assert span["kind"] == 3  # SPAN_KIND_CLIENT
        assert span["trace_id"] == r.trace_id
        assert span["start_ns"] == ns(r.start_time)
        assert r.duration_us is not None
        assert span["end_ns"] - span["start_ns"] == r.duration_us * 1000
        assert span["status"] == (2 if r.failed else 0)
        assert span["resource"] == {"service.name": r.service}
        expected = {
            ATTR_MCP_METHOD: "tools/call",
            ATTR_OPERATION: "execute_tool",
            ATTR_CONVERSATION_ID: r.session_id,
            ATTR_AGENT_ID: r.agent_id,
            ATTR_SESSION_POSITION: r.seq,
            ATTR_TOOL_NAME: r.tool,
            ATTR_MCP_SERVER: r.server,
            ATTR_ARGUMENTS_SIZE: r.input_bytes,
            ATTR_RESULT_SIZE: r.output_bytes,
            ATTR_ERROR_TYPE: r.error_type,
            ATTR_RESPONSE_ID: r.response_id,
            ATTR_TOOL_CALL_ID: r.call_id,
            ATTR_SOURCE: r.source,
            ATTR_RESTAMPED: r.restamped,
            ATTR_RESULT_TRUNCATED: r.output_truncated,
            ATTR_LABEL: r.label,
        }
        assert span["attributes"] == {k: v for k, v in expected.items() if v is not None}


def test_record_without_service_or_duration() -> None:
    record = make_record(0, service=None, duration_us=None)
    with OTLPSink() as sink:
        assert send_records([record], sink.url) == 1
        (span,) = sink.spans()
    assert span["resource"] == {}
    assert span["end_ns"] == span["start_ns"] == ns(T0)
    # no duration is not a zero duration: the marker tells the collector (ATTR_DURATION_UNKNOWN)
    assert span["attributes"][ATTR_DURATION_UNKNOWN] is True
    assert span["attributes"] == record_attributes(record)


def test_naive_and_iso_times_are_utc() -> None:
    naive = make_record(0, start_time=T0.replace(tzinfo=None)).as_dict()
    iso = make_record(1, start_time=T0.isoformat()).as_dict()
    with OTLPSink() as sink:
        send_records([naive, iso], sink.url)
        starts = sorted(s["start_ns"] for s in sink.spans())
    assert starts == [ns(T0), ns(T0)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tool": None}, r"record 2: missing required field 'tool'"),
        ({"trace_id": "xyz"}, "record 2: field 'trace_id' must be 32 hex digits"),
        ({"span_id": "0" * 16}, "record 2: field 'span_id' must be 16 hex digits"),
        ({"start_time": 12345}, "record 2: start_time must be a datetime"),
        ({"start_time": "yesterday"}, "record 2: start_time 'yesterday' is not an ISO 8601"),
        ({"duration_us": -5}, "record 2: field 'duration_us' must be a non-negative integer"),
        ({"input_bytes": "many"}, "record 2: field 'input_bytes' must be an integer"),
    ],
)
def test_bad_records_are_named(change: dict[str, Any], message: str) -> None:
    rows = [make_record(i).as_dict() for i in range(3)]
    rows[2].update(change)
    with OTLPSink() as sink, pytest.raises(ReplayError, match=message):
        send_records(rows, sink.url, batch=1)
    assert len(sink.received) == 2  # the records before the bad one were sent


def test_refused_batch_stops_with_a_count() -> None:
    with OTLPSink(refuse_after=1) as sink:
        with pytest.raises(ReplayError, match=r"batch of 2 spans .* 2 spans were accepted"):
            send_records([make_record(i) for i in range(6)], sink.url, batch=2)
        assert len(sink.received) == 1 and sink.refused == 1


def test_unreachable_endpoint() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ReplayError, match=r"0 spans were accepted"):
        send_records([make_record(0)], f"http://127.0.0.1:{port}", timeout=2.0)


def test_bad_endpoint_and_batch() -> None:
    with pytest.raises(ValueError, match="not an http"):
        send_records([], "127.0.0.1:4318")
    with pytest.raises(ValueError, match="batch must be at least 1"):
        send_records([], "http://127.0.0.1:4318", batch=0)


def test_traces_url() -> None:
    assert traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("http://h:1/") == "http://h:1/v1/traces"
    assert traces_url("https://h/otlp/v1/traces") == "https://h/otlp/v1/traces"
    with pytest.raises(ValueError, match="ftp://h"):
        traces_url("ftp://h")


# ------------------------------------------------------------------------------ configure_otlp


def test_configure_otlp_exports_only_toolwatch_spans_with_headers() -> None:
    with OTLPSink() as sink:
        provider = configure_otlp(sink.url, "agent-7", headers={"Authorization": "Bearer t0k"})
        instrument(tracer_provider=provider)

        async def main() -> None:
            async with Client(build_server()) as client:
                await client.list_tools()
                with provider.get_tracer("someone-else").start_as_current_span("other"):
                    await client.call_tool("echo", {"text": "hi"})

        try:
            anyio.run(main)
        finally:
            uninstrument()
            provider.shutdown()  # flushes the batch
        spans = sink.spans()
    assert sorted(s["name"] for s in spans) == ["tools/call echo", "tools/list"]
    assert {s["resource"]["service.name"] for s in spans} == {"agent-7"}
    assert all(r.headers["authorization"] == "Bearer t0k" for r in sink.received)


def test_long_strings_are_cut_as_the_instrumentation_cuts_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A name or id over MAX_STRING_BYTES went out whole, and the collector rejected the span;
    replay now fits every string as the instrumentation does, counts each cut and says it."""
    tool, session, service = "T" * 5000, "é" * 3000, "s" * (MAX_STRING_BYTES + 1)
    long = make_record(0, tool=tool, session_id=session, service=service, call_id="toolu_\udcff")
    fine = make_record(1, tool="t" * MAX_STRING_BYTES)  # at the limit: kept, not counted
    with OTLPSink() as sink, caplog.at_level("WARNING"):
        report = replay_records([long, fine, long.as_dict()], sink.url)
        spans = {s["span_id"]: s for s in sink.spans()}
    assert (report.sent, report.accepted) == (3, 3)
    assert report.cut == {"service": 2, "session_id": 2, "tool": 2}
    span = spans[long.span_id]
    assert span["name"] == f"tools/call {fit_string(tool)}"
    attrs = span["attributes"]
    assert (
        attrs[ATTR_TOOL_NAME] == "T" * (MAX_STRING_BYTES - len(TRUNCATION_MARK)) + TRUNCATION_MARK
    )
    assert attrs[ATTR_CONVERSATION_ID] == fit_string(session)
    assert len(attrs[ATTR_CONVERSATION_ID].encode()) <= MAX_STRING_BYTES  # what the collector takes
    assert attrs[ATTR_TOOL_CALL_ID] == "toolu_\ufffd"  # valid UTF-8, as live; not a cut
    assert span["resource"] == {"service.name": fit_string(service)}
    assert spans[fine.span_id]["attributes"][ATTR_TOOL_NAME] == "t" * MAX_STRING_BYTES
    (line,) = [r.getMessage() for r in caplog.records if "cut" in r.getMessage()]
    assert "6 strings longer than 4,096 bytes cut" in line
    assert "(service 2, session_id 2, tool 2)" in line


def test_cutting_long_strings_says_no_value(caplog: pytest.LogCaptureFixture) -> None:
    """Names and ids are not content, but the cut is said by field and count only: a canary
    in every string field, each past MAX_STRING_BYTES, is in no form in the log (DEBUG) or the
    report; the spans carry the fitted strings (positive control)."""
    canary = make_canary()
    long = canary + "x" * MAX_STRING_BYTES
    record = make_record(0, tool=long, session_id=long, service=long, response_id=long)
    with OTLPSink() as sink, caplog.at_level("DEBUG"):
        report = replay_records([record], sink.url)
        spans = sink.spans()
    assert report.cut == {"response_id": 1, "service": 1, "session_id": 1, "tool": 1}
    assert canary in spans[0]["attributes"][ATTR_TOOL_NAME]
    assert_absent(caplog.text, canary, "the log")
    assert_absent(repr((report.cut_text(), report.messages)), canary, "the report")
