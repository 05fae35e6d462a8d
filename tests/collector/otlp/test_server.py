"""The OTLP/HTTP collector over real HTTP on loopback, writing a real Parquet store.

Happy paths (protobuf, JSON, gzip, tools/list), what is ignored (the MCP SDK's own spans,
foreign spans), and every way a request can be bad: each gets the OTLP/HTTP status, the
collector keeps serving and data accepted earlier stays intact.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

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
    rows,
)
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_json, decode_status, decode_success
from toolwatch.collector.store import Store
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_ERROR_TYPE,
    ATTR_LABEL,
    ATTR_MCP_SERVER,
    ATTR_OPERATION,
    ATTR_SOURCE,
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
    SPAN_NAME_TOOLS_LIST,
)
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS


@pytest.fixture
def collector(store: Store) -> Iterator[Collector]:
    with Collector(store, max_body=1 << 20) as c:
        yield c


def _utc(ns: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)


def _ok(reply, content_type: str = PB) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    assert reply.status == 200, (reply.status, reply.body)
    assert reply.content_type == content_type
    return decode_success(content_type, reply.body)


# --------------------------------------------------------------------------- happy paths


def test_protobuf_spans_become_call_records(collector: Collector, store: Store) -> None:
    ok = SpanSpec(call("Read", input_bytes=120, output_bytes=3400, seq=0), start_ns=T0)
    tool_error = SpanSpec(
        call("Bash", input_bytes=55, output_bytes=0, seq=1, **{ATTR_ERROR_TYPE: "tool_error"}),
        start_ns=T0 + 1_000_000_000,
        end_ns=T0 + 1_250_000_000,
        status=2,
    )
    status_only = SpanSpec(  # ERROR status without error.type still means failed
        call("WebFetch", input_bytes=187, output_bytes=None, seq=2, response=None),
        start_ns=T0 + 2_000_000_000,
        status=2,
    )
    reply = post(collector.url, pb_request([ok, tool_error, status_only]))
    assert _ok(reply) == (0, "")

    got = rows(store)
    assert [r["tool"] for r in got] == ["Read", "Bash", "WebFetch"]
    marks = {r.pop("received_time") for r in got}  # the write's arrival mark, one per write
    assert len(marks) == 1 and None not in marks
    first = got[0]
    assert first == {
        "trace_id": ok.trace_id.hex(),
        "span_id": ok.span_id.hex(),
        "session_id": "s1",
        "agent_id": None,
        "seq": 0,
        "tool": "Read",
        "server": "fs",
        "start_time": _utc(T0),
        "duration_us": 2500,
        "input_bytes": 120,
        "output_bytes": 3400,
        "failed": False,
        "error_type": None,
        "response_id": "msg_1",
        "call_id": "toolu_0",
        "source": "otlp",
        "service": "agent",
        "restamped": False,
        "output_truncated": False,
        "label": None,
        "client_quirk": None,
        **dict.fromkeys(EXPORTED_FIELDS),  # provenance: not measured (the span has none)
        "fields_present": "session_id,seq,tool,server,input_bytes,output_bytes,response_id,"
        "call_id,service",
        "date": _utc(T0).date(),
    }
    assert (got[1]["failed"], got[1]["error_type"], got[1]["duration_us"]) == (
        True,
        "tool_error",
        250_000,
    )
    assert (got[2]["failed"], got[2]["error_type"], got[2]["output_bytes"]) == (True, None, None)
    assert got[2]["response_id"] is None
    sessions = store.query("SELECT calls, failures, tools, responses FROM sessions").to_pylist()
    assert sessions == [{"calls": 3, "failures": 2, "tools": 3, "responses": 1}]


@pytest.mark.parametrize(("interval", "lines"), [(0.0, 2), (3600.0, 1)])
def test_stored_batches_are_logged_at_most_once_per_interval(
    store: Store, caplog: pytest.LogCaptureFixture, interval: float, lines: int
) -> None:
    caplog.set_level(logging.INFO, logger="toolwatch.collector.otlp")
    with Collector(store, progress_interval=interval) as c:
        _ok(post(c.url, pb_request([SpanSpec(call(seq=i)) for i in range(3)])))
        _ok(post(c.url, pb_request([SpanSpec(call(seq=9)), SpanSpec({"http.method": "GET"})])))
    stored = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stored ")]
    assert len(stored) == lines
    assert stored[0].startswith("stored 3 calls and 0 tool listings from 3 spans in 1 request")
    if lines == 2:  # the second line counts only what came since the first
        assert stored[1].startswith("stored 1 call and 0 tool listings from 2 spans in 1 ")
        assert stored[1].endswith("; 4 calls since start")


def test_json_request_is_parsed_by_hand(collector: Collector, store: Store) -> None:
    specs = [
        SpanSpec(call("Grep", input_bytes=7, seq=i, **{ATTR_LABEL: "burst"} if i else {}))
        for i in range(3)
    ]
    specs[2].start_ns = T0 + 5_000
    reply = post(collector.url, json_request(specs, service="svc-json"), JS)
    assert _ok(reply, JS) == (0, "")
    assert json.loads(reply.body) == {}
    got = rows(store, "SELECT span_id, trace_id, seq, label, service FROM calls ORDER BY seq")
    assert got == [
        {
            "span_id": s.span_id.hex(),
            "trace_id": s.trace_id.hex(),
            "seq": i,
            "label": "burst" if i else None,
            "service": "svc-json",
        }
        for i, s in enumerate(specs)
    ]


def _snake_case(doc: Any) -> Any:
    """An OTLP/JSON document with every key written as its proto field name."""
    if isinstance(doc, list):
        return [_snake_case(v) for v in doc]
    if isinstance(doc, dict):
        return {
            "".join(f"_{c.lower()}" if c.isupper() else c for c in k): _snake_case(v)
            for k, v in doc.items()
        }
    return doc


def test_json_with_proto_field_names_is_read_like_lower_camel_case(
    collector: Collector, store: Store
) -> None:
    """Proto3 JSON parsers accept a field's proto name too (``resource_spans``,
    ``start_time_unix_nano``, ``string_value``), as the OpenTelemetry Collector does. They
    were unknown fields here: the request was a 200 with nothing stored and no span counted."""
    listing = SpanSpec(
        {ATTR_CONVERSATION_ID: "s9", ATTR_MCP_SERVER: "github"},
        name=SPAN_NAME_TOOLS_LIST,
        events=[(EVENT_TOOL_LISTED, T0 + 1000, {ATTR_TOOL_NAME: "a", ATTR_TOOL_DIGEST: "ab" * 32})],
    )
    specs = [SpanSpec(call("Grep", input_bytes=7, seq=i, tags=["x", 1.5])) for i in range(3)]
    camel = json_request([*specs, listing], service="svc-snake")
    snake = json.dumps(_snake_case(json.loads(camel))).encode()
    assert b"resource_spans" in snake and b"int_value" in snake and b"array_value" in snake
    assert decode_json(snake) == decode_json(camel)
    assert _ok(post(collector.url, snake, JS), JS) == (0, "")
    assert (collector.stats.spans, collector.stats.stored_spans) == (4, 4)
    got = rows(store, "SELECT span_id, seq, input_bytes, start_time, service FROM calls")
    assert sorted(got, key=lambda r: r["seq"]) == [
        {
            "span_id": s.span_id.hex(),
            "seq": i,
            "input_bytes": 7,
            "start_time": _utc(s.start_ns),
            "service": "svc-snake",
        }
        for i, s in enumerate(specs)
    ]
    listed = rows(store, "SELECT tool, listed_time FROM tool_lists")
    assert listed == [{"tool": "a", "listed_time": _utc(T0 + 1000)}]


@pytest.mark.parametrize("content_type", [PB, JS])
def test_gzip_bodies(collector: Collector, store: Store, content_type: str) -> None:
    specs = [SpanSpec(call(seq=i)) for i in range(50)]
    body = pb_request(specs) if content_type == PB else json_request(specs)
    _ok(post(collector.url, body, content_type, gzip_body=True), content_type)
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 50}]


def test_source_and_label_travel_from_replayed_records(collector: Collector, store: Store) -> None:
    spec = SpanSpec(call(**{ATTR_SOURCE: "simulated", ATTR_LABEL: "runaway_retry"}))
    _ok(post(collector.url, pb_request([spec])))
    assert rows(store, "SELECT source, label FROM calls") == [
        {"source": "simulated", "label": "runaway_retry"}
    ]


def test_tools_list_events_become_tool_lists_rows(collector: Collector, store: Store) -> None:
    listing = SpanSpec(
        {ATTR_CONVERSATION_ID: "s9", ATTR_MCP_SERVER: "github"},
        name=SPAN_NAME_TOOLS_LIST,
        events=[
            (EVENT_TOOL_LISTED, T0 + 1000, {ATTR_TOOL_NAME: "search", ATTR_TOOL_DIGEST: "ab" * 32}),
            (EVENT_TOOL_LISTED, T0 + 2000, {ATTR_TOOL_NAME: "read", ATTR_TOOL_DIGEST: "cd" * 32}),
            ("exception", T0, {"exception.type": "X"}),  # other events are not listings
        ],
    )
    assert _ok(post(collector.url, pb_request([listing]))) == (0, "")
    got = rows(store, "SELECT * EXCLUDE (date) FROM tool_lists ORDER BY listed_time")
    assert got == [
        {
            "trace_id": listing.trace_id.hex(),
            "span_id": listing.span_id.hex(),
            "session_id": "s9",
            "server": "github",
            "tool": tool,
            "digest": digest,
            "listed_time": _utc(t),
            "service": "agent",
        }
        for tool, digest, t in (("search", "ab" * 32, T0 + 1000), ("read", "cd" * 32, T0 + 2000))
    ]
    assert rows(store, "SELECT count(*) AS n FROM calls") == [{"n": 0}]


def test_sdk_and_foreign_spans_are_ignored(collector: Collector, store: Store) -> None:
    ours = SpanSpec(call("Read"))
    sdk_server = SpanSpec(  # the SDK's spans also carry gen_ai.operation.name
        {ATTR_OPERATION: "execute_tool", "mcp.method.name": "tools/call", "jsonrpc.request.id": 1},
        name="MCP handle tools/call Read",
    )
    sdk_marked = SpanSpec(call("Read"))  # even a marked span from the SDK's tracer is not ours
    http_span = SpanSpec({"http.request.method": "GET"}, name="GET /")
    body = pb_request(
        groups=[
            (
                {"service.name": "agent"},
                [("toolwatch", [ours]), ("mcp-python-sdk", [sdk_server, sdk_marked])],
            ),
            ({"service.name": "web"}, [("opentelemetry.instrumentation.requests", [http_span])]),
        ]
    )
    assert _ok(post(collector.url, body)) == (0, "")
    assert rows(store, "SELECT span_id FROM calls") == [{"span_id": ours.span_id.hex()}]
    collector.stop()
    assert collector.stats.ignored_spans == 3


def test_unknown_tools_and_servers_are_just_recorded(collector: Collector, store: Store) -> None:
    spec = SpanSpec(call("never_seen_before_tool", **{ATTR_MCP_SERVER: "brand-new-server"}))
    _ok(post(collector.url, pb_request([spec])))
    assert rows(store, "SELECT tool, server FROM calls") == [
        {"tool": "never_seen_before_tool", "server": "brand-new-server"}
    ]


def test_empty_request_is_accepted(collector: Collector, store: Store) -> None:
    assert _ok(post(collector.url, b"")) == (0, "")
    assert _ok(post(collector.url, b"{}", JS), JS) == (0, "")
    assert store.tables() == []


# --------------------------------------------------------------------------- partial success


def _incomplete_spans() -> tuple[list[SpanSpec], SpanSpec]:
    good = SpanSpec(call("Read", seq=5))
    no_session = call("Edit")
    del no_session[ATTR_CONVERSATION_ID]
    no_tool = call("Edit")
    del no_tool[ATTR_TOOL_NAME]
    bad = [
        SpanSpec(no_session),
        SpanSpec(no_tool),
        SpanSpec(call("Edit", **{ATTR_ARGUMENTS_SIZE: "many"})),  # wrong type
        SpanSpec(call("Edit", input_bytes=-4)),  # out of range
        SpanSpec(call("Edit", **{ATTR_SOURCE: "made-up"})),  # not a known source
        SpanSpec(call("Edit"), start_ns=0),  # no start time
    ]
    return bad, good


@pytest.mark.parametrize("content_type", [PB, JS])
def test_unmappable_spans_get_partial_success(
    collector: Collector, store: Store, content_type: str
) -> None:
    bad, good = _incomplete_spans()
    specs = [*bad[:3], good, *bad[3:]]
    body = pb_request(specs) if content_type == PB else json_request(specs)
    rejected, message = _ok(post(collector.url, body, content_type), content_type)
    assert rejected == len(bad)
    assert ATTR_CONVERSATION_ID in message and ATTR_TOOL_NAME in message
    assert ATTR_ARGUMENTS_SIZE in message
    assert bad[0].span_id.hex() in message
    assert "and 1 more" in message  # only the first five reasons are spelled out
    assert rows(store, "SELECT span_id, seq FROM calls") == [
        {"span_id": good.span_id.hex(), "seq": 5}
    ]


def test_tools_list_with_a_bad_event_is_rejected_whole(collector: Collector, store: Store) -> None:
    listing = SpanSpec(
        {ATTR_CONVERSATION_ID: "s1"},
        name=SPAN_NAME_TOOLS_LIST,
        events=[
            (EVENT_TOOL_LISTED, T0, {ATTR_TOOL_NAME: "a", ATTR_TOOL_DIGEST: "00" * 32}),
            (EVENT_TOOL_LISTED, T0, {ATTR_TOOL_NAME: "b"}),  # no digest
        ],
    )
    rejected, message = _ok(post(collector.url, pb_request([listing])))
    assert rejected == 1 and ATTR_TOOL_DIGEST in message
    assert store.tables() == []  # half a tool list would look like a tool disappearing


# --------------------------------------------------------------------------- bad requests


def _status(reply, content_type: str = PB) -> str:  # type: ignore[no-untyped-def]
    assert reply.content_type == content_type
    return decode_status(content_type, reply.body)[1]


def test_malformed_protobuf_is_400_with_a_status_body(collector: Collector) -> None:
    reply = post(collector.url, b"\x0a\xff\xff\xff\x0f\x01garbage")
    assert reply.status == 400
    code, message = decode_status(PB, reply.body)
    assert code == 3 and "protobuf" in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"resourceSpans": [', "malformed JSON"),
        (b'{"resourceSpans": {"a": 1}}', "resourceSpans must be an array"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "resourceSpans[0].scopeSpans[0].spans[0].traceId is not hex",
        ),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"soon"}]}]}]}',
            "startTimeUnixNano must be an integer",
        ),
        (b"\xff\xfe", "malformed JSON"),
    ],
)
def test_malformed_json_is_400_naming_the_field(
    collector: Collector, body: bytes, expected: str
) -> None:
    reply = post(collector.url, body, JS)
    assert reply.status == 400
    assert expected in _status(reply, JS)


def test_an_internal_error_is_500_with_code_internal(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Status body's code followed a table that lacked 500 (and 408), so an internal
    error read as INVALID_ARGUMENT (3): "your data is bad" for a fault of the collector's."""

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(collector, "_decode", broken)
    for ctype in (PB, JS):
        reply = post(collector.url, b"{}" if ctype == JS else b"", ctype)
        assert reply.status == 500 and reply.content_type == ctype
        assert decode_status(ctype, reply.body) == (13, "internal error")  # INTERNAL


def test_wrong_content_type_or_encoding_is_415(collector: Collector) -> None:
    reply = post(collector.url, pb_request([SpanSpec(call())]), "text/plain")
    assert reply.status == 415 and "text/plain" in _status(reply, JS)
    reply = post(collector.url, b"x", PB, headers={"Content-Encoding": "br"})
    assert reply.status == 415 and "br" in _status(reply)


def test_oversized_body_is_413(store: Store) -> None:
    specs = [SpanSpec(call(seq=i)) for i in range(200)]
    body = pb_request(specs)
    with Collector(store, max_body=len(body) - 1) as c:
        reply = post(c.url, body)
        assert reply.status == 413 and "limit" in _status(reply)
        # gzip fits on the wire, but the limit also holds after decompression
        reply = post(c.url, body, gzip_body=True)
        assert reply.status == 413
        assert _ok(post(c.url, pb_request(specs[:10]))) == (0, "")
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 10}]


def test_gzip_bomb_is_413_not_a_memory_blowup(collector: Collector) -> None:
    import resource
    import zlib

    one_mib = gzip.compress(b"\0" * (1 << 20), compresslevel=9)  # ~1 KiB
    bombs = [
        gzip.compress(b"\0" * (32 << 20), compresslevel=1),  # one stream, 32 MiB
        one_mib * 512,  # 512 concatenated members: 512 MiB from ~0.5 MiB
    ]
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for bomb in bombs:
        assert len(bomb) < collector.max_body
        assert len(zlib.decompressobj(31).decompress(bomb[:4096], 4096)) == 4096  # real gzip
        reply = post(collector.url, bomb, headers={"Content-Encoding": "gzip"})
        assert reply.status == 413
        assert "decompressed body exceeds" in _status(reply)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert grown_mib < 128, f"peak memory grew by {grown_mib:.0f} MiB"


def test_broken_gzip_is_400(collector: Collector) -> None:
    reply = post(collector.url, b"\x1f\x8b\x08\x00garbage", headers={"Content-Encoding": "gzip"})
    assert reply.status == 400 and "gzip" in _status(reply)


def test_bearer_token(store: Store) -> None:
    body = pb_request([SpanSpec(call())])
    with Collector(store, token="s3cret") as c:
        missing = post(c.url, body)
        wrong = post(c.url, body, headers={"Authorization": "Bearer nope"})
        for reply in (missing, wrong):
            assert reply.status == 401
            assert reply.headers["www-authenticate"] == "Bearer"
            assert "token" in _status(reply)
        assert _ok(post(c.url, body, headers={"Authorization": "Bearer s3cret"})) == (0, "")
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 1}]


def test_other_paths_and_methods(collector: Collector) -> None:
    assert post(collector.url, b"", path="/v2/other").body == b"not found\n"
    assert post(collector.url, b"", path="/health").status == 405
    import urllib.request

    with urllib.request.urlopen(collector.url + "/health") as resp:
        assert resp.status == 200


def test_keeps_serving_after_each_bad_request_and_keeps_earlier_data(
    collector: Collector, store: Store
) -> None:
    first = [SpanSpec(call(seq=i)) for i in range(20)]
    _ok(post(collector.url, pb_request(first)))
    before = rows(store)
    bad_requests = [
        (b"\x0a\xff\xff\xff\x0f", PB, {}),
        (b"{not json", JS, {}),
        (b"hello", "text/plain", {}),
        (b"\x1f\x8b\x08\x00garbage", PB, {"Content-Encoding": "gzip"}),
        (gzip.compress(b"\0" * (4 << 20)), PB, {"Content-Encoding": "gzip"}),
        (b"x" * ((1 << 20) + 1), PB, {}),
    ]
    for body, ctype, headers in bad_requests:
        assert post(collector.url, body, ctype, headers=headers).status in (400, 413, 415)
        more = SpanSpec(call(seq=99))
        assert _ok(post(collector.url, pb_request([more]))) == (0, "")
    after = rows(store)
    assert after[: len(before)] == before or all(r in after for r in before)
    assert len(after) == len(before) + len(bad_requests)
    collector.stop()
    assert collector.stats.refused == {400: 3, 413: 2, 415: 1}


def test_a_body_trickling_in_gets_408_at_the_whole_body_deadline(store: Store) -> None:
    """A slow-loris sending one byte every 0.3 s never breaks a 1 s silence limit, which is
    per chunk: it held its connection (and its byte reservation) for as long as it liked. The
    whole body must now arrive within ``body_deadline``: 408 with a one-line reason, the
    connection closed, counted by reason; a silent body still gets its own 408."""
    import socket
    import threading
    import time

    from support.collector import scrape_metrics

    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    with Collector(store, compact_interval=None, body_timeout=1.0, body_deadline=2.0) as c:
        sock = socket.create_connection(("127.0.0.1", c.port), timeout=10)
        sock.sendall(head)
        done = threading.Event()

        def trickle() -> None:
            while not done.wait(0.3):
                try:
                    sock.sendall(b"\x00")
                except OSError:
                    return

        sender = threading.Thread(target=trickle)
        began = time.monotonic()
        sender.start()
        try:
            answer = sock.recv(4096)  # the socket's 10 s timeout fails the test without it
            took = time.monotonic() - began
            while more := sock.recv(4096):  # the rest, until the collector closes
                answer += more
        finally:
            done.set()
            sender.join()
            sock.close()
        status, _, body = answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout", answer
        assert b"connection: close" in answer.lower()
        code, message = decode_status(PB, body.partition(b"\r\n\r\n")[2])
        assert (code, message) == (4, "body not complete within 2 s")  # DEADLINE_EXCEEDED
        assert 1.9 < took < 5

        silent = socket.create_connection(("127.0.0.1", c.port), timeout=10)
        silent.sendall(head + b"\x00")
        assert silent.recv(4096).startswith(b"HTTP/1.1 408")
        silent.close()
        assert c.stats.refused == {408: 2}
        assert c.stats.timed_out_by == {"body_deadline": 1, "body_timeout": 1}
        _, text = scrape_metrics(c.port)
        assert 'toolwatch_collector_requests_timed_out_total{reason="body_deadline"} 1.0' in text
        assert post(c.url, pb_request([SpanSpec(call())])).status == 200  # still serving
    assert len(rows(store)) == 1


def test_the_progress_line_counts_calls_kept_without_a_duration(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The stop line counted calls kept with a flaw in their times, the periodic line did not:
    an operator watching it never heard of them. Now it does, by reason, when there are any."""
    caplog.set_level(logging.INFO, logger="toolwatch.collector.otlp")
    with Collector(store, progress_interval=0.0) as c:
        _ok(post(c.url, pb_request([SpanSpec(call(seq=0))])))
        flawed = [SpanSpec(call(seq=1), end_ns=T0 - 1), SpanSpec(call(seq=2), end_ns=0)]
        _ok(post(c.url, pb_request([*flawed, SpanSpec(call(seq=3), end_ns=T0 - 5)])))
        _ok(post(c.url, pb_request([SpanSpec(call(seq=4))])))
    stored = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stored ")]
    assert len(stored) == 3
    assert "kept without a duration" not in stored[0] + stored[2]
    assert stored[1].endswith(
        "0 duplicates dropped, 3 kept without a duration (end_before_start: 2, no_end_time: 1)); "
        "4 calls since start"
    )
