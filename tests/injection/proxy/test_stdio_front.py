"""``ClientLines.judge``: which stdio line gets which JSON-RPC error, without a process (the
process tests are in ``test_proxy_stdio_bad_lines.py``)."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from toolwatch.injection.proxy.stdio_front import (
    BAD_ID,
    NOT_JSON,
    NOT_JSON_RPC,
    STRAY_ANSWER,
    ClientLines,
    Refusal,
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
    assert ClientLines().judge(line) is None


def test_an_answer_to_a_request_the_server_sent_passes_even_late() -> None:
    lines = ClientLines()
    sent = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="roots/list")
    lines.outbound(SessionMessage(sent))
    late = '{"jsonrpc":"2.0","id":"7","error":{"code":-1,"message":"m"}}'  # ids coerced
    assert lines.judge(late) is None and lines.judge(late) is None


def test_a_refusal_answer_is_one_json_rpc_error_with_a_null_id() -> None:
    answer = Refusal(NOT_JSON, types.PARSE_ERROR).answer().message
    wire = json.loads(answer.model_dump_json(by_alias=True, exclude_unset=True))
    assert wire == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: a line that is not JSON"},
    }
