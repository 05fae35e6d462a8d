"""The session key of a call from another sender: the MCP conventions' client span carries no
``gen_ai.conversation.id``, so the record's ``session_id`` falls back to ``session.id`` (where
OpenInference and the browser/mobile SDKs put the conversation), then to ``mcp.session.id``
(the MCP session of a Streamable HTTP connection) — each on the span, then on its resource —
then, for a stdio MCP client that has no session key at all, to its process: the resource's
``service.instance.id`` (a UUID per process from the OTel Python SDK), else ``process.pid`` with
``host.name`` (Node's detectors) as ``<pid>@<host>``. ``fields_present`` names the key used. A
span with none of them is rejected, the message naming the session keys and saying once what
to set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.collector import JS, PB, SpanSpec, json_request, pb_request, post, rows
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.otlp.mapping import IGNORED_SDK
from toolwatch.collector.store import Store
from toolwatch.conventions import (
    ATTR_CONVERSATION_ID,
    ATTR_MCP_METHOD,
    ATTR_MCP_SESSION_ID,
    ATTR_OPERATION,
    ATTR_SESSION_ID,
    ATTR_TOOL_NAME,
)

TESTS = Path(__file__).resolve().parents[2]
#: What the rejection of a span without any session key tells its sender to set.
TO_SET = (
    "a stdio MCP session has no id: set gen_ai.conversation.id on the span, or session.id on "
    "the span or its resource (OTEL_RESOURCE_ATTRIBUTES=session.id=<a new id per session>, "
    "when one process is one session)"
)
KEYS = (ATTR_CONVERSATION_ID, ATTR_SESSION_ID, ATTR_MCP_SESSION_ID)
#: the ``fields_present`` token of each key
TOKEN = {
    ATTR_CONVERSATION_ID: "session_id",
    ATTR_SESSION_ID: "session_id:session.id",
    ATTR_MCP_SESSION_ID: "session_id:mcp.session.id",
    "service.instance.id": "session_id:service.instance.id",
    "process.pid": "session_id:process.pid",
}
MISSING = (
    "missing attribute gen_ai.conversation.id, session.id, mcp.session.id, service.instance.id "
    "or process.pid (session_id)"
)


def mcp_client_span(tool: str, **keys: str) -> SpanSpec:
    """A CLIENT span as the MCP semantic conventions describe it (``keys``: session keys by
    attribute name)."""
    attrs: dict[str, Any] = {
        ATTR_MCP_METHOD: "tools/call",
        ATTR_OPERATION: "execute_tool",
        ATTR_TOOL_NAME: tool,
    }
    return SpanSpec({**attrs, **keys})


def send(
    collector: Collector, specs: list[SpanSpec], encoding: str, resource: dict[str, Any]
) -> tuple[int, str]:
    build = json_request if encoding == JS else pb_request
    body = build(specs, scope="other.sender", resource=resource)
    reply = post(collector.url, body, encoding)
    assert reply.status == 200
    return decode_success(encoding, reply.body)


def session_of(row: dict[str, Any]) -> tuple[str, str]:
    """(session_id, the session token of fields_present)."""
    token = [t for t in row["fields_present"].split(",") if t.startswith("session_id")]
    assert len(token) == 1, row["fields_present"]
    return row["session_id"], token[0]


@pytest.mark.parametrize("encoding", [PB, JS])
@pytest.mark.parametrize("on", ["span", "resource"])
@pytest.mark.parametrize("key", KEYS)
def test_each_session_key_alone_keys_the_record(
    collector: Collector, store: Store, encoding: str, on: str, key: str
) -> None:
    span_keys = {key: "key-1"} if on == "span" else {}
    resource = {key: "key-1"} if on == "resource" else {}
    spec = mcp_client_span("search", **span_keys)
    assert send(collector, [spec], encoding, resource) == (0, "")
    [row] = rows(store)
    assert session_of(row) == ("key-1", TOKEN[key])
    assert row["fields_present"] == f"{TOKEN[key]},tool,service"
    assert collector.stats.calls == 1 and collector.stats.rejected_by == {}


@pytest.mark.parametrize("encoding", [PB, JS])
def test_the_conversation_comes_first_then_session_id_then_the_mcp_session(
    collector: Collector, store: Store, encoding: str
) -> None:
    """Key by key, the span before its resource: a resource's session.id outranks a span's
    mcp.session.id."""
    conv, sid, mcp = ATTR_CONVERSATION_ID, ATTR_SESSION_ID, ATTR_MCP_SESSION_ID
    resource = {sid: "res-session", mcp: "res-mcp"}
    specs = [
        mcp_client_span("a", **{conv: "conv", sid: "span-session", mcp: "span-mcp"}),
        mcp_client_span("b", **{sid: "span-session", mcp: "span-mcp"}),
        mcp_client_span("c", **{mcp: "span-mcp"}),
    ]
    assert send(collector, specs, encoding, resource) == (0, "")
    specs = [mcp_client_span("d", **{mcp: "span-mcp"}), mcp_client_span("e")]
    assert send(collector, specs, encoding, {mcp: "res-mcp", "host.name": "h"}) == (0, "")
    got = {r["tool"]: session_of(r) for r in rows(store)}
    assert got == {
        "a": ("conv", TOKEN[conv]),
        "b": ("span-session", TOKEN[sid]),
        "c": ("res-session", TOKEN[sid]),
        "d": ("span-mcp", TOKEN[mcp]),
        "e": ("res-mcp", TOKEN[mcp]),
    }


@pytest.mark.parametrize("encoding", [PB, JS])
def test_a_span_with_no_session_key_is_rejected_naming_all_three(
    collector: Collector, store: Store, encoding: str
) -> None:
    """A stdio MCP session has no mcp.session.id: without a conversation or session.id its
    calls cannot be keyed, and the sender is told which attributes would do."""
    specs = [mcp_client_span("stdio_call"), mcp_client_span("ok", **{ATTR_MCP_SESSION_ID: "m"})]
    rejected, message = send(collector, specs, encoding, {"host.name": "h"})
    assert rejected == 1
    assert MISSING in message
    assert [r["tool"] for r in rows(store)] == ["ok"]
    assert collector.stats.rejected_by == {"missing:gen_ai.conversation.id": 1}


@pytest.mark.parametrize("encoding", [PB, JS])
def test_the_rejection_says_once_what_a_stdio_sender_should_set(
    collector: Collector, store: Store, encoding: str
) -> None:
    """Three stdio calls as the MCP conventions describe them, on a resource naming neither a
    session nor the process (Node's BasicTracerProvider with only service.name): each
    rejected, what to set said once."""
    stdio = {"network.transport": "pipe", "mcp.protocol.version": "2025-06-18"}
    specs = [mcp_client_span(t, **stdio) for t in ("a", "b", "c")]
    rejected, message = send(collector, specs, encoding, {"service.name": "agent"})
    assert rejected == 3
    assert message.count(TO_SET) == 1, message
    assert message.count(MISSING) == 3
    assert rows(store) == []
    assert collector.stats.rejected_by == {"missing:gen_ai.conversation.id": 3}


@pytest.mark.parametrize("encoding", [PB, JS])
def test_a_stdio_client_without_a_session_is_one_stream_per_process(
    collector: Collector, store: Store, encoding: str
) -> None:
    """No conversation, session or MCP session: the calls are keyed by the process that made
    them — its service.instance.id, else its pid on its host — so one stdio client's calls
    form one stream and two processes two; a session key, when there is one, still wins."""
    stdio = {"network.transport": "pipe"}
    python = {"service.name": "agent", "service.instance.id": "8f0c6a4e-uuid", "process.pid": 7}
    node = {"service.name": "agent", "process.pid": 4242, "host.name": "devbox"}
    assert send(collector, [mcp_client_span(t, **stdio) for t in "ab"], encoding, python) == (0, "")
    assert send(collector, [mcp_client_span(t, **stdio) for t in "cd"], encoding, node) == (0, "")
    pid_only = {"process.pid": "4243"}  # a decimal string, as OTLP/JSON may spell an int
    assert send(collector, [mcp_client_span("e")], encoding, pid_only) == (0, "")
    keyed = {**node, ATTR_SESSION_ID: "s1"}
    assert send(collector, [mcp_client_span("f")], encoding, keyed) == (0, "")
    got = {r["tool"]: session_of(r) for r in rows(store)}
    assert got == {
        "a": ("8f0c6a4e-uuid", TOKEN["service.instance.id"]),
        "b": ("8f0c6a4e-uuid", TOKEN["service.instance.id"]),
        "c": ("4242@devbox", TOKEN["process.pid"]),
        "d": ("4242@devbox", TOKEN["process.pid"]),
        "e": ("4243", TOKEN["process.pid"]),
        "f": ("s1", TOKEN[ATTR_SESSION_ID]),
    }
    assert collector.stats.calls == 6 and collector.stats.rejected_by == {}


@pytest.mark.parametrize("encoding", [PB, JS])
def test_a_process_id_that_is_no_integer_is_rejected_naming_it(
    collector: Collector, store: Store, encoding: str
) -> None:
    rejected, message = send(collector, [mcp_client_span("x")], encoding, {"process.pid": "p1"})
    assert rejected == 1
    assert "attribute process.pid must be an integer, got the string 'p1'" in message
    assert rows(store) == []
    assert collector.stats.rejected_by == {"type:process.pid": 1}


@pytest.mark.parametrize("encoding", [PB, JS])
def test_an_empty_conversation_id_is_rejected_not_replaced_by_a_fallback(
    collector: Collector, store: Store, encoding: str
) -> None:
    """The first key present decides: a sender that sets the conversation wrongly is told so,
    not quietly keyed by its MCP session."""
    spec = mcp_client_span("x", **{ATTR_CONVERSATION_ID: "", ATTR_MCP_SESSION_ID: "m"})
    rejected, message = send(collector, [spec], encoding, {})
    assert rejected == 1 and "attribute gen_ai.conversation.id (session_id) is empty" in message
    assert rows(store) == []
    assert collector.stats.rejected_by == {"empty:gen_ai.conversation.id": 1}


#: A stdio agent in a child process (the OTel SDK's provider is global): the real MCP SDK
#: client and server over stdio, each call wrapped in a CLIENT span as an MCP-conventions
#: instrumentation makes it, exported by the OTel SDK's OTLP/HTTP exporter on its default
#: resource (``Resource.create``: ``OTEL_RESOURCE_ATTRIBUTES`` and a service.instance.id).
_STDIO_AGENT = """
import sys, anyio
from mcp import Client, StdioServerParameters
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
provider = TracerProvider(resource=Resource.create())
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1])))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("an.mcp.instrumentation")
server = StdioServerParameters(command=sys.executable, args=[sys.argv[2]])

async def main():
    async with Client(server) as client:
        for n, text in enumerate(["one", "two"]):
            with tracer.start_as_current_span(
                "tools/call echo",
                kind=trace.SpanKind.CLIENT,
                attributes={
                    "mcp.method.name": "tools/call",
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "echo",
                    "jsonrpc.request.id": str(n),
                    "network.transport": "pipe",
                },
            ):
                await client.call_tool("echo", {"text": text})

anyio.run(main)
provider.shutdown()
print(provider.resource.attributes.get("service.instance.id", ""))
"""


def _run_stdio_agent(collector: Collector, resource_attributes: str) -> str:
    """Run the stdio agent once; its service.instance.id."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(TESTS), "OTEL_SERVICE_NAME": "stdio-agent"}
    if resource_attributes:
        env["OTEL_RESOURCE_ATTRIBUTES"] = resource_attributes
    server = TESTS / "support" / "mcp_test_server.py"
    out = subprocess.run(
        [sys.executable, "-c", _STDIO_AGENT, collector.traces_url, str(server)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    return out.stdout.strip()


def test_a_real_stdio_agent_is_one_stream_per_process_until_it_names_its_session(
    collector: Collector, store: Store
) -> None:
    """The OTel Python SDK gives the process a service.instance.id: a real stdio agent's calls,
    with no session anywhere, are stored as one stream keyed by it (a second run is a second
    stream); with session.id on the resource the same agent's calls are keyed by that."""
    first = _run_stdio_agent(collector, "")
    second = _run_stdio_agent(collector, "")
    assert len(first) == 36 and len(second) == 36 and first != second  # a UUID per process
    got = [(r["tool"], r["service"], *session_of(r)) for r in rows(store)]
    token = TOKEN["service.instance.id"]
    assert sorted(got) == sorted(
        [("echo", "stdio-agent", first, token)] * 2 + [("echo", "stdio-agent", second, token)] * 2
    )
    assert collector.stats.rejected_by == {}
    assert collector.stats.ignored_by.get(IGNORED_SDK, 0) >= 4  # the SDK's own spans

    _run_stdio_agent(collector, "session.id=stdio-run-1,deployment.environment=test")
    got = [(r["tool"], *session_of(r)) for r in rows(store) if r["session_id"] == "stdio-run-1"]
    assert got == [("echo", "stdio-run-1", TOKEN[ATTR_SESSION_ID])] * 2
    assert collector.stats.calls == 6 and collector.stats.rejected_by == {}
