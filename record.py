"""The call record: the one row schema every toolwatch component shares.

A call record describes one tool call by its *shape* only (tool, time, byte sizes, outcome and
the model response that issued it), never by its content. :class:`CallRecord` is the single
declaration of its fields: each carries its Arrow type, whether it may be null, the span
attribute it maps to (:mod:`toolwatch.conventions`) and its meaning; :data:`CALL_FIELDS`, the
Arrow schema, the collector's mapping, the replay and the docs are all derived from it. The
byte basis (:func:`arguments_size`, :func:`result_size`) and the tool digest are here too, so
instrumentation, importers and simulators measure the same way.

Only the standard library is imported here so that the production install (instrumentation)
and every extra can use it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, get_args, get_type_hints

from toolwatch.conventions import (
    ATTR_AGENT_ID,
    ATTR_ARGUMENTS_SIZE,
    ATTR_CLIENT_QUIRK,
    ATTR_CONVERSATION_ID,
    ATTR_DEST_SEEN,
    ATTR_EGRESS,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_ERROR_CODE,
    ATTR_LABEL,
    ATTR_MCP_SERVER,
    ATTR_MCP_SESSION_ID,
    ATTR_PAYLOAD_LONGEST,
    ATTR_PAYLOAD_TOTAL,
    ATTR_PROCESS_PID,
    ATTR_RESPONSE_ID,
    ATTR_RESTAMPED,
    ATTR_RESULT_SIZE,
    ATTR_RESULT_TRUNCATED,
    ATTR_REUSED_ENCODING,
    ATTR_REUSED_LONGEST,
    ATTR_REUSED_SOURCE_TOOL,
    ATTR_REUSED_TOTAL,
    ATTR_RPC_STATUS_CODE,
    ATTR_SERVICE_INSTANCE_ID,
    ATTR_SERVICE_NAME,
    ATTR_SESSION_ID,
    ATTR_SESSION_POSITION,
    ATTR_SOURCE,
    ATTR_TOOL_CALL_ID,
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    ATTR_UNCHECKED_BYTES,
    CLIENT_QUIRKS,
)

# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------

#: Told to a sender whose tool span has no session key at all — no conversation, no session, no
#: MCP session (an MCP client over stdio has none) — and no process key on its resource either
#: (``service.instance.id``, or ``process.pid``: see the ``session_id`` column). With a process
#: key such a span is stored, its stream being the process; without one the sender must say
#: what its session is, and a process that is one session can say it without code.
STDIO_SESSION_HINT: Final = (
    f"a stdio MCP session has no id: set {ATTR_CONVERSATION_ID} on the span, or "
    f"{ATTR_SESSION_ID} on the span or its resource "
    f"(OTEL_RESOURCE_ATTRIBUTES={ATTR_SESSION_ID}=<a new id per session>, "
    "when one process is one session)"
)


@dataclass(frozen=True, slots=True)
class Field:
    """One stored column: its Arrow type name, span attribute (if any) and meaning.

    ``fallbacks``: attributes read, in order, when a span (and its resource) lacks
    ``attribute`` — other senders spell the same key differently; the record says which one
    was used (``fields_present``). ``missing``: what a sender whose span has none of them
    should set, told once in the rejection (so the fix is in the message, not in the docs).
    """

    name: str
    arrow: str  # "string" | "int64" | "int32" | "bool" | "timestamp" | "date" | "float64"
    nullable: bool
    attribute: str | None
    doc: str
    fallbacks: tuple[str, ...] = ()
    missing: str = ""


@dataclass(frozen=True, slots=True)
class Col:
    """A record field's column declaration, attached with ``Annotated`` (see :func:`columns_of`).

    The Arrow type follows the Python type (str → string, int → int64, bool → bool, datetime →
    timestamp) unless ``arrow`` says otherwise; ``X | None`` makes the column nullable.
    """

    doc: str
    attribute: str | None = None
    arrow: str | None = None
    fallbacks: tuple[str, ...] = ()
    missing: str = ""


_ARROW_OF: Final[dict[type, str]] = {
    str: "string",
    int: "int64",
    bool: "bool",
    datetime: "timestamp",
}


def columns_of(cls: type) -> tuple[Field, ...]:
    """The columns a record dataclass declares (its ``Annotated[..., Col(...)]`` fields)."""
    hints = get_type_hints(cls, include_extras=True)
    out = []
    for f in fields(cls):
        hint = hints[f.name]
        base, col = get_args(hint)
        types = [t for t in get_args(base) if t is not type(None)] or [base]
        nullable = type(None) in get_args(base)
        out.append(
            Field(
                f.name,
                col.arrow or _ARROW_OF[types[0]],
                nullable,
                col.attribute,
                col.doc,
                col.fallbacks,
                col.missing,
            )
        )
    return tuple(out)


@dataclass(slots=True)
class CallRecord:
    """One tool call: the row of the ``calls`` table, declared once (see the module docs)."""

    trace_id: Annotated[str, Col("32 hex digits; span's trace id (synthetic for imports)")]
    span_id: Annotated[str, Col("16 hex digits; unique per call")]
    session_id: Annotated[
        str,
        Col(
            "conversation / session key; with none, the client process "
            "(`process.pid` as `<pid>@<host.name>`)",
            ATTR_CONVERSATION_ID,
            # the conversation, the sender's session, one MCP connection, then the client
            # process (a stdio MCP client's only key: one process's calls, one stream)
            fallbacks=(
                ATTR_SESSION_ID,
                ATTR_MCP_SESSION_ID,
                ATTR_SERVICE_INSTANCE_ID,
                ATTR_PROCESS_PID,
            ),
            missing=STDIO_SESSION_HINT,
        ),
    ]
    agent_id: Annotated[str | None, Col("subagent id; null for the main agent", ATTR_AGENT_ID)]
    seq: Annotated[
        int | None, Col("0-based position in the session", ATTR_SESSION_POSITION, arrow="int32")
    ]
    tool: Annotated[str, Col("tool name as the model called it", ATTR_TOOL_NAME)]
    server: Annotated[str | None, Col("MCP server name; null for built-in tools", ATTR_MCP_SERVER)]
    start_time: Annotated[datetime, Col("call start, UTC, microseconds")]
    duration_us: Annotated[int | None, Col("call duration in microseconds")]
    input_bytes: Annotated[
        int | None,
        Col(
            "UTF-8 bytes of compact JSON args; null when the span had no size", ATTR_ARGUMENTS_SIZE
        ),
    ]
    output_bytes: Annotated[int | None, Col("UTF-8 bytes of the result content", ATTR_RESULT_SIZE)]
    failed: Annotated[bool, Col("the call failed (error.type set)")]
    error_type: Annotated[
        str | None,
        Col(
            "tool_error, timeout, no_result (imported: result lost), JSON-RPC code, ...",
            ATTR_ERROR_TYPE,
            # a sender that records only the JSON-RPC code: the class error.type would hold
            fallbacks=(ATTR_RPC_STATUS_CODE, ATTR_JSONRPC_ERROR_CODE),
        ),
    ]
    response_id: Annotated[str | None, Col("model response that issued the call", ATTR_RESPONSE_ID)]
    call_id: Annotated[str | None, Col("tool call id (e.g. toolu_...)", ATTR_TOOL_CALL_ID)]
    source: Annotated[str, Col("otlp | import | simulated", ATTR_SOURCE)]
    service: Annotated[str | None, Col("resource service.name", ATTR_SERVICE_NAME)] = None
    restamped: Annotated[bool, Col("time is a rewritten (resume) stamp", ATTR_RESTAMPED)] = False
    output_truncated: Annotated[
        bool, Col("output_bytes is a lower bound", ATTR_RESULT_TRUNCATED)
    ] = False
    label: Annotated[
        str | None, Col("ground truth for injected calls; null = normal", ATTR_LABEL)
    ] = None
    client_quirk: Annotated[
        str | None,
        Col(
            f"client artefact of the call's stream ({', '.join(CLIENT_QUIRKS)})",
            ATTR_CLIENT_QUIRK,
        ),
    ] = None
    # Argument provenance (toolwatch.instrumentation.provenance), measured where the content
    # is; null = not measured (older records, provenance off, or a live non-egress call).
    egress: Annotated[
        str | None,
        Col(
            "does the call send data off the machine: none, web, browser, http, shell, script",
            ATTR_EGRESS,
        ),
    ] = None
    reused_longest: Annotated[
        int | None,
        Col(
            "longest run of argument bytes that reproduces an earlier result of the stream "
            "(decoded bytes)",
            ATTR_REUSED_LONGEST,
        ),
    ] = None
    reused_total: Annotated[
        int | None,
        Col("argument bytes covered by such runs (a lower bound)", ATTR_REUSED_TOTAL),
    ] = None
    payload_longest: Annotated[
        int | None,
        Col(
            "longest reused run in what leaves the machine, from a local tool's result, "
            "outside copied links",
            ATTR_PAYLOAD_LONGEST,
        ),
    ] = None
    payload_total: Annotated[
        int | None, Col("bytes covered by such payload runs", ATTR_PAYLOAD_TOTAL)
    ] = None
    source_tool: Annotated[
        str | None,
        Col("tool whose earlier result holds the longest reused run", ATTR_REUSED_SOURCE_TOOL),
    ] = None
    reused_encoding: Annotated[
        str | None,
        Col(
            "how the longest run was written: verbatim, json, html, url, form, base64, "
            "base64url, hex, url+base64, url+base64url, url+hex; none = nothing reused",
            ATTR_REUSED_ENCODING,
        ),
    ] = None
    dest_seen: Annotated[
        str | None,
        Col(
            "where the destination host was seen in earlier results: local, remote, unseen; "
            "none = no host",
            ATTR_DEST_SEEN,
        ),
    ] = None
    unchecked_bytes: Annotated[
        int | None,
        Col("argument bytes over the per-call cap, not checked", ATTR_UNCHECKED_BYTES),
    ] = None
    fields_present: Annotated[
        str | None,
        Col(
            "record fields the span carried, comma-separated in record order (semconv-only "
            "spans lack sizes, position, ...); a field read from a fallback attribute is "
            "field:attribute (session_id:mcp.session.id); null for rows not received as spans"
        ),
    ] = None
    received_time: Annotated[
        datetime | None,
        Col(
            "when the collector stored the row, UTC: one value per write, rising (the order the "
            "live scorer saw the rows); null for rows not received as spans or stored before "
            "this column"
        ),
    ] = None

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class ToolListing:
    """One tool as announced by ``tools/list``: a digest, never the text."""

    trace_id: Annotated[str, Col("trace of the tools/list span")]
    span_id: Annotated[str, Col("the tools/list span")]
    session_id: Annotated[str | None, Col("conversation, if declared", ATTR_CONVERSATION_ID)]
    server: Annotated[str | None, Col("MCP server name", ATTR_MCP_SERVER)]
    tool: Annotated[str, Col("listed tool", ATTR_TOOL_NAME)]
    digest: Annotated[str, Col("sha256 of name+description+input schema", ATTR_TOOL_DIGEST)]
    listed_time: Annotated[datetime, Col("when the list was received, UTC")]
    service: Annotated[str | None, Col("resource service.name", ATTR_SERVICE_NAME)] = None


#: Longest string (UTF-8 bytes) a record field takes from a span attribute: the collector
#: rejects a span carrying a longer one (ids and names are short; a longer value is an error or
#: an attack, and would be stored in every row), so the instrumentation never sends one
#: (:func:`fit_string`).
MAX_STRING_BYTES: Final = 4096
#: How a string cut to :data:`MAX_STRING_BYTES` by :func:`fit_string` ends.
TRUNCATION_MARK: Final = "...[truncated]"
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def fit_string(value: str) -> str:
    """``value`` as a record's string field can hold it: valid UTF-8 — a lone surrogate becomes
    U+FFFD, as :func:`utf8_size` counts it (an OTLP exporter cannot encode it at all) — and at
    most :data:`MAX_STRING_BYTES` bytes: a longer value is cut at a character boundary and ends
    with :data:`TRUNCATION_MARK` (the result is exactly that long or a few bytes shorter)."""
    if value.isascii():  # O(1); then characters are bytes
        if len(value) <= MAX_STRING_BYTES:
            return value
        return value[: MAX_STRING_BYTES - len(TRUNCATION_MARK)] + TRUNCATION_MARK
    try:
        data = value.encode()
    except UnicodeEncodeError:
        value = _LONE_SURROGATE.sub("\ufffd", value)
        data = value.encode()
    if len(data) <= MAX_STRING_BYTES:
        return value
    # "ignore" drops only the character the cut split, at the very end
    head = data[: MAX_STRING_BYTES - len(TRUNCATION_MARK)].decode("utf-8", "ignore")
    return head + TRUNCATION_MARK


#: The call record's columns, derived from :class:`CallRecord`.
CALL_FIELDS: Final[tuple[Field, ...]] = columns_of(CallRecord)
#: The ``tool_lists`` columns, derived from :class:`ToolListing`.
TOOL_LIST_FIELDS: Final[tuple[Field, ...]] = columns_of(ToolListing)
CALL_FIELD_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in CALL_FIELDS)
#: The column the collector stamps on each write (:class:`CallRecord`'s ``received_time``).
RECEIVED: Final = "received_time"


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
# RecursionError, as a very deep one does; compact_json_size then asks json_size, which tells
# the two apart.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_COMPACT = (
    _c_make_encoder(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if _c_make_encoder is not None
    else None
)


def utf8_size(text: str) -> int:
    """UTF-8 bytes of ``text``; a lone surrogate (an escape cut from its pair, a file name
    decoded with ``surrogateescape``) counts as U+FFFD, 3 bytes, as a UTF-8 writer emits it."""
    try:
        return len(text.encode())
    except UnicodeEncodeError:  # "surrogatepass" writes any surrogate in 3 bytes, as U+FFFD
        return len(text.encode("utf-8", "surrogatepass"))


def compact_json_size(value: Any) -> int:
    """UTF-8 bytes (:func:`utf8_size`) of the compact JSON of ``value`` (``,``/``:``
    separators, non-ASCII kept), at any nesting depth: a value nested past the encoder's
    recursion limit is counted by :func:`json_size`, byte-identical. Raises for a value that is
    not JSON: a key that is not a string, a number, a bool or null (``TypeError``), a value
    containing itself (``ValueError``)."""
    try:
        if _C_COMPACT is not None:
            return utf8_size("".join(_C_COMPACT(value, 0)))
        return utf8_size(_COMPACT_JSON.encode(value))
    except RecursionError:  # deeper than the encoder goes, or a cycle (json_size says which)
        return json_size(value)


#: pushed above a container's id while its items are walked (see :func:`json_size`)
_LEAVE: Final = object()
_encode_string = json.encoder.encode_basestring  # quoted, escaped, non-ASCII kept


def json_size(value: Any) -> int:
    """What :func:`compact_json_size` counts, without recursion, so any nesting depth has a
    size (an agent's argument object, a transcript line nested 1,024 deep): the encoder's
    rules one value at a time — tuples as lists, keys of the five JSON-able types as strings,
    ints and floats by their own ``repr`` (NaN, Infinity), anything else as ``str(value)``.
    Raises ``TypeError`` for another key and ``ValueError`` for a value containing itself."""
    total = 0
    stack = [value]
    pop, push = stack.pop, stack.append
    path: set[int] = set()  # ids of the containers being walked: a cycle returns to one
    while stack:
        item = pop()
        if item is _LEAVE:
            path.discard(pop())
        elif item is None or item is True:
            total += 4
        elif item is False:
            total += 5
        elif isinstance(item, str):
            total += utf8_size(_encode_string(item))
        elif isinstance(item, int):
            total += len(int.__repr__(item))
        elif isinstance(item, float):
            total += len(_float_text(item))
        elif isinstance(item, list | tuple | dict):
            if not item:
                total += 2
                continue
            if id(item) in path:
                raise ValueError("Circular reference detected")
            path.add(id(item))
            push(id(item))
            push(_LEAVE)
            if isinstance(item, dict):
                total += 2 * len(item) + 1  # braces, a colon each, commas between
                for key, inner in item.items():
                    total += utf8_size(_encode_string(_key_text(key)))
                    push(inner)
            else:
                total += len(item) + 1  # brackets, commas between
                stack.extend(item)
        else:  # default=str, as the encoder
            push(str(item))
    return total


def _float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key_text(key: Any) -> str:
    """A dict key as the encoder writes it before quoting it."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float_text(key)
    if key is True or key is False or key is None:
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def arguments_size(arguments: Mapping[str, Any] | None) -> int:
    """Input bytes of a call: compact JSON of the arguments object; no arguments = 0.

    Raises as :func:`compact_json_size` does for arguments that are not JSON (a tuple key, a
    cycle): their size is unknown (the instrumentation then leaves it off the span, so
    ``input_bytes`` is null)."""
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
        return utf8_size(content)
    total = 0
    for block in content:
        text = getattr(block, "text", None) if getattr(block, "type", None) == "text" else None
        if isinstance(text, str):  # fast path for text block objects: same rule, no dump
            total += utf8_size(text)
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
    A lone surrogate (a server may send one as a JSON escape) is encoded in its three-byte
    form (``surrogatepass``), so it neither fails the listing nor collides with U+FFFD.
    """
    canonical = json.dumps(
        [name, description or "", dict(input_schema or {})],
        separators=(",", ":"),
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


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
        return utf8_size(str(block.get("text", "")))
    if kind in ("image", "audio"):
        return len(str(block.get("data", "")))
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return utf8_size(str(resource["text"]))
        return len(str(resource.get("blob", "")))
    if kind == "resource_link":
        return utf8_size(str(block.get("uri", "")))
    return compact_json_size(dict(block))
