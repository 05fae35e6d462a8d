"""Hostile input against a real collector on loopback (the reproductions of issue 14): every
bad value is a 400 or a per-span rejection, never a 5xx; one poisoned request never affects
another client's; decoding never blocks ``/health``; a retried export is stored once; a client
that leaves is counted, not a traceback.
"""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from support.collector import (
    JS,
    PB,
    GatedStore,
    SpanSpec,
    call,
    pb_request,
    post,
    rows,
)
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.store import Store
from toolwatch.conventions import ATTR_ARGUMENTS_SIZE, ATTR_RESULT_SIZE, ATTR_SESSION_POSITION

NOW_NS = time.time_ns()


def kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"key": key, "value": value}
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def tool_span(
    size: Any = 10, start: Any = None, end: Any = None, extra: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An OTLP/JSON span carrying toolwatch's size marker (so it is a tool call)."""
    start = str(NOW_NS) if start is None else start
    attrs = [kv("gen_ai.conversation.id", "s"), kv("gen_ai.tool.name", "read")]
    if size is not None:
        attrs.append(kv(ATTR_ARGUMENTS_SIZE, size))
    return {
        "traceId": uuid.uuid4().hex,
        "spanId": uuid.uuid4().hex[:16],
        "name": "tools/call read",
        "kind": 3,
        "startTimeUnixNano": start,
        "endTimeUnixNano": start if end is None else end,
        "attributes": attrs + (extra or []),
    }


def json_body(spans: list[dict[str, Any]], resource: list[dict[str, Any]] | None = None) -> bytes:
    scope = {"scope": {"name": "hostile"}, "spans": spans}
    doc = {"resourceSpans": [{"resource": {"attributes": resource or []}, "scopeSpans": [scope]}]}
    return json.dumps(doc).encode()


def _reply(collector: Collector, body: bytes, ctype: str = JS, **kw: Any) -> tuple[int, int, str]:
    reply = post(collector.url, body, ctype, **kw)
    if reply.status != 200:
        return reply.status, 0, ""
    rejected, message = decode_success(ctype, reply.body)
    return 200, rejected, message


# --------------------------------------------------------------------------- bad values

BAD_JSON: dict[str, tuple[bytes, str]] = {
    # (body, expected: "400" or the start of the rejection reason)
    "year 10000": (json_body([tool_span(start="253402300800000000000")]), "startTimeUnixNano"),
    "start 10^30": (json_body([tool_span(start=str(10**30))]), "startTimeUnixNano"),
    "end 10^30": (json_body([tool_span(end=str(10**30))]), "endTimeUnixNano"),
    "start as a float 1e300": (json_body([tool_span(start=1e300)]), "startTimeUnixNano"),
    "1,000 brackets": (b"[" * 1000 + b"]" * 1000, "400"),
    "kvlist 240 deep": (json_body([tool_span(extra=[kv("deep", {"stringValue": "@"})])]), "400"),
    "kvlist 300 deep": (json_body([tool_span(extra=[kv("deep", {"stringValue": "#"})])]), "400"),
    "lone surrogate in the tool name": (
        json_body([tool_span()]).replace(b'"read"', b'"\\ud800"'),
        "400",
    ),
    "lone surrogate in service.name": (
        json_body([tool_span()], [kv("service.name", "svc")]).replace(b'"svc"', b'"\\udc00"'),
        "400",
    ),
    "size as superscript two": (
        json_body([tool_span(size="\u00b2")]),
        "attribute " + ATTR_ARGUMENTS_SIZE,
    ),
    "size as superscript three": (
        json_body([tool_span(size="\u00b3")]),
        "attribute " + ATTR_ARGUMENTS_SIZE,
    ),
    "size as Arabic-Indic twelve": (
        json_body([tool_span(size="\u0661\u0662")]),
        "attribute " + ATTR_ARGUMENTS_SIZE,
    ),
    "position as superscript one": (
        json_body([tool_span(extra=[kv(ATTR_SESSION_POSITION, "\u00b9")])]),
        "attribute " + ATTR_SESSION_POSITION,
    ),
    "result size as superscript two": (
        json_body([tool_span(extra=[kv(ATTR_RESULT_SIZE, "\u00b2")])]),
        "attribute " + ATTR_RESULT_SIZE,
    ),
    "size of 2^70 as a number": (
        json_body([tool_span(size=2**70)]),
        "attribute " + ATTR_ARGUMENTS_SIZE,
    ),
    "intValue as Arabic-Indic twelve": (  # int() reads it as 12: it was stored as 12
        json_body([tool_span(size={"intValue": "\u0661\u0662"})]),
        "400",
    ),
    "intValue with an underscore": (json_body([tool_span(size={"intValue": "1_2"})]), "400"),
    "intValue in spaces": (json_body([tool_span(size={"intValue": " 12 "})]), "400"),
    "a span kind OTLP does not define": (  # was ignored as an internal tool span
        json_body([{**tool_span(), "kind": 99}]),
        "span kind 99 is not an OTLP SpanKind",
    ),
    "a negative start": (  # was 'span has no start time'
        json_body([tool_span(start="-5")]),
        "startTimeUnixNano -5 is out of range",
    ),
    "a 64 KiB tool name": (
        json_body([tool_span()]).replace(b'"read"', b'"' + b"r" * 65536 + b'"'),
        "attribute gen_ai.tool.name is 65,536 bytes, over the 4,096-byte limit",
    ),
}


def _deepen(body: bytes, marker: str, levels: int) -> bytes:
    """Replace the value ``{"stringValue": marker}`` by a kvlistValue ``levels`` deep."""
    open_ = b'{"kvlistValue": {"values": [{"key": "k", "value": ' * levels
    close = b"}]}}" * levels
    leaf = b'{"stringValue": "' + marker.encode() + b'"}'
    return body.replace(leaf, open_ + leaf + close)


BAD_JSON["kvlist 240 deep"] = (_deepen(BAD_JSON["kvlist 240 deep"][0], "@", 240), "400")
BAD_JSON["kvlist 300 deep"] = (_deepen(BAD_JSON["kvlist 300 deep"][0], "#", 300), "400")


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_bad_values_are_400_or_a_span_rejection_never_5xx(
    collector: Collector, store: Store, case: str
) -> None:
    body, expected = BAD_JSON[case]
    assert _reply(collector, json_body([tool_span(size=7)]))[:2] == (200, 0)
    status, rejected, message = _reply(collector, body)
    if expected == "400":
        assert status == 400
    else:
        assert (status, rejected) == (200, 1), (status, message)
        assert expected in message, message
    # still serving, earlier data intact
    assert _reply(collector, json_body([tool_span(size=8)]))[:2] == (200, 0)
    assert len(rows(store)) == 2
    assert 500 not in collector.stats.refused and 503 not in collector.stats.refused


def test_bad_values_over_protobuf_are_span_rejections(collector: Collector, store: Store) -> None:
    specs = [
        SpanSpec(call(input_bytes=1, **{ATTR_ARGUMENTS_SIZE: "\u00b2"})),
        SpanSpec(call(input_bytes=1, **{ATTR_SESSION_POSITION: "\u00b3"})),
        SpanSpec(call(input_bytes=1), start_ns=2**64 - 1, end_ns=2**64 - 1),  # year 2554: kept
        SpanSpec(call(input_bytes=5)),
    ]
    reply = post(collector.url, pb_request(specs))
    rejected, message = decode_success(PB, reply.body)
    assert (reply.status, rejected) == (200, 2), message
    assert "must be an integer, got the string '²'" in message
    assert len(rows(store)) == 2


def test_a_value_set_to_null_is_a_value_not_set(collector: Collector, store: Store) -> None:
    """proto3 JSON: ``{"intValue": null}`` is an AnyValue with nothing set. It was stored as
    input_bytes 0 (and said present), while a null string, bool or double failed the whole
    request with 400."""
    spans = [
        tool_span(size={"intValue": None}),
        tool_span(extra=[kv("note", {"stringValue": None}), kv("flag", {"boolValue": None})]),
        tool_span(extra=[kv("ratio", {"doubleValue": None})]),
    ]
    assert _reply(collector, json_body(spans))[:2] == (200, 0)
    stored = sorted(rows(store), key=lambda r: r["input_bytes"] is not None)
    assert [r["input_bytes"] for r in stored] == [None, 10, 10]
    assert "input_bytes" not in stored[0]["fields_present"].split(",")


def test_a_malformed_int_value_is_not_echoed_into_the_400_or_the_log(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    """A content attribute (``gen_ai.tool.call.arguments``) sent as a non-decimal
    ``intValue`` fails the request, as it should; the 400 body and the WARNING line quoted the
    whole value (5 KiB of a tool's arguments here). Now an attribute's value is described, not
    quoted, and a malformed intrinsic field (a kind of 5,000 characters) is quoted to 40."""
    caplog.set_level(logging.INFO)
    secret = "CANARY-ARGS " + "z" * 5000
    span = tool_span(extra=[kv("gen_ai.tool.call.arguments", {"intValue": secret})])
    reply = post(collector.url, json_body([span]), JS)
    assert reply.status == 400
    message = json.loads(reply.body)["message"]
    assert message == (
        "malformed OTLP/JSON: resourceSpans[0].scopeSpans[0].spans[0].attributes[3].value"
        ".intValue must be an integer, got a string of 5,012 characters"
    )
    kind = {**tool_span(), "kind": "CANARY-KIND " + "k" * 5000}
    reply = post(collector.url, json_body([kind]), JS)
    message = json.loads(reply.body)["message"]
    assert reply.status == 400 and message.endswith(
        "kind must be an integer, got 'CANARY-KIND kkkkkkkkkkkkkkkkkkkkkkkkkkk"
    )
    assert "CANARY-ARGS" not in caplog.text and "kkkk" * 20 not in caplog.text
    assert "must be an integer" in caplog.text  # the refusals were logged, without the values


# --------------------------------------------------------------------------- isolation


def test_poisoned_requests_never_affect_other_clients(collector: Collector, store: Store) -> None:
    """Four clients send 50 valid requests each while a fifth sends poison (year 10000,
    10^30, "²", deep nesting): 0 valid requests affected."""
    poisons = [BAD_JSON[c][0] for c in ("year 10000", "start 10^30", "size as superscript two")]
    poisons.append(BAD_JSON["1,000 brackets"][0])
    stop = threading.Event()
    valid_results: list[tuple[int, int]] = []
    poison_statuses: list[int] = []
    lock = threading.Lock()

    def poisoner() -> None:
        i = 0
        while not stop.is_set():
            status = post(collector.url, poisons[i % len(poisons)], JS).status
            with lock:
                poison_statuses.append(status)
            i += 1

    def client(n: int) -> None:
        for i in range(50):
            body = json_body([tool_span(size=i), tool_span(size=n)])
            status, rejected, _ = _reply(collector, body)
            with lock:
                valid_results.append((status, rejected))

    bad = threading.Thread(target=poisoner)
    bad.start()
    workers = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    bad.join()
    assert len(valid_results) == 200 and set(valid_results) == {(200, 0)}
    assert poison_statuses and set(poison_statuses) <= {200, 400}
    assert len(rows(store)) == 400


# --------------------------------------------------------------------------- the event loop


def _health_latencies(collector: Collector, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=30)
        began = time.perf_counter()
        conn.request("GET", "/health")
        conn.getresponse().read()
        out.append(time.perf_counter() - began)
        conn.close()
        time.sleep(0.02)


def test_decoding_never_blocks_health(collector: Collector, store: Store) -> None:
    """4 MiB of empty gzip members (quadratic before), then an 8 MiB OTLP/JSON request: /health
    is answered within 1 s throughout."""
    members = gzip.compress(b"") * ((4 << 20) // 20)
    spans = [tool_span(size=i) for i in range(16_000)]
    big = json_body(spans)
    assert len(big) > 4 << 20
    latencies: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_health_latencies, args=(collector, stop, latencies))
    watcher.start()
    try:
        began = time.perf_counter()
        reply = post(collector.url, members, PB, headers={"Content-Encoding": "gzip"})
        assert reply.status == 400 and b"members" in reply.body
        assert time.perf_counter() - began < 5
        status, rejected, _ = _reply(collector, big)
        assert (status, rejected) == (200, 0)
    finally:
        stop.set()
        watcher.join()
    assert len(latencies) >= 3 and max(latencies) < 1.0, max(latencies)
    assert len(rows(store, "SELECT span_id FROM calls")) == 16_000


def test_keep_alive_responses_are_not_held_by_nagle(collector: Collector) -> None:
    """The listening socket is TCP for asyncio, so TCP_NODELAY is set: 40 keep-alive requests
    take milliseconds each, not the ~40 ms of a delayed ACK."""
    conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=10)
    began = time.perf_counter()
    for _ in range(40):
        conn.request("GET", "/health")
        conn.getresponse().read()
    elapsed = time.perf_counter() - began
    conn.close()
    assert elapsed < 1.0, f"40 keep-alive requests took {elapsed:.2f} s"


# --------------------------------------------------------------------------- retries, clients


def test_a_retried_export_is_stored_once_even_across_a_restart(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    body = pb_request([SpanSpec(call(seq=i)) for i in range(30)])
    with Collector(store, compact_interval=None) as first:
        assert post(first.url, body).status == 200
        assert post(first.url, body).status == 200  # the exporter's retry after a timeout
        assert (first.stats.stored_spans, first.stats.duplicate_spans) == (30, 30)
    with Collector(store, compact_interval=None) as second:  # primed from the store's files
        reply = post(second.url, body)
        assert reply.status == 200 and decode_success(PB, reply.body) == (0, "")
        assert second.stats.duplicate_spans == 30
    assert len(rows(store)) == 30


def test_a_client_that_leaves_is_counted_without_a_traceback(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", collector.port)) as sock:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"resourceSpans": ['
            )
    deadline = time.monotonic() + 10
    while collector.stats.client_disconnects < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert collector.stats.client_disconnects == 3
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text
    assert post(collector.url, pb_request([SpanSpec(call())])).status == 200


def test_memory_is_bounded_in_bytes_with_503_and_retry_after(tmp_path: Path) -> None:
    """Requests unpacking to big spans fill the byte budget while the disk is held: the next
    one gets 503 + Retry-After (and is kept by no one); once the disk is back all is written."""
    store = GatedStore(tmp_path / "store")
    fat = {"big": "x" * (2 << 20)}  # 2 MiB in an attribute toolwatch does not read
    with Collector(store, queue_bytes=12 << 20, compact_interval=None) as collector:
        store.gate.clear()  # hold the writer
        replies: list[int] = []

        def send(i: int) -> None:
            body = pb_request([SpanSpec(call(seq=i, **fat))])
            replies.append(post(collector.url, body, gzip_body=True).status)

        first = threading.Thread(target=send, args=(0,))
        first.start()
        assert store.waiting.wait(10)
        others = [threading.Thread(target=send, args=(i,)) for i in range(1, 6)]
        for t in others:
            t.start()
        deadline = time.monotonic() + 10
        while len(replies) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        held = collector.stats.queue_bytes
        store.gate.set()
        first.join()
        for t in others:
            t.join()
        assert held <= (12 << 20) + (8 << 20)  # one request may go past the budget
        assert replies.count(503) >= 3 and 200 in replies
        assert collector.stats.refused.get(503, 0) == replies.count(503)
        assert collector.stats.unavailable_by == {"queue_bytes": replies.count(503)}
    assert len(rows(store)) == replies.count(200)
