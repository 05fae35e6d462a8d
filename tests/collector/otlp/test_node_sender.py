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
import socket
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


@pytest.mark.parametrize("protocol", ["proto", "json"])
def test_node_stdio_client_without_a_session_is_one_stream_per_process(
    node: str, collector: Collector, store: Store, protocol: str
) -> None:
    """No gen_ai.conversation.id (an MCP client over stdio has no session): on Node's default
    resource nothing names the process, so every span is rejected with what to set; with the
    process and host detectors (as the Node SDK runs them) the calls are stored as one stream,
    ``<pid>@<host>``, and ``fields_present`` says the key was the process."""
    base = [node, "send.js", "--endpoint", collector.traces_url, "--protocol", protocol]
    base += ["--count", "4", "--session", ""]
    bare = subprocess.run(base, cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert "rejected 4 spans" in bare.stdout + bare.stderr
    assert "OTEL_RESOURCE_ATTRIBUTES=session.id=" in bare.stdout + bare.stderr
    assert rows(store) == []
    assert collector.stats.rejected_by == {"missing:gen_ai.conversation.id": 4}

    out = subprocess.run(
        [*base, "--detect"], cwd=NODE_DIR, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])["summary"]
    got = rows(store, "SELECT * FROM calls ORDER BY call_id")
    key = f"{summary['pid']}@{socket.gethostname()}"
    assert [(r["session_id"], r["tool"]) for r in got] == [
        (key, t) for t in ("read_file", "search", "write_file", "read_file")
    ]
    assert got[0]["fields_present"] == "session_id:process.pid,tool,response_id,call_id,service"
    assert collector.stats.calls == 4 and collector.stats.rejected_by == {
        "missing:gen_ai.conversation.id": 4
    }
