"""Emitted == stored, as the commands that emit spans check it: a flushed processor's counts
against what a real collector received and accepted (``Collector.check_delivery``)."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from toolwatch.collector.otlp import Collector
from toolwatch.collector.store import Store
from toolwatch.conventions import ATTR_ARGUMENTS_SIZE, ATTR_CONVERSATION_ID, ATTR_TOOL_NAME
from toolwatch.instrumentation import toolwatch_span_processor


def _emit(provider: TracerProvider, spans: list[dict]) -> None:
    tracer = provider.get_tracer("toolwatch.instrumentation")
    for attrs in spans:
        tracer.start_span(f"tools/call {attrs.get(ATTR_TOOL_NAME)}", attributes=attrs).end()


def test_every_span_stored_passes_the_check(tmp_path: Path) -> None:
    with Collector(Store(tmp_path / "store"), compact_interval=None) as collector:
        processor = toolwatch_span_processor(collector.url, block=True)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        _emit(
            provider,
            [
                {ATTR_TOOL_NAME: "t", ATTR_CONVERSATION_ID: "c", ATTR_ARGUMENTS_SIZE: i}
                for i in range(7)
            ],
        )
        sent = processor.flush()
        assert collector.check_delivery(sent) is None
        assert collector.stats.stored_spans == 7
        provider.shutdown()


def test_a_rejected_span_is_reported(tmp_path: Path) -> None:
    with Collector(Store(tmp_path / "store"), compact_interval=None) as collector:
        processor = toolwatch_span_processor(collector.url)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        good = {ATTR_TOOL_NAME: "t", ATTR_CONVERSATION_ID: "c", ATTR_ARGUMENTS_SIZE: 1}
        _emit(provider, [good, {ATTR_CONVERSATION_ID: "c", ATTR_ARGUMENTS_SIZE: 2}])  # no tool
        problem = collector.check_delivery(processor.flush())
        assert problem == "1 of 2 spans reached the store (1 rejected by the collector)"
        provider.shutdown()
