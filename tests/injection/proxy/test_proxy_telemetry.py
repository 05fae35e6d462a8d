"""Injected faults reach the content-free telemetry as ground-truth labels.

A real instrumented client talks to the real fault proxy in front of the scenario's own tools;
the label the proxy sets (result ``_meta`` or JSON-RPC error ``data``) must land on the client
span as ``toolwatch.label``, and clean calls must stay unlabelled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp_types import REQUEST_TIMEOUT
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.arguments import required_arguments
from toolwatch.conventions import (
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_LABEL,
    ATTR_TOOL_NAME,
    ERROR_TYPE_TIMEOUT,
)
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.faults.scenario import Occurrence, Scenario
from toolwatch.injection.faults.server import ScenarioServer
from toolwatch.injection.proxy.proxy import http_server, run_proxy
from toolwatch.injection.workbench.replay import ReplayServer
from toolwatch.injection.workbench.trajectory import Recording
from toolwatch.instrumentation import model_response


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
                        await client.call_tool(tool, required_arguments(scenario, tool))
                    except MCPError:
                        assert as_ == "jsonrpc" and i == 1

    anyio.run(main)
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get(ATTR_TOOL_NAME) == tool]
    assert len(spans) == 3
    labels = [s.attributes.get(ATTR_LABEL) for s in spans]
    assert labels == [None, scenario.label, None]
    assert spans[1].attributes.get(ATTR_ERROR_TYPE) is not None
    assert spans[0].attributes.get(ATTR_ERROR_TYPE) is None


def _variant(scenario_id: str, occurrence: Any, **params: Any) -> Scenario:
    base = find_scenario(scenario_id)
    fault = dataclasses.replace(
        base.fault,
        occurrence=Occurrence.from_json(occurrence),
        params={**base.fault.params, **params},
    )
    return dataclasses.replace(base, fault=fault)


def _tool_spans(exporter: InMemorySpanExporter, tool: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.attributes.get(ATTR_TOOL_NAME) == tool]


@pytest.mark.parametrize("transport", ["in-process", "http"])
def test_a1_timed_out_call_carries_the_announced_label(
    exporter: InMemorySpanExporter, transport: str
) -> None:
    """The proxy announces the label before holding the call; the client gives up at its own
    deadline, long before the labelled result, and its span still has the label."""
    scenario = _variant("a1-weather-01", {"nth": [2]}, delay_ms=3000, mode="sleep")
    tool = scenario.faulty_tool.name
    codes: list[int | None] = []

    async def calls(client: Client) -> None:
        for i in range(3):
            with model_response(f"msg_{i}", conversation_id="conv-a1"):
                try:
                    await client.call_tool(tool, required_arguments(scenario, tool))
                    codes.append(None)
                except MCPError as exc:
                    codes.append(exc.error.code)

    async def main() -> None:
        with anyio.fail_after(15):
            async with run_proxy(scenario, None) as proxy:
                if transport == "in-process":
                    async with Client(proxy, read_timeout_seconds=0.5) as client:
                        await calls(client)
                    return
                async with (
                    http_server(proxy) as endpoint,
                    Client(endpoint.url, read_timeout_seconds=0.5) as client,
                ):
                    await calls(client)

    anyio.run(main)
    assert codes == [None, REQUEST_TIMEOUT, None]
    spans = _tool_spans(exporter, tool)
    assert [s.attributes.get(ATTR_LABEL) for s in spans] == [None, scenario.label, None]
    assert spans[1].attributes.get(ATTR_ERROR_TYPE) == ERROR_TYPE_TIMEOUT
    if transport == "http":  # matched by JSON-RPC id, which the span records
        assert spans[1].attributes.get(ATTR_JSONRPC_REQUEST_ID) is not None


def test_c2_calls_under_a_poisoned_listing_are_labelled_by_the_proxy(
    exporter: InMemorySpanExporter,
) -> None:
    scenario = _variant("c2-ops-01", {"nth": [2]})
    tool = scenario.fault.tool

    async def main() -> None:
        async with run_proxy(scenario, None) as proxy, Client(proxy) as client:
            for i in range(3):
                listing = await client.list_tools()
                poisoned = next(t for t in listing.tools if t.name == tool).description
                assert (poisoned != scenario.faulty_tool.description) == (i == 1)
                with model_response(f"msg_{i}", conversation_id="conv-c2"):
                    await client.call_tool(tool, required_arguments(scenario, tool))
                    await client.call_tool(tool, required_arguments(scenario, tool))
            kinds.extend(i.kind for i in proxy.injections)

    kinds: list[str] = []
    anyio.run(main)
    labels = [s.attributes.get(ATTR_LABEL) for s in _tool_spans(exporter, tool)]
    # listing 2 is poisoned: both calls made under it are labelled, none before or after
    assert labels == [None, None, scenario.label, scenario.label, None, None]
    assert kinds == ["listing", "under_listing", "under_listing"]


def test_c2_calls_under_a_poisoned_listing_are_labelled_by_the_workbench_replay(
    exporter: InMemorySpanExporter,
) -> None:
    scenario = _variant("c2-ops-01", {"nth": [2]})
    tool = scenario.fault.tool
    replay = ReplayServer(
        Recording(),
        engine=FaultEngine.for_scenario(scenario),
        fallback=ScenarioServer(scenario),
    )

    async def main() -> None:
        async with Client(replay) as client:
            for i in range(3):
                listing = await client.list_tools()
                poisoned = next(t for t in listing.tools if t.name == tool).description
                assert (poisoned != scenario.faulty_tool.description) == (i == 1)
                with model_response(f"msg_{i}", conversation_id="conv-c2"):
                    await client.call_tool(tool, required_arguments(scenario, tool))

    anyio.run(main)
    labels = [s.attributes.get(ATTR_LABEL) for s in _tool_spans(exporter, tool)]
    assert labels == [None, scenario.label, None]
    assert [d.applied for d in replay.deliveries] == [False, True, False]
