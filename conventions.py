"""Semantic conventions: every span attribute, event, span name and metadata key toolwatch uses.

The names follow the OpenTelemetry GenAI / MCP semantic conventions where one exists and use the
``toolwatch.*`` namespace otherwise. They are written out here rather than imported from
``opentelemetry.semconv._incubating`` because those constants are deprecated and move between
releases. Kept apart from the code that emits or reads them (the instrumentation, the replay,
the collector's mapping), so that no other module spells an attribute name.

Only the standard library is imported here: the production install (instrumentation) and every
extra use it.
"""

from __future__ import annotations

from typing import Final, Literal

# --------------------------------------------------------------------------------------------
# Span attribute names (semantic conventions first, toolwatch namespace for the rest)
# --------------------------------------------------------------------------------------------

ATTR_MCP_METHOD: Final = "mcp.method.name"
ATTR_MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
ATTR_OPERATION: Final = "gen_ai.operation.name"
ATTR_TOOL_NAME: Final = "gen_ai.tool.name"
ATTR_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
ATTR_CONVERSATION_ID: Final = "gen_ai.conversation.id"
#: The general OTel session attribute (span or resource): where OpenInference and the
#: browser/mobile SDKs put the conversation; the record's session key when a span has no
#: :data:`ATTR_CONVERSATION_ID`.
ATTR_SESSION_ID: Final = "session.id"
#: The MCP session (Streamable HTTP only; a stdio session has none): the MCP conventions'
#: client span carries it, never a conversation id. Per MCP connection, so the last fallback.
ATTR_MCP_SESSION_ID: Final = "mcp.session.id"
ATTR_RESPONSE_ID: Final = "gen_ai.response.id"
ATTR_ERROR_TYPE: Final = "error.type"
#: The JSON-RPC error code of a failed MCP request, as the MCP conventions record it beside
#: ``error.type`` (which they say SHOULD be the same code as a string); the older JSON-RPC
#: conventions' integer spelling too. The failure class of a span that sets only a code.
ATTR_RPC_STATUS_CODE: Final = "rpc.response.status_code"
ATTR_JSONRPC_ERROR_CODE: Final = "rpc.jsonrpc.error_code"
ATTR_JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
ATTR_NETWORK_TRANSPORT: Final = "network.transport"
ATTR_SERVICE_NAME: Final = "service.name"  # resource attribute
#: Resource attributes naming the sending *process*: the session key of last resort for a tool
#: span with no session at all (an MCP client over stdio has no MCP session id). The OTel
#: Python SDK sets a random UUID per process; Node's ``processDetector``/``hostDetector`` give
#: the pid and the host, which together name one live process.
ATTR_SERVICE_INSTANCE_ID: Final = "service.instance.id"
ATTR_PROCESS_PID: Final = "process.pid"
ATTR_HOST_NAME: Final = "host.name"

ATTR_ARGUMENTS_SIZE: Final = "toolwatch.tool.call.arguments.size"
ATTR_RESULT_SIZE: Final = "toolwatch.tool.call.result.size"
ATTR_MCP_SERVER: Final = "toolwatch.mcp.server.name"
ATTR_AGENT_ID: Final = "toolwatch.agent.id"
ATTR_SESSION_POSITION: Final = "toolwatch.session.position"
ATTR_SOURCE: Final = "toolwatch.source"
ATTR_LABEL: Final = "toolwatch.label"
ATTR_RESTAMPED: Final = "toolwatch.timing.restamped"
ATTR_RESULT_TRUNCATED: Final = "toolwatch.tool.call.result.truncated"
#: A client artefact the call's stream is known to be (set by importers; a closed set of names,
#: :data:`CLIENT_QUIRKS`), never free text.
ATTR_CLIENT_QUIRK: Final = "toolwatch.client.quirk"
#: ``true`` on a replayed span whose record has no duration: an OTLP span always has an end
#: time, so the replay sends end = start with this marker and the collector maps the span
#: back to a null ``duration_us`` (live spans never carry it).
ATTR_DURATION_UNKNOWN: Final = "toolwatch.tool.call.duration.unknown"

# Argument provenance (instrumentation/provenance): numbers and closed-set names only; the
# fingerprints, hashes and bytes they are computed from never leave the agent's process.
ATTR_EGRESS: Final = "toolwatch.provenance.egress"
ATTR_REUSED_LONGEST: Final = "toolwatch.provenance.reused.longest"
ATTR_REUSED_TOTAL: Final = "toolwatch.provenance.reused.total"
ATTR_PAYLOAD_LONGEST: Final = "toolwatch.provenance.payload.longest"
ATTR_PAYLOAD_TOTAL: Final = "toolwatch.provenance.payload.total"
ATTR_REUSED_SOURCE_TOOL: Final = "toolwatch.provenance.source_tool"
ATTR_REUSED_ENCODING: Final = "toolwatch.provenance.encoding"
ATTR_DEST_SEEN: Final = "toolwatch.provenance.destination"
ATTR_UNCHECKED_BYTES: Final = "toolwatch.provenance.unchecked"

#: Egress classes: does the call send data off the machine, and how (decided locally from the
#: tool and its arguments). ``script``: the only network use is interpreter code (``python -c``
#: with a network library), a refinement of ``shell`` with its own normal range.
EGRESS_NONE: Final = "none"
EGRESS_CLASSES: Final[tuple[str, ...]] = ("none", "web", "browser", "http", "shell", "script")
#: How the longest reused run was written in the arguments (``none``: nothing reused).
ENCODING_NONE: Final = "none"
ENCODINGS: Final[tuple[str, ...]] = (
    "none",
    "verbatim",
    "json",
    "html",
    "url",
    "form",
    "base64",
    "base64url",
    "hex",
    "url+base64",
    "url+base64url",
    "url+hex",
)
#: Where the host a call connects to was seen in earlier results: in a local tool's result,
#: only in remote (web/browser) results, not at all, or no host in what the call sends.
DEST_SEEN_VALUES: Final[tuple[str, ...]] = ("local", "remote", "unseen", "none")

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
#: A call that ran out of time: the SDK's read timeout, or a deadline of the agent's around it
#: (``anyio.fail_after``, ``asyncio.wait_for``) that cancelled it.
ERROR_TYPE_TIMEOUT: Final = "timeout"
#: A call the agent cancelled before its answer, other than by a deadline (an anyio cancel
#: scope cancelled, ``asyncio`` task cancellation): one class whatever the event loop calls
#: its cancellation exception.
ERROR_TYPE_CANCELLED: Final = "cancelled"
#: A call whose connection to its server closed before the answer (the server process died or
#: was killed, the pipe broke, the HTTP stream ended): the MCP SDK's own error or its transport
#: ending the call, apart from a server's JSON-RPC error of the same code (-32000, which
#: servers also use for errors of their own).
ERROR_TYPE_CONNECTION_CLOSED: Final = "connection_closed"
#: An imported call whose result was written but cut off (a transcript truncated mid-line), or
#: never written though its stream went on to another model response: not a success, and no
#: failure the tool reported either; ``failed`` is set so that it is never counted as a normal
#: success.
ERROR_TYPE_NO_RESULT: Final = "no_result"

#: A span is a toolwatch tool-call span when it carries this marker attribute with this value.
#: The MCP SDK's own spans carry ``gen_ai.operation.name`` too, but never the size attributes,
#: so the collector keys on the presence of :data:`ATTR_ARGUMENTS_SIZE`.
TOOL_CALL_MARKER: Final = ATTR_ARGUMENTS_SIZE

#: Client quirks an importer recognises (structure, not content; see ``docs/ARCHITECTURE.md``):
#: a Claude Code warm-up subagent (answered "Warmup" at start-up; its calls all fail) and the
#: forks Claude Code writes as ``agent-a<label>-<hex>``, each the main thread's calls repeated
#: under another agent id, then a task of its own: a compaction fork (``acompact``: to summarise
#: them), an aside-question fork (``aside_question``: a side question asked while the main
#: thread works), a prompt-suggestion fork (``aprompt_suggestion``: the next prompt to offer
#: the user) and a session-memory fork (``asession_memory``, ``asession_memory_manual``: notes
#: on the session written to a file).
QUIRK_WARMUP_AGENT: Final = "warmup_agent"
QUIRK_COMPACTION_FORK: Final = "compaction_fork"
QUIRK_ASIDE_QUESTION_FORK: Final = "aside_question_fork"
QUIRK_PROMPT_SUGGESTION_FORK: Final = "prompt_suggestion_fork"
QUIRK_SESSION_MEMORY_FORK: Final = "session_memory_fork"
CLIENT_QUIRKS: Final[tuple[str, ...]] = (
    QUIRK_WARMUP_AGENT,
    QUIRK_COMPACTION_FORK,
    QUIRK_ASIDE_QUESTION_FORK,
    QUIRK_PROMPT_SUGGESTION_FORK,
    QUIRK_SESSION_MEMORY_FORK,
)

Source = Literal["otlp", "import", "simulated"]
SOURCES: Final[tuple[str, ...]] = ("otlp", "import", "simulated")


def span_name(tool: str) -> str:
    """Span name of a tool call, per the MCP semantic conventions."""
    return f"{METHOD_TOOLS_CALL} {tool}"
