"""Every private mcp hook the instrumentation relies on exists and is wrapped — these tests fail
loudly the day an mcp release moves one (the instrumentor would only log a warning) — and what
each hook is for still works: the B4 ``return_empty`` label survives mcp's output-schema check.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
from typing import Any

import anyio
import pytest
import wrapt
from mcp import Client
from mcp.server.mcpserver import MCPServer
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.arguments import required_arguments
from support.mcp_test_server import build_server
from toolwatch.conventions import (
    ATTR_ERROR_TYPE,
    ATTR_LABEL,
    ATTR_RESULT_SIZE,
    ATTR_TOOL_NAME,
    LABEL_META_KEY,
    TOOL_META_KEY,
)
from toolwatch.injection.faults.library import find_scenario
from toolwatch.injection.proxy import proxy as proxy_module
from toolwatch.injection.proxy.proxy import run_proxy
from toolwatch.instrumentation.client import sdk_hooks
from toolwatch.instrumentation.client.sdk_hooks import PRIVATE_ATTRIBUTES, PRIVATE_HOOKS
from toolwatch.words import counted


def _resolve(module: str, name: str) -> Any:
    """The attribute as stored (not bound); AttributeError when this mcp no longer has it."""
    owner: Any = importlib.import_module(module)
    for part in name.split("."):
        owner = inspect.getattr_static(owner, part)
    return owner


@pytest.mark.parametrize("hook", PRIVATE_HOOKS, ids=lambda h: f"{h.module}.{h.name}")
def test_every_private_hook_exists_and_is_wrapped(
    exporter: InMemorySpanExporter, hook: sdk_hooks.Hook
) -> None:
    target = _resolve(hook.module, hook.name)
    assert isinstance(target, wrapt.FunctionWrapper), f"{hook.module}.{hook.name} is not wrapped"
    assert target._self_wrapper is hook.wrapper


def test_hooks_that_are_attributes_exist_on_live_objects() -> None:
    assert PRIVATE_ATTRIBUTES == (("mcp.client.client", "Client", "_session"),)

    async def main() -> None:
        async with Client(build_server()) as client:
            assert getattr(client, "_session", None) is client.session  # read by the wrapper

    anyio.run(main)
    server = MCPServer("x")
    assert hasattr(server, "_lowlevel_server")  # used by the fault proxy (injection/proxy)


#: the MCP SDK's tracer name, which the collector ignores (``collector/otlp/mapping.SDK_SCOPE``;
#: ``tests/collector/otlp/test_semconv.py`` checks the two agree)
SDK_SCOPE = "mcp-python-sdk"


def test_the_sdks_tracer_is_the_scope_the_collector_ignores() -> None:
    otel = importlib.import_module("mcp.shared._otel")
    tracer = otel._tracer
    name = getattr(tracer, "_instrumenting_module_name", None) or getattr(tracer, "name", None)
    assert name == SDK_SCOPE


def test_a_missing_hook_is_a_warning_not_silence(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gone = sdk_hooks.Hook("mcp.client.session", "ClientSession._no_such_hook", lambda *a: None, "x")
    monkeypatch.setattr(sdk_hooks, "PRIVATE_HOOKS", (gone,))
    caplog.set_level(logging.WARNING, logger="toolwatch.instrumentation.client.sdk_hooks")
    assert sdk_hooks.install() == [gone]
    assert "has no mcp.client.session.ClientSession._no_such_hook" in caplog.text
    sdk_hooks.uninstall()


@pytest.mark.parametrize("scenario_id", ["b4-finance-01", "b4-medical-01"])
def test_b4_return_empty_keeps_its_label_when_the_output_schema_check_raises(
    exporter: InMemorySpanExporter, scenario_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a loud B4 on purpose: the proxy refuses one at start (it would not be silent), so its
    # check of the scenario against the upstream is switched off here
    monkeypatch.setattr(proxy_module, "upstream_problems", lambda *args: [])
    base = find_scenario(scenario_id)
    # B4 served as no content at all (no structured content: mcp's output-schema check
    # raises), for the record the tool has (another id is answered "Not found", an error
    # result B4 leaves alone)
    fault = dataclasses.replace(base.fault, params={"mode": "no_content"})
    scenario = dataclasses.replace(base, fault=fault)
    tool = scenario.fault.tool
    raised: list[BaseException] = []
    record = scenario.faulty_tool.response.json_view()
    arguments = {n: record.get(n, v) for n, v in required_arguments(scenario, tool).items()}

    async def main() -> None:
        async with run_proxy(scenario, None) as proxy, Client(proxy) as client:
            try:
                await client.call_tool(tool, arguments)
            except RuntimeError as exc:  # mcp: "has an output schema but did not return ..."
                raised.append(exc)

    anyio.run(main)
    assert raised and "output schema" in str(raised[0])
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get(ATTR_TOOL_NAME) == tool]
    assert len(spans) == 1
    attrs = spans[0].attributes
    assert attrs.get(ATTR_LABEL) == scenario.label  # before: an unlabelled RuntimeError
    assert attrs.get(ATTR_ERROR_TYPE) == "RuntimeError"
    assert attrs.get(ATTR_RESULT_SIZE) == 0  # the empty result did arrive


class _Session:
    """A key for OPEN_CALLS (weakly referenced, as the SDK's ClientSession is there)."""


def test_an_ambiguous_announcement_words_its_debug_line_only_when_debug_is_shown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An announcement matching two open calls of one tool (in-process, no JSON-RPC ids) is
    ignored with a debug line; its words ("2 open calls") were built on every such
    announcement even with debug logging off. They are built only when the line is shown."""
    worded: list[tuple[Any, str]] = []

    def spy(n: Any, noun: str, plural: str | None = None) -> str:
        worded.append((n, noun))
        return counted(n, noun, plural)

    monkeypatch.setattr(sdk_hooks, "counted", spy)
    session = _Session()
    calls = [sdk_hooks.InFlight("tools/call", session, "search") for _ in range(2)]
    monkeypatch.setitem(sdk_hooks.OPEN_CALLS, session, [(c, "search") for c in calls])
    params = {"_meta": {LABEL_META_KEY: "B1", TOOL_META_KEY: "search"}}
    logger = "toolwatch.instrumentation.client.sdk_hooks"

    with caplog.at_level(logging.INFO, logger=logger):
        sdk_hooks.note_injection(session, params)
    assert worded == [] and caplog.records == []
    with caplog.at_level(logging.DEBUG, logger=logger):
        sdk_hooks.note_injection(session, params)
    assert worded == [(2, "open call")]
    assert [r.getMessage() for r in caplog.records] == [
        "toolwatch: injection announcement matches 2 open calls; ignored"
    ]
    assert all(c.label is None for c in calls)
