"""What the proxy fuzz sends (hypothesis strategies): JSON-RPC messages of every wrong shape and
the actions of a hostile HTTP client. Run by :mod:`support.proxy_fuzz`.

Messages: requests with unknown or known methods, ids of every type and size (2**110, 5,000
characters, floats, objects), params of wrong types, ``tools/call`` with wrong argument types,
garbage ``requestState`` / ``inputResponses`` / ``_meta`` (progress tokens, log levels, a
2026-07-28 envelope with one field wrong), notifications carrying ids, responses to requests
never sent, non-objects; bodies that are not JSON (truncated, random bytes, invalid UTF-8, deep
nesting). Actions: a POST with hostile headers (Accept, Content-Type, ``MCP-Protocol-Version``,
``Mcp-Method`` / ``Mcp-Name``, ``Mcp-Session-Id`` of another client's session, a deleted one,
garbage), a GET stream left mid-way, a DELETE of another client's session, a call its client
leaves mid-stream, a session deleted while its call runs, garbage answers to the server's
elicitation (handshake era) and garbage retries of an ``InputRequiredResult`` (2026-07-28).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types import LOG_LEVEL_META_KEY as LOG_LEVEL

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
BOTH = "application/json, text/event-stream"
ENVELOPE: dict[str, Any] = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_INFO_META_KEY: {"name": "fuzz", "version": "1"},
    CLIENT_CAPABILITIES_META_KEY: {},
}
METHODS = [
    "initialize",
    "notifications/initialized",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "server/discover",
    "subscriptions/listen",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tasks/get",
    "tasks/cancel",
]
NOTIFICATIONS = [m for m in METHODS if m.startswith("notifications/")]

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**110),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "x" * 3000, "debug", "emergency", "accept", "-1", "1e400"]),
)
junk = st.recursive(
    scalar,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=6,
)
ids = st.one_of(
    st.integers(-(2**70), 2**110),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 2**64, 10**30]),
    st.text(max_size=10),
    st.just("i" * 5000),
    junk,
)
tool_name = st.one_of(st.sampled_from(["echo", "chatty", "fail", "ask", "nope"]), junk)
arguments = st.one_of(
    st.fixed_dictionaries({"text": st.one_of(st.text(max_size=30), junk)}),
    st.fixed_dictionaries({"reason": junk}),
    st.dictionaries(st.text(max_size=8), junk, max_size=3),
    junk,
)
meta = st.one_of(
    st.just(ENVELOPE),
    st.builds(lambda k, v: {**ENVELOPE, k: v}, st.sampled_from([*ENVELOPE, LOG_LEVEL]), junk),
    st.builds(lambda v: {**ENVELOPE, "progressToken": v}, junk),
    st.dictionaries(st.sampled_from(["progressToken", LOG_LEVEL, "x/y", ""]), junk, max_size=3),
    junk,
)
input_responses = st.one_of(
    junk,
    st.dictionaries(st.sampled_from(["who", "x"]), junk, max_size=2),
    st.builds(
        lambda a, c: {"who": {"action": a, "content": c}},
        st.one_of(st.sampled_from(["accept", "decline", "cancel"]), junk),
        st.one_of(st.fixed_dictionaries({"name": junk}), junk),
    ),
)
call_params = st.fixed_dictionaries(
    {"name": tool_name},
    optional={
        "arguments": arguments,
        "_meta": meta,
        "requestState": st.one_of(st.text(max_size=40), junk),
        "inputResponses": input_responses,
        "task": junk,
    },
)
other_params = st.dictionaries(
    st.sampled_from(
        [
            "_meta",
            "cursor",
            "uri",
            "name",
            "level",
            "protocolVersion",
            "capabilities",
            "clientInfo",
            "requestId",
            "progressToken",
            "progress",
            "ref",
            "argument",
            "reason",
        ]
    ),
    junk,
    max_size=4,
)


def _drop(message: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in keys}


droppable = st.lists(st.sampled_from(["jsonrpc", "id", "method", "params"]), max_size=2)
request = st.builds(
    lambda v, i, m, p, d: _drop({"jsonrpc": v, "id": i, "method": m, "params": p}, d),
    st.one_of(st.just("2.0"), st.just("2.0"), junk),
    ids,
    st.one_of(st.sampled_from(METHODS), st.text(max_size=20), junk),
    st.one_of(call_params, other_params, junk),
    st.one_of(st.just([]), droppable),
)
call = st.builds(
    lambda i, p: {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": p},
    st.one_of(st.integers(1, 10**6), ids),
    call_params,
)
notification_with_id = st.builds(
    lambda i, m, p: {"jsonrpc": "2.0", "id": i, "method": m, "params": p},
    ids,
    st.sampled_from(NOTIFICATIONS),
    st.one_of(other_params, junk),
)
response = st.one_of(
    st.builds(lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, ids, junk),
    st.builds(
        lambda i, c, m, d: {
            "jsonrpc": "2.0",
            "id": i,
            "error": {"code": c, "message": m, "data": d},
        },
        ids,
        st.one_of(st.integers(-40000, 0), junk),
        junk,
        junk,
    ),
)
message = st.one_of(request, call, call, notification_with_id, response, junk)


def encode(value: Any) -> bytes:
    """JSON with whatever Python holds (lone surrogates as invalid UTF-8, NaN as NaN)."""
    return json.dumps(value).encode("utf-8", "surrogatepass")


def _truncated(data: bytes, at: int) -> bytes:
    return data[: max(1, at % max(len(data), 1))]


body = st.one_of(
    message.map(encode),
    message.map(encode),
    message.map(encode),
    st.builds(_truncated, message.map(encode), st.integers(0, 10**6)),
    st.binary(max_size=200),
    st.sampled_from(
        [b"", b"{", b"null", b"\xff\xfe{}", b'{"a":' * 3000 + b"1" + b"}" * 3000, b"[]", b" " * 50]
    ),
)


@dataclass(frozen=True)
class Headers:
    accept: str
    content_type: str
    version: str | None
    session: str  # none | victim | deleted | garbage | long
    method_header: str  # match | none | garbage


headers = st.builds(
    Headers,
    st.sampled_from([BOTH] * 8 + ["application/json", "text/event-stream", "*/*", "", "x/;;;"]),
    st.sampled_from(["application/json"] * 6 + ["text/plain", "", "application/json; charset=x"]),
    st.sampled_from(
        [None, None, MODERN, MODERN, HANDSHAKE, "2024-11-05", "1999-01-01", "", "v" * 300]
    ),
    st.sampled_from(["none", "none", "victim", "victim", "deleted", "garbage", "long"]),
    st.sampled_from(["match", "match", "none", "garbage"]),
)


@dataclass(frozen=True)
class Post:
    body: bytes
    headers: Headers


@dataclass(frozen=True)
class Get:
    headers: Headers


@dataclass(frozen=True)
class Delete:
    session: str
    nonce: int  # hypothesis sends no example twice: without it, five DELETEs in a whole run


@dataclass(frozen=True)
class LeaveMidCall:
    """A ``slow`` call whose client closes the connection (before or after the headers)."""

    modern: bool
    after_headers: bool
    seconds: float


@dataclass(frozen=True)
class DeleteMidCall:
    """A victim session's ``slow`` call, and a DELETE of that session while it runs."""

    seconds: float


@dataclass(frozen=True)
class Abandon:
    """A handshake-era client that makes a call and leaves without a DELETE (most do)."""

    text: str


@dataclass(frozen=True)
class AnswerAsk:
    """A handshake-era ``ask`` call, the server's elicitation answered with ``answer`` (a
    JSON-RPC ``result`` or ``error`` member, or the whole message when ``raw``)."""

    answer: Any
    raw: bool


@dataclass(frozen=True)
class RetryAsk:
    """A 2026-07-28 ``ask`` call, its ``InputRequiredResult`` retried with garbage."""

    params: dict[str, Any]


action = st.one_of(
    st.builds(Post, body, headers),
    st.builds(Post, body, headers),
    st.builds(Post, body, headers),
    st.builds(Post, body, headers),
    st.builds(Post, body, headers),
    st.builds(Get, headers),
    st.builds(Delete, st.sampled_from(["victim", "deleted", "garbage", "none"]), st.integers()),
    st.builds(LeaveMidCall, st.booleans(), st.booleans(), st.floats(0.2, 1.5)),
    st.builds(DeleteMidCall, st.floats(0.6, 1.5)),
    st.builds(Abandon, st.text(max_size=20)),
    st.builds(
        AnswerAsk,
        st.one_of(
            st.builds(lambda r: {"result": r}, junk),
            st.builds(lambda e: {"error": e}, junk),
            st.just({"result": {"action": "accept", "content": {"name": "fuzz"}}}),
        ),
        st.booleans(),
    ),
    st.builds(
        RetryAsk,
        st.fixed_dictionaries(
            {"name": st.just("ask")},
            optional={
                "requestState": st.one_of(st.text(max_size=60), junk),
                "inputResponses": input_responses,
                "arguments": arguments,
                "_meta": meta,
            },
        ),
    ),
)
