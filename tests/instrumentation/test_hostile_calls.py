"""Calls that once broke the instrumentation inside the agent: parallel calls of one tool over
mcp's in-process dispatch (no JSON-RPC id tells them apart), errors of the OpenTelemetry set-up
itself, and arguments toolwatch cannot size. Nothing of toolwatch's may reach the agent's call,
and no span goes missing without being counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.canary import assert_absent, make_canary
from support.mcp_test_server import build_server
from toolwatch.conventions import (
    ATTR_ARGUMENTS_SIZE,
    ATTR_EGRESS,
    ATTR_ERROR_TYPE,
    ATTR_SESSION_POSITION,
)
from toolwatch.instrumentation import conversation, instrument, model_response, uninstrument
from toolwatch.instrumentation.client import instrumentor
from toolwatch.instrumentation.client.sdk_hooks import OPEN_CALLS
from toolwatch.words import counted


def tool_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call")]


def by_position(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    attrs = [dict(s.attributes or {}) for s in spans]
    return sorted(attrs, key=lambda a: a[ATTR_SESSION_POSITION])


@pytest.mark.parametrize("second", ["timeout", "tool_error"])
def test_parallel_calls_of_one_tool_end_in_any_order(
    exporter: InMemorySpanExporter, second: str
) -> None:
    """In-process dispatch has no JSON-RPC id: two open calls of one tool once compared equal,
    so the one ending first removed the other's bookkeeping and the other raised ValueError
    into the agent (and lost its span)."""
    answers: list[Any] = []

    async def main() -> None:
        async with Client(build_server()) as client:
            with conversation(f"parallel-{second}"):
                first = asyncio.ensure_future(
                    client.call_tool("slow", {"seconds": 0.4, "text": "first"})
                )
                await asyncio.sleep(0.05)
                if second == "timeout":
                    with pytest.raises(MCPError):
                        await client.call_tool(
                            "slow", {"seconds": 5, "text": "x"}, read_timeout_seconds=0.1
                        )
                else:  # refused by the tool's argument validation: an is_error result
                    assert (await client.call_tool("slow", {"seconds": "soon"})).is_error
                answers.append(await first)
            assert not OPEN_CALLS.get(client.session)  # every entry removed, none twice

    anyio.run(main, backend="asyncio")
    assert answers[0].content[0].text == "first"
    spans = by_position(tool_spans(exporter))
    assert [a.get(ATTR_ERROR_TYPE) for a in spans] == [None, second]
    assert [a[ATTR_SESSION_POSITION] for a in spans] == [0, 1]


class _Raising(SpanProcessor):
    """A span processor of the application's that raises (the SDK does not catch it)."""

    def __init__(self, on: str) -> None:
        self.on = on

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.on == "start":
            raise RuntimeError("broken on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.on == "end":
            raise RuntimeError("broken on_end")


@pytest.mark.parametrize("on", ["start", "end"])
def test_a_broken_otel_set_up_never_reaches_the_agents_call(on: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(_Raising(on))
    instrument(tracer_provider=provider, provenance=False)
    before = instrumentor.unrecorded_spans()
    texts: list[str | None] = []
    try:

        async def main() -> None:
            async with Client(build_server()) as client:
                await client.list_tools()
                with conversation(f"broken-{on}"):
                    for text in ("a", "b"):
                        result = await client.call_tool("echo", {"text": text})
                        texts.append(getattr(result.content[0], "text", None))

        anyio.run(main)
    finally:
        uninstrument()
        provider.shutdown()
    assert texts == ["a", "b"]  # the agent got its answers
    spans = tool_spans(exporter)
    # the listing and the two calls, counted either way: a span that could not start (the call
    # then ran untraced, and a Client call's session round tried no second span) or one whose
    # end raised
    assert instrumentor.unrecorded_spans() - before == 3
    if on == "start":
        assert spans == []
    else:  # ended: the processors before the raising one got it
        assert [a[ATTR_SESSION_POSITION] for a in by_position(spans)] == [0, 1]


def _deep(levels: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return {"text": value}


def _compact_size(args: dict[str, Any]) -> int:
    """The byte basis written out: compact JSON, a lone surrogate counted as U+FFFD."""
    text = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    return len(re.sub("[\ud800-\udfff]", "\ufffd", text).encode())


@pytest.mark.timeout(60)  # a cycle once made the provenance walk loop for ever
def test_calls_with_arguments_toolwatch_cannot_size_keep_their_span(
    exporter: InMemorySpanExporter,
) -> None:
    """A lone surrogate is sized as U+FFFD, nesting past the recursion limit by the
    recursion-free walk (it was left off, while the importer sized it); arguments that are not
    JSON (a tuple key, a cycle) leave the size off. Every call keeps its span and one position;
    these spans once went missing, uncounted, each skipping two positions."""
    circular: dict[str, Any] = {}
    circular["self"] = circular
    calls: list[tuple[dict[Any, Any], int | None]] = [
        ({"text": "ok"}, _compact_size({"text": "ok"})),
        ({"text": "\udcff-os.listdir"}, _compact_size({"text": "\udcff-os.listdir"})),
        ({"text": "hi", (1, 2): 1}, None),
        (_deep(5000), len('{"text":}') + len('{"a":}') * 5000 + len('"x"')),
        ({"text": circular}, None),
        ({"text": "next"}, _compact_size({"text": "next"})),
    ]
    outcomes: list[str] = []

    async def main() -> None:
        async with Client(build_server()) as client:
            with conversation("unsizable"), model_response("r1"):
                for args, _ in calls:
                    try:
                        await client.call_tool("echo", args)
                        outcomes.append("answered")
                    except Exception as exc:  # the SDK refuses what it cannot send
                        outcomes.append(type(exc).__name__)

    anyio.run(main)
    assert outcomes[0] == outcomes[1] == outcomes[-1] == "answered"
    spans = by_position(tool_spans(exporter))
    assert [a[ATTR_SESSION_POSITION] for a in spans] == list(range(len(calls)))
    for attrs, (_, size), outcome in zip(spans, calls, outcomes, strict=True):
        assert attrs.get(ATTR_ARGUMENTS_SIZE) == size
        assert (ATTR_ERROR_TYPE in attrs) is (outcome != "answered")
        assert (ATTR_EGRESS in attrs) is (size is not None)  # unsized: provenance skipped


@pytest.mark.timeout(60)
def test_no_canary_from_arguments_sized_deep_or_not_at_all(
    exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    """The canary at the bottom of a 5,000-deep argument (sized by the recursion-free walk), in
    a tuple key, in a value containing itself and in an object only ``str()`` can write: in no
    form in any span (names, attributes, events, status) nor in the log at DEBUG."""
    canary = make_canary()
    deep: Any = canary
    for _ in range(5000):
        deep = {"a": [deep]}
    circular: dict[str, Any] = {"c": canary}
    circular["self"] = circular

    class Opaque:
        def __str__(self) -> str:
            return canary

    calls: list[dict[Any, Any]] = [
        {"text": deep},
        {"text": canary, (canary, 1): canary},
        {"text": circular},
        {"text": Opaque()},
        {"text": canary},
    ]

    async def main() -> None:
        async with Client(build_server()) as client:
            with conversation("canary-deep"), model_response("r1"):
                for args in calls:
                    with contextlib.suppress(Exception):  # the SDK refuses what it cannot send
                        await client.call_tool("echo", args)

    with caplog.at_level(logging.DEBUG):
        anyio.run(main)
    spans = tool_spans(exporter)
    assert len(spans) == len(calls)
    sizes = [a.get(ATTR_ARGUMENTS_SIZE) for a in by_position(spans)]
    assert sizes[0] is not None and sizes[0] > 5000 * 8 and sizes[4] is not None
    for span in exporter.get_finished_spans():
        seen = (span.name, span.attributes, span.events, span.status.description, span.resource)
        assert_absent(repr(seen), canary, f"span {span.name}")
    assert_absent(caplog.text, canary, "the log")


def test_an_unrecorded_span_words_its_debug_line_only_when_debug_is_shown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """After the first unrecorded span (a WARNING), each is a debug line on every call's path
    while the OpenTelemetry set-up stays broken; its words ("2 spans") were built even with
    debug logging off. They are built only when the line is shown; the count goes on either way."""
    worded: list[tuple[Any, str]] = []

    def spy(n: Any, noun: str, plural: str | None = None) -> str:
        worded.append((n, noun))
        return counted(n, noun, plural)

    monkeypatch.setattr(instrumentor, "counted", spy)
    monkeypatch.setattr(instrumentor, "_unrecorded", 1)  # the first, a WARNING, was said
    logger = instrumentor.log.name

    with caplog.at_level(logging.INFO, logger=logger):
        instrumentor._count_unrecorded("start", "tools/call", RuntimeError("x"))
    assert worded == [] and caplog.records == []
    assert instrumentor.unrecorded_spans() == 2
    with caplog.at_level(logging.DEBUG, logger=logger):
        instrumentor._count_unrecorded("end", "tools/call", RuntimeError("x"))
    assert worded == [(3, "span")]
    assert [r.getMessage() for r in caplog.records] == [
        "toolwatch: could not end the span of a tools/call (RuntimeError); 3 spans unrecorded "
        "so far"
    ]
