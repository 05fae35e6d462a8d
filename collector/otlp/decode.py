"""OTLP/HTTP trace protocol: request decoding and response encoding, nothing toolwatch-specific.

Two encodings arrive on ``POST /v1/traces``:

* protobuf (``application/x-protobuf``), validated by parsing it as
  ``ExportTraceServiceRequest`` (the columnar fast path in :mod:`toolwatch.collector.otlp.wire`
  then reads the same bytes);
* OTLP/JSON (``application/json``), parsed here by hand: ids are hex strings and 64-bit
  integers may be JSON strings, which protobuf's ``json_format`` gets wrong (and slowly); a
  field may be named as in the proto (``start_time_unix_nano``), as proto3 JSON allows.

Both decode into :class:`SpanData`, the neutral form the reference mapping reads. Malformed
input raises :class:`OtlpError` carrying the HTTP status and a message naming the problem.

Work is bounded per input byte: gzip members are decompressed without copying the remaining
input (a body of thousands of empty members costs what its size costs, and at most
:data:`MAX_GZIP_MEMBERS` members are read), JSON is parsed by ``orjson`` (nesting deeper than
1,024 and lone surrogates are errors there) and ``AnyValue`` nesting deeper than
:data:`MAX_VALUE_DEPTH` is refused. Numbers are kept as decoded; ranges are the mapping's job,
so one span with an absurd time is rejected alone, not its whole request.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from toolwatch.collector.otlp import signals
from toolwatch.words import counted

PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
CONTENT_TYPES: Final = (PROTOBUF, JSON)
TRACES_PATH: Final = "/v1/traces"

#: opentelemetry.proto.trace.v1.Status.StatusCode, from the generated enum
STATUS_CODE_ERROR: Final = int(Status.STATUS_CODE_ERROR)
_STATUS_NAMES: Final = {name: int(v) for name, v in Status.StatusCode.items()}
#: opentelemetry.proto.trace.v1.Span.SpanKind, likewise
SPAN_KIND_UNSPECIFIED: Final = int(Span.SPAN_KIND_UNSPECIFIED)
SPAN_KIND_SERVER: Final = int(Span.SPAN_KIND_SERVER)
SPAN_KIND_CLIENT: Final = int(Span.SPAN_KIND_CLIENT)
SPAN_KIND_INTERNAL: Final = int(Span.SPAN_KIND_INTERNAL)
_KIND_NAMES: Final = {name: int(v) for name, v in Span.SpanKind.items()}
SPAN_KINDS: Final = frozenset(_KIND_NAMES.values())
#: gzip members read from one body (senders write one; each costs a decompressor)
MAX_GZIP_MEMBERS: Final = 64
#: arrayValue/kvlistValue nesting accepted in OTLP/JSON attribute values
MAX_VALUE_DEPTH: Final = 32
#: at most this much of a malformed field's value is quoted in a 400 (never an attribute's)
QUOTE_CHARS: Final = 40
#: OTLP/JSON fields whose proto name differs from the JSON name: proto3 JSON parsers accept
#: both (``resource_spans`` for ``resourceSpans``), and so does the OpenTelemetry Collector;
#: read as unknown fields, a snake_case request was a silent empty export
_PROTO_NAMES: Final = {
    camel: "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    for camel in (
        "resourceSpans",
        "scopeSpans",
        "traceId",
        "spanId",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "timeUnixNano",
        "stringValue",
        "boolValue",
        "intValue",
        "doubleValue",
        "arrayValue",
        "kvlistValue",
        "bytesValue",
    )
}
_JSON_NAMES: Final = {proto: camel for camel, proto in _PROTO_NAMES.items()}
_GZIP_STEP: Final = 256 * 1024  # compressed bytes fed to zlib at a time

# google.rpc.Code values used in error bodies
RPC_UNKNOWN: Final = 2
RPC_INVALID_ARGUMENT: Final = 3
RPC_DEADLINE_EXCEEDED: Final = 4
RPC_RESOURCE_EXHAUSTED: Final = 8
RPC_UNIMPLEMENTED: Final = 12
RPC_INTERNAL: Final = 13
RPC_UNAVAILABLE: Final = 14
RPC_UNAUTHENTICATED: Final = 16
#: the code in the ``google.rpc.Status`` body of each HTTP status the collector answers with
#: (a status missing here read as INVALID_ARGUMENT: a 408 or a 500 said "your data is bad")
RPC_CODE_BY_HTTP: Final = {
    400: RPC_INVALID_ARGUMENT,
    401: RPC_UNAUTHENTICATED,
    404: RPC_UNIMPLEMENTED,
    405: RPC_UNIMPLEMENTED,
    408: RPC_DEADLINE_EXCEEDED,
    413: RPC_RESOURCE_EXHAUSTED,
    415: RPC_INVALID_ARGUMENT,
    500: RPC_INTERNAL,
    503: RPC_UNAVAILABLE,
}


class OtlpError(Exception):
    """A request the collector refuses as a whole: ``status`` is the HTTP status to send;
    ``reason`` names, for a 503, which limit said "later" (the metrics count by it)."""

    def __init__(self, status: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


@dataclass(slots=True)
class EventData:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class SpanData:
    """One span, decoded from either encoding. Ids are lowercase hex ('' when absent)."""

    trace_id: str
    span_id: str
    start_ns: int
    end_ns: int
    status_code: int
    attributes: dict[str, Any]
    scope: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    events: list[EventData] = field(default_factory=list)
    kind: int = SPAN_KIND_UNSPECIFIED


# --------------------------------------------------------------------------- content negotiation


def media_type(content_type: str | None) -> str:
    """The bare, lower-case media type of a ``Content-Type`` header (parameters dropped)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """Decompress a gzip body, refusing (413) as soon as the output would exceed ``limit``.

    Output is produced in bounded steps, so a gzip bomb costs at most ``limit`` bytes of memory;
    input is fed in bounded slices of a memoryview, so no step copies the rest of the body.
    Concatenated gzip members are accepted, as the gzip format allows, up to
    :data:`MAX_GZIP_MEMBERS` (400 beyond: no sender writes more than one).
    """
    out = bytearray()
    view = memoryview(data)
    pos = 0
    members = 0
    while pos < len(view):
        members += 1
        if members > MAX_GZIP_MEMBERS:
            raise OtlpError(400, f"gzip body has more than {MAX_GZIP_MEMBERS} members")
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            while not d.eof:
                if pos >= len(view):
                    raise OtlpError(400, "body is not valid gzip: truncated stream")
                piece = view[pos : pos + _GZIP_STEP]
                chunk: bytes | memoryview = piece
                while chunk and not d.eof:
                    out += d.decompress(chunk, limit + 1 - len(out))
                    if len(out) > limit:
                        raise OtlpError(
                            413, f"decompressed body exceeds the limit of {counted(limit, 'byte')}"
                        )
                    chunk = d.unconsumed_tail  # at most one slice: never the whole body
                pos += len(piece) - len(d.unused_data if d.eof else chunk)
            out += d.flush(limit + 1 - len(out))
        except zlib.error as exc:
            raise OtlpError(400, f"body is not valid gzip: {exc}") from exc
        if len(out) > limit:
            raise OtlpError(413, f"decompressed body exceeds the limit of {counted(limit, 'byte')}")
    return bytes(out)


# --------------------------------------------------------------------------- protobuf


def parse_protobuf(body: bytes) -> ExportTraceServiceRequest:
    """Parse (and so validate) a protobuf ``ExportTraceServiceRequest``; 400 if malformed, or
    if it is a logs or metrics export (:mod:`~toolwatch.collector.otlp.signals`): those either
    failed the parse with a message naming no signal or were spans that are none, 200."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        other = signals.protobuf_signal(body)
        if other is not None:
            raise OtlpError(400, signals.protobuf_message(other)) from None
        raise OtlpError(400, f"malformed protobuf ExportTraceServiceRequest: {exc}") from exc
    if not signals.looks_like_spans(request):
        other = signals.protobuf_signal(body)
        if other is not None:
            raise OtlpError(400, signals.protobuf_message(other))
    return request


def any_value(value: AnyValue) -> Any:
    """Python value of an ``AnyValue`` (None when unset)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def attributes_dict(attributes: Any) -> dict[str, Any]:
    """``repeated KeyValue`` as a dict; a repeated key keeps its last value."""
    return {kv.key: any_value(kv.value) for kv in attributes}


def span_data(span: Span, scope: str, resource: dict[str, Any]) -> SpanData:
    return SpanData(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=span.status.code,
        attributes=attributes_dict(span.attributes),
        scope=scope,
        resource=resource,
        events=[
            EventData(e.name, e.time_unix_nano, attributes_dict(e.attributes)) for e in span.events
        ],
        kind=span.kind,
    )


def iter_protobuf_spans(request: ExportTraceServiceRequest) -> Iterator[SpanData]:
    """Every span of a parsed request, in order (the reference path; slow but simple)."""
    for rs in request.resource_spans:
        resource = attributes_dict(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield span_data(span, ss.scope.name, resource)


def count_protobuf_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


# --------------------------------------------------------------------------- OTLP/JSON


class _JsonShapeError(ValueError):
    pass


def decode_json(body: bytes) -> list[SpanData]:
    """Parse an OTLP/JSON ``ExportTraceServiceRequest`` by hand; 400 if malformed."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # also: nesting past 1,024, lone surrogates
        raise OtlpError(400, f"malformed JSON: {exc}") from exc
    if isinstance(doc, dict) and _get(doc, "resourceSpans") is None:
        other = next((key for key in signals.JSON_KEYS if key in doc), None)
        if other is not None:  # read as unknown fields it was a silent empty export
            raise OtlpError(400, f"{other} is not a trace export: {signals.ADVICE}")
    try:
        return list(_json_spans(doc))
    except _JsonShapeError as exc:
        raise OtlpError(400, f"malformed OTLP/JSON: {exc}") from exc


def _get(obj: dict[str, Any], name: str) -> Any:
    """Field ``name`` of a JSON object, by its JSON name or else its proto name."""
    value = obj.get(name)
    return obj.get(_PROTO_NAMES[name]) if value is None else value


def _obj(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _JsonShapeError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _arr(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _JsonShapeError(f"{where} must be an array, got {type(value).__name__}")
    return value


def _json_int(value: Any, where: str, *, quote: bool = True) -> int:
    """A (u)int64 in OTLP/JSON: a number or a decimal string.

    A refusal quotes at most :data:`QUOTE_CHARS` of the value, and none of it when ``quote``
    is false (an attribute's value: it may be a tool's arguments or result, which must never
    reach the 400 body or the log).
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise _JsonShapeError(f"{where} must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    # ASCII digits only: int() would also take "١٢", "1_2" and " 12 "
    if isinstance(value, str) and value.isascii() and value.removeprefix("-").isdecimal():
        return int(value, 10)
    got = repr(value)[:QUOTE_CHARS] if quote else _json_shape(value)
    raise _JsonShapeError(f"{where} must be an integer, got {got}")


def _json_shape(value: Any) -> str:
    """What a JSON value is, without any of its text."""
    if isinstance(value, str):
        return f"a string of {counted(len(value), 'character')}"
    if isinstance(value, float):
        return "a number with a fraction"
    return "an array" if isinstance(value, list) else "an object"


def _json_id(value: Any, where: str) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise _JsonShapeError(f"{where} must be a hex string")
    try:
        return bytes.fromhex(value).hex()
    except ValueError as exc:
        raise _JsonShapeError(f"{where} is not hex: {value[:40]!r}") from exc


def _json_status(value: Any, where: str) -> int:
    code = _obj(value, where).get("code", 0)
    if isinstance(code, str) and code in _STATUS_NAMES:
        return _STATUS_NAMES[code]
    return _json_int(code, where + ".code")


def _json_any(value: Any, where: str, depth: int = 0) -> Any:
    # a field set to null is a field not set (proto3 JSON): {"intValue": null} is no value
    value = {_JSON_NAMES.get(k, k): v for k, v in _obj(value, where).items() if v is not None}
    if not value:
        return None
    if "stringValue" in value:
        s = value["stringValue"]
        if not isinstance(s, str):
            raise _JsonShapeError(f"{where}.stringValue must be a string")
        return s
    if "boolValue" in value:
        b = value["boolValue"]
        if not isinstance(b, bool):
            raise _JsonShapeError(f"{where}.boolValue must be a boolean")
        return b
    if "intValue" in value:
        return _json_int(value["intValue"], where + ".intValue", quote=False)
    if "doubleValue" in value:
        d = value["doubleValue"]
        if isinstance(d, str) and d in ("NaN", "Infinity", "-Infinity"):
            return float(d)
        if isinstance(d, bool) or not isinstance(d, int | float):
            raise _JsonShapeError(f"{where}.doubleValue must be a number")
        return float(d)
    if "arrayValue" in value or "kvlistValue" in value:
        if depth >= MAX_VALUE_DEPTH:
            raise _JsonShapeError(f"{where} is nested deeper than {MAX_VALUE_DEPTH} levels")
        if "arrayValue" in value:
            items = _arr(
                _obj(value["arrayValue"], where).get("values"), where + ".arrayValue.values"
            )
            return [
                _json_any(v, f"{where}.arrayValue.values[{i}]", depth + 1)
                for i, v in enumerate(items)
            ]
        return _json_attributes(
            _obj(value["kvlistValue"], where).get("values"),
            where + ".kvlistValue.values",
            depth + 1,
        )
    if "bytesValue" in value:
        try:
            return base64.b64decode(value["bytesValue"], validate=True)
        except (binascii.Error, TypeError, ValueError) as exc:  # ValueError: not ASCII
            raise _JsonShapeError(f"{where}.bytesValue is not base64") from exc
    return None  # unknown field names are ignored, as OTLP/JSON requires


def _json_attributes(value: Any, where: str, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, kv in enumerate(_arr(value, where)):
        kv = _obj(kv, f"{where}[{i}]")
        key = kv.get("key", "")
        if not isinstance(key, str):
            raise _JsonShapeError(f"{where}[{i}].key must be a string")
        out[key] = _json_any(kv.get("value"), f"{where}[{i}].value", depth)
    return out


def _json_kind(value: Any, where: str) -> int:
    if isinstance(value, str) and value in _KIND_NAMES:
        return _KIND_NAMES[value]
    return _json_int(value, where)


def _json_spans(doc: Any) -> Iterator[SpanData]:
    root = _obj(doc, "request")
    for r, rs in enumerate(_arr(_get(root, "resourceSpans"), "resourceSpans")):
        rw = f"resourceSpans[{r}]"
        rs = _obj(rs, rw)
        resource_obj = _obj(rs.get("resource"), rw + ".resource")
        resource = _json_attributes(resource_obj.get("attributes"), rw + ".resource.attributes")
        for s, ss in enumerate(_arr(_get(rs, "scopeSpans"), rw + ".scopeSpans")):
            sw = f"{rw}.scopeSpans[{s}]"
            ss = _obj(ss, sw)
            scope = _obj(ss.get("scope"), sw + ".scope").get("name") or ""
            if not isinstance(scope, str):
                raise _JsonShapeError(f"{sw}.scope.name must be a string")
            for i, sp in enumerate(_arr(ss.get("spans"), sw + ".spans")):
                w = f"{sw}.spans[{i}]"
                sp = _obj(sp, w)
                events = []
                for j, ev in enumerate(_arr(sp.get("events"), w + ".events")):
                    ew = f"{w}.events[{j}]"
                    ev = _obj(ev, ew)
                    name = ev.get("name") or ""
                    if not isinstance(name, str):
                        raise _JsonShapeError(f"{ew}.name must be a string")
                    events.append(
                        EventData(
                            name,
                            _json_int(_get(ev, "timeUnixNano"), ew + ".timeUnixNano"),
                            _json_attributes(ev.get("attributes"), ew + ".attributes"),
                        )
                    )
                yield SpanData(
                    trace_id=_json_id(_get(sp, "traceId"), w + ".traceId"),
                    span_id=_json_id(_get(sp, "spanId"), w + ".spanId"),
                    start_ns=_json_int(_get(sp, "startTimeUnixNano"), w + ".startTimeUnixNano"),
                    end_ns=_json_int(_get(sp, "endTimeUnixNano"), w + ".endTimeUnixNano"),
                    status_code=_json_status(sp.get("status"), w + ".status"),
                    attributes=_json_attributes(sp.get("attributes"), w + ".attributes"),
                    scope=scope,
                    resource=resource,
                    events=events,
                    kind=_json_kind(sp.get("kind"), w + ".kind"),
                )


# --------------------------------------------------------------------------- responses


def success_body(content_type: str, rejected: int = 0, message: str = "") -> bytes:
    """An ``ExportTraceServiceResponse``; ``partial_success`` only when spans were rejected."""
    if content_type == PROTOBUF:
        response = ExportTraceServiceResponse()
        if rejected or message:
            response.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
            )
        return response.SerializeToString()
    doc: dict[str, Any] = {}
    if rejected or message:
        # int64 fields are strings in OTLP/JSON
        doc["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
    return json.dumps(doc).encode()


def status_body(content_type: str, http_status: int, message: str) -> bytes:
    """A ``google.rpc.Status`` error body in the request's encoding."""
    code = RPC_CODE_BY_HTTP.get(http_status, RPC_UNKNOWN)
    if content_type == PROTOBUF:
        return status_pb2.Status(code=code, message=message).SerializeToString()
    return json.dumps({"code": code, "message": message}).encode()


def decode_success(content_type: str, body: bytes) -> tuple[int, str]:
    """(rejected_spans, error_message) of a success response (for clients and tests)."""
    if media_type(content_type) == PROTOBUF:
        response = ExportTraceServiceResponse()
        response.ParseFromString(body)
        ps = response.partial_success
        return ps.rejected_spans, ps.error_message
    doc = json.loads(body or b"{}").get("partialSuccess") or {}
    return int(doc.get("rejectedSpans", 0)), str(doc.get("errorMessage", ""))


def decode_status(content_type: str, body: bytes) -> tuple[int, str]:
    """(rpc code, message) of an error response (for clients and tests)."""
    if media_type(content_type) == PROTOBUF:
        status = status_pb2.Status()
        status.ParseFromString(body)
        return status.code, status.message
    doc = json.loads(body)
    return int(doc.get("code", 0)), str(doc.get("message", ""))


def key_value(key: str, value: Any) -> KeyValue:
    """A protobuf ``KeyValue`` from a Python value (used to build requests in tests/benchmarks)."""
    return KeyValue(key=key, value=to_any_value(value))


def to_any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(to_any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(key_value(k, v) for k, v in value.items())
        return out
    if value is None:
        return AnyValue()
    raise TypeError(f"no AnyValue for {type(value).__name__}")
