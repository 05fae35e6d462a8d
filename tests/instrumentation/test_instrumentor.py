"""Instrumentation: real mcp clients and servers (in memory and over stdio), real SDK spans.

Expected sizes are computed here from the known arguments and results (compact JSON of the
arguments; UTF-8 bytes of text blocks; base64 length of images; compact JSON of structured
content when there are no blocks), not through ``toolwatch.record``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
import uuid
from importlib.metadata import entry_points
from typing import Annotated, Any

import anyio
import mcp.shared.jsonrpc_dispatcher as jsonrpc_dispatcher
import pytest
import wrapt
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession as SessionClass
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.types import (
    CallToolResult,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from support.mcp_test_server import SERVER_NAME, build_server
from support.paths import MCP_TEST_SERVER
from toolwatch.conventions import (
    ATTR_AGENT_ID,
    ATTR_ARGUMENTS_SIZE,
    ATTR_CONVERSATION_ID,
    ATTR_EGRESS,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_LABEL,
    ATTR_MCP_METHOD,
    ATTR_MCP_PROTOCOL_VERSION,
    ATTR_MCP_SERVER,
    ATTR_NETWORK_TRANSPORT,
    ATTR_OPERATION,
    ATTR_RESPONSE_ID,
    ATTR_RESULT_SIZE,
    ATTR_SESSION_POSITION,
    ATTR_SOURCE,
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
)
from toolwatch.instrumentation import (
    ToolwatchMCPInstrumentor,
    conversation,
    describe_session,
    error_type_of,
    instrument,
    model_response,
    uninstrument,
)
from toolwatch.instrumentation.client.context import process_conversation_id
from toolwatch.record import arguments_size, compact_json_size, result_size, tool_digest

SERVER_SCRIPT = MCP_TEST_SERVER
TEXT = "héllo wörld ✓"  # multi-byte: bytes ≠ characters
TIMEOUT_S = 0.3
PICTURE_N = 100


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def text_bytes(result: CallToolResult) -> int:
    return sum(len(block.text.encode()) for block in result.content)  # type: ignore[union-attr]


# (tool, arguments, expected error.type, expected result size or a marker)
PLAN: list[tuple[str, dict[str, Any], str | None, Any]] = [
    ("echo", {"text": TEXT}, None, len(TEXT.encode())),
    ("fail", {"reason": "disk full"}, "tool_error", len(b"failed: disk full")),
    ("crash", {"note": "boom"}, "tool_error", "from-result"),
    ("reject", {"value": "nope"}, "-32602", None),
    ("slow", {"seconds": 3.0, "text": "late"}, "timeout", None),
    (
        "picture",
        {"n": PICTURE_N},
        None,
        len(base64.b64encode(bytes(i % 256 for i in range(PICTURE_N)))),
    ),
    ("structured", {"n": 7, "text": TEXT}, None, len(compact({"n": 7, "text": TEXT}))),
    ("labelled", {"text": "x", "label": "burst"}, None, 1),
]


async def drive(call: Any) -> dict[str, Any]:
    """Run PLAN through ``call(name, args, **kw)`` under declared contexts; returns what the
    test needs to predict the spans (results, conversation id, the block's response id)."""
    out: dict[str, Any] = {"results": {}, "conversation": f"conv-{uuid.uuid4().hex}"}

    async def one(name: str, args: dict[str, Any]) -> None:
        kwargs = {"read_timeout_seconds": TIMEOUT_S} if name == "slow" else {}
        try:
            out["results"][name] = await call(name, args, **kwargs)
        except MCPError as exc:
            out["results"][name] = exc

    with conversation(out["conversation"]):
        with model_response("msg_1"):
            for name, args, *_ in PLAN[0:2]:
                await one(name, args)
        with model_response() as rid:
            out["block_rid"] = rid
            for name, args, *_ in PLAN[2:4]:
                await one(name, args)
        with model_response("msg_2", agent_id="sub-1"):
            await one(*PLAN[4][:2])
        for name, args, *_ in PLAN[5:]:
            await one(name, args)
    return out


def tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]


def check_plan_spans(
    spans: list[ReadableSpan],
    out: dict[str, Any],
    *,
    protocol_version: str,
    transport: str | None,
    request_ids: bool,
    server: str = SERVER_NAME,
) -> None:
    assert [s.name for s in spans] == [f"tools/call {name}" for name, *_ in PLAN]
    response_ids = ["msg_1", "msg_1", out["block_rid"], out["block_rid"], "msg_2"]
    seen_request_ids = []
    for position, (span, (name, args, error, size)) in enumerate(zip(spans, PLAN, strict=True)):
        attrs = dict(span.attributes or {})
        if size == "from-result":
            size = text_bytes(out["results"][name])
        rid = (
            response_ids[position]
            if position < len(response_ids)
            else f"auto-{span.context.span_id:016x}"
        )
        expected = {
            ATTR_MCP_METHOD: "tools/call",
            ATTR_OPERATION: "execute_tool",
            ATTR_TOOL_NAME: name,
            ATTR_CONVERSATION_ID: out["conversation"],
            ATTR_RESPONSE_ID: rid,
            ATTR_SESSION_POSITION: position,
            ATTR_SOURCE: "otlp",
            ATTR_MCP_SERVER: server,
            ATTR_MCP_PROTOCOL_VERSION: protocol_version,
            ATTR_ARGUMENTS_SIZE: len(compact(args)),
            ATTR_EGRESS: "none",  # provenance: nothing leaves; a non-egress call, unmeasured
        }
        if size is not None:
            expected[ATTR_RESULT_SIZE] = size
        if error is not None:
            expected[ATTR_ERROR_TYPE] = error
        if name == "slow":
            expected[ATTR_AGENT_ID] = "sub-1"
        if name == "labelled":
            expected[ATTR_LABEL] = "burst"
        if transport is not None:
            expected[ATTR_NETWORK_TRANSPORT] = transport
        request_id = attrs.pop(ATTR_JSONRPC_REQUEST_ID, None)
        assert attrs == expected, name
        if request_ids:
            assert request_id is not None and request_id.isdigit(), name
            seen_request_ids.append(request_id)
        else:
            assert request_id is None
        assert span.kind is SpanKind.CLIENT
        assert span.status.status_code is (StatusCode.ERROR if error else StatusCode.UNSET)
        assert span.status.description is None  # messages may carry content
        assert not span.events  # no exception events (they carry messages)
        assert span.end_time is not None and span.start_time is not None
        if name == "slow":
            assert span.end_time - span.start_time >= TIMEOUT_S * 1e9 * 0.9
    assert len(set(seen_request_ids)) == len(seen_request_ids)


# ------------------------------------------------------------------------------ registration


def test_entry_point_loads_the_instrumentor() -> None:
    found = {ep.name: ep for ep in entry_points(group="opentelemetry_instrumentor")}
    assert found["mcp_toolwatch"].load() is ToolwatchMCPInstrumentor
    assert tuple(ToolwatchMCPInstrumentor().instrumentation_dependencies()) == ("mcp >= 2.3, < 3",)


# ------------------------------------------------------------------------------ in memory


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_client_in_memory_spans(exporter: InMemorySpanExporter, mode: str) -> None:
    async def main() -> tuple[dict[str, Any], str]:
        async with Client(build_server(), mode=mode) as client:
            await client.list_tools()  # first call would list on its own (output schemas)
            return await drive(client.call_tool), client.protocol_version

    out, version = anyio.run(main)
    # legacy mode uses real JSON-RPC framing in memory (ids); auto dispatches directly
    check_plan_spans(
        tool_spans(exporter),
        out,
        protocol_version=version,
        transport=None,
        request_ids=mode == "legacy",
    )


def test_raw_session_in_memory_with_declared_server(exporter: InMemorySpanExporter) -> None:
    async def main() -> tuple[dict[str, Any], str]:
        async with (
            InMemoryTransport(build_server()) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            describe_session(session, server_name="configured-name", transport="pipe")
            await session.list_tools()
            out = await drive(session.call_tool)
            assert session.protocol_version is not None
            return out, session.protocol_version

    out, version = anyio.run(main)
    check_plan_spans(
        tool_spans(exporter),
        out,
        protocol_version=version,
        transport="pipe",
        request_ids=True,
        server="configured-name",
    )


def test_renaming_a_session_mid_way_applies_to_later_spans(
    exporter: InMemorySpanExporter,
) -> None:
    """Session attributes are cached per session; describe_session() must refresh them."""

    async def main() -> None:
        async with Client(build_server(), mode="legacy") as client:
            await client.list_tools()
            await client.call_tool("echo", {"text": "a"})
            describe_session(client, server_name="renamed", transport="tcp")
            await client.call_tool("echo", {"text": "b"})
            await client.list_tools()

    anyio.run(main)
    first, second = tool_spans(exporter)
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes[ATTR_MCP_SERVER] == SERVER_NAME
    assert ATTR_NETWORK_TRANSPORT not in first.attributes
    assert second.attributes[ATTR_MCP_SERVER] == "renamed"
    assert second.attributes[ATTR_NETWORK_TRANSPORT] == "tcp"
    last_list = [s for s in exporter.get_finished_spans() if s.name == "tools/list"][-1]
    assert last_list.attributes is not None
    assert last_list.attributes[ATTR_MCP_SERVER] == "renamed"


def test_tools_list_records_digests_never_text(exporter: InMemorySpanExporter) -> None:
    async def main() -> Any:
        async with Client(build_server()) as client:
            with model_response("msg_list", conversation_id="conv-list", agent_id="sub-9"):
                return await client.list_tools()

    listing = anyio.run(main)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "tools/list"]
    assert span.kind is SpanKind.CLIENT
    assert span.attributes is not None
    assert span.attributes[ATTR_MCP_METHOD] == "tools/list"
    assert span.attributes[ATTR_CONVERSATION_ID] == "conv-list"
    assert span.attributes[ATTR_AGENT_ID] == "sub-9"
    assert span.attributes[ATTR_MCP_SERVER] == SERVER_NAME
    # a listing is not a call: no position, and no model response issued it
    assert ATTR_SESSION_POSITION not in span.attributes
    assert ATTR_RESPONSE_ID not in span.attributes
    expected = []
    for tool in listing.tools:
        canonical = json.dumps(
            [tool.name, tool.description or "", tool.input_schema],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        expected.append((tool.name, hashlib.sha256(canonical.encode()).hexdigest()))
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    assert events == [
        (EVENT_TOOL_LISTED, {ATTR_TOOL_NAME: name, ATTR_TOOL_DIGEST: digest})
        for name, digest in expected
    ]
    assert len(expected) == 8
    text = repr(span.to_json())
    for tool in listing.tools:
        assert tool.description and tool.description not in text


def test_tool_digest_definition() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    reordered = {"properties": {"a": {"type": "string"}}, "type": "object"}
    base = tool_digest("t", "desc", schema)
    assert base == tool_digest("t", "desc", reordered)  # key order does not matter
    assert base != tool_digest("t", "desc (changed)", schema)  # a rug pull shows
    assert base != tool_digest("t", "desc", {**schema, "required": ["a"]})
    assert tool_digest("ab", "c", None) != tool_digest("a", "bc", None)  # no concat collisions
    assert tool_digest("t", None, None) == tool_digest("t", "", {})


def test_long_listing_continues_on_child_spans(exporter: InMemorySpanExporter) -> None:
    server = build_server()
    for i in range(230):
        server.add_tool(lambda: "ok", name=f"extra_{i:03d}", description=f"extra tool {i}")

    async def main() -> int:
        async with Client(server) as client:
            return len((await client.list_tools()).tools)

    n_tools = anyio.run(main)
    lists = [s for s in exporter.get_finished_spans() if s.name == "tools/list"]
    names = [e.attributes[ATTR_TOOL_NAME] for s in lists for e in s.events]  # type: ignore[index]
    assert len(names) == n_tools == 238 and len(set(names)) == n_tools
    assert all(len(s.events) <= 100 for s in lists) and len(lists) == 3


class Confirm(BaseModel):
    ok: bool


ASKED: list[int] = []  # module level: the tool's string annotations must resolve here


def ask() -> Elicit[Confirm]:
    ASKED.append(1)  # the resolver runs on every round
    return Elicit("Proceed?", Confirm)


def test_input_required_rounds_make_one_span(exporter: InMemorySpanExporter) -> None:
    ASKED.clear()
    server = MCPServer("guard")

    @server.tool()
    def guarded(x: str, confirm: Annotated[Confirm, Resolve(ask)]) -> str:
        return f"{x}:{confirm.ok}"

    async def accept(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    async def main() -> CallToolResult:
        async with Client(server, elicitation_callback=accept) as client:
            await client.list_tools()
            return await client.call_tool("guarded", {"x": "a"})

    result = anyio.run(main)
    assert len(ASKED) >= 2  # tools/call was sent more than once...
    (span,) = tool_spans(exporter)  # ...but it is one call of the model
    assert span.attributes is not None
    assert span.attributes[ATTR_RESULT_SIZE] == text_bytes(result) == len(b"a:True")
    assert ATTR_ERROR_TYPE not in span.attributes


def test_describe_session_needs_a_connected_client() -> None:
    with pytest.raises(RuntimeError, match="not connected yet"):
        describe_session(Client(build_server()), server_name="x")


def test_byte_basis_is_the_same_for_sdk_objects_and_wire_dicts() -> None:
    # the instrumentation sees mcp's pydantic blocks, importers see JSON dicts: same sizes
    blocks = [
        TextContent(type="text", text=TEXT),
        ImageContent(type="image", data=base64.b64encode(b"abc").decode(), mime_type="image/png"),
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="file:///a", text=TEXT)
        ),
        ResourceLink(type="resource_link", uri="file:///é", name="n"),
    ]
    dicts = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]
    expected = len(TEXT.encode()) + 4 + len(TEXT.encode()) + len("file:///é".encode())
    assert result_size(blocks) == result_size(dicts) == expected
    assert result_size([], {"k": TEXT}) == len(compact({"k": TEXT}))
    assert arguments_size({"text": TEXT}) == len(compact({"text": TEXT}))
    assert arguments_size(None) == 0


_text = st.text(st.characters(exclude_categories=("Cs",)))  # quotes, controls, non-ASCII
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and ±Infinity included: json.dumps writes them as NaN / Infinity
    | _text,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(_text | st.integers() | st.booleans(), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_json_values)
def test_the_byte_basis_is_json_dumps_compact(value: Any) -> None:
    """record's prebuilt C encoder gives exactly json.dumps's compact bytes (the definition)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    assert compact_json_size(value) == len(text.encode())


# ------------------------------------------------------------------------------ attribution


def test_fallback_ids_when_nothing_is_declared(exporter: InMemorySpanExporter) -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            await client.list_tools()
            await client.call_tool("echo", {"text": "a"})
            await client.call_tool("echo", {"text": "b"})

    anyio.run(main)
    first, second = tool_spans(exporter)
    for span in (first, second):
        assert span.attributes is not None
        assert span.attributes[ATTR_CONVERSATION_ID] == process_conversation_id()
        assert span.attributes[ATTR_RESPONSE_ID] == f"auto-{span.context.span_id:016x}"
        assert ATTR_AGENT_ID not in span.attributes
    assert process_conversation_id().startswith("proc-")
    assert first.attributes and second.attributes
    assert second.attributes[ATTR_SESSION_POSITION] == first.attributes[ATTR_SESSION_POSITION] + 1


def test_concurrent_conversations_and_parallel_calls(exporter: InMemorySpanExporter) -> None:
    tag = uuid.uuid4().hex  # conversations keep numbering across tests: keep ids unique

    async def conv(client: Client, cid: str, agent: str | None) -> None:
        with conversation(cid, agent_id=agent), model_response(f"{cid}-r1"):
            async with anyio.create_task_group() as tg:  # parallel calls of one response
                for i in range(3):
                    tg.start_soon(client.call_tool, "echo", {"text": f"{cid}-{i}"})
        with model_response(f"{cid}-r2", conversation_id=cid):
            await client.call_tool("echo", {"text": "last"})

    async def main() -> None:
        async with Client(build_server()) as client:
            await client.list_tools()
            async with anyio.create_task_group() as tg:
                tg.start_soon(conv, client, f"conv-X-{tag}", None)
                tg.start_soon(conv, client, f"conv-Y-{tag}", "sub-9")

    anyio.run(main)
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for span in tool_spans(exporter):
        attrs = dict(span.attributes or {})
        by_conv.setdefault(attrs[ATTR_CONVERSATION_ID], []).append(attrs)
    assert sorted(by_conv) == [f"conv-X-{tag}", f"conv-Y-{tag}"]
    for cid, calls in by_conv.items():
        assert sorted(a[ATTR_SESSION_POSITION] for a in calls) == [0, 1, 2, 3]
        last = max(calls, key=lambda a: a[ATTR_SESSION_POSITION])
        assert last[ATTR_RESPONSE_ID] == f"{cid}-r2"
        first_three = [a for a in calls if a is not last]
        assert {a[ATTR_RESPONSE_ID] for a in first_three} == {f"{cid}-r1"}
        agents = {a.get(ATTR_AGENT_ID) for a in first_three}
        assert agents == ({"sub-9"} if cid.startswith("conv-Y") else {None})


def test_bad_declarations_are_refused() -> None:
    with pytest.raises(ValueError, match="conversation_id"), conversation(""):
        pass
    with pytest.raises(ValueError, match="response_id"), model_response(""):
        pass


def test_error_classes() -> None:
    assert error_type_of(MCPError(code=-32001, message="t")) == "timeout"
    assert error_type_of(MCPError(code=-32000, message="closed")) == "-32000"
    assert error_type_of(MCPError(code=-32000, message="Connection closed")) == "connection_closed"
    assert error_type_of(TimeoutError()) == "timeout"
    assert (
        error_type_of(asyncio.CancelledError()) == "cancelled"
    )  # the loop's class, not the call's
    assert error_type_of(RuntimeError("x")) == "RuntimeError"


# ------------------------------------------------------------------------------ lifecycle


def test_uninstrument_removes_the_wrappers() -> None:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))

    async def one_call() -> None:
        async with Client(build_server()) as client:
            await client.call_tool("echo", {"text": "x"})

    instrument(tracer_provider=provider)
    assert isinstance(vars(SessionClass)["call_tool"], wrapt.FunctionWrapper)
    assert isinstance(vars(Client)["call_tool"], wrapt.FunctionWrapper)
    anyio.run(one_call)
    assert len(tool_spans(exp)) == 1
    uninstrument()
    for owner, name in [
        (SessionClass, "call_tool"),
        (SessionClass, "list_tools"),
        (Client, "call_tool"),
        (Client, "__aenter__"),
    ]:
        assert not isinstance(vars(owner)[name], wrapt.FunctionWrapper), name
    assert not isinstance(vars(jsonrpc_dispatcher)["otel_span"], wrapt.FunctionWrapper)
    exp.clear()
    anyio.run(one_call)
    assert exp.get_finished_spans() == ()
    uninstrument()  # idempotent
    instrument(tracer_provider=provider)  # and back
    anyio.run(one_call)
    assert len(tool_spans(exp)) == 1
    uninstrument()


def test_tool_span_joins_the_agents_current_trace() -> None:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    instrument(tracer_provider=provider)

    async def main() -> None:
        async with Client(build_server(), mode="legacy") as client:
            await client.list_tools()
            with provider.get_tracer("agent").start_as_current_span("agent-turn"):
                await client.call_tool("echo", {"text": "x"})

    try:
        anyio.run(main)
    finally:
        uninstrument()
    (span,) = tool_spans(exp)
    (turn,) = [s for s in exp.get_finished_spans() if s.name == "agent-turn"]
    assert span.parent is not None and span.parent.span_id == turn.context.span_id
    assert span.context.trace_id == turn.context.trace_id
    assert span.attributes and span.attributes[ATTR_JSONRPC_REQUEST_ID].isdigit()


# ------------------------------------------------------------------------------ stdio


def test_stdio_subprocess_client(exporter: InMemorySpanExporter) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)])

    async def main() -> tuple[dict[str, Any], str]:
        async with Client(params) as client:
            await client.list_tools()
            return await drive(client.call_tool), client.protocol_version

    out, version = anyio.run(main)
    check_plan_spans(
        tool_spans(exporter), out, protocol_version=version, transport="pipe", request_ids=True
    )
