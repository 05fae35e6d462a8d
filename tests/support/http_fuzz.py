"""Property-based HTTP fuzzing of a live collector (hypothesis): the strategies and the run.

Each example is one ``POST /v1/traces`` on a keep-alive connection: OTLP/JSON documents of a
valid shape with hostile values (huge or negative integers, numbers as strings in any script,
lone surrogates, deep nesting, odd kinds), "mostly valid" tool spans (toolwatch's and semantic
conventions') with one hostile field, protobuf requests built the same way, random bytes, and
gzip of any of them. The contract checked: no 5xx except 503 with ``Retry-After``, the server
alive afterwards, and data stored before the run intact.

Used by ``tests/collector/otlp/test_fuzz.py`` (a bounded run in CI) and
``benchmarks/fuzz_http.py`` (the full 10,000 requests).
"""

from __future__ import annotations

import collections
import gzip
import http.client
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_ERROR_TYPE,
    ATTR_MCP_METHOD,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_RESULT_SIZE,
    ATTR_SESSION_POSITION,
    ATTR_SOURCE,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
)

NOW_NS = 1_786_000_000_000_000_000

ints = st.one_of(
    st.integers(-(2**70), 2**110),
    st.sampled_from([0, 1, -1, 2**31, 2**63 - 1, 2**63, 2**64, 10**30, 253402300800000000000]),
)
num_like = st.one_of(
    ints,
    ints.map(str),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["\u00b2", "\u00b3", "\u0661\u0662", " 7 ", "0x10", "", "1e3", "-0"]),
)
text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["\ud800", "\udfff", "", "x" * 5000, "tools/call", "execute_tool"]),
)
leaf = st.one_of(
    st.builds(lambda s: {"stringValue": s}, text),
    st.builds(lambda i: {"intValue": i}, num_like),
    st.builds(lambda d: {"doubleValue": d}, st.one_of(st.floats(), st.just("NaN"), text)),
    st.builds(lambda b: {"boolValue": b}, st.one_of(st.booleans(), st.integers(0, 1), text)),
    st.builds(lambda b: {"bytesValue": b}, st.one_of(st.just("AAEC"), text)),
    st.just({}),
)
any_value = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(kids, max_size=3)),
        st.builds(
            lambda v: {"kvlistValue": {"values": [{"key": "k", "value": x} for x in v]}},
            st.lists(kids, max_size=3),
        ),
    ),
    max_leaves=8,
)
KEYS = [
    ATTR_CONVERSATION_ID,
    ATTR_TOOL_NAME,
    ATTR_ARGUMENTS_SIZE,
    ATTR_RESULT_SIZE,
    ATTR_SESSION_POSITION,
    ATTR_ERROR_TYPE,
    ATTR_RESPONSE_ID,
    ATTR_SOURCE,
    ATTR_OPERATION,
    ATTR_MCP_METHOD,
    "service.name",
    "other",
]
attrs = st.lists(
    st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(KEYS), any_value), max_size=8
)
hexid = st.one_of(st.just(None), st.binary(min_size=0, max_size=17).map(bytes.hex), text)
kind = st.one_of(st.integers(-2, 7), st.sampled_from(["SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"]))
event = st.fixed_dictionaries(
    {"name": st.sampled_from([EVENT_TOOL_LISTED, "exception", ""]), "attributes": attrs},
    optional={"timeUnixNano": num_like},
)
span = st.fixed_dictionaries(
    {
        "traceId": hexid,
        "spanId": hexid,
        "name": text,
        "startTimeUnixNano": num_like,
        "endTimeUnixNano": num_like,
        "attributes": attrs,
    },
    optional={
        "kind": kind,
        "status": st.fixed_dictionaries({"code": num_like}),
        "events": st.lists(event, max_size=2),
    },
)
ok_time = st.integers(NOW_NS - 10**15, NOW_NS + 10**15).map(str)
marker = st.one_of(
    st.just({"intValue": 1}),
    st.builds(lambda v: {"intValue": v}, num_like),
    st.builds(lambda v: {"stringValue": str(v)}, num_like),
)
toolwatch_attrs = st.builds(
    lambda sess, tool, size, more: [
        {"key": ATTR_CONVERSATION_ID, "value": {"stringValue": sess}},
        {"key": ATTR_TOOL_NAME, "value": {"stringValue": tool}},
        {"key": ATTR_ARGUMENTS_SIZE, "value": size},
        *more,
    ],
    st.one_of(st.just("s"), text),
    st.one_of(st.just("t"), text),
    marker,
    attrs,
)
semconv_attrs = st.builds(
    lambda sess, tool, more: [
        {"key": ATTR_OPERATION, "value": {"stringValue": "execute_tool"}},
        {"key": ATTR_CONVERSATION_ID, "value": sess},
        {"key": ATTR_TOOL_NAME, "value": tool},
        *more,
    ],
    st.one_of(st.just({"stringValue": "s"}), any_value),
    st.one_of(st.just({"stringValue": "t"}), any_value),
    attrs,
)
good_span = st.fixed_dictionaries(
    {
        "traceId": st.binary(min_size=16, max_size=16).map(bytes.hex),
        "spanId": st.binary(min_size=8, max_size=8).map(bytes.hex),
        "startTimeUnixNano": st.one_of(ok_time, num_like),
        "endTimeUnixNano": st.one_of(ok_time, num_like),
        "attributes": st.one_of(toolwatch_attrs, semconv_attrs),
    },
    optional={"kind": kind, "events": st.lists(event, max_size=2)},
)
doc = st.builds(
    lambda spans, res, scope: {
        "resourceSpans": [
            {
                "resource": {"attributes": res},
                "scopeSpans": [{"scope": {"name": scope}, "spans": spans}],
            }
        ]
    },
    st.lists(st.one_of(good_span, good_span, span), max_size=4),
    attrs,
    st.sampled_from(["fuzz", "mcp-python-sdk", "toolwatch.instrumentation", ""]),
)


def _json(d: dict[str, Any]) -> bytes:
    return json.dumps(d).encode("utf-8", "surrogatepass")


def _pb_value(target: Any, value: dict[str, Any]) -> None:
    """Set a protobuf AnyValue from a JSON-shaped one, skipping what protobuf cannot hold."""
    kind_, v = next(iter(value.items()), (None, None))
    try:
        if kind_ == "stringValue" and isinstance(v, str):
            target.string_value = v
        elif kind_ == "intValue" and isinstance(v, int) and not isinstance(v, bool):
            target.int_value = v
        elif kind_ == "intValue" and isinstance(v, str):
            target.string_value = v  # a number as a string, as some senders do
        elif kind_ == "boolValue" and isinstance(v, bool):
            target.bool_value = v
        elif kind_ == "doubleValue" and isinstance(v, float):
            target.double_value = v
        elif kind_ == "arrayValue":
            for x in v.get("values", []):
                _pb_value(target.array_value.values.add(), x)
        elif kind_ == "kvlistValue":
            for kv in v.get("values", []):
                item = target.kvlist_value.values.add()
                item.key = kv["key"]
                _pb_value(item.value, kv["value"])
    except (ValueError, TypeError, UnicodeError):
        pass  # out of range for protobuf: the JSON variant carries it


def _int(v: Any, lo: int, hi: int) -> int:
    try:
        n = int(v) if not isinstance(v, str) else int(v, 10)
    except (ValueError, TypeError, OverflowError):
        return 0
    return n if lo <= n <= hi else 0


def _protobuf(d: dict[str, Any]) -> bytes:
    """The same document as an ExportTraceServiceRequest (values protobuf cannot hold dropped)."""
    request = ExportTraceServiceRequest()
    for rs_doc in d["resourceSpans"]:
        rs = request.resource_spans.add()
        for kv in rs_doc["resource"]["attributes"]:
            item = rs.resource.attributes.add()
            item.key = kv["key"]
            _pb_value(item.value, kv["value"])
        for ss_doc in rs_doc["scopeSpans"]:
            ss = rs.scope_spans.add()
            ss.scope.name = ss_doc["scope"]["name"]
            for sp_doc in ss_doc["spans"]:
                sp = ss.spans.add()
                for name, width in (("traceId", 16), ("spanId", 8)):
                    raw = sp_doc.get(name)
                    try:
                        value = bytes.fromhex(raw) if isinstance(raw, str) else b""
                    except ValueError:
                        value = raw.encode("utf-8", "surrogatepass")[:width] if raw else b""
                    setattr(sp, "trace_id" if name == "traceId" else "span_id", value)
                sp.start_time_unix_nano = _int(sp_doc.get("startTimeUnixNano"), 0, 2**64 - 1)
                sp.end_time_unix_nano = _int(sp_doc.get("endTimeUnixNano"), 0, 2**64 - 1)
                sp.kind = _int(sp_doc.get("kind"), -(2**31), 2**31 - 1)  # type: ignore[assignment]
                for kv in sp_doc["attributes"]:
                    item = sp.attributes.add()
                    item.key = kv["key"]
                    _pb_value(item.value, kv["value"])
                for ev in sp_doc.get("events", []):
                    e = sp.events.add()
                    e.name = ev["name"]
                    for kv in ev["attributes"]:
                        item = e.attributes.add()
                        item.key = kv["key"]
                        _pb_value(item.value, kv["value"])
    return request.SerializeToString()


def _safe_protobuf(d: dict[str, Any]) -> bytes:
    try:
        return _protobuf(d)
    except (ValueError, TypeError, UnicodeError):
        return b"\x0a\x00"


PB, JS = "application/x-protobuf", "application/json"
body = st.one_of(
    doc.map(lambda d: (JS, _json(d), False)),
    doc.map(lambda d: (JS, gzip.compress(_json(d)), True)),
    doc.map(lambda d: (PB, _safe_protobuf(d), False)),
    doc.map(lambda d: (PB, gzip.compress(_safe_protobuf(d)), True)),
    st.binary(max_size=300).map(lambda b: (PB, b, False)),
    st.binary(max_size=300).map(lambda b: (JS, b, False)),
    st.binary(max_size=300).map(lambda b: (PB, b, True)),
)


@dataclass
class FuzzResult:
    examples: int = 0
    seconds: float = 0.0
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    bad: list[tuple[int, bytes]] = field(default_factory=list)  # 5xx other than 503+Retry-After
    unanswered: int = 0


class _Client:
    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, ctype: str, data: bytes, gz: bool) -> tuple[int, str | None]:
        headers = {"Content-Type": ctype}
        if gz:
            headers["Content-Encoding"] = "gzip"
        for _ in range(3):
            try:
                self.conn.request("POST", "/v1/traces", body=data, headers=headers)
                response = self.conn.getresponse()
                response.read()
                return response.status, response.getheader("Retry-After")
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                time.sleep(0.05)
        return -1, None


def run_fuzz(port: int, examples: int, *, seed: int = 14) -> FuzzResult:
    """Send ``examples`` hypothesis-generated requests to the collector on ``port``."""
    result = FuzzResult()
    client = _Client(port)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(body)
    def fuzz(case: tuple[str, bytes, bool]) -> None:
        status, retry_after = client.post(*case)
        result.statuses[status] += 1
        if status == -1:
            result.unanswered += 1
        elif status >= 500 and not (status == 503 and retry_after):
            result.bad.append((status, case[1][:300]))

    random.seed(seed)
    began = time.perf_counter()
    fuzz()
    result.seconds = time.perf_counter() - began
    result.examples = sum(result.statuses.values())
    client.conn.close()
    return result


__all__ = ["FuzzResult", "run_fuzz"]
