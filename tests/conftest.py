"""Fixtures shared by several test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwatch.instrumentation import instrument, uninstrument


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """toolwatch instrumentation exporting to memory for the test, undone afterwards."""
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    instrument(tracer_provider=provider)
    yield exp
    uninstrument()
    provider.shutdown()
