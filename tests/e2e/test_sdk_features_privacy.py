"""Privacy over the mcp SDK's less common features: one canary in the arguments, the result
text, the structured content, the progress and log messages sent during a call, a tool error,
JSON-RPC error messages and the last words of a server that dies mid-call. It reaches the agent
every time (the positive control) and nowhere else: not in any span (name, attribute, event,
status, resource) kept by an in-memory exporter, not in any byte of the real collector's store
(files, decoded Parquet, every table and view), not in any toolwatch log line at DEBUG.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.canary import assert_absent, assert_store_clean, make_canary
from support.collector import rows
from support.feature_server import LONG_NAME, feature_server_over_stdio
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.instrumentation import configure_otlp, instrument, model_response, uninstrument


async def exercise(canary: str, heard: list[str]) -> None:
    """Every feature with the canary in its content; ``heard`` gets what reached the agent."""

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(f"progress {message}")

    async def on_log(params: Any) -> None:
        heard.append(f"log {params.data}")

    async with Client(
        feature_server_over_stdio(), logging_callback=on_log, log_level="info"
    ) as client:
        await client.list_tools()
        with model_response("resp-features", conversation_id="conv-features"):
            typed = await client.call_tool("typed", {"text": canary})
            heard.append(f"structured {typed.structured_content}")
            bare = await client.call_tool("bare", {"text": canary})
            heard.append(f"structured {bare.structured_content}")
            await client.call_tool(
                "chatty", {"text": canary, "n": 2}, progress_callback=on_progress
            )
            failed = await client.call_tool("fail", {"text": canary})
            heard.append(f"tool error {failed.content[0].text}")  # type: ignore[union-attr]
            for code in (-32602, -32000):
                with pytest.raises(MCPError) as error:
                    await client.call_tool("reject", {"text": canary, "code": code})
                heard.append(f"error {error.value.message}")
            await client.call_tool(LONG_NAME, {"text": canary})
            with pytest.raises(MCPError):
                await client.call_tool("die", {"text": canary}, read_timeout_seconds=10)


def test_no_canary_leaves_from_any_sdk_feature(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    canary, heard = make_canary(), []
    store = Store(tmp_path / "store")
    collector = Collector(store)
    collector.start()
    memory = InMemorySpanExporter()
    try:
        provider = configure_otlp(collector.url, "features-agent")
        provider.add_span_processor(SimpleSpanProcessor(memory))  # every span, unfiltered
        instrument(tracer_provider=provider)
        with caplog.at_level(logging.DEBUG):
            try:
                anyio.run(exercise, canary, heard, backend="asyncio")
            finally:
                uninstrument()
                provider.shutdown()  # flush to the collector
    finally:
        collector.stop()

    # the positive control: the canary reached the agent by every path
    kinds = {line.split(" ", 1)[0] for line in heard if canary in line}
    assert kinds == {"structured", "progress", "log", "tool", "error"}
    assert sum(line.startswith(("progress", "log")) for line in heard) == 4

    spans = memory.get_finished_spans()
    assert sum(s.name.startswith("tools/call ") for s in spans) == 8
    for span in spans:
        assert_absent(span.to_json(), canary, f"span {span.name}")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("toolwatch")]
    assert_absent("\n".join(lines), canary, "toolwatch's log")

    calls = rows(store, "SELECT tool, error_type FROM calls ORDER BY seq")
    assert [(c["tool"], c["error_type"]) for c in calls] == [
        ("typed", None),
        ("bare", None),
        ("chatty", None),
        ("fail", "tool_error"),
        ("reject", "-32602"),
        ("reject", "-32000"),
        (LONG_NAME, None),  # 300 characters of non-ASCII, whole
        ("die", "connection_closed"),
    ]
    assert_store_clean(store, canary)
