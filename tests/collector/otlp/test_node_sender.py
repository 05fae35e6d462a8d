"""A real third-party sender: Node's OpenTelemetry SDK (``@opentelemetry/sdk-trace-base`` with
the OTLP protobuf and JSON exporters from npm, pinned in ``node/package-lock.json``) emitting
semantic-conventions MCP tool spans — no toolwatch attribute — to a real collector, over
protobuf and JSON, gzipped or not. They land as rows (sizes null). Node's exporter sends
``Transfer-Encoding: chunked`` bodies, integers as JSON numbers and times as strings.

Skipped when ``node``/``npm`` are not installed; ``npm ci`` runs once if ``node_modules`` is
missing (``.ci/run`` does it up front).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.collector import rows
from support.node import installed_node
from toolwatch.collector.otlp import Collector
from toolwatch.collector.store import Store

NODE_DIR = Path(__file__).parent / "node"


@pytest.fixture(scope="module")
def node() -> str:
    return installed_node(NODE_DIR)


@pytest.mark.parametrize(
    ("protocol", "gzip"), [("proto", False), ("proto", True), ("json", False), ("json", True)]
)
def test_node_sdk_semconv_spans_land_as_rows(
    node: str, collector: Collector, store: Store, protocol: str, gzip: bool
) -> None:
    session = f"node-{protocol}-{'gz' if gzip else 'plain'}"
    command = [node, "send.js", "--endpoint", collector.traces_url, "--protocol", protocol]
    command += ["--count", "8", "--session", session, *(["--gzip"] if gzip else [])]
    out = subprocess.run(command, cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert results[-1]["summary"]["failed_exports"] == 0
    assert "partial success" not in (out.stdout + out.stderr).lower()  # nothing rejected
    got = rows(store, "SELECT * FROM calls ORDER BY call_id")
    assert len(got) == 8 and {r["session_id"] for r in got} == {session}
    assert [r["tool"] for r in got[:3]] == ["read_file", "search", "write_file"]
    assert all(r["input_bytes"] is None and r["output_bytes"] is None for r in got)
    assert all(r["service"] == "node-agent" and r["source"] == "otlp" for r in got)
    assert [r["failed"] for r in got] == [i % 4 == 3 for i in range(8)]
    assert {r["error_type"] for r in got if r["failed"]} == {"tool_error"}
    assert {r["response_id"] for r in got} == {f"resp-{i}" for i in range(4)}
    assert got[0]["fields_present"] == "session_id,tool,response_id,call_id,service"
    assert all(r["duration_us"] is not None and r["duration_us"] >= 0 for r in got)
    assert collector.stats.rejected_spans == 0 and collector.stats.ignored_spans == 0
