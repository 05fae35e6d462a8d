"""An HTTP upstream with sessions (a pre-2026 server: it refuses ``server/discover``) behind the
real fault proxy, as a real process: when it forgets the proxy's session (a restart, an idle
expiry) it answers 404, and the proxy must start a new session rather than pass the upstream's
"Session not found" on to every later call; an HTTP answer that is no MCP answer (500, HTML, a
redirect elsewhere, a body that is not JSON-RPC) is an error naming the upstream."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from toolwatch.injection.proxy.proxy import UPSTREAM_UNAVAILABLE_KEY, http_server, run_proxy

PYTHON = sys.executable

#: A real SDK server over streamable HTTP that speaks only the initialize handshake (sessions).
LEGACY = textwrap.dedent(
    r"""
    import json, sys
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("legacy")

    @server.tool()
    def ok(x: int) -> str:
        return f"ok {x}"

    app = server.streamable_http_app()
    CANARY = "CANARY-UPSTREAM-BODY"
    BAD = {  # tool name -> what the upstream answers its tools/call with
        "status500": (500, "text/plain", f"internal error {CANARY}"),
        "html": (200, "text/html", f"<html>{CANARY} sign in</html>"),
        "moved": (307, "text/plain", ""),
        "garbled": (200, "text/event-stream", f"event: message\ndata: {{{CANARY}\n\n"),
    }

    async def legacy_only(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        request = json.loads(body or b"null")
        if isinstance(request, dict) and request.get("method") == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            return await send({"type": "http.response.body", "body": answer})
        name = request.get("params", {}).get("name") if isinstance(request, dict) else None
        if name in BAD:
            status, kind, text = BAD[name]
            headers = [(b"content-type", kind.encode()), (b"location", b"http://elsewhere.test/mcp")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            return await send({"type": "http.response.body", "body": text.encode()})
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    uvicorn.run(legacy_only, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(script: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([PYTHON, str(script), str(port)], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the legacy upstream exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the legacy upstream did not listen within 30 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_an_upstream_that_forgot_the_session_gets_a_new_one_and_the_call_goes_through(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    procs = [_start(script, port)]

    async def main() -> None:
        async with (
            run_proxy(None, url) as proxy,
            http_server(proxy) as front,
            # 2026-07-28: the proxy's shared upstream session (an auto client gets its own)
            Client(front.url, mode="2026-07-28", read_timeout_seconds=30) as client,
        ):
            assert proxy.upstream.client.protocol_version == "2025-11-25"  # a session, then
            assert (await client.call_tool("ok", {"x": 1})).content[0].text == "ok 1"
            _stop(procs[0])  # restarted: its sessions are gone
            procs.append(_start(script, port))
            for x in (2, 3):  # was: MCPError "Session not found" for this call and every later one
                assert (await client.call_tool("ok", {"x": x})).content[0].text == f"ok {x}"
            assert proxy.upstream.connects == 2

    try:
        with caplog.at_level(logging.INFO, logger="toolwatch.injection.proxy.proxy"):
            anyio.run(main)
    finally:
        for proc in procs:
            _stop(proc)
    said = f"proxy to {url} (upstream agreed to 2025-11-25, handshake era): transparent"
    assert said in caplog.text  # why a client may settle on the handshake era


def test_an_http_answer_that_is_no_mcp_answer_is_an_error_naming_the_upstream(
    tmp_path: Path,
) -> None:
    """The SDK made these up as JSON-RPC errors of its own ("Server returned an error
    response", pydantic's text quoting the body): the client could not tell them from the
    proxy's own failure, and the parse error carried the upstream's body."""
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = _start(script, port)
    expected = {
        "status500": "Server returned an error response",
        "html": "Unexpected content type: text/html",
        "moved": "Redirect to http://elsewhere.test/mcp not followed",
        "garbled": "Failed to parse SSE message",
    }
    errors: dict[str, tuple[str, object]] = {}

    async def main() -> None:
        async with (
            run_proxy(None, url) as proxy,
            http_server(proxy) as front,
            Client(front.url, read_timeout_seconds=30) as client,
        ):
            for name in expected:
                with pytest.raises(MCPError) as info:
                    await client.call_tool(name, {})
                errors[name] = (info.value.error.message, info.value.error.data)
            assert (await client.call_tool("ok", {"x": 1})).content[0].text == "ok 1"
            assert proxy.upstream.connects == 1  # the session was fine: no reconnect

    try:
        anyio.run(main)
    finally:
        _stop(proc)
    for name, words in expected.items():
        message, data = errors[name]
        assert message.startswith(f"toolwatch proxy: upstream {url}: unusable HTTP answer: {words}")
        assert "CANARY" not in message
        assert data == {UPSTREAM_UNAVAILABLE_KEY: "unavailable"}


def test_an_auto_client_settles_on_the_upstreams_era_through_the_http_proxy_as_directly(
    tmp_path: Path,
) -> None:
    """Directly, the upstream refuses an ``auto`` client's ``server/discover`` probe and the
    client falls back to ``initialize``. Through the proxy served over HTTP the probe used to
    succeed (2026-07-28, the shared upstream session, none of its own); the proxy now refuses it
    as the upstream does. A client that does not probe keeps 2026-07-28 with the proxy."""
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = _start(script, port)

    async def observe(target: str, mode: str = "auto") -> tuple[str, str]:
        async with Client(target, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            result = await client.call_tool("ok", {"x": 4})
            return client.protocol_version, result.content[0].text  # type: ignore[union-attr]

    async def main() -> tuple[tuple[str, str], tuple[str, str], tuple[str, str], int]:
        direct = await observe(url)
        async with run_proxy(None, url) as proxy, http_server(proxy) as front:
            proxied = await observe(front.url)
            modern = await observe(front.url, mode="2026-07-28")
            return direct, proxied, modern, proxy.sessions.opened if proxy.sessions else 0

    try:
        direct, proxied, modern, opened = anyio.run(main)
    finally:
        _stop(proc)
    assert direct == ("2025-11-25", "ok 4")
    assert proxied == direct
    assert opened == 1  # the auto client's own upstream session, as a direct connection has
    assert modern == ("2026-07-28", "ok 4")
