"""End to end: strings a server controls (a ``_meta`` label, a tool name) of any length and
text → instrumented client → the real exporter → the real collector. Every span is stored, with
the strings cut to the record's limit and marked; the collector rejects none that the
agent's delivery counted as exported (it once rejected them all: 5,000-byte label, 0 rows)."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import LABEL_META_KEY
from toolwatch.instrumentation import (
    configure_otlp,
    conversation,
    delivery,
    instrument,
    uninstrument,
)
from toolwatch.record import MAX_STRING_BYTES, TRUNCATION_MARK

LONG_TOOL = "L" * 5000
LONG_LABEL = "x" + "é" * 3000  # 6,001 bytes: the cut falls inside a 2-byte character


def _server() -> MCPServer:
    server = MCPServer("hostile")

    @server.tool(structured_output=False)
    def read(label: str) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="data")], _meta={LABEL_META_KEY: label}
        )

    @server.tool(name=LONG_TOOL, structured_output=False)
    def long_named() -> str:
        return "ok"

    return server


def test_server_strings_are_cut_to_what_the_collector_stores(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    with Collector(store, compact_interval=None) as collector:
        provider = configure_otlp(collector.url, "hostile-" + "s" * 5000)
        instrument(tracer_provider=provider, provenance=False)

        async def main() -> None:
            async with Client(_server()) as client:
                with conversation("hostile-strings"):
                    await client.list_tools()
                    await client.call_tool("read", {"label": "x" * 5000})
                    await client.call_tool("read", {"label": LONG_LABEL})
                    await client.call_tool("read", {"label": "cut\udcff"})
                    await client.call_tool(LONG_TOOL, {})

        try:
            anyio.run(main)
        finally:
            uninstrument()
        provider.force_flush()
        sent = delivery(provider)
        assert sent is not None and sent.exported == sent.ended == 5 and not sent.lost
        assert collector.check_delivery(sent) is None  # received all, rejected none
        provider.shutdown()
    calls = store.query("SELECT tool, label, service FROM calls ORDER BY seq").to_pylist()
    cut_tool = "L" * (MAX_STRING_BYTES - len(TRUNCATION_MARK)) + TRUNCATION_MARK
    cut_service = ("hostile-" + "s" * 5000)[: MAX_STRING_BYTES - 14] + TRUNCATION_MARK
    cut_label = "x" + "é" * ((MAX_STRING_BYTES - len(TRUNCATION_MARK)) // 2 - 1) + TRUNCATION_MARK
    assert calls == [
        {"tool": "read", "label": "x" * 4082 + "...[truncated]", "service": cut_service},
        {"tool": "read", "label": cut_label, "service": cut_service},
        {"tool": "read", "label": "cut\ufffd", "service": cut_service},  # valid UTF-8
        {"tool": cut_tool, "label": None, "service": cut_service},
    ]
    assert len(cut_label.encode()) == MAX_STRING_BYTES - 1  # cut at a character boundary
    listed = store.query("SELECT tool FROM tool_lists ORDER BY tool").to_pylist()
    assert [row["tool"] for row in listed] == [cut_tool, "read"]
