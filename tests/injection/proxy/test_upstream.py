"""A misbehaving stdio upstream (a hand-written JSON-RPC server, a real subprocess) behind the
real fault proxy: bytes that are not UTF-8, a listing that never comes, lines that are not
JSON-RPC, answers to no request."""

from __future__ import annotations

import functools
import logging
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_types import INTERNAL_ERROR

from toolwatch.cli import main as cli_main
from toolwatch.injection.proxy import proxy as proxy_module
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.injection.proxy.sdk_logs import CONTENT_FREE, content_free_sdk_logs
from toolwatch.injection.proxy.stdio_watch import (
    NOT_JSON_RPC_ANSWERED,
    NOT_JSON_RPC_UNTIED,
    UNKNOWN_ID,
)
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
            if name == "garbled":  # a lone surrogate: not JSON
                send(text(mid, b"SECRET-RESULT \\ud800"))
            elif name == "no_result":
                send({"jsonrpc": "2.0", "id": mid, "secret": "SECRET-RESULT"})
            elif name == "chatty":  # a log line and stray JSON on stdout, then the answer
                send(b"SECRET-LOG starting up\n")
                send({"foo": "SECRET-LOG"})
                send(text(mid, b"fine"))
            elif name == "deep":  # an answer nested past every parser, then the answer
                body = b'{"a":[' * 5000 + b'"SECRET-RESULT"' + b"]}" * 5000
                send(b'{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (mid, body))
                send(text(mid, b"fine"))
            elif name == "wrong_id":  # an answer to a request never sent, then the answer
                send(text(mid + 1000, b"SECRET-RESULT"))
                send(text(mid, b"fine"))
            else:
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
    # the command imports run_proxy when it runs
    monkeypatch.setattr(proxy_module, "run_proxy", functools.partial(run_proxy, connect_timeout=1))
    assert cli_main(["proxy", "--upstream-cmd", name]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"toolwatch proxy: upstream {name} did not answer tools/list within 1 s"
    ]


@pytest.fixture
def sdk_logs() -> Iterator[None]:
    """The proxy command's content-free SDK logging, taken off again after the test."""
    loggers = content_free_sdk_logs()
    yield
    for logger in loggers:
        logger.removeFilter(CONTENT_FREE)


def test_an_answer_that_is_not_json_rpc_fails_its_call_at_once_without_its_content(
    tmp_path: Path, sdk_logs: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK logged each such line with a traceback whose pydantic message quoted it, and
    dropped it: the call waited for the client's timeout. An HTTP upstream's unusable answer
    failed its call at once; a stdio one now does too, naming the upstream and the error type."""
    script = raw_upstream(tmp_path)
    name = f"{PYTHON} {script}"
    errors: list[tuple[int, str]] = []

    async def main() -> None:
        async with (
            run_proxy(None, upstream_command(name)) as proxy,
            Client(proxy, read_timeout_seconds=30) as client,
        ):
            with anyio.fail_after(10):
                for tool in ("garbled", "no_result"):
                    with pytest.raises(MCPError) as info:
                        await client.call_tool(tool, {})
                    errors.append((info.value.error.code, info.value.error.message))
                assert (await client.call_tool("ok", {})).content[0].text == "fine"
            assert proxy.upstream.connects == 1  # the connection is kept
            assert proxy.upstream.stray == {NOT_JSON_RPC_ANSWERED: 2}

    with caplog.at_level(logging.INFO):
        anyio.run(main)
    prefix = f"toolwatch proxy: upstream {name}: unusable stdio answer: a line that is not JSON-RPC"
    assert errors == [
        (INTERNAL_ERROR, f"{prefix} (ValidationError: json_invalid)"),
        (INTERNAL_ERROR, f"{prefix} (ValidationError: missing)"),
    ]
    sdk = [r for r in caplog.records if r.name.startswith("mcp.")]
    assert [(r.name, r.getMessage()) for r in sdk if r.levelno >= logging.WARNING] == [
        (
            "mcp.client.stdio",
            "Failed to parse JSONRPC message from server (ValidationError: json_invalid)",
        ),
        (
            "mcp.client.stdio",
            "Failed to parse JSONRPC message from server (ValidationError: missing)",
        ),
    ]
    assert all(r.exc_info is None for r in sdk)
    assert "SECRET" not in caplog.text and "Traceback" not in caplog.text


def test_stdout_lines_tied_to_no_request_are_counted_and_said_and_the_call_waits_on(
    tmp_path: Path, sdk_logs: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A log line, stray JSON and an answer with an id never sent were dropped unsaid (the SDK
    logs an unknown id at debug). They cannot be tied to the call, whose own answer follows."""
    script = raw_upstream(tmp_path)
    name = f"{PYTHON} {script}"

    async def main() -> None:
        async with (
            run_proxy(None, upstream_command(name)) as proxy,
            Client(proxy, read_timeout_seconds=10) as client,
        ):
            for tool in ("chatty", "wrong_id"):
                assert (await client.call_tool(tool, {})).content[0].text == "fine"
            assert proxy.upstream.stray == {NOT_JSON_RPC_UNTIED: 2, UNKNOWN_ID: 1}

    with caplog.at_level(logging.INFO):
        anyio.run(main)
    said = [r.getMessage() for r in caplog.records if r.name.endswith("stdio_watch")]
    tail = "ignored, the calls in flight wait on"
    assert said == [
        f"upstream {name} wrote a line that is not JSON-RPC (ValidationError: json_invalid); "
        f"{tail} (1 so far)",
        f"upstream {name} wrote a line that is not JSON-RPC (ValidationError: missing); "
        f"{tail} (2 so far)",
        f"upstream {name} wrote an answer whose id matches no request in flight; {tail} (1 so far)",
    ]
    assert "SECRET" not in caplog.text and "Traceback" not in caplog.text


def test_an_answer_nested_past_the_parser_is_counted_and_the_connection_kept(
    tmp_path: Path, sdk_logs: None, caplog: pytest.LogCaptureFixture
) -> None:
    """Reading the id of an answer nested 5,000 deep raised RecursionError in the watch, which
    ended the connection: the upstream command was restarted (its state lost) and the call
    failed with "Connection closed". It is now a line tied to no request, counted and said; the
    call takes the answer that follows."""
    name = f"{PYTHON} {raw_upstream(tmp_path)}"

    async def main() -> None:
        async with (
            run_proxy(None, upstream_command(name)) as proxy,
            Client(proxy, read_timeout_seconds=10) as client,
        ):
            assert (await client.call_tool("deep", {})).content[0].text == "fine"
            assert (await client.call_tool("ok", {})).content[0].text == "fine"
            assert proxy.upstream.connects == 1
            assert proxy.upstream.stray == {NOT_JSON_RPC_UNTIED: 1}

    with caplog.at_level(logging.INFO):
        anyio.run(main)
    assert "RecursionError" not in caplog.text and "reconnect" not in caplog.text
    assert "SECRET" not in caplog.text and "Traceback" not in caplog.text


def test_cli_an_upstream_that_answers_garbage_at_start_is_two_lines_without_content(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    garbage = f"{PYTHON} -c 'print(\"SECRET garbage\")'"
    try:
        with caplog.at_level(logging.INFO):
            assert cli_main(["proxy", "--upstream-cmd", garbage]) == 1
    finally:
        for logger in content_free_sdk_logs():
            logger.removeFilter(CONTENT_FREE)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("mcp.")] == [
        "Failed to parse JSONRPC message from server (ValidationError: json_invalid)"
    ]
    logged = caplog.text.replace(garbage, "COMMAND")  # its name is said, its output is not
    assert "SECRET" not in logged and "Traceback" not in logged
    assert capsys.readouterr().err.splitlines() == [
        f"toolwatch proxy: cannot connect to upstream {garbage}: MCPError: Connection closed"
    ]
