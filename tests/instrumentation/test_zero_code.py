"""Zero-code: ``opentelemetry-instrument python agent.py`` picks the instrumentor up from its
entry point, in a real subprocess, and the spans arrive over real OTLP/HTTP on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from support.otlp_sink import OTLPSink
from support.paths import TESTS
from toolwatch.conventions import (
    ATTR_CONVERSATION_ID,
    ATTR_ERROR_TYPE,
    ATTR_JSONRPC_REQUEST_ID,
    ATTR_MCP_METHOD,
    ATTR_RESPONSE_ID,
    ATTR_SESSION_POSITION,
    ATTR_TOOL_NAME,
)

OTEL_INSTRUMENT = Path(sys.executable).with_name("opentelemetry-instrument")

AGENT = """
import sys
sys.path.insert(0, {tests!r})
import anyio
from mcp import Client
from support.mcp_test_server import build_server
from toolwatch.instrumentation import model_response
{setup}

async def main():
    async with Client(build_server(), mode="legacy") as client:
        await client.list_tools()
        with model_response("resp-zero", conversation_id="conv-zero"):
            await client.call_tool("echo", {{"text": "zero code"}})
            await client.call_tool("fail", {{"reason": "no"}})
    print("agent done")

anyio.run(main)
"""

GLOBAL_SETUP = """
from toolwatch.instrumentation import configure_otlp
configure_otlp(sys.argv[1], "app-configured", set_global=True, only_toolwatch=False)
"""


def run_agent(tmp_path: Path, sink: OTLPSink, setup: str = "", **env: str) -> str:
    """Run the agent zero-code against ``sink`` (``env`` adds or overrides variables); its
    stderr."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT.format(tests=str(TESTS), setup=setup)))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLWATCH_"))}
    environ.update(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url, "OTEL_SERVICE_NAME": "zero-code-agent", **env}
    )
    proc = subprocess.run(
        [str(OTEL_INSTRUMENT), sys.executable, str(script), sink.url],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "agent done" in proc.stdout
    return proc.stderr


def calls(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in spans if s["scope"] == "toolwatch.instrumentation"]


@pytest.fixture
def sink() -> Any:
    with OTLPSink() as s:
        yield s


def test_opentelemetry_instrument_without_any_sdk_config(tmp_path: Path, sink: OTLPSink) -> None:
    run_agent(tmp_path, sink)
    spans = calls(sink.spans())  # the provider flushed at exit, so everything is here
    assert [s["name"] for s in spans] == ["tools/list", "tools/call echo", "tools/call fail"]
    echo, fail = spans[1:]
    for position, span in enumerate((echo, fail)):
        assert span["resource"]["service.name"] == "zero-code-agent"
        assert span["attributes"][ATTR_CONVERSATION_ID] == "conv-zero"
        assert span["attributes"][ATTR_RESPONSE_ID] == "resp-zero"
        assert span["attributes"][ATTR_SESSION_POSITION] == position
    assert fail["attributes"][ATTR_ERROR_TYPE] == "tool_error" and fail["status"] == 2
    assert all(r.path == "/v1/traces" for r in sink.received)
    assert all(r.headers["content-type"] == "application/x-protobuf" for r in sink.received)


def test_the_entry_point_can_be_disabled(tmp_path: Path, sink: OTLPSink) -> None:
    run_agent(tmp_path, sink, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="mcp_toolwatch")
    assert sink.received == []


def test_an_application_provider_is_used_and_sdk_spans_nest(tmp_path: Path, sink: OTLPSink) -> None:
    run_agent(tmp_path, sink, setup=GLOBAL_SETUP)
    spans = sink.spans()
    ours = {s["name"]: s for s in calls(spans)}
    assert set(ours) == {"tools/list", "tools/call echo", "tools/call fail"}
    assert {s["resource"]["service.name"] for s in ours.values()} == {"app-configured"}
    # the MCP SDK's own send span is a child of our tool span and has the same request id
    echo = ours["tools/call echo"]
    (sdk_send,) = [s for s in spans if s["name"] == "MCP send tools/call echo"]
    assert sdk_send["scope"] == "mcp-python-sdk"
    assert sdk_send["trace_id"] == echo["trace_id"]
    assert (
        sdk_send["attributes"][ATTR_JSONRPC_REQUEST_ID]
        == echo["attributes"][ATTR_JSONRPC_REQUEST_ID]
    )
    assert sdk_send["attributes"][ATTR_MCP_METHOD] == "tools/call"
    assert ATTR_TOOL_NAME not in sdk_send["attributes"]


def test_an_endpoint_variable_that_is_no_url_is_named_once(tmp_path: Path, sink: OTLPSink) -> None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318`` (no scheme) gave only "could not start
    the span of a tools/call (ValueError)": the agent ran on, its spans gone, and nothing said
    which setting was wrong. Now one line names the variable; the spans are counted."""
    # COLUMNS: mcp's server logging (rich, in the dev venv) must not wrap the line
    err = run_agent(tmp_path, sink, OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318", COLUMNS="500")
    named = "OTEL_EXPORTER_OTLP_ENDPOINT='collector:4318' is not an http:// or https:// URL"
    assert err.count(named) == 1, err
    assert "tool-call spans are not exported (counted by unrecorded_spans())" in err
    assert sink.received == []
