"""The legacy SSE transport (``mcp.client.sse.sse_client`` against the SDK's own SSE server in
a uvicorn process): calls over it are recorded as over streamable HTTP — the sizes, the
failure classes (a tool error, a JSON-RPC error, three deadlines of the agent, the server
dying), the JSON-RPC id, ``network.transport=tcp`` — and no argument, result or error text
reaches a span.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.types import TextContent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from support.feature_server import feature_server_process_over_http
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_NETWORK_TRANSPORT,
    ATTR_RESULT_SIZE,
)
from toolwatch.instrumentation.client.sdk_hooks import OPEN_CALLS

CANARY = "sse-canary-7f3a"
WAIT_S = 0.3


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def spans_of(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("tools/")]


def every_text(span: ReadableSpan) -> list[str]:
    """Everything a span exports as text: its name, status, attributes and events."""
    texts = [span.name, span.status.description or ""]
    texts += [f"{k}={v!r}" for k, v in (span.attributes or {}).items()]
    for event in span.events:
        texts += [event.name] + [f"{k}={v!r}" for k, v in (event.attributes or {}).items()]
    return texts


def test_calls_over_sse_have_their_sizes_classes_and_ids_and_no_content(
    exporter: InMemorySpanExporter,
) -> None:
    """A typed result, a tool error, a JSON-RPC error quoting its argument, a call cut by each
    of anyio.fail_after, asyncio.timeout and asyncio.wait_for, and a call during which the
    server process exits: each span its own size and class; the canary in every argument (and
    so in the results and the error message) is in no span."""
    args = {"text": CANARY}
    slow = {"seconds": 30}
    typed_bytes: list[int] = []  # the typed reply's one text block, as the agent got it

    async def main() -> None:
        with feature_server_process_over_http("sse") as (url, _):
            async with Client(sse_client(url)) as client:
                await client.list_tools()
                typed = await client.call_tool("typed", args)
                block = typed.content[0]
                assert isinstance(block, TextContent) and CANARY in block.text
                typed_bytes.append(len(block.text.encode()))
                assert (await client.call_tool("fail", args)).is_error
                with pytest.raises(MCPError, match=CANARY):
                    await client.call_tool("reject", args)
                with pytest.raises(TimeoutError), anyio.fail_after(WAIT_S):
                    await client.call_tool("slow", slow)
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(WAIT_S):
                        await client.call_tool("slow", slow)
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(client.call_tool("slow", slow), WAIT_S)
                with pytest.raises(MCPError):
                    await client.call_tool("die", args, read_timeout_seconds=10)

    anyio.run(main, backend="asyncio")
    spans = spans_of(exporter)
    calls = spans[1:]
    assert [s.name for s in spans] == ["tools/list"] + [
        f"tools/call {t}" for t in ("typed", "fail", "reject", "slow", "slow", "slow", "die")
    ]
    attrs = [dict(s.attributes or {}) for s in calls]
    assert [a.get(ATTR_ERROR_TYPE) for a in attrs] == [
        None,
        "tool_error",
        "-32602",
        "timeout",
        "timeout",
        "timeout",
        "connection_closed",
    ]
    assert [a.get(ATTR_RESULT_SIZE) for a in attrs[:3]] == [*typed_bytes, len(CANARY), None]
    assert [a[ATTR_ARGUMENTS_SIZE] for a in attrs] == [compact(args)] * 3 + [compact(slow)] * 3 + [
        compact(args)
    ]
    assert len({a[ATTR_JSONRPC_REQUEST_ID] for a in attrs}) == len(calls)
    assert {dict(s.attributes or {}).get(ATTR_NETWORK_TRANSPORT) for s in spans} == {"tcp"}
    assert [s.status.status_code for s in calls[1:]] == [StatusCode.ERROR] * 6
    assert not [t for s in spans for t in every_text(s) if CANARY in t]


def test_an_sse_server_killed_mid_call_is_connection_closed_for_every_open_call(
    exporter: InMemorySpanExporter,
) -> None:
    """The uvicorn SSE server process is killed while two calls wait: the SDK answers both
    with its own "Connection closed", and both spans are ``connection_closed``."""
    raised: list[str] = []

    async def call(client: Client) -> None:
        try:
            await client.call_tool("slow", {"seconds": 30}, read_timeout_seconds=60)
        except BaseException as exc:
            raised.append(type(exc).__name__)
            raise

    async def main() -> None:
        with feature_server_process_over_http("sse") as (url, proc):
            async with Client(sse_client(url)) as client, anyio.create_task_group() as tg:
                tg.start_soon(call, client)
                tg.start_soon(call, client)
                with anyio.fail_after(20):
                    while len(OPEN_CALLS.get(client.session, ())) < 2:
                        await anyio.sleep(0.05)
                await anyio.sleep(WAIT_S)  # the server is inside both calls
                proc.kill()

    with pytest.raises(BaseExceptionGroup):
        anyio.run(main, backend="asyncio")
    assert raised == ["MCPError"] * 2
    assert [dict(s.attributes or {}).get(ATTR_ERROR_TYPE) for s in spans_of(exporter)] == [
        "connection_closed"
    ] * 2
