"""Privacy: argument, result, error-message and description canaries never leave the client.

Every canary is a fresh unique string. Checked: every byte of every OTLP export request (as
sent over real HTTP to a loopback receiver) and — through the real collector — every byte of
every file in the store, every decoded Parquet value and every row of every DuckDB table/view.
A structural marker (the declared conversation id) is checked to be present, so the search is
shown to work on the same bytes.
"""

from __future__ import annotations

import importlib
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from support.mcp_test_server import build_server
from support.otlp_sink import OTLPSink
from toolwatch.instrumentation import configure_otlp, instrument, model_response, uninstrument

N_TOOL_CALLS = 7


def make_canaries() -> dict[str, str]:
    return {
        kind: f"CANARY-{kind}-{uuid.uuid4().hex}"
        for kind in ("argument", "result", "error", "description", "timeout")
    }


async def exercise(client: Client, canaries: dict[str, str], marker: str) -> None:
    """Calls whose arguments, results, errors and descriptions carry the canaries."""
    listing = await client.list_tools()
    assert any(t.description == canaries["description"] for t in listing.tools)
    with model_response("resp-privacy", conversation_id=marker):
        result = await client.call_tool("echo", {"text": canaries["argument"]})
        assert result.content[0].text == canaries["argument"]  # type: ignore[union-attr]
        await client.call_tool("fail", {"reason": canaries["result"]})
        await client.call_tool("crash", {"note": canaries["error"]})
        with pytest.raises(MCPError, match=canaries["error"]):  # the message reaches us...
            await client.call_tool("reject", {"value": canaries["error"]})
        await client.call_tool("structured", {"n": 1, "text": canaries["result"]})
        await client.call_tool("described", {"text": canaries["argument"]})
        with pytest.raises(MCPError):
            await client.call_tool(
                "slow", {"seconds": 2.0, "text": canaries["timeout"]}, read_timeout_seconds=0.2
            )


def run_client(endpoint: str, canaries: dict[str, str], marker: str) -> None:
    provider = configure_otlp(endpoint, "privacy-agent")
    instrument(tracer_provider=provider)

    async def main() -> None:
        # legacy mode: real JSON-RPC framing, so the SDK's own send spans exist too
        async with Client(build_server(described=canaries["description"]), mode="legacy") as c:
            await exercise(c, canaries, marker)

    try:
        anyio.run(main)
    finally:
        uninstrument()
        provider.shutdown()  # flush


def assert_absent(haystack: bytes | str, canaries: dict[str, str], where: str) -> None:
    for kind, canary in canaries.items():
        needle: Any = canary.encode() if isinstance(haystack, bytes) else canary
        assert needle not in haystack, f"{kind} canary found in {where}"


def test_no_canary_in_any_exported_otlp_byte() -> None:
    canaries, marker = make_canaries(), f"conv-marker-{uuid.uuid4().hex}"
    with OTLPSink() as sink:
        run_client(sink.url, canaries, marker)
        raw = sink.raw()
        spans = sink.spans()
    assert sum(s["name"].startswith("tools/call ") for s in spans) == N_TOOL_CALLS
    assert marker.encode() in raw  # the search sees the exported bytes
    assert_absent(raw, canaries, "the OTLP export requests")
    for span in spans:  # decoded too: names, status messages, attributes, events
        assert_absent(repr(span), canaries, f"span {span['name']}")


# ------------------------------------------------------------------------------ collector


def collector_module() -> Any:
    try:
        return importlib.import_module("toolwatch.collector.otlp.server")
    except ModuleNotFoundError as exc:
        if exc.name != "toolwatch.collector.otlp.server":
            raise
        pytest.skip("toolwatch.collector.otlp.server (the Collector) is not built yet")


def test_no_canary_in_parquet_or_duckdb(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from toolwatch.collector.store.parquet_store import Store

    server = collector_module()
    canaries, marker = make_canaries(), f"conv-marker-{uuid.uuid4().hex}"
    store = Store(tmp_path / "store")
    collector = server.Collector(store)
    collector.start()
    try:
        run_client(collector.url, canaries, marker)
    finally:
        collector.stop()

    files = [p for p in store.root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    for path in files:
        assert_absent(path.read_bytes(), canaries, str(path))
        if path.suffix == ".parquet":  # compressed pages: check the decoded values too
            assert_absent(repr(pq.read_table(path).to_pylist()), canaries, f"{path} (decoded)")
    con = store.connect()
    try:
        names = [
            row[0]
            for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        ]
        assert {"calls", "sessions", "tool_lists"} <= set(names)
        for name in names:
            rows = con.execute(f'SELECT * FROM "{name}"').fetchall()
            assert_absent(repr(rows), canaries, f"DuckDB {name}")
        calls = con.execute("SELECT count(*) FROM calls WHERE session_id = ?", [marker]).fetchone()
        listed = con.execute("SELECT count(DISTINCT tool) FROM tool_lists").fetchone()
    finally:
        con.close()
    assert calls == (N_TOOL_CALLS,)  # the rows are there, only their content is not
    assert listed == (9,)  # the 8 test tools + the one whose description is a canary
