"""``ClientLines.judge``: which stdio line gets which JSON-RPC error, without a process (the
process tests are in ``test_proxy_stdio_bad_lines.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from support.mcp_test_server import build_server
from support.proxy_fuzz_http import PROBE_INITIALIZE
from toolwatch.injection.proxy.serving import lowlevel
from toolwatch.injection.proxy.stdio_front import (
    BAD_ID,
    NOT_JSON,
    NOT_JSON_RPC,
    STRAY_ANSWER,
    ClientLines,
    Refusal,
    screened_stdio,
)


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        ('{"jsonrpc":"2.0","id":1,"method":"ping"', Refusal(NOT_JSON, types.PARSE_ERROR)),
        ("[" * 5000 + "]" * 5000, Refusal(NOT_JSON, types.PARSE_ERROR)),  # past both parsers
        # valid JSON the SDK refuses (a lone surrogate): the id is still echoed when usable
        ('{"jsonrpc":"2.0","id":3,"method":"\\ud800"}', Refusal(NOT_JSON_RPC, -32600, 3)),
        ('{"jsonrpc":"2.0","id":"\\ud800","method":"x"}', Refusal(NOT_JSON_RPC, -32600, None)),
        ('{"jsonrpc":"1.0","id":"a","method":"ping"}', Refusal(NOT_JSON_RPC, -32600, "a")),
        ('{"jsonrpc":"2.0","id":4,"result":5}', Refusal(NOT_JSON_RPC, -32600, None)),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', Refusal(BAD_ID, -32600)),
        ('{"jsonrpc":"2.0","id":[1],"method":"ping"}', Refusal(BAD_ID, -32600)),
        ('{"jsonrpc":"2.0","id":"1","result":{}}', Refusal(STRAY_ANSWER, -32600)),
    ],
)
def test_bad_lines_get_the_error_json_rpc_names(line: str, refusal: Refusal) -> None:
    assert ClientLines().judge(line) == refusal


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"id"}}',
        '{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"id":{"a":1}}}',
    ],
)
def test_good_lines_pass(line: str) -> None:
    assert not isinstance(ClientLines().judge(line), Refusal)


def test_an_answer_to_a_request_the_server_sent_passes_even_late() -> None:
    lines = ClientLines()
    sent = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="roots/list")
    lines.outbound(SessionMessage(sent))
    late = '{"jsonrpc":"2.0","id":"7","error":{"code":-1,"message":"m"}}'  # ids coerced
    assert not isinstance(lines.judge(late), Refusal)
    assert not isinstance(lines.judge(late), Refusal)


def test_a_refusal_answer_is_one_json_rpc_error_with_a_null_id() -> None:
    answer = Refusal(NOT_JSON, types.PARSE_ERROR).answer().message
    wire = json.loads(answer.model_dump_json(by_alias=True, exclude_unset=True))
    assert wire == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: a line that is not JSON"},
    }


class _Counting:
    """``types.jsonrpc_message_adapter`` with its parses counted."""

    def __init__(self, adapter: Any) -> None:
        self.adapter, self.parses = adapter, 0

    def validate_json(self, *args: Any, **kwargs: Any) -> Any:
        self.parses += 1
        return self.adapter.validate_json(*args, **kwargs)


class _Out:
    """A stdout the SDK's writer can write to (``anyio.AsyncFile``'s two methods)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def write(self, text: str) -> None:
        self.lines.append(text)

    async def flush(self) -> None:
        return None


def test_each_client_line_is_parsed_once_and_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """The screen parsed every line to judge it, then the SDK's reader parsed it again: two
    pydantic parses a message (and a third, JSON, for every notification). The server now reads
    the screen's own message: one parse a line, the answers unchanged."""
    counting = _Counting(types.jsonrpc_message_adapter)
    monkeypatch.setattr(types, "jsonrpc_message_adapter", counting)
    sent = [
        json.dumps(PROBE_INITIALIZE),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call",'
        '"params":{"name":"echo","arguments":{"text":"hi"}}}',
    ]

    out = _Out()

    async def client() -> AsyncIterator[str]:
        for line in sent:
            yield line + "\n"
        with anyio.fail_after(10):  # EOF only once answered (it ends the calls in flight)
            while len(out.lines) < 3:
                await anyio.sleep(0.01)

    async def main() -> None:
        low = lowlevel(build_server())
        async with screened_stdio(client(), out) as (read, write):
            await low.run(read, write, low.create_initialization_options())

    anyio.run(main)
    assert counting.parses == len(sent) == 4
    answers = {m["id"]: m for m in map(json.loads, "".join(out.lines).splitlines())}
    assert sorted(answers) == [1, 2, 3] and "result" in answers[1]
    assert "echo" in [t["name"] for t in answers[2]["result"]["tools"]]
    assert answers[3]["result"]["content"][0]["text"] == "hi"
