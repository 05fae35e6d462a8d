"""Helpers for the collector tests: call records, OTLP requests built with the protobuf classes
(and OTLP/JSON by hand), a tiny HTTP client, and a store whose writes can be held (to fill the
queue). Support code, not collected (``tests/support`` is on the path, not a test folder).
"""

from __future__ import annotations

import gzip
import http.client
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from toolwatch.collector.otlp.decode import key_value
from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_MCP_METHOD,
    ATTR_MCP_SERVER,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_RESULT_SIZE,
    ATTR_SERVICE_NAME,
    ATTR_SESSION_POSITION,
    ATTR_TOOL_CALL_ID,
    ATTR_TOOL_NAME,
    METHOD_TOOLS_CALL,
    OPERATION_EXECUTE_TOOL,
)
from toolwatch.record import CallRecord

PB = "application/x-protobuf"
JS = "application/json"
T0 = 1_786_000_000_000_000_000  # 2026-08-06, in ns
_ids = itertools.count(1)


@dataclass
class SpanSpec:
    """One span to send: attributes plus the span's own fields."""

    attributes: dict[str, Any]
    start_ns: int = T0
    end_ns: int | None = None
    status: int = 0
    trace_id: bytes = b""
    span_id: bytes = b""
    name: str = ""
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    kind: int = Span.SPAN_KIND_CLIENT

    def __post_init__(self) -> None:
        n = next(_ids)
        self.trace_id = self.trace_id or n.to_bytes(16, "big")
        self.span_id = self.span_id or (n + 0x1000).to_bytes(8, "big")
        if self.end_ns is None:
            self.end_ns = self.start_ns + 2_500_000  # 2.5 ms
        if not self.name:
            tool = self.attributes.get(ATTR_TOOL_NAME, "x")
            self.name = f"{METHOD_TOOLS_CALL} {tool}"


def call(
    tool: str = "Read",
    session: str = "s1",
    input_bytes: int = 10,
    output_bytes: int | None = 20,
    seq: int = 0,
    response: str | None = "msg_1",
    **extra: Any,
) -> dict[str, Any]:
    """The attributes of a toolwatch tool-call span, as the instrumentation sends them."""
    attrs: dict[str, Any] = {
        ATTR_MCP_METHOD: METHOD_TOOLS_CALL,
        ATTR_OPERATION: OPERATION_EXECUTE_TOOL,
        ATTR_TOOL_NAME: tool,
        ATTR_CONVERSATION_ID: session,
        ATTR_ARGUMENTS_SIZE: input_bytes,
        ATTR_SESSION_POSITION: seq,
        ATTR_MCP_SERVER: "fs",
        ATTR_TOOL_CALL_ID: f"toolu_{seq}",
    }
    if output_bytes is not None:
        attrs[ATTR_RESULT_SIZE] = output_bytes
    if response is not None:
        attrs[ATTR_RESPONSE_ID] = response
    attrs.update(extra)
    return attrs


def pb_span(spec: SpanSpec) -> Span:
    span = Span(
        trace_id=spec.trace_id,
        span_id=spec.span_id,
        name=spec.name,
        kind=spec.kind,  # type: ignore[arg-type]
        start_time_unix_nano=spec.start_ns,
        end_time_unix_nano=spec.end_ns or 0,
        attributes=[key_value(k, v) for k, v in spec.attributes.items()],
        status=Status(code=spec.status),  # type: ignore[arg-type]
    )
    for name, time_ns, attrs in spec.events:
        span.events.add(
            name=name,
            time_unix_nano=time_ns,
            attributes=[key_value(k, v) for k, v in attrs.items()],
        )
    return span


Scopes = Sequence[tuple[str, Sequence[SpanSpec]]]


def pb_request(
    spans: Sequence[SpanSpec] = (),
    *,
    scope: str = "toolwatch",
    service: str | None = "agent",
    groups: Sequence[tuple[Mapping[str, Any], Scopes]] | None = None,
    resource: Mapping[str, Any] | None = None,
) -> bytes:
    """A serialized ExportTraceServiceRequest: one resource (``service`` plus ``resource``'s
    attributes) and scope, or explicit ``groups``."""
    if groups is None:
        attrs = {ATTR_SERVICE_NAME: service} if service is not None else {}
        groups = [({**attrs, **(resource or {})}, [(scope, spans)])]
    request = ExportTraceServiceRequest()
    for resource_attrs, scopes in groups:
        rs = ResourceSpans(
            resource=Resource(attributes=[key_value(k, v) for k, v in resource_attrs.items()])
        )
        for scope_name, specs in scopes:
            rs.scope_spans.append(
                ScopeSpans(
                    scope=InstrumentationScope(name=scope_name),
                    spans=[pb_span(s) for s in specs],
                )
            )
        request.resource_spans.append(rs)
    return request.SerializeToString()


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 as a string, as OTLP/JSON encoders do
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_json_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _json_attrs(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _json_value(v)} for k, v in attrs.items()]


def json_request(
    spans: Iterable[SpanSpec],
    *,
    scope: str = "toolwatch",
    service: str | None = "agent",
    resource: Mapping[str, Any] | None = None,
) -> bytes:
    """OTLP/JSON built by hand: hex ids, lowerCamelCase keys, 64-bit integers as strings."""
    attrs = {ATTR_SERVICE_NAME: service} if service is not None else {}
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": _json_attrs({**attrs, **(resource or {})})},
                "scopeSpans": [
                    {
                        "scope": {"name": scope},
                        "spans": [
                            {
                                "traceId": s.trace_id.hex(),
                                "spanId": s.span_id.hex(),
                                "name": s.name,
                                "kind": s.kind,
                                "startTimeUnixNano": str(s.start_ns),
                                "endTimeUnixNano": str(s.end_ns),
                                "attributes": _json_attrs(s.attributes),
                                "status": {"code": s.status},
                                "events": [
                                    {
                                        "name": name,
                                        "timeUnixNano": str(t),
                                        "attributes": _json_attrs(a),
                                    }
                                    for name, t, a in s.events
                                ],
                            }
                            for s in spans
                        ],
                    }
                ],
            }
        ]
    }
    return json.dumps(doc).encode()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def post(
    url: str,
    body: bytes,
    content_type: str = PB,
    *,
    gzip_body: bool = False,
    headers: Mapping[str, str] | None = None,
    path: str = "/v1/traces",
) -> Reply:
    """One POST on a fresh connection (http.client: no retries, no magic)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    hdrs = {"Content-Type": content_type, **(headers or {})}
    if gzip_body:
        body = gzip.compress(body)
        hdrs["Content-Encoding"] = "gzip"
    try:
        conn.request("POST", path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


class GatedStore(Store):
    """A real store whose appends wait at a gate (to hold the writer, e.g. to fill the queue)."""

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def append(self, table_name: str, rows: Any, **kwargs: Any) -> Any:
        self.waiting.set()
        self.gate.wait(60)
        return super().append(table_name, rows, **kwargs)


def scrape_metrics(port: int, token: str | None = None) -> tuple[int, str]:
    """``GET /metrics`` of a collector on ``port``: its status and Prometheus text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", "/metrics", headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def rows(store: Store, sql: str = "SELECT * FROM calls ORDER BY start_time, span_id") -> list[dict]:
    return store.query(sql).to_pylist()


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def record(i: int, day: int = 1, source: str = "simulated") -> CallRecord:
    """Call record number ``i`` of session ``s1`` on 2026-08-``day`` (call 2 failed); its ids
    are valid span ids (never all zero), so it can be replayed as OTLP too."""
    return CallRecord(
        trace_id=f"{i + 1:032x}",
        span_id=f"{i + 1:016x}",
        session_id="s1",
        agent_id=None,
        seq=i,
        tool="Read",
        server=None,
        start_time=datetime(2026, 8, day, 12, tzinfo=UTC) + timedelta(seconds=i),
        duration_us=1000,
        input_bytes=100 + i,
        output_bytes=200,
        failed=i == 2,
        error_type="tool_error" if i == 2 else None,
        response_id=f"msg_{i // 2}",
        call_id=f"toolu_{i}",
        source=source,
    )


def bare_call(session_id: str, start_time: datetime, **fields: Any) -> dict[str, Any]:
    """A calls row with only what ``Store.append`` requires (fresh random ids, tool ``t``, no
    failure, source ``otlp``) plus ``fields``: for tests of the store itself, not of scoring."""
    return {
        "trace_id": uuid.uuid4().hex,
        "span_id": uuid.uuid4().hex[:16],
        "session_id": session_id,
        "tool": "t",
        "start_time": start_time,
        "failed": False,
        "source": "otlp",
        "restamped": False,
        "output_truncated": False,
        **fields,
    }


def wait_until(predicate: Callable[[], object], timeout: float = 20.0) -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds (what a
    test waits for from a collector thread or process)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s"
        time.sleep(0.02)
