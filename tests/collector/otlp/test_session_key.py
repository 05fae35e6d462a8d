"""The session key of a call from another sender: the MCP conventions' client span carries no
``gen_ai.conversation.id``, so the record's ``session_id`` falls back to ``session.id`` (where
OpenInference and the browser/mobile SDKs put the conversation), then to ``mcp.session.id``
(the MCP session of a Streamable HTTP connection) — each on the span, then on its resource —
and ``fields_present`` names the fallback used. A span with none of them is rejected, the
message naming all three.
"""

from __future__ import annotations

from typing import Any

import pytest

from support.collector import JS, PB, SpanSpec, json_request, pb_request, post, rows
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.store import Store
from toolwatch.conventions import (
    ATTR_CONVERSATION_ID,
    ATTR_MCP_METHOD,
    ATTR_MCP_SESSION_ID,
    ATTR_OPERATION,
    ATTR_SESSION_ID,
    ATTR_TOOL_NAME,
)

KEYS = (ATTR_CONVERSATION_ID, ATTR_SESSION_ID, ATTR_MCP_SESSION_ID)
#: the ``fields_present`` token of each key
TOKEN = {
    ATTR_CONVERSATION_ID: "session_id",
    ATTR_SESSION_ID: "session_id:session.id",
    ATTR_MCP_SESSION_ID: "session_id:mcp.session.id",
}


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
    assert (
        "missing attribute gen_ai.conversation.id, session.id or mcp.session.id (session_id)"
        in message
    )
    assert [r["tool"] for r in rows(store)] == ["ok"]
    assert collector.stats.rejected_by == {"missing:gen_ai.conversation.id": 1}


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
