"""A misbehaving stdio upstream (a hand-written JSON-RPC server, a real subprocess) behind the
real fault proxy: bytes that are not UTF-8, and a listing that never comes."""

from __future__ import annotations

import functools
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from toolwatch.cli import main as cli_main
from toolwatch.injection.commands import proxy as command
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.injection.proxy.upstream import UpstreamUnavailable, upstream_command

PYTHON = sys.executable

#: Speaks MCP by hand so that it can answer what no SDK server would.
RAW = textwrap.dedent(
    r"""
    import json, os, sys

    def send(data):
        os.write(1, data if isinstance(data, bytes) else (json.dumps(data) + "\n").encode())

    def text(mid, body):
        head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % mid
        return head.encode() + body + b'"}]}}\n'

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
            if not os.environ.get("HANG_LIST"):
                tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("ok", "bad")]
                send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            send(text(mid, b"fine" if name == "ok" else b"\xff\xfe\x80"))
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
    """
)


def raw_upstream(tmp_path: Path) -> Path:
    script = tmp_path / "raw.py"
    script.write_text(RAW)
    return script


def test_a_response_that_is_not_utf8_is_forwarded_with_the_bytes_replaced(
    tmp_path: Path,
) -> None:
    """One such line used to kill the SDK's stdout reader without closing the connection:
    that call and every later one (new clients too) hung."""
    script = raw_upstream(tmp_path)
    texts: list[str] = []

    async def main() -> None:
        for target in (
            upstream_command(f"{PYTHON} {script}"),
            StdioServerParameters(command=PYTHON, args=[str(script)]),
        ):
            with anyio.fail_after(20):
                async with run_proxy(None, target) as proxy:
                    for _ in range(2):  # a second client of the same proxy
                        async with Client(proxy, read_timeout_seconds=5) as client:
                            for tool in ("bad", "ok"):
                                result = await client.call_tool(tool, {})
                                texts.append(result.content[0].text)
                    assert proxy.upstream.connects == 1

    anyio.run(main)
    assert texts == ["\ufffd\ufffd\ufffd", "fine"] * 4


def test_an_upstream_that_never_lists_its_tools_fails_the_start_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It completes the handshake, then never answers tools/list: the start hung forever."""
    script = raw_upstream(tmp_path)
    monkeypatch.setenv("HANG_LIST", "1")
    target = upstream_command(f"{PYTHON} {script}")
    name = f"{PYTHON} {script}"

    async def main() -> None:
        with anyio.fail_after(20), pytest.raises(UpstreamUnavailable) as info:
            async with run_proxy(None, target, connect_timeout=1):
                pass
        assert str(info.value) == f"upstream {name} did not answer tools/list within 1 s"

    started = time.monotonic()
    anyio.run(main)
    assert time.monotonic() - started < 10
    monkeypatch.setattr(command, "run_proxy", functools.partial(run_proxy, connect_timeout=1))
    assert cli_main(["proxy", "--upstream-cmd", name]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"toolwatch proxy: upstream {name} did not answer tools/list within 1 s"
    ]
