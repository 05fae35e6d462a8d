"""The mcp SDK's less common features as a real agent uses them, over each transport (in
memory, stdio, streamable HTTP): structured results, progress and log notifications during a
call, cancelled and timed-out calls, the three failure kinds, 50 calls at once on one session,
one session shared by two agents, a long non-ASCII tool name. One span per call, each with
its own numbers.

Expected sizes are computed here from the known arguments and results (compact JSON of the
arguments; the text blocks' UTF-8 bytes, else the structured content's compact JSON).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from support.feature_server import (
    LONG_NAME,
    build_feature_server,
    feature_server_over_http,
    feature_server_over_stdio,
    feature_server_process_over_http,
)
from toolwatch.conventions import (
    ATTR_AGENT_ID,
    ATTR_ARGUMENTS_SIZE,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_RESPONSE_ID,
    ATTR_RESULT_SIZE,
    ATTR_SESSION_POSITION,
    ATTR_TOOL_NAME,
)
from toolwatch.instrumentation import conversation, instrument, model_response, uninstrument
from toolwatch.instrumentation.client.provenance import LIVE_CONFIG
from toolwatch.instrumentation.client.sdk_hooks import OPEN_CALLS
from toolwatch.instrumentation.provenance import ProvenanceTracker

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
    """The SDK's read timeout is ``timeout``, per call, as the client's default or on a raw
    session; the agent's own deadline (``move_on_after``) is ``timeout`` too, and cancelling
    the call's scope ``cancelled`` (it was ``CancelledError``, asyncio's class name: trio's is
    ``Cancelled``). Each call is one span lasting as long as the agent waited, and the session
    goes on."""

    async def body(client: Client) -> str:
        with pytest.raises(MCPError):
            await client.call_tool("slow", {"seconds": 5}, read_timeout_seconds=WAIT_S)
        with pytest.raises(MCPError):
            await client.call_tool("slow", {"seconds": 5})  # the client's read_timeout_seconds
        with pytest.raises(MCPError):
            await client.session.call_tool("slow", {"seconds": 5}, read_timeout_seconds=WAIT_S)
        patient = {"read_timeout_seconds": 30}  # the client's default is WAIT_S
        with anyio.move_on_after(WAIT_S) as scope:
            await client.call_tool("slow", {"seconds": 5}, **patient)
        assert scope.cancelled_caught
        await cancelled_by_the_agent(client.call_tool("slow", {"seconds": 5}, **patient))
        done = await client.call_tool("slow", {"seconds": 0}, **patient)
        return done.content[0].text  # type: ignore[union-attr]

    assert run(transport, body, read_timeout_seconds=WAIT_S) == "done"
    spans = tool_spans(exporter)
    classes = [attrs_of(s).get(ATTR_ERROR_TYPE) for s in spans]
    assert classes == ["timeout"] * 4 + ["cancelled", None]
    for span in spans[:5]:
        assert WAIT_S * 0.9 <= seconds(span) < WAIT_S + 1.5
        assert span.status.status_code is StatusCode.ERROR and span.status.description is None
        assert ATTR_RESULT_SIZE not in attrs_of(span)


async def cancelled_by_the_agent(call: Any) -> None:
    """Await ``call`` in a cancel scope another task cancels after ``WAIT_S``: no deadline."""
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_later() -> None:
                await anyio.sleep(WAIT_S)
                scope.cancel()

            tg.start_soon(cancel_later)
            await call
    assert scope.cancelled_caught


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_deadline_around_the_call_is_timeout_any_other_cancel_cancelled(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """``anyio.fail_after``, ``asyncio.wait_for`` and ``asyncio.timeout`` cancel the call before
    they raise TimeoutError, after its span has ended: the span reads the deadline off the cancel
    (all three were ``cancelled``). The agent's cancels stay ``cancelled``: its scope cancelled
    by another task, its task cancelled, a ``wait_for`` cancelled before its timeout — each
    after a deadline has already fired in the same task, which must not count for them."""

    def slow() -> Any:
        return client_of[0].call_tool("slow", {"seconds": 5})

    client_of: list[Client] = []

    async def body(client: Client) -> str:
        client_of.append(client)
        with pytest.raises(TimeoutError):
            with anyio.fail_after(WAIT_S):
                await slow()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(slow(), WAIT_S)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(WAIT_S):
                await slow()
        await cancelled_by_the_agent(slow())
        for waited in (slow(), asyncio.wait_for(slow(), 30)):
            task = asyncio.ensure_future(waited)
            await asyncio.sleep(WAIT_S)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return (await client.call_tool("slow", {"seconds": 0})).content[0].text  # type: ignore[union-attr]

    assert run(transport, body) == "done"
    spans = tool_spans(exporter)
    classes = [attrs_of(s).get(ATTR_ERROR_TYPE) for s in spans]
    assert classes == ["timeout"] * 3 + ["cancelled"] * 3 + [None]
    for span in spans[:6]:
        assert WAIT_S * 0.9 <= seconds(span) < WAIT_S + 1.5
        assert span.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tool_error_jsonrpc_error_and_a_dead_server_are_three_classes(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """``is_error`` → ``tool_error`` (with its result size); a server's JSON-RPC error → its
    code, -32000 included; the server process dying mid-call → ``connection_closed`` (over
    stdio it was ``-32000``, the same as the server's own error, and every later call is too;
    over streamable HTTP, where the SDK cancels the call and ends the client, ``cancelled``)."""
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
        assert classes == ["tool_error", "-32602", "-32000", "connection_closed"]
    fail = attrs_of(tool_spans(exporter)[0])
    assert fail[ATTR_RESULT_SIZE] == len(b"no")  # a tool error has a result; the others none
    assert all(ATTR_RESULT_SIZE not in attrs_of(s) for s in tool_spans(exporter)[1:])


@pytest.mark.parametrize("answer_begun", [False, True], ids=["before-the-answer", "mid-answer"])
def test_an_http_server_killed_mid_call_is_connection_closed_for_every_open_call(
    exporter: InMemorySpanExporter, answer_begun: bool
) -> None:
    """The uvicorn server process is killed while two calls wait for their answers. Before an
    answer began, the SDK's POST fails, its transport's task group cancels both calls and the
    agent gets the transport's error from ``async with Client``: both ``connection_closed``
    (they were ``cancelled``, as the agent's own cancel). Once a progress notification has
    begun each answer's SSE stream, the SDK answers each call with its own -32000 ("SSE stream
    ended without a response"): ``connection_closed`` (it was ``-32000``, as a server's error)."""
    raised: list[str] = []
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def call(client: Client) -> None:
        tool, options = (
            ("stall", {"progress_callback": on_progress}) if answer_begun else ("slow", {})
        )
        try:
            await client.call_tool(tool, {"seconds": 30}, read_timeout_seconds=60, **options)
        except MCPError as exc:
            raised.append(f"MCPError {exc.code}")
        except BaseException as exc:
            raised.append(type(exc).__name__)
            raise

    async def main() -> None:
        with feature_server_process_over_http() as (url, proc):
            async with Client(url) as client, anyio.create_task_group() as tg:
                tg.start_soon(call, client)
                tg.start_soon(call, client)
                with anyio.fail_after(20):
                    while len(progress if answer_begun else OPEN_CALLS.get(client.session, ())) < 2:
                        await anyio.sleep(0.05)
                await anyio.sleep(WAIT_S)  # the server is inside both calls
                proc.kill()

    if answer_begun:
        anyio.run(main, backend="asyncio")
        assert raised == ["MCPError -32000"] * 2
    else:
        with pytest.raises(BaseExceptionGroup):  # the transport's error ends the client
            anyio.run(main, backend="asyncio")
        assert raised == ["CancelledError"] * 2
    spans = tool_spans(exporter)
    assert [attrs_of(s).get(ATTR_ERROR_TYPE) for s in spans] == ["connection_closed"] * 2
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR and ATTR_RESULT_SIZE not in attrs_of(
            span
        )


def test_listings_open_when_an_http_server_is_killed_are_connection_closed(
    exporter: InMemorySpanExporter,
) -> None:
    """The uvicorn server process is killed while it holds two ``tools/list`` (it waits 30 s
    before listing): the agent's own, and the one the SDK sends inside the first call of a
    typed tool to check its result. Whichever listing's POST fails first, the transport's task
    group cancels the other requests: the listings and the call are all ``connection_closed``
    (the call and the listing whose POST did not fail first were ``cancelled``)."""

    async def wait(request: Any) -> None:
        with contextlib.suppress(anyio.get_cancelled_exc_class()):
            await request
        raise AssertionError("the request was not cancelled")

    async def main() -> None:
        with feature_server_process_over_http(list_delay=30) as (url, proc):
            async with Client(url) as client, anyio.create_task_group() as tg:
                tg.start_soon(wait, client.call_tool("typed", {"text": "t"}))
                tg.start_soon(wait, client.list_tools())
                with anyio.fail_after(20):
                    while not [n for _, n in OPEN_CALLS.get(client.session, ()) if n]:
                        await anyio.sleep(0.05)
                await anyio.sleep(3 * WAIT_S)  # answered; the server holds both listings
                proc.kill()

    with pytest.raises(BaseExceptionGroup):  # the transport's error ends the client
        anyio.run(main, backend="asyncio")
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/")]
    assert sorted(s.name for s in spans) == ["tools/call typed"] + ["tools/list"] * 2
    assert [attrs_of(s).get(ATTR_ERROR_TYPE) for s in spans] == ["connection_closed"] * 3


# ------------------------------------------------------------------------------ sessions


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fifty_concurrent_calls_on_one_session_keep_their_own_numbers(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """asyncio.gather of 50 calls, answers out of order, each under its model response: 50
    spans, each with its own sizes, response id and (over JSON-RPC) request id."""

    async def one(client: Client, i: int) -> Any:
        with model_response(f"resp-{i}"):
            return await client.call_tool("sized", {"n": i, "text": "é"})

    async def body(client: Client) -> list[Any]:
        with conversation(f"gather-{transport}"):
            return await asyncio.gather(*(one(client, i) for i in range(50)))

    results = run(transport, body)
    assert [r.content[0].text for r in results] == ["é" * i for i in range(50)]
    spans = tool_spans(exporter)
    assert len(spans) == 50
    request_ids = set()
    for span in spans:
        attrs = attrs_of(span)
        i = attrs[ATTR_RESULT_SIZE] // 2  # "é" is 2 bytes: the answer says which call it was
        assert attrs[ATTR_RESPONSE_ID] == f"resp-{i}"
        assert attrs[ATTR_ARGUMENTS_SIZE] == compact({"n": i, "text": "é"})
        assert ATTR_ERROR_TYPE not in attrs and seconds(span) < 30
        request_ids.add(attrs.get(ATTR_JSONRPC_REQUEST_ID))
    assert sorted(attrs_of(s)[ATTR_RESULT_SIZE] for s in spans) == [2 * i for i in range(50)]
    assert len(request_ids) == (1 if transport == "memory" else 50)  # direct dispatch: none


def test_one_session_shared_by_two_agents_and_a_long_unicode_tool_name(
    exporter: InMemorySpanExporter,
) -> None:
    """Two agents take turns on one client, each response declared: each span names its own
    agent and response, positions run through the conversation; a 300-character non-ASCII
    tool name is kept whole on the span and in its name."""

    async def agent(client: Client, name: str) -> None:
        for turn in range(2):
            with model_response(f"{name}-{turn}", conversation_id="shared", agent_id=name):
                await client.call_tool("typed", {"text": name})
                await anyio.sleep(0.01)

    async def body(client: Client) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent, client, "planner")
            tg.start_soon(agent, client, "coder")
        with model_response("long", conversation_id="shared"):
            await client.call_tool(LONG_NAME, {"text": "x"})

    run("memory", body)
    spans = tool_spans(exporter)
    assert [attrs_of(s)[ATTR_SESSION_POSITION] for s in spans][-1] == len(spans) - 1 == 4
    seen = {(attrs_of(s).get(ATTR_AGENT_ID), attrs_of(s)[ATTR_RESPONSE_ID]) for s in spans[:4]}
    assert seen == {(a, f"{a}-{t}") for a in ("planner", "coder") for t in range(2)}
    for span in spans[:4]:  # each call's own argument: the agent's name
        attrs = attrs_of(span)
        assert attrs[ATTR_ARGUMENTS_SIZE] == compact({"text": attrs[ATTR_AGENT_ID]})
    long = attrs_of(spans[-1])
    assert long[ATTR_TOOL_NAME] == LONG_NAME and len(LONG_NAME) == 300
    assert spans[-1].name == f"tools/call {LONG_NAME}" and ATTR_AGENT_ID not in long


# ------------------------------------------------------------------------------ memory


class _Counting(SpanExporter):
    """Counts tool spans and keeps none (10,000 kept spans would be the test's own growth)."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += sum(s.name.startswith("tools/call") for s in spans)
        return SpanExportResult.SUCCESS


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_ten_thousand_calls_on_one_session_stay_within_bounded_memory() -> None:
    """Past the window's 8,192 results the oldest go: the provenance window holds at most
    its bound (allocated at the first result), no per-call state is left behind, and the
    process grows by less than 16 MiB from call 1,000 to call 10,000 (measured ≈ 0.3)."""
    counting, tracker = _Counting(), ProvenanceTracker(LIVE_CONFIG)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(counting))
    instrument(tracer_provider=provider, provenance=tracker)
    sizes: list[int] = []

    async def body(client: Client) -> None:
        with conversation("long-session"):
            for i in range(10_000):
                if i == 1_000:
                    gc.collect()
                    sizes.append(_rss())
                with model_response(f"r{i}"):
                    await client.call_tool("sized", {"n": 8 + i % 40, "text": f"row {i} "})
        assert not OPEN_CALLS.get(client.session)

    try:
        run("memory", body)
    finally:
        uninstrument()
        provider.shutdown()
    gc.collect()
    assert counting.calls == 10_000
    assert tracker.stats().results == 10_000 and tracker.stats().streams == 1
    assert 0 < tracker.memory_bytes() <= LIVE_CONFIG.memory_bound
    assert _rss() - sizes[0] < 16 * 2**20
