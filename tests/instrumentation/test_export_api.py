"""The public export API alongside an application's own OpenTelemetry set-up, against a real
OTLP/HTTP receiver: tool spans to toolwatch *and* the application's backend, or to toolwatch
*only*; OTel's ``suppress_instrumentation()`` honoured; every span the processor was given
accounted for (exported, failed, dropped), a full queue either waits (``block``) or drops
and counts, and a hung collector holds the exit for the shutdown budget only. Needs no
collector extra, so it runs at the floor versions too (``test_version_floor.py``);
``tests/collector/otlp/test_delivery_check.py`` checks the counts against a real collector's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.collector_process import free_port
from support.mcp_test_server import build_server
from support.otlp_sink import OTLPSink
from toolwatch.conventions import ATTR_TOOL_NAME
from toolwatch.instrumentation import (
    ToolwatchSpanProcessor,
    configure_otlp,
    conversation,
    delivery,
    instrument,
    toolwatch_span_processor,
    uninstrument,
    without_toolwatch_spans,
)
from toolwatch.instrumentation.export.otlp import resolve_endpoint
from toolwatch.instrumentation.export.processor import DEFAULT_SHUTDOWN_S, ENV_SHUTDOWN_TIMEOUT


@pytest.fixture
def collector() -> Iterator[OTLPSink]:
    with OTLPSink() as sink:
        yield sink


def _tool_calls(sink: OTLPSink) -> list[dict]:
    return [s for s in sink.spans() if s["name"].startswith("tools/call")]


def _calls(n: int, *, suppressed: int = 0) -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            with conversation("conv-x"):
                for i in range(n):
                    await client.call_tool("echo", {"text": f"t{i}"})
                with suppress_instrumentation():
                    for _ in range(suppressed):
                        await client.call_tool("echo", {"text": "hidden"})

    anyio.run(main)


def _app_provider(backend: InMemorySpanExporter, *, keep_tool_spans: bool) -> TracerProvider:
    """An application's provider, already exporting (here: to memory) before toolwatch."""
    provider = TracerProvider(resource=Resource.create({"service.name": "the-app"}))
    inner = SimpleSpanProcessor(backend)
    provider.add_span_processor(inner if keep_tool_spans else without_toolwatch_spans(inner))
    return provider


def test_tool_spans_go_to_toolwatch_and_to_the_apps_own_backend(collector: OTLPSink) -> None:
    backend = InMemorySpanExporter()
    provider = _app_provider(backend, keep_tool_spans=True)
    processor = toolwatch_span_processor(collector.url)
    provider.add_span_processor(processor)
    instrument(tracer_provider=provider)
    try:
        _calls(3)
        with provider.get_tracer("the-app").start_as_current_span("app work"):
            pass
    finally:
        uninstrument()
    sent = processor.flush()
    # 3 calls and the tools/list mcp makes before validating the first call's result
    assert (sent.ended, sent.exported, sent.lost, sent.queued) == (4, 4, 0, 0)
    assert sent.check(received=4) is None
    calls = _tool_calls(collector)
    assert [c["resource"]["service.name"] for c in calls] == ["the-app"] * 3
    names = [s.name for s in backend.get_finished_spans()]
    assert names.count("tools/call echo") == 3 and "app work" in names
    assert "tools/list" in names
    provider.shutdown()


def test_tool_spans_go_to_toolwatch_only(collector: OTLPSink) -> None:
    backend = InMemorySpanExporter()
    provider = _app_provider(backend, keep_tool_spans=False)  # a shared provider, filtered
    processor = toolwatch_span_processor(collector.url)
    provider.add_span_processor(processor)
    instrument(tracer_provider=provider)
    try:
        _calls(2)
        with provider.get_tracer("the-app").start_as_current_span("app work"):
            pass
    finally:
        uninstrument()
    processor.flush()
    assert len(_tool_calls(collector)) == 2
    assert "app work" not in {s["name"] for s in collector.spans()}  # only toolwatch's spans
    assert [s.name for s in backend.get_finished_spans()] == ["app work"]
    provider.shutdown()


def test_configure_otlp_counts_and_suppression_is_honoured(collector: OTLPSink) -> None:
    provider = configure_otlp(collector.url, service_name="agent-x", block=True)
    instrument(tracer_provider=provider)
    try:
        _calls(4, suppressed=3)  # the 3 calls inside suppress_instrumentation() leave no span
    finally:
        uninstrument()
    provider.force_flush()
    sent = delivery(provider)
    assert sent is not None and (sent.ended, sent.exported) == (5, 5)  # 4 calls, 1 tools/list
    calls = _tool_calls(collector)
    assert len(calls) == 4 and {c["resource"]["service.name"] for c in calls} == {"agent-x"}
    provider.shutdown()


def test_configure_otlp_without_an_endpoint_follows_the_standard_variables(
    collector: OTLPSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's ``configure_otlp(service_name="my-agent")`` sent to 127.0.0.1:4318 whatever
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` said (only the zero-code path read it): an agent deployed
    with the variable set lost every span to connection-refused retries. The code's values
    still win over the variables."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    from_env = configure_otlp()
    named = configure_otlp(service_name="my-agent")
    for provider in (from_env, named):
        instrument(tracer_provider=provider)
        try:
            _calls(1)
        finally:
            uninstrument()
        provider.force_flush()
        sent = delivery(provider)
        assert sent is not None and (sent.exported, sent.failed) == (2, 0)  # call + tools/list
        provider.shutdown()
    services = [c["resource"]["service.name"] for c in _tool_calls(collector)]
    assert services == ["from-env", "my-agent"]
    processor = toolwatch_span_processor(only_toolwatch=False)  # beside an app's provider
    provider = TracerProvider()
    provider.add_span_processor(processor)
    _ended_spans(provider, 2)
    assert processor.flush().exported == 2
    assert len(collector.spans()) == 2 + 4
    provider.shutdown()


def test_the_traces_variable_is_used_as_it_is_the_general_one_as_a_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OTLP's exporter spec: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is the URL itself, whatever
    its path; ``OTEL_EXPORTER_OTLP_ENDPOINT`` is a base the traces path is appended to. The
    traces variable ``http://gw:4318/otlp/traces`` was sent to ``…/otlp/traces/v1/traces``, a
    path the user's gateway does not serve; the traces variable wins over the general one."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://gw:4318/otlp")
    assert resolve_endpoint() == "http://gw:4318/otlp/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://gw:4318/otlp/traces")
    assert resolve_endpoint() == "http://gw:4318/otlp/traces"
    assert resolve_endpoint("http://gw:4318/otlp/traces") == "http://gw:4318/otlp/traces/v1/traces"


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_an_endpoint_variable_that_is_no_url_is_named(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """It was "OTLP endpoint 'collector:4318' is not an http:// or https:// URL" — which
    endpoint, set where, the agent's author had to guess."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv(variable, "collector:4318")
    with pytest.raises(ValueError) as refused:
        configure_otlp()
    assert str(refused.value) == (
        f"{variable}='collector:4318' is not an http:// or https:// URL "
        "(e.g. http://127.0.0.1:4318)"
    )
    configure_otlp("http://127.0.0.1:9").shutdown()  # the code's endpoint needs no variable


class _SlowExporter(SpanExporter):
    """Holds each export until released (to fill a processor's queue), then succeeds."""

    def __init__(self) -> None:
        import threading

        self.release = threading.Event()
        self.spans: list[ReadableSpan] = []

    def export(self, spans: object) -> SpanExportResult:
        self.release.wait(30)
        self.spans.extend(spans)  # type: ignore[arg-type]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def _ended_spans(provider: TracerProvider, n: int) -> None:
    tracer = provider.get_tracer("toolwatch.instrumentation")
    for i in range(n):
        tracer.start_span(f"tools/call t{i}", attributes={ATTR_TOOL_NAME: "t"}).end()


def test_a_full_queue_drops_and_counts_or_waits_when_blocking() -> None:
    import threading

    slow = _SlowExporter()
    dropping = ToolwatchSpanProcessor(slow, scopes=None, max_queue_size=10, max_export_batch_size=5)
    provider = TracerProvider()
    provider.add_span_processor(dropping)
    _ended_spans(provider, 40)
    slow.release.set()
    sent = dropping.flush()
    assert sent.ended == 40 and sent.dropped > 0
    assert sent.exported + sent.dropped == 40 and len(slow.spans) == sent.exported
    assert "dropped by a full export queue" in (sent.check(sent.exported) or "")
    provider.shutdown()

    slow = _SlowExporter()
    blocking = ToolwatchSpanProcessor(
        slow, scopes=None, max_queue_size=10, max_export_batch_size=5, block=True
    )
    provider = TracerProvider()
    provider.add_span_processor(blocking)
    releaser = threading.Timer(0.5, slow.release.set)  # the backend comes back
    releaser.start()
    _ended_spans(provider, 40)  # waits for room instead of dropping
    sent = blocking.flush()
    releaser.join()
    assert (sent.ended, sent.exported, sent.dropped, sent.failed) == (40, 40, 0, 0)
    assert sent.check(40) is None
    provider.shutdown()


def _unreachable() -> tuple[ToolwatchSpanProcessor, TracerProvider]:
    """A processor exporting to a port nobody listens on, on a provider of its own."""
    processor = toolwatch_span_processor(
        f"http://127.0.0.1:{free_port()}", timeout=1.0, only_toolwatch=False
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return processor, provider


def test_an_unreachable_collector_is_counted_as_failed() -> None:
    processor, provider = _unreachable()
    _ended_spans(provider, 3)
    sent = processor.flush(timeout=20)
    assert (sent.ended, sent.exported, sent.failed) == (3, 0, 3)
    message = sent.check(0)
    assert message is not None and "0 of 3 spans reached the store" in message
    provider.shutdown()


def test_a_collector_that_is_down_is_one_warning_per_interval_not_a_line_per_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The OTLP exporter logged every retry of every batch at WARNING: an agent whose
    collector was down wrote a line every 1-2 s (19 in 30 s) for as long as it was down. Now one
    toolwatch line per interval with the spans it lost and the exporter's first word on why;
    the application's own exporters (other threads) still log as they did."""
    import logging

    processor, provider = _unreachable()
    caplog.set_level(logging.INFO)
    for _ in range(3):
        _ended_spans(provider, 2)
        processor.flush(timeout=20)
    assert processor.delivery().failed == 6
    theirs = [r for r in caplog.records if r.name.startswith("opentelemetry.exporter")]
    assert theirs == []
    said = [r.getMessage() for r in caplog.records if r.name.startswith("toolwatch")]
    assert len(said) == 1, said
    assert said[0].startswith("toolwatch: could not deliver 2 spans to the collector (")
    assert said[0].endswith("); counted as failed, said at most every 60 s")
    processor.warn_interval = 0  # the interval has passed: the spans since are counted in
    _ended_spans(provider, 2)
    processor.flush(timeout=20)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("toolwatch")]
    assert len(said) == 2 and said[1].startswith(
        "toolwatch: could not deliver 6 spans to the collector in the last "
    )
    logging.getLogger(theirs_name := "opentelemetry.exporter.otlp.proto.http").warning("app's")
    assert [r.getMessage() for r in caplog.records if r.name == theirs_name] == ["app's"]
    processor.warn_interval = 60
    _ended_spans(provider, 2)
    processor.flush(timeout=20)
    caplog.clear()
    provider.shutdown()  # what failed since the last warning is said before the exit
    assert [r.getMessage() for r in caplog.records] == [
        "toolwatch: 2 more spans failed to reach the collector since the last warning"
    ]


def test_shutdown_gives_a_hung_collector_its_budget_only_and_counts_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The provider's exit hook once waited 30 s for the flush and 10 s more for the thread."""
    import threading
    import time

    hung = _SlowExporter()  # answers only once shut down
    processor = ToolwatchSpanProcessor(
        hung, scopes=None, max_export_batch_size=5, shutdown_timeout=0.3
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    _ended_spans(provider, 12)
    started = time.monotonic()
    provider.shutdown()
    assert time.monotonic() - started < 2.0
    sent = processor.delivery()
    # the batch being sent counts as failed, the queue behind it as dropped: all lost
    assert (sent.ended, sent.exported, sent.failed, sent.dropped, sent.queued) == (12, 0, 5, 7, 0)
    # the hung export returns once the exporter is shut down: not counted a second time
    for thread in threading.enumerate():
        if thread.name == "toolwatch-span-export":
            thread.join(5)
    assert processor.delivery() == sent
    warnings = [r.getMessage() for r in caplog.records if "at shutdown" in r.getMessage()]
    assert warnings == [
        "toolwatch: 12 spans not delivered at shutdown (the collector did not take them "
        "within 0.3 s); counted as lost"
    ]


@pytest.mark.parametrize("budget", ["argument", "environment"])
def test_a_hung_collector_delays_the_agents_exit_by_the_budget_only(
    tmp_path: Path, budget: str
) -> None:
    """The real exit hook of a configure_otlp provider, in a process of its own, against a
    collector that accepts connections and never answers; the budget given in code or, with
    none there, by $TOOLWATCH_SHUTDOWN_TIMEOUT (the default is 5 s)."""
    import os
    import socket
    import subprocess
    import sys
    import time

    assert DEFAULT_SHUTDOWN_S <= 5
    env = {k: v for k, v in os.environ.items() if k != ENV_SHUTDOWN_TIMEOUT}
    if budget == "environment":
        env[ENV_SHUTDOWN_TIMEOUT] = "1"
    given = "shutdown_timeout=1.0" if budget == "argument" else ""
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys, time\n"
        "from toolwatch.instrumentation import configure_otlp\n"
        f"provider = configure_otlp(sys.argv[1], {given})\n"
        "tracer = provider.get_tracer('toolwatch.instrumentation')\n"
        "for i in range(2000):\n"
        "    tracer.start_span('tools/call t').end()\n"
        "print(time.time(), flush=True)\n"
    )
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)  # accepts (the kernel does), never answers
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        done = subprocess.run(
            [sys.executable, str(script), url],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        exited = time.time()
    assert done.returncode == 0, done.stderr
    assert exited - float(done.stdout.split()[-1]) < 3.5  # 1 s of budget, then out
    assert done.stderr.count("2,000 spans not delivered at shutdown") == 1


def test_the_shutdown_budget_is_read_from_the_environment_when_code_gives_none(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The exit budget could be set in code only: an agent run zero-code
    (``opentelemetry-instrument``) had 5 s, whatever its operator wanted. The code's value
    wins; a value that is not seconds is said once and the default used."""
    import time

    monkeypatch.setenv(ENV_SHUTDOWN_TIMEOUT, " 0.3 ")
    processor = ToolwatchSpanProcessor(_SlowExporter(), scopes=None, max_export_batch_size=5)
    assert processor.shutdown_timeout == 0.3
    provider = TracerProvider()
    provider.add_span_processor(processor)
    _ended_spans(provider, 6)
    started = time.monotonic()
    provider.shutdown()
    assert time.monotonic() - started < 2.0
    assert any("within 0.3 s" in r.getMessage() for r in caplog.records)
    assert toolwatch_span_processor("http://127.0.0.1:9").shutdown_timeout == 0.3
    given = toolwatch_span_processor("http://127.0.0.1:9", shutdown_timeout=2.0)
    assert given.shutdown_timeout == 2.0
    caplog.clear()
    for bad in ("soon", "-1", "inf", "nan"):
        monkeypatch.setenv(ENV_SHUTDOWN_TIMEOUT, bad)
        assert toolwatch_span_processor("http://127.0.0.1:9").shutdown_timeout == 5.0
    said = [r.getMessage() for r in caplog.records if ENV_SHUTDOWN_TIMEOUT in r.getMessage()]
    assert said == [
        f"toolwatch: {ENV_SHUTDOWN_TIMEOUT}={bad!r} is not a number of seconds >= 0; using 5 s"
        for bad in ("soon", "-1", "inf", "nan")
    ]
    monkeypatch.delenv(ENV_SHUTDOWN_TIMEOUT)
    assert toolwatch_span_processor("http://127.0.0.1:9").shutdown_timeout == DEFAULT_SHUTDOWN_S
