"""The proxy's streamable-HTTP front (the real proxy over real HTTP, a raw client) against what
the transport spec asks of a server: the SDK's answers to an unknown ``MCP-Protocol-Version``
in a 2025 session, to a JSON-RPC batch, and (2026-07-28) to a POST without ``Accept`` misled
or said nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
from mcp.server.mcpserver import MCPServer
from mcp_types import INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION

from support.proxy_fuzz_http import PROBE_INITIALIZE
from toolwatch.injection.proxy.http_checks import MAX_BODY, SUPPORTED
from toolwatch.injection.proxy.proxy import http_server, run_proxy

BOTH = {"accept": "application/json, text/event-stream"}
INIT = PROBE_INITIALIZE
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
Probe = Callable[[httpx2.AsyncClient, str, dict[str, str]], Awaitable[Any]]


def upstream() -> MCPServer:
    server = MCPServer("plain")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def against_the_proxy(probe: Probe) -> Any:
    """``probe(http, url, session_headers)`` against the proxy served over HTTP, with a 2025
    session already open (initialize, initialized)."""

    async def main() -> Any:
        async with (
            run_proxy(None, upstream()) as proxy,
            http_server(proxy) as front,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            del http.headers["accept"]  # httpx sends */* unless told not to
            opened = await http.post(front.url, json=INIT, headers=BOTH)
            session = {
                **BOTH,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(front.url, json=note, headers=session)).status_code == 202
            return await probe(http, front.url, session)

    return anyio.run(main)


def answer(response: httpx2.Response) -> tuple[int, dict[str, Any]]:
    return response.status_code, response.json()


def test_an_unsupported_protocol_version_is_a_400_naming_it_and_the_session_goes_on() -> None:
    """Spec (2025-06-18 on): an invalid or unsupported MCP-Protocol-Version MUST get a 400. The
    SDK sent it down its 2026 path: "params._meta must be an object carrying … envelope keys"."""

    async def probe(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> Any:
        refused = [
            answer(await http.post(url, json=LIST, headers={**session, "mcp-protocol-version": v}))
            for v in ("1999-01-01", "x" * 100)
        ]
        after = await http.post(url, json=LIST, headers=session)
        return refused, after.status_code, "echo" in after.text

    refused, status, listed = against_the_proxy(probe)
    supported = ", ".join(SUPPORTED)
    assert refused[0] == (
        400,
        {
            "jsonrpc": "2.0",
            "id": 2,  # the refused request's, as JSON-RPC asks when it can be read
            "error": {
                "code": UNSUPPORTED_PROTOCOL_VERSION,
                "message": "Bad Request: unsupported MCP-Protocol-Version '1999-01-01'; "
                f"this server speaks {supported}",
                "data": {"supported": list(SUPPORTED), "requested": "1999-01-01"},
            },
        },
    )
    assert refused[1][1]["error"]["data"]["requested"] == "x" * 40 + "…"
    assert (status, listed) == (200, True)


def test_a_refusal_carries_the_requests_id_when_it_can_be_read_and_null_otherwise() -> None:
    """JSON-RPC 2.0: an error answer's id is the request's, null only when it cannot be read.
    The version refusal answered every request with a null id, so the client's pending
    request was never answered; a GET, a notification, a bad id or no JSON still get null."""

    async def probe(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> Any:
        bad = {**session, "mcp-protocol-version": "1999-01-01"}
        bodies: list[Any] = [
            {**LIST, "id": "req-7"},
            {**LIST, "id": 0},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {**LIST, "id": True},
            {**LIST, "id": 1.5},
            {"jsonrpc": "2.0", "id": 3, "result": {}},  # an answer: no request of its own
        ]
        ids = [(await http.post(url, json=b, headers=bad)).json()["id"] for b in bodies]
        ids.append((await http.post(url, content=b"{not json", headers=bad)).json()["id"])
        got = await http.get(url, headers={**bad, "accept": "text/event-stream"})
        return ids, got.status_code, got.json()["id"]

    assert against_the_proxy(probe) == (["req-7", 0, None, None, None, None, None], 400, None)


def test_a_batch_is_a_400_saying_one_message_per_post_without_quoting_it() -> None:
    """Spec (2025-06-18 on): the body MUST be a single JSON-RPC message. The SDK answered with
    pydantic's validation text, which quoted the batch back."""

    async def probe(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> Any:
        batch = [{**LIST, "params": {"_meta": {"note": "CANARY-BATCH"}}}, LIST]
        return [
            answer(await http.post(url, json=batch, headers=session)),
            answer(await http.post(url, content=b" []", headers=session)),
        ]

    said = (
        "Bad Request: the body is a JSON-RPC batch (an array); MCP over streamable HTTP takes one "
        "JSON-RPC message per POST (batches were removed in 2025-06-18)"
    )
    expected = (
        400,
        {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": said}},
    )
    assert against_the_proxy(probe) == [expected, expected]


def test_a_post_that_does_not_accept_both_is_a_406_saying_what_to_send_in_either_era() -> None:
    """Spec: the client MUST send an Accept listing application/json and text/event-stream. The
    SDK's 2026-07-28 path answered a bare 406 (the 2025 path said why); */* still counts."""

    async def probe(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> Any:
        bare = {k: v for k, v in session.items() if k != "accept"}
        modern = {"content-type": "application/json", "mcp-protocol-version": "2026-07-28"}
        return [
            answer(await http.post(url, json=LIST, headers=bare)),
            answer(await http.post(url, json=LIST, headers=modern)),
            answer(await http.post(url, json=LIST, headers={**bare, "accept": "application/json"})),
            (await http.post(url, json=LIST, headers={**bare, "accept": "*/*"})).status_code,
        ]

    missing = "Not Acceptable: no Accept header; a client must accept both application/json and"
    partial = "Not Acceptable: the Accept header must list both application/json and"

    def refused(message: str) -> tuple[int, dict[str, Any]]:
        error = {"code": INVALID_REQUEST, "message": f"{message} text/event-stream"}
        return 406, {"jsonrpc": "2.0", "id": 2, "error": error}  # LIST's id

    assert against_the_proxy(probe) == [refused(missing), refused(missing), refused(partial), 200]


def test_a_body_over_the_limit_is_a_413_and_is_not_read_whole() -> None:
    """The SDK refuses a body over 4 MiB unread (413); the batch check in front of it read the
    whole body into memory first. Declared (Content-Length) or streamed (chunked), it is now
    refused at the limit, in the JSON-RPC words of the other checks, and the session goes on."""
    chunk = b" " * (1 << 20)
    sent: list[int] = []

    async def streamed() -> Any:
        for _ in range(64):  # 64 MiB offered; the proxy stops reading past 4 MiB
            sent.append(len(chunk))
            yield chunk

    async def probe(http: httpx2.AsyncClient, url: str, session: dict[str, str]) -> Any:
        declared = await http.post(url, content=b" " * (MAX_BODY + 1), headers=session)
        try:
            chunked = (await http.post(url, content=streamed(), headers=session)).status_code
        except httpx2.HTTPError:  # the server may close before the rest is sent
            chunked = None
        after = await http.post(url, json=LIST, headers=session)
        return answer(declared), chunked, after.status_code

    declared, chunked, after = against_the_proxy(probe)
    message = f"Payload Too Large: a request body may hold at most {MAX_BODY:,} bytes"
    assert declared == (
        413,
        {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}},
    )
    assert chunked in (413, None) and sent  # the client may send on; the server stops reading
    assert after == 200
