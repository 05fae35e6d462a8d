"""What the streamable-HTTP transport spec asks of a server, answered in words a client can act on.

The mcp SDK's HTTP app (which :func:`.proxy.http_server` serves the proxy and scenario servers
with) answers three of these with a misleading message:

- an ``MCP-Protocol-Version`` it does not speak (``1999-01-01`` in a 2025 session) is routed to
  the 2026-07-28 path, whose answer is "params._meta must be an object carrying the required
  … envelope keys". The spec (2025-06-18 on): a server that receives an invalid or unsupported
  ``MCP-Protocol-Version`` MUST answer ``400 Bad Request``; it is now one naming the version and
  the supported ones (``-32022``, the 2026-07-28 code for it, with ``supported`` and
  ``requested`` in ``data``);
- a JSON-RPC batch (a JSON array) got pydantic's validation text, quoting the request back. The
  spec (2025-06-18 on): the body MUST be a single JSON-RPC request, notification or response;
  it is now ``400`` with ``-32600`` saying so;
- a POST whose ``Accept`` does not list both ``application/json`` and ``text/event-stream``
  (wildcards count) — the spec's client MUST — got a bare ``406`` on the 2026-07-28 path (the
  handshake path said why); it is now ``406`` with ``-32600`` saying what to send, on both;
- a body over the SDK's limit (4 MiB), which the SDK refuses unread with ``413``, would be read
  whole into memory by the batch check in front of it; it is ``413`` here, read no further.

Every answer is a JSON-RPC error, nothing of the body quoted. A refused version or ``Accept``
answers a POSTed request with its ``id`` (JSON-RPC 2.0: the id is ``null`` only when it cannot
be read), so the client waiting on that request is answered; a body the checks cannot read as one
request (a batch, not JSON, over the limit, a notification, a GET) gets ``null``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types import INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION, RequestId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from toolwatch.injection.proxy.stdio_front import echoable_id

SUPPORTED = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
_VERSION = b"mcp-protocol-version"
_QUOTED = 40  # a header value is the client's, not content; still, not a whole line of it
_JSON = ("application/json", "application/*", "*/*")
_SSE = ("text/event-stream", "text/*", "*/*")


def _accepts(headers: list[tuple[bytes, bytes]]) -> tuple[bool, bool]:
    """Whether the ``Accept`` headers list JSON and SSE (as the SDK reads them)."""
    types = [
        part.split(";")[0].strip().lower()
        for k, v in headers
        if k == b"accept"
        for part in v.decode("latin-1").split(",")
    ]
    return any(t in _JSON for t in types), any(t in _SSE for t in types)


def _error(
    status: int, code: int, message: str, data: Any = None, request: RequestId | None = None
) -> tuple[int, bytes]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return status, json.dumps({"jsonrpc": "2.0", "id": request, "error": error}).encode()


@dataclass(frozen=True)
class _Refusal:
    """A header problem; answered with the request's id once the body has been read."""

    status: int
    code: int
    message: str
    data: Any = None

    def answer(self, request: RequestId | None = None) -> tuple[int, bytes]:
        return _error(self.status, self.code, self.message, self.data, request)


def request_id(body: bytes) -> RequestId | None:
    """The ``id`` of the JSON-RPC request ``body`` holds, when it can be read and carried back
    (a string or an integer; as the stdio front reads it), else ``None``."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    return echoable_id(message.get("id"))


def _header_problem(scope: dict[str, Any]) -> _Refusal | None:
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    versions = [v.decode("latin-1") for k, v in headers if k == _VERSION]
    for version in versions:
        if version not in SUPPORTED:
            shown = version if len(version) <= _QUOTED else version[:_QUOTED] + "…"
            return _Refusal(
                400,
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Bad Request: unsupported MCP-Protocol-Version {shown!r}; "
                f"this server speaks {', '.join(SUPPORTED)}",
                {"supported": list(SUPPORTED), "requested": shown},
            )
    if scope["method"] == "POST":
        has_json, has_sse = _accepts(headers)
        if not (has_json and has_sse):
            said = any(k == b"accept" for k, _ in headers)
            what = (
                "the Accept header must list" if said else "no Accept header; a client must accept"
            )
            return _Refusal(
                406,
                INVALID_REQUEST,
                f"Not Acceptable: {what} both application/json and text/event-stream",
            )
    return None


_BATCH = _error(
    400,
    INVALID_REQUEST,
    "Bad Request: the body is a JSON-RPC batch (an array); MCP over streamable HTTP takes one "
    "JSON-RPC message per POST (batches were removed in 2025-06-18)",
)


#: The SDK's limit on a request body (4 MiB), which the checks in front of it keep too.
MAX_BODY: Final = DEFAULT_MAX_REQUEST_BODY_SIZE
TOO_LARGE = _error(
    413,
    INVALID_REQUEST,
    f"Payload Too Large: a request body may hold at most {MAX_BODY:,} bytes",
)


def _declared_length(scope: dict[str, Any]) -> int | None:
    """The ``Content-Length`` a request declares (``None``: none, or not a number)."""
    for k, v in scope["headers"]:
        if k == b"content-length":
            try:
                return int(v)
            except ValueError:
                return None
    return None


async def respond(send: Any, answer: tuple[int, bytes]) -> None:
    """Send ``answer`` (status, JSON-RPC error body) as the whole HTTP response."""
    status, body = answer
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def spec_checks(app: Any) -> Any:
    """The ASGI ``app`` behind the checks above; anything that passes them reaches it as sent."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        problem = _header_problem(scope)
        if scope["method"] != "POST":
            if problem is not None:
                await respond(send, problem.answer())
                return
            await app(scope, receive, send)
            return
        declared = _declared_length(scope)
        read = (
            None if declared is not None and declared > MAX_BODY else await read_whole_body(receive)
        )
        if read is None:
            await respond(send, TOO_LARGE if problem is None else problem.answer())
            return
        body, replay = read
        if problem is not None:  # after the body: its request's id is the answer's
            await respond(send, problem.answer(request_id(body)))
            return
        if body.lstrip()[:1] == b"[":
            await respond(send, _BATCH)
            return
        await app(scope, replay, send)

    return serve


async def read_whole_body(receive: Any) -> tuple[bytes, Any] | None:
    """Read a request's whole body (a check must see it before the app does) and give back a
    ``receive`` that hands the app the very messages read, then the live ones; ``None`` once
    it passes the SDK's own body limit (the SDK refuses such a body before reading it; a check
    in front must not read it all into memory first)."""
    messages: list[dict[str, Any]] = []
    body = b""
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            return None
        if not message.get("more_body", False):
            break

    async def replay() -> dict[str, Any]:
        return messages.pop(0) if messages else await receive()

    return body, replay
