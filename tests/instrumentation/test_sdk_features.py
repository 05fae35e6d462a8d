"""The mcp SDK's less common features as a real agent uses them, over each transport (in
memory, stdio, streamable HTTP): structured results, progress and log notifications during a
call, cancelled and timed-out calls, the three failure kinds, 50 calls at once on one session,
one session shared by two agents, a long non-ASCII tool name. One span per call, each with
its own numbers.

Expected sizes are computed here from the known arguments and results (compact JSON of the
arguments; the text blocks' UTF-8 bytes, else the structured content's compact JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from support.feature_server import (
    build_feature_server,
    feature_server_over_http,
    feature_server_over_stdio,
)
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_ERROR_TYPE,
    ATTR_RESULT_SIZE,
    ATTR_SESSION_POSITION,
)

TRANSPORTS = ["memory", "stdio", "http"]
WAIT_S = 0.3  # the client's patience in the timeout and cancel cases


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@contextmanager
def server(transport: str) -> Iterator[Any]:
    """What ``Client`` connects to, for each transport."""
    if transport == "http":
        with feature_server_over_http() as url:
            yield url
    else:
        yield build_feature_server() if transport == "memory" else feature_server_over_stdio()


def run(transport: str, body: Any, **client_options: Any) -> Any:
    """``body(client)`` inside a connected client of the feature server (tools listed)."""

    async def main() -> Any:
        with server(transport) as target:
            async with Client(target, **client_options) as client:
                await client.list_tools()
                return await body(client)

    return anyio.run(main, backend="asyncio")


def tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]
    return sorted(spans, key=lambda s: s.attributes[ATTR_SESSION_POSITION])  # type: ignore[index]


def attrs_of(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def seconds(span: ReadableSpan) -> float:
    assert span.start_time is not None and span.end_time is not None
    return (span.end_time - span.start_time) / 1e9


# ------------------------------------------------------------------------------ results


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_structured_results_and_notifications(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """A typed result (text block + structuredContent) counts its text block, as the model
    reads it; a structured-only one its compact JSON. Progress and log notifications during
    the call reach the agent and change nothing on the span."""
    text, progress, logged = "héllo ✓", [], []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def on_log(params: Any) -> None:
        logged.append(params.data)

    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool("typed", {"text": text}),
            await client.call_tool("bare", {"text": text}),
            await client.call_tool("chatty", {"text": text, "n": 3}, progress_callback=on_progress),
        ]

    typed, bare, chatty = run(transport, body, logging_callback=on_log, log_level="info")
    assert typed.structured_content == bare.structured_content == {"text": text}
    assert len(typed.content) == 1 and bare.content == [] and chatty.content[0].text == text
    assert [p[:2] for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert logged == [f"log {i}: {text}" for i in range(3)]
    spans = tool_spans(exporter)
    assert [s.name for s in spans] == ["tools/call typed", "tools/call bare", "tools/call chatty"]
    typed_text = typed.content[0].text
    assert json.loads(typed_text) == {"text": text} and typed_text != json.dumps({"text": text})
    expected = [
        (compact({"text": text}), len(typed_text.encode())),  # the text block, pretty JSON
        (compact({"text": text}), compact({"text": text})),  # no block: the structured JSON
        (compact({"text": text, "n": 3}), len(text.encode())),
    ]
    for span, (args_size, result_size) in zip(spans, expected, strict=True):
        attrs = attrs_of(span)
        assert (attrs[ATTR_ARGUMENTS_SIZE], attrs[ATTR_RESULT_SIZE]) == (args_size, result_size)
        assert ATTR_ERROR_TYPE not in attrs and span.status.status_code is StatusCode.UNSET
        assert not span.events


# ------------------------------------------------------------------------------ failures


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_cancelled_or_timed_out_is_one_span_of_its_own_class(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """The SDK's read timeout is ``timeout``; the agent's own cancel scope is ``cancelled`` (it
    was ``CancelledError``, asyncio's class name: trio's is ``Cancelled``). Each call is one
    span lasting as long as the agent waited, and the session goes on."""

    async def body(client: Client) -> str:
        with pytest.raises(MCPError):
            await client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=WAIT_S)
        with anyio.move_on_after(WAIT_S) as scope:
            await client.call_tool("slow", {"seconds": 5})
        assert scope.cancelled_caught
        return (await client.call_tool("slow", {"seconds": 0})).content[0].text  # type: ignore[union-attr]

    assert run(transport, body) == "done"
    spans = tool_spans(exporter)
    assert [attrs_of(s).get(ATTR_ERROR_TYPE) for s in spans] == ["timeout", "cancelled", None]
    for span in spans[:2]:
        assert WAIT_S * 0.9 <= seconds(span) < WAIT_S + 1.5
        assert span.status.status_code is StatusCode.ERROR and span.status.description is None
        assert ATTR_RESULT_SIZE not in attrs_of(span)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tool_error_jsonrpc_error_and_a_dead_server_are_three_classes(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """``is_error`` → ``tool_error`` (with its result size); a server's JSON-RPC error → its
    code, -32000 included; the server process dying mid-call → ``connection_closed`` over
    stdio (it was ``-32000``, the same as the server's own error), and so every later call;
    over streamable HTTP the SDK cancels the client instead: ``cancelled``."""
    raised: list[str] = []

    async def body(client: Client) -> None:
        assert (await client.call_tool("fail", {"text": "no"})).is_error
        for code in (-32602, -32000):
            with pytest.raises(MCPError) as error:
                await client.call_tool("reject", {"text": "no", "code": code})
            assert error.value.code == code
        try:
            await client.call_tool("die", {"text": "bye"}, read_timeout_seconds=10)
        except BaseException as exc:  # what the SDK raises is the point
            raised.append(type(exc).__name__)
            if transport == "http":
                raise
        with pytest.raises(MCPError):
            await client.call_tool("typed", {"text": "after"}, read_timeout_seconds=10)

    if transport == "http":  # the HTTP transport's error ends the client's task group
        with pytest.raises(BaseExceptionGroup):
            run(transport, body)
    else:
        run(transport, body)
    classes = [attrs_of(s).get(ATTR_ERROR_TYPE) for s in tool_spans(exporter)]
    if transport == "stdio":
        assert raised == ["MCPError"]
        assert classes == ["tool_error", "-32602", "-32000"] + ["connection_closed"] * 2
    else:
        assert raised == ["CancelledError"]
        assert classes == ["tool_error", "-32602", "-32000", "cancelled"]
    fail = attrs_of(tool_spans(exporter)[0])
    assert fail[ATTR_RESULT_SIZE] == len(b"no")  # a tool error has a result; the others none
    assert all(ATTR_RESULT_SIZE not in attrs_of(s) for s in tool_spans(exporter)[1:])
