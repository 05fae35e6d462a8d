"""Privacy of the proxy's newer paths, from the outside: ``toolwatch -v proxy --transport http``
(every logger at DEBUG) in front of a hand-written stdio upstream that writes a canary into
every kind of line the stdio watch handles — answers that are no JSON-RPC (a lone surrogate, no
result, a result nested 5,000 deep) for a request in flight, log lines and stray JSON, answers
to ids never sent (the canary as the id too) — and HTTP requests the spec checks refuse (a
batch, no Accept, an unsupported MCP-Protocol-Version) carrying the canary. The canary is in no
form (verbatim, shingles, hashes) in the proxy's stderr or in any answer but the results the
upstream sent it in (positive control: those reach the client).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from support.canary import assert_absent, make_canary
from support.proxy_process import ProxyProcess
from toolwatch.injection.commands import proxy as proxy_command
from toolwatch.injection.proxy.proxy import http_server, run_proxy
from toolwatch.injection.proxy.sdk_logs import CONTENT_FREE, content_free_sdk_logs

#: Speaks MCP by hand, so that it can write what no SDK server would; the canary by environment
#: (the proxy logs the upstream's command line).
UPSTREAM = textwrap.dedent(
    r"""
    import json, os, sys

    C = os.environ["TW_CANARY"]
    DEPTH = 5000

    def send(data):
        os.write(1, data if isinstance(data, bytes) else (json.dumps(data) + "\n").encode())

    def text(mid, body):
        block = {"type": "text", "text": body}
        return {"jsonrpc": "2.0", "id": mid, "result": {"content": [block]}}

    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        mid, method = msg["id"], msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
        elif method == "tools/list":
            names = ("echo", "garbled", "no_result", "deep", "chatty", "wrong_id", "refuse")
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            if name == "garbled":  # a lone surrogate: not JSON for pydantic
                head = json.dumps(text(mid, C))[:-5]
                send(head.encode() + b' \\ud800"}]}}\n')
            elif name == "no_result":
                send({"jsonrpc": "2.0", "id": mid, "secret": C})
            elif name == "deep":  # past every parser's depth
                body = '{"a":[' * DEPTH + json.dumps(C) + "]}" * DEPTH
                send(('{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (json.dumps(mid), body)).encode())
            elif name == "chatty":
                send(("log: " + C + "\n").encode())
                send({"note": C})
                send({"jsonrpc": "2.0", "method": C, "params": {"c": C}})
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": C, "data": C}})
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": C, "progress": C, "message": C}})
                send({"jsonrpc": "2.0", "id": mid, "result": C})  # result not an object
                send(text(mid, C))
            elif name == "wrong_id":
                send(text(C, C))
                send(text(99999, C))
                send({"jsonrpc": "2.0", "id": C, "error": {"code": 1, "message": C}})
                send(text(mid, C))
            elif name == "refuse":
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": C,
                      "data": {"c": C}}})
            else:
                send(text(mid, C))
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
    """
)


def _start(tmp_path: Path, canary: str) -> ProxyProcess:
    """``toolwatch -v proxy --transport http`` in front of the hostile upstream."""
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    env = {**os.environ, "TW_CANARY": canary}
    return ProxyProcess(tmp_path, "http", upstream=script, verbose=True, env=env)


def _raw(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("POST", parts.path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _refused(url: str, canary: str, version_canary: str) -> list[tuple[str, int, bytes]]:
    """The spec checks' refusals, each request carrying the canary."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"q": canary}},
    }
    both = "application/json, text/event-stream"
    asks = {
        "a batch": (json.dumps([call, call]), {"Accept": both}),
        "no Accept": (json.dumps(call), {}),
        "an Accept without SSE": (json.dumps(call), {"Accept": "application/json"}),
        "a version": (json.dumps(call), {"Accept": both, "MCP-Protocol-Version": version_canary}),
        "not JSON": (f'{{"jsonrpc":"2.0","id":1,"method":"{canary}', {"Accept": both}),
    }
    out = []
    for what, (body, headers) in asks.items():
        status, answer = _raw(url, body.encode(), {"Content-Type": "application/json", **headers})
        out.append((what, status, answer))
    return out


async def _calls(url: str, mode: str, canary: str) -> tuple[list[str], list[str]]:
    """(what the client was given in results, the error messages)."""
    results: list[str] = []
    errors: list[str] = []
    async with Client(url, mode=mode, read_timeout_seconds=15) as client:  # type: ignore[arg-type]
        for tool in ("echo", "garbled", "no_result", "deep", "chatty", "wrong_id", "refuse"):
            try:  # a line nested past every parser is tied to no call: that one times out
                with anyio.fail_after(20):
                    result = await client.call_tool(
                        tool,
                        {"q": canary, "nested": [{"c": canary}]},
                        read_timeout_seconds=2 if tool == "deep" else 15,
                    )
                results += [getattr(b, "text", "") for b in result.content]
            except MCPError as exc:
                errors.append(f"{tool}: {exc.error.message} {exc.error.data}")
    return results, errors


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_no_canary_through_the_stdio_watch_and_the_http_checks(tmp_path: Path, mode: str) -> None:
    canary, version_canary = make_canary(), make_canary()
    proxy = _start(tmp_path, canary)
    try:
        refused = _refused(proxy.url, canary, version_canary)
        results, errors = anyio.run(_calls, proxy.url, mode, canary)
    finally:
        log = proxy.stop(30)
    statuses = {what: status for what, status, _ in refused}
    assert statuses == {
        "a batch": 400,
        "no Accept": 406,
        "an Accept without SSE": 406,
        "a version": 400,
        "not JSON": 400,
    }
    for what, _, answer in refused:
        assert_absent(answer, canary, f"the answer to {what}")
    assert sum(canary in r for r in results) == 2  # echo, wrong_id: the canary came back
    assert any(e.startswith("refuse: ") and canary in e for e in errors)  # the upstream's own
    unusable = [e for e in errors if "unusable stdio answer" in e]
    assert [e.split(":")[0] for e in unusable] == ["garbled", "no_result", "chatty"], errors
    for message in unusable:
        assert_absent(message, canary, "an unusable answer's error")
    assert any(e.startswith("deep: ") and "timed out" in e for e in errors), errors
    assert "wrote a line that is not JSON-RPC" in log  # the watch spoke, at -v
    assert "answer whose id matches no request in flight" in log
    assert "RecursionError" not in log and "reconnect" not in log  # the deep line: counted only
    assert_absent(log, canary, "the proxy's stderr")
    assert_absent(log, version_canary, "the proxy's stderr (the version header)")


#: Loggers ``toolwatch proxy`` sets to WARNING: the SDK's HTTP client logs every message it
#: sends and every SSE message at DEBUG, whole.
QUIETED = ("httpx", "httpx2", "mcp.client.streamable_http")


def test_no_canary_through_the_listen_relay(caplog: pytest.LogCaptureFixture) -> None:
    """``subscriptions/listen`` relayed over real HTTP on both sides, the canary in the
    subscribed resource's URI, its update and the tool's result, every logger at DEBUG under
    the commands' content-free SDK logging: the events reach the client, the log holds none."""
    canary = make_canary()
    uri = f"memo://{canary}"
    upstream = MCPServer("changing")

    @upstream.tool(description="Rewrites the memo.")
    async def touch(ctx: Context, text: str) -> str:
        await ctx.notify_resource_updated(uri)
        await ctx.notify_tools_changed()
        return text

    @upstream.resource(uri, description="A memo.")
    def memo() -> str:
        return canary

    events: list[object] = []
    texts: list[str] = []

    async def main() -> None:
        async with (
            http_server(upstream) as up,
            run_proxy(None, up.url) as proxy,
            http_server(proxy) as front,
            Client(front.url) as client,
        ):
            async with client.listen(
                tools_list_changed=True, resource_subscriptions=[uri]
            ) as subscription:
                assert subscription.honored.resource_subscriptions == [uri]
                with anyio.fail_after(10):
                    result = await client.call_tool("touch", {"text": canary})
                    texts.append(result.content[0].text)  # type: ignore[union-attr]
                    events.extend([await subscription.__anext__() for _ in range(2)])
            texts.append(str(await client.read_resource(uri)))

    loggers = content_free_sdk_logs()
    quiet = [logging.getLogger(n) for n in QUIETED]  # as toolwatch proxy sets them
    levels = [logger.level for logger in quiet]
    try:
        proxy_command._quiet_http_logs()
        with caplog.at_level(logging.DEBUG):
            anyio.run(main)
    finally:
        for logger in loggers:
            logger.removeFilter(CONTENT_FREE)
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)
    assert ResourceUpdated(uri=uri) in events and ToolsListChanged() in events
    assert all(canary in t for t in texts)
    assert "Initializing server 'changing'" in caplog.text  # DEBUG lines were captured
    assert_absent(caplog.text, canary, "the log")
