"""End to end: a real MCPServer over stdio (subprocess) → instrumented mcp client → the real
OTLP/HTTP exporter → the real collector on a loopback port → Parquet → DuckDB.

DuckDB must return exactly the rows the test predicts from what it did: tools, sizes (by the
byte basis, computed here independently), failures and their classes, response ids, agents,
labels and order. A second test replays stored-style records through the same collector and
gets every field back.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import CallToolResult

from support.mcp_test_server import SERVER_NAME
from support.paths import MCP_TEST_SERVER
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.instrumentation import (
    configure_otlp,
    conversation,
    instrument,
    model_response,
    send_records,
    uninstrument,
)
from toolwatch.record import CALL_FIELD_NAMES, CallRecord

SERVER_SCRIPT = MCP_TEST_SERVER
SERVICE = "e2e-agent"
TIMEOUT_S = 0.5
TEXT = "naïve café ☕"


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def text_bytes(result: CallToolResult) -> int:
    return sum(len(block.text.encode()) for block in result.content)  # type: ignore[union-attr]


async def agent_session(client: Client, session_id: str) -> dict[str, Any]:
    """A scripted agent; returns the listing and the results the expectations need."""
    seen: dict[str, Any] = {"listing": await client.list_tools()}
    with conversation(session_id):
        with model_response("msg_01"):
            seen["echo"] = await client.call_tool("echo", {"text": TEXT})
            await client.call_tool("fail", {"reason": "quota"})
        with model_response("msg_02"):  # two parallel calls of one response
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "echo", {"text": "par-A"})
                tg.start_soon(client.call_tool, "echo", {"text": "par-B"})
        with model_response("msg_03"):
            seen["crash"] = await client.call_tool("crash", {"note": "n"})
            with pytest.raises(MCPError):
                await client.call_tool("reject", {"value": "v"})
            with pytest.raises(MCPError):
                await client.call_tool(
                    "slow", {"seconds": 5.0, "text": "t"}, read_timeout_seconds=TIMEOUT_S
                )
        with model_response("msg_04", agent_id="sub-1"):
            await client.call_tool("picture", {"n": 300})
            await client.call_tool("structured", {"n": 2, "text": TEXT})
        await client.call_tool("labelled", {"text": "lbl", "label": "runaway"})  # no response
    return seen


def expected_rows(seen: dict[str, Any], session_id: str) -> list[tuple[Any, ...]]:
    """(seq, tool, input_bytes, output_bytes, failed, error_type, response_id, agent, label)."""
    picture = len(base64.b64encode(bytes(i % 256 for i in range(300))))
    rows = [
        ("echo", {"text": TEXT}, len(TEXT.encode()), None, "msg_01", None, None),
        ("fail", {"reason": "quota"}, len(b"failed: quota"), "tool_error", "msg_01", None, None),
        ("echo", {"text": "par-A"}, 5, None, "msg_02", None, None),
        ("echo", {"text": "par-B"}, 5, None, "msg_02", None, None),
        ("crash", {"note": "n"}, text_bytes(seen["crash"]), "tool_error", "msg_03", None, None),
        ("reject", {"value": "v"}, None, "-32602", "msg_03", None, None),
        ("slow", {"seconds": 5.0, "text": "t"}, None, "timeout", "msg_03", None, None),
        ("picture", {"n": 300}, picture, None, "msg_04", "sub-1", None),
        (
            "structured",
            {"n": 2, "text": TEXT},
            compact({"n": 2, "text": TEXT}),
            None,
            "msg_04",
            "sub-1",
            None,
        ),
        ("labelled", {"text": "lbl", "label": "runaway"}, 3, None, "AUTO", None, "runaway"),
    ]
    return [
        (seq, tool, compact(args), out, err is not None, err, rid, agent, label)
        for seq, (tool, args, out, err, rid, agent, label) in enumerate(rows)
    ]


def test_stdio_agent_to_duckdb(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    session_id = f"e2e-{uuid.uuid4().hex}"
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)])

    with Collector(store) as collector:
        provider = configure_otlp(collector.url, SERVICE)
        instrument(tracer_provider=provider)

        async def main() -> dict[str, Any]:
            async with Client(params) as client:
                return await agent_session(client, session_id)

        try:
            seen = anyio.run(main)
        finally:
            uninstrument()
            provider.shutdown()  # the batch goes out before the collector stops

    con = store.connect()
    try:
        rows = con.execute(
            """SELECT seq, tool, input_bytes, output_bytes, failed, error_type,
                      CASE WHEN response_id = 'auto-' || span_id THEN 'AUTO'
                           ELSE response_id END,
                      agent_id, label
               FROM calls WHERE session_id = ? ORDER BY seq""",
            [session_id],
        ).fetchall()
        common = con.execute(
            """SELECT DISTINCT server, source, service FROM calls WHERE session_id = ?""",
            [session_id],
        ).fetchall()
        slow_us = con.execute(
            "SELECT duration_us FROM calls WHERE session_id = ? AND tool = 'slow'", [session_id]
        ).fetchone()
        order_by_time = con.execute(
            """SELECT seq FROM calls WHERE session_id = ? AND response_id <> 'msg_02'
               ORDER BY start_time""",
            [session_id],
        ).fetchall()
        session = con.execute(
            "SELECT calls, failures, responses, subagents FROM sessions WHERE session_id = ?",
            [session_id],
        ).fetchone()
        listed = con.execute(
            "SELECT tool, digest FROM tool_lists WHERE server = ? ORDER BY tool", [SERVER_NAME]
        ).fetchall()
        trace_ids = con.execute(
            "SELECT count(DISTINCT trace_id), count(DISTINCT span_id) FROM calls"
        ).fetchone()
    finally:
        con.close()

    assert rows == expected_rows(seen, session_id)
    assert common == [(SERVER_NAME, "otlp", SERVICE)]
    assert slow_us is not None and slow_us[0] >= TIMEOUT_S * 1e6 * 0.9
    assert [r[0] for r in order_by_time] == [0, 1, 4, 5, 6, 7, 8, 9]
    assert session == (10, 4, 5, 1)  # 5 distinct responses: 4 declared + 1 synthetic
    assert trace_ids == (10, 10)  # no parent span: each call is its own trace
    expected_digests = sorted(
        (
            t.name,
            hashlib.sha256(
                json.dumps(
                    [t.name, t.description or "", t.input_schema],
                    sort_keys=True,
                    separators=(",", ":"),
                    ensure_ascii=False,
                ).encode()
            ).hexdigest(),
        )
        for t in seen["listing"].tools
    )
    assert sorted(set(listed)) == expected_digests


def test_replayed_records_round_trip(tmp_path: Path) -> None:
    t0 = datetime(2026, 5, 6, 7, 8, 9, 123_456, tzinfo=UTC)
    records = [
        CallRecord(
            trace_id=f"{0xFEED0000 + i:032x}",
            span_id=f"{0xBEEF0000 + i:016x}",
            session_id="replayed-1",
            agent_id="sub-2" if i == 3 else None,
            seq=i,
            tool=["Read", "mcp__github__search", "Bash"][i % 3],
            server="github" if i % 3 == 1 else None,
            start_time=t0 + timedelta(seconds=2.5 * i),
            duration_us=None if i == 3 else 10_000 + i,  # unknown stays unknown, not 0
            input_bytes=50 + 7 * i,
            output_bytes=None if i == 2 else 900 + i,
            failed=i == 4,
            error_type="tool_error" if i == 4 else None,
            response_id=f"msg_{i // 2}",
            call_id=f"toolu_{i:02d}",
            source="import",
            service="claude-code",
            restamped=i == 1,
            output_truncated=i == 5,
            label="exfiltration" if i == 5 else None,
        )
        for i in range(6)
    ]
    store = Store(tmp_path / "store")
    with Collector(store) as collector:
        assert send_records(records, collector.url, batch=4) == 6
    table = store.query(f"SELECT {', '.join(CALL_FIELD_NAMES)} FROM calls ORDER BY seq")
    got = table.to_pylist()
    # fields_present is the collector's note of what each span carried (the replay sends
    # every non-null field), received_time its write's arrival mark: not fields of the record
    present = [row.pop("fields_present") for row in got]
    assert all(row.pop("received_time") is not None for row in got)
    notes = ("fields_present", "received_time")
    assert got == [{k: v for k, v in r.as_dict().items() if k not in notes} for r in records]
    assert "input_bytes" in present[0] and "output_bytes" not in present[2]
