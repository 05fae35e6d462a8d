"""A real OTLP/HTTP receiver on loopback for tests: keeps every request body as received.

It answers ``POST /v1/traces`` with 200 and an empty protobuf ``ExportTraceServiceResponse``,
stores the raw (possibly gzipped) body, and decodes it on demand with the official protobuf
classes, so a test can assert both on the exact bytes sent and on the spans they carry.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes  # decompressed

    def request(self) -> ExportTraceServiceRequest:
        message = ExportTraceServiceRequest()
        message.ParseFromString(self.body)
        return message


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class OTLPSink:
    """``with OTLPSink() as sink:`` → ``sink.url``; ``sink.spans()`` decoded, ``sink.raw()``."""

    def __init__(self, refuse_after: int | None = None, reject_each: int = 0) -> None:
        """``refuse_after``: answer 400 to every request after that many accepted ones;
        ``reject_each``: answer each request 200 with that many spans rejected
        (``partial_success``), as a collector does for spans it cannot store."""
        self.received: list[Received] = []
        self.refused = 0
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding", "") == "gzip":
                    body = gzip.decompress(body)
                if refuse_after is not None and len(sink.received) >= refuse_after:
                    sink.refused += 1
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with sink._lock:
                    sink.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                response = ExportTraceServiceResponse()
                if reject_each:
                    response.partial_success.rejected_spans = reject_each
                    response.partial_success.error_message = "rejected by the test sink"
                reply = response.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OTLPSink:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def raw(self) -> bytes:
        with self._lock:
            return b"".join(r.body for r in self.received)

    def spans(self) -> list[dict[str, Any]]:
        """Every received span as a dict: name, kind, ids, times, status, attributes, events."""
        out: list[dict[str, Any]] = []
        with self._lock:
            received = list(self.received)
        for r in received:
            for rs in r.request().resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(
                            {
                                "name": s.name,
                                "kind": s.kind,
                                "scope": ss.scope.name,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "start_ns": s.start_time_unix_nano,
                                "end_ns": s.end_time_unix_nano,
                                "status": s.status.code,
                                "status_message": s.status.message,
                                "attributes": {a.key: _value(a.value) for a in s.attributes},
                                "events": [
                                    (e.name, {a.key: _value(a.value) for a in e.attributes})
                                    for e in s.events
                                ],
                                "resource": resource,
                            }
                        )
        return out

    def wait_for(self, n_spans: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans()
            if len(spans) >= n_spans or time.monotonic() > deadline:
                return spans
            time.sleep(0.05)
