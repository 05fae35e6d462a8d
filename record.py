"""The call record: the one row schema every toolwatch component shares.

A call record describes one tool call by its *shape* only (tool, time, byte sizes, outcome and
the model response that issued it), never by its content. This module is the single place that
names the fields, their Arrow types and the span attributes they map to; every other module
imports from here instead of spelling a field or attribute name again.

The attribute names follow the OpenTelemetry GenAI / MCP semantic conventions where one exists
and use the ``toolwatch.*`` namespace otherwise. The strings are written out here rather than
imported from ``opentelemetry.semconv._incubating`` because those constants are deprecated and
move between releases.

Only the standard library is imported here so that the production install (instrumentation)
and every extra can use it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

# --------------------------------------------------------------------------------------------
# Span attribute names (semantic conventions first, toolwatch namespace for the rest)
# --------------------------------------------------------------------------------------------

ATTR_MCP_METHOD: Final = "mcp.method.name"
ATTR_MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
ATTR_OPERATION: Final = "gen_ai.operation.name"
ATTR_TOOL_NAME: Final = "gen_ai.tool.name"
ATTR_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
ATTR_CONVERSATION_ID: Final = "gen_ai.conversation.id"
ATTR_RESPONSE_ID: Final = "gen_ai.response.id"
ATTR_ERROR_TYPE: Final = "error.type"
ATTR_JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
ATTR_NETWORK_TRANSPORT: Final = "network.transport"
ATTR_SERVICE_NAME: Final = "service.name"  # resource attribute

ATTR_ARGUMENTS_SIZE: Final = "toolwatch.tool.call.arguments.size"
ATTR_RESULT_SIZE: Final = "toolwatch.tool.call.result.size"
ATTR_MCP_SERVER: Final = "toolwatch.mcp.server.name"
ATTR_AGENT_ID: Final = "toolwatch.agent.id"
ATTR_SESSION_POSITION: Final = "toolwatch.session.position"
ATTR_SOURCE: Final = "toolwatch.source"
ATTR_LABEL: Final = "toolwatch.label"
ATTR_RESTAMPED: Final = "toolwatch.timing.restamped"
ATTR_RESULT_TRUNCATED: Final = "toolwatch.tool.call.result.truncated"
#: ``true`` on a replayed span whose record has no duration: an OTLP span always has an end
#: time, so the replay sends end = start with this marker and the collector maps the span
#: back to a null ``duration_us`` (live spans never carry it).
ATTR_DURATION_UNKNOWN: Final = "toolwatch.tool.call.duration.unknown"

# tools/list digests (one span event per tool, never the description text)
EVENT_TOOL_LISTED: Final = "toolwatch.tool.listed"
ATTR_TOOL_DIGEST: Final = "toolwatch.tool.digest"
SPAN_NAME_TOOLS_LIST: Final = "tools/list"

#: ``_meta`` key of a CallToolResult carrying a ground-truth label (set by the fault proxy on
#: injected responses; structural metadata, copied by the instrumentation to :data:`ATTR_LABEL`).
LABEL_META_KEY: Final = "toolwatch/label"
#: Server→client notification the fault proxy sends, on the request's own stream, before it
#: holds a call (A1): the client may time out before the labelled result arrives, so the label
#: is announced up front. Its ``_meta`` holds :data:`LABEL_META_KEY`, the JSON-RPC id of the
#: call (:data:`REQUEST_META_KEY`) and the tool name (:data:`TOOL_META_KEY`); nothing else.
INJECTION_NOTIFICATION: Final = "notifications/toolwatch/injection"
REQUEST_META_KEY: Final = "toolwatch/request"
TOOL_META_KEY: Final = "toolwatch/tool"

OPERATION_EXECUTE_TOOL: Final = "execute_tool"
METHOD_TOOLS_CALL: Final = "tools/call"
METHOD_TOOLS_LIST: Final = "tools/list"
ERROR_TYPE_TOOL_ERROR: Final = "tool_error"
ERROR_TYPE_TIMEOUT: Final = "timeout"

#: A span is a toolwatch tool-call span when it carries this marker attribute with this value.
#: The MCP SDK's own spans carry ``gen_ai.operation.name`` too, but never the size attributes,
#: so the collector keys on the presence of :data:`ATTR_ARGUMENTS_SIZE`.
TOOL_CALL_MARKER: Final = ATTR_ARGUMENTS_SIZE

Source = Literal["otlp", "import", "simulated"]
SOURCES: Final[tuple[str, ...]] = ("otlp", "import", "simulated")


def span_name(tool: str) -> str:
    """Span name of a tool call, per the MCP semantic conventions."""
    return f"{METHOD_TOOLS_CALL} {tool}"


# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """One column of the call record: its Arrow type name, span attribute and meaning."""

    name: str
    arrow: str  # "string" | "int64" | "int32" | "bool" | "timestamp" | "date"
    nullable: bool
    attribute: str | None
    doc: str


CALL_FIELDS: Final[tuple[Field, ...]] = (
    Field(
        "trace_id", "string", False, None, "32 hex digits; span's trace id (synthetic for imports)"
    ),
    Field("span_id", "string", False, None, "16 hex digits; unique per call"),
    Field("session_id", "string", False, ATTR_CONVERSATION_ID, "conversation / session key"),
    Field("agent_id", "string", True, ATTR_AGENT_ID, "subagent id; null for the main agent"),
    Field("seq", "int32", True, ATTR_SESSION_POSITION, "0-based position in the session"),
    Field("tool", "string", False, ATTR_TOOL_NAME, "tool name as the model called it"),
    Field("server", "string", True, ATTR_MCP_SERVER, "MCP server name; null for built-in tools"),
    Field("start_time", "timestamp", False, None, "call start, UTC, microseconds"),
    Field("duration_us", "int64", True, None, "call duration in microseconds"),
    Field("input_bytes", "int64", False, ATTR_ARGUMENTS_SIZE, "UTF-8 bytes of compact JSON args"),
    Field("output_bytes", "int64", True, ATTR_RESULT_SIZE, "UTF-8 bytes of the result content"),
    Field("failed", "bool", False, None, "the call failed (error.type set)"),
    Field("error_type", "string", True, ATTR_ERROR_TYPE, "tool_error, timeout, JSON-RPC code, ..."),
    Field("response_id", "string", True, ATTR_RESPONSE_ID, "model response that issued the call"),
    Field("call_id", "string", True, ATTR_TOOL_CALL_ID, "tool call id (e.g. toolu_...)"),
    Field("source", "string", False, ATTR_SOURCE, "otlp | import | simulated"),
    Field("service", "string", True, ATTR_SERVICE_NAME, "resource service.name"),
    Field("restamped", "bool", False, ATTR_RESTAMPED, "time is a rewritten (resume) stamp"),
    Field(
        "output_truncated", "bool", False, ATTR_RESULT_TRUNCATED, "output_bytes is a lower bound"
    ),
    Field("label", "string", True, ATTR_LABEL, "ground truth for injected calls; null = normal"),
)

TOOL_LIST_FIELDS: Final[tuple[Field, ...]] = (
    Field("trace_id", "string", False, None, "trace of the tools/list span"),
    Field("span_id", "string", False, None, "the tools/list span"),
    Field("session_id", "string", True, ATTR_CONVERSATION_ID, "conversation, if declared"),
    Field("server", "string", True, ATTR_MCP_SERVER, "MCP server name"),
    Field("tool", "string", False, ATTR_TOOL_NAME, "listed tool"),
    Field("digest", "string", False, ATTR_TOOL_DIGEST, "sha256 of name+description+input schema"),
    Field("listed_time", "timestamp", False, None, "when the list was received, UTC"),
    Field("service", "string", True, ATTR_SERVICE_NAME, "resource service.name"),
)

CALL_FIELD_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in CALL_FIELDS)


@dataclass(slots=True)
class CallRecord:
    """One tool call. Field order and names mirror :data:`CALL_FIELDS` (checked by a test)."""

    trace_id: str
    span_id: str
    session_id: str
    agent_id: str | None
    seq: int | None
    tool: str
    server: str | None
    start_time: datetime
    duration_us: int | None
    input_bytes: int
    output_bytes: int | None
    failed: bool
    error_type: str | None
    response_id: str | None
    call_id: str | None
    source: str
    service: str | None = None
    restamped: bool = False
    output_truncated: bool = False
    label: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class ToolListing:
    """One tool as announced by ``tools/list``: a digest, never the text."""

    trace_id: str
    span_id: str
    session_id: str | None
    server: str | None
    tool: str
    digest: str
    listed_time: datetime
    service: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in TOOL_LIST_FIELDS}


def split_mcp_name(name: str) -> tuple[str | None, str]:
    """Split a Claude-Code style ``mcp__<server>__<tool>`` name into (server, tool).

    Only the first two ``__`` separate parts: server and tool names may contain ``-`` and
    single ``_``. Names without the prefix are built-in tools: ``(None, name)``.
    """
    if name.startswith("mcp__"):
        rest = name[len("mcp__") :]
        server, sep, tool = rest.partition("__")
        if sep and server and tool:
            return server, tool
    return None, name


EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def utc_from_ns(ns: int) -> datetime:
    """UTC datetime (µs precision) from nanoseconds since the epoch."""
    return EPOCH + timedelta(microseconds=ns // 1000)


# --------------------------------------------------------------------------------------------
# The byte basis: one definition for instrumentation, importers and simulators alike
# --------------------------------------------------------------------------------------------


# Same output as json.dumps with these options; one shared instance saves building it per call.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
# The C encoder that instance builds on every encode(), built once (argument order as in
# JSONEncoder.iterencode): building it cost more than encoding a tool call's arguments. It skips
# the circular-reference check (markers=None), so a value containing itself raises
# RecursionError rather than ValueError; JSON arguments never do.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_COMPACT = (
    _c_make_encoder(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if _c_make_encoder is not None
    else None
)


def compact_json_size(value: Any) -> int:
    """UTF-8 bytes of the compact JSON of ``value`` (``,``/``:`` separators, non-ASCII kept)."""
    if _C_COMPACT is not None:
        return len("".join(_C_COMPACT(value, 0)).encode())
    return len(_COMPACT_JSON.encode(value).encode())


def arguments_size(arguments: Mapping[str, Any] | None) -> int:
    """Input bytes of a call: compact JSON of the arguments object; no arguments = 0."""
    return 0 if arguments is None else compact_json_size(arguments)


def result_size(content: str | Sequence[Any] | None, structured: Any = None) -> int:
    """Output bytes of a call, computed without keeping the content.

    * a string: its UTF-8 bytes;
    * a list of blocks (dicts, or objects with ``model_dump``): the sum over blocks of
      text → UTF-8 bytes of ``text``; image/audio → length of the base64 ``data`` as sent;
      embedded resource → its ``text`` bytes or ``blob`` length; resource link → ``uri`` bytes;
      any other block → compact JSON bytes of the block;
    * when the block list is empty, the compact JSON bytes of ``structured`` (if any).
    """
    if content is None:
        return 0 if structured is None else compact_json_size(structured)
    if isinstance(content, str):
        return len(content.encode())
    total = 0
    for block in content:
        text = getattr(block, "text", None) if getattr(block, "type", None) == "text" else None
        if isinstance(text, str):  # fast path for text block objects: same rule, no dump
            total += len(text.encode())
        else:
            total += _block_size(_as_mapping(block))
    if total == 0 and not content and structured is not None:
        return compact_json_size(structured)
    return total


def tool_digest(name: str, description: str | None, input_schema: Mapping[str, Any] | None) -> str:
    """Digest of a tool as the model sees it (``tools/list``), so a changed tool is visible.

    sha256 (hex) of the UTF-8 compact canonical JSON (sorted keys, ``,``/``:`` separators,
    non-ASCII kept) of the array ``[name, description or "", input_schema or {}]``. The array
    keeps the parts unambiguous; sorted keys make it independent of the schema's key order.
    """
    canonical = json.dumps(
        [name, description or "", dict(input_schema or {})],
        separators=(",", ":"),
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _as_mapping(block: Any) -> Mapping[str, Any]:
    if isinstance(block, Mapping):
        return block
    dump = getattr(block, "model_dump", None)
    if dump is not None:
        return dict(dump(mode="json", by_alias=True, exclude_none=True))
    return {"type": "unknown", "value": str(block)}


def _block_size(block: Mapping[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return len(str(block.get("text", "")).encode())
    if kind in ("image", "audio"):
        return len(str(block.get("data", "")))
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return len(str(resource["text"]).encode())
        return len(str(resource.get("blob", "")))
    if kind == "resource_link":
        return len(str(block.get("uri", "")).encode())
    return compact_json_size(dict(block))
