"""A stdio client's unusable lines through the real ``toolwatch proxy`` process: each gets the
JSON-RPC error it calls for (or, blank lines and null-id errors, none), the session then
answers a good call, and no part of a bad line reaches the proxy's log.
"""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from support.proxy_fuzz_cases import ENVELOPE
from support.proxy_fuzz_http import jsonrpc, text_of
from support.proxy_process import ProxyProcess

CANARY = "CANARY-stdio-7f3e"
ECHO = {"name": "echo", "arguments": {"text": CANARY}}

# (line, the error code and id answered; None: no answer)
BAD: list[tuple[str, tuple[int, Any] | None]] = [
    (f"not json {CANARY}", (-32700, None)),
    (json.dumps(jsonrpc("tools/call", ECHO, {"k": CANARY})), (-32600, None)),  # object id
    (json.dumps(jsonrpc("ping", None, True)), (-32600, None)),
    (json.dumps(jsonrpc("ping", None, 1.5)), (-32600, None)),
    (
        json.dumps({"jsonrpc": "2.0", "id": "bad-7", "method": "tools/call", "params": CANARY}),
        (-32600, "bad-7"),
    ),
    (json.dumps([jsonrpc("tools/call", ECHO, "bad-8")]), (-32600, None)),  # a batch
    (
        json.dumps({"jsonrpc": "2.0", "id": f"never-{CANARY}", "result": {"x": CANARY}}),
        (-32600, None),
    ),
    ("   ", None),
    (json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": CANARY}}), None),
]


class _Raw:
    """The client end of a stdio proxy: raw lines out, every line the proxy writes queued."""

    def __init__(self, proxy: ProxyProcess) -> None:
        assert proxy.proc.stdin is not None and proxy.proc.stdout is not None
        self.stdin, self.stdout = proxy.proc.stdin, proxy.proc.stdout
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.stdout:
            self.lines.put(json.loads(line))

    def send(self, line: str | dict[str, Any]) -> None:
        text = line if isinstance(line, str) else json.dumps(line)
        self.stdin.write(text.encode() + b"\n")
        self.stdin.flush()

    def next(self, timeout: float = 15) -> dict[str, Any]:
        return self.lines.get(timeout=timeout)


def _start(tmp: Path, modern: bool) -> tuple[ProxyProcess, _Raw, dict[str, Any]]:
    proxy = ProxyProcess(tmp, "stdio")
    raw = _Raw(proxy)
    meta = {"_meta": ENVELOPE} if modern else {}
    if not modern:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        raw.send(jsonrpc("initialize", init, "init"))
        assert raw.next()["id"] == "init"
        raw.send(jsonrpc("notifications/initialized", None))
    return proxy, raw, meta


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_each_bad_line_gets_its_error_once_and_the_session_goes_on(
    tmp_path: Path, modern: bool
) -> None:
    proxy, raw, meta = _start(tmp_path, modern)
    try:
        for line, _ in BAD:
            raw.send(line)
        raw.send(jsonrpc("tools/call", ECHO | meta, "good-1"))
        got = [raw.next() for _ in range(sum(1 for _, e in BAD if e is not None) + 1)]
    finally:
        log = proxy.stop()
    *errors, good = got
    assert [(e["error"]["code"], e["id"]) for e in errors] == [e for _, e in BAD if e]
    assert errors[0]["error"]["message"] == "Parse error: a line that is not JSON"
    assert good["id"] == "good-1" and text_of(good) == CANARY
    assert proxy.proc.returncode == 0
    assert CANARY not in log and "Traceback" not in log
    assert "WARNING" in log and "stdio client sent a line that is not JSON; answered -32700" in log
    assert log.count("stdio client sent a request whose id") == 1  # 3 such lines: rate-limited
    assert (
        "stdio client's unusable lines: 1 × JSON that is no JSON-RPC message, "
        "1 × a JSON array (MCP has no batches), 1 × a blank line, "
        "1 × a line that is not JSON, 3 × a request whose id is neither a string nor an "
        "integer, 1 × an answer to no request this server sent, "
        "1 × an error answer whose id is null"
    ) in log


def test_the_answer_to_a_request_the_proxy_sent_is_no_stray(tmp_path: Path) -> None:
    proxy, raw, _ = _start(tmp_path, modern=False)
    try:
        raw.send(jsonrpc("tools/call", {"name": "ask", "arguments": {}}, "good-ask"))
        asked = raw.next()
        assert asked["method"] == "elicitation/create", asked
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"action": "accept", "content": {"name": "Ann"}},
            }
        )
        answer = raw.next()
    finally:
        log = proxy.stop()
    assert answer["id"] == "good-ask" and text_of(answer) == "hi Ann", answer
    assert "unusable" not in log and "stdio client sent" not in log
