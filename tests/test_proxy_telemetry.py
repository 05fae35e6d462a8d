"""Injected faults reach the content-free telemetry as ground-truth labels.

A real instrumented client talks to the real fault proxy in front of the scenario's own tools;
the label the proxy sets (result ``_meta`` or JSON-RPC error ``data``) must land on the client
span as ``toolwatch.label``, and clean calls must stay unlabelled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from toolwatch.injection.proxy import run_proxy
from toolwatch.injection.scenario import Occurrence, find_scenario
from toolwatch.instrumentation import instrument, model_response, uninstrument
from toolwatch.record import ATTR_ERROR_TYPE, ATTR_LABEL, ATTR_TOOL_NAME


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    instrument(tracer_provider=provider)
    yield exp
    uninstrument()


def _args(scenario: Any, tool: str) -> dict[str, Any]:
    schema = scenario.tool(tool).input_schema
    samples = {"string": "x", "integer": 1, "number": 1.0, "array": ["a"], "boolean": True}
    props = schema.get("properties", {})
    return {
        n: samples.get(props.get(n, {}).get("type", "string"), "x")
        for n in schema.get("required", [])
    }


@pytest.mark.parametrize("as_", ["result", "jsonrpc"])
def test_a2_label_reaches_the_span_only_on_faulted_calls(
    exporter: InMemorySpanExporter, as_: str
) -> None:
    base = find_scenario("a2-travel-01")
    fault = dataclasses.replace(
        base.fault,
        occurrence=Occurrence.from_json({"nth": 2}),
        params={**base.fault.params, "as": as_},
    )
    scenario = dataclasses.replace(base, fault=fault)
    tool = scenario.faulty_tool.name

    async def main() -> None:
        async with run_proxy(scenario, None) as proxy, Client(proxy) as client:
            for i in range(3):
                with model_response(f"msg_{i}", conversation_id="conv-a2"):
                    try:
                        await client.call_tool(tool, _args(scenario, tool))
                    except MCPError:
                        assert as_ == "jsonrpc" and i == 1

    anyio.run(main)
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get(ATTR_TOOL_NAME) == tool]
    assert len(spans) == 3
    labels = [s.attributes.get(ATTR_LABEL) for s in spans]
    assert labels == [None, scenario.label, None]
    assert spans[1].attributes.get(ATTR_ERROR_TYPE) is not None
    assert spans[0].attributes.get(ATTR_ERROR_TYPE) is None
