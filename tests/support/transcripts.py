"""Small hand-made Claude Code transcripts, line by line (the importer's tests): an assistant
line holding one call, a user line holding its result, and a two-call session."""

from __future__ import annotations

import json
from typing import Any

SID = "0d9c4f52-aaaa-4bbb-8ccc-000000000001"


def call_line(
    call_id: str, stamp: str, msg: str = "msg_1", session: str | None = SID, **extra: Any
) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "/x"}}
    line: dict[str, Any] = {
        "type": "assistant",
        "timestamp": stamp,
        "message": {"id": msg, "content": [block]},
        **extra,
    }
    if session is not None:
        line["sessionId"] = session
    return line


def result_line(call_id: str, stamp: str, text: str = "hello") -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    return {"type": "user", "sessionId": SID, "timestamp": stamp, "message": {"content": [block]}}


def relayed_line(stamp: str, agent: str, line: dict[str, Any]) -> dict[str, Any]:
    """A 2.1.x ``progress`` line of the session's file relaying one line of a subagent."""
    data = {"type": "agent_progress", "agentId": agent, "prompt": "look around", "message": line}
    return {"type": "progress", "sessionId": SID, "timestamp": stamp, "data": data}


def jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


SESSION = [
    call_line("toolu_1", "2026-03-01T10:00:00.000Z", "msg_1"),
    result_line("toolu_1", "2026-03-01T10:00:01.500Z"),
    call_line("toolu_2", "2026-03-01T10:00:05.000Z", "msg_2"),
    result_line("toolu_2", "2026-03-01T10:00:05.250Z", "hello world"),
]
