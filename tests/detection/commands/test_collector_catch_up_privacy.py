"""Privacy of the live scorer's catch-up after a kill: ``toolwatch -v collector --model``
receives tool spans that carry a canary in every place a sender may put content (the GenAI
convention's argument and result attributes, Traceloop's, an exception event, the status
message, a resource attribute), is SIGKILLed before it saves its live state, re-scores the stored
calls at its restart (live-state.json now holds span ids) and raises the runaway's alert. The
canary is in no form (verbatim, shingles, hashes) in either run's log, the HTTP answers,
``/metrics``, live-state.json, the store, or ``sql --format csv`` of its tables; the calls and
the alert are there (positive control)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from support.canary import assert_absent, assert_store_clean, make_canary
from support.collector import PB, SpanSpec, pb_request, post, wait_until
from support.collector_process import Server
from support.detection import T0, session, table, workload
from toolwatch.cli import main
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.instrumentation.export.replay import record_attributes
from toolwatch.words import counted


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def _rows() -> list[dict[str, Any]]:
    """Normal sessions and a runaway (it crosses at its 20th call) over the last 8 hours."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    offset = (start - T0).total_seconds()
    runaway = session(["tool03"] * 30, name="runaway", gap=10.0, failed=True, start=offset + 1e4)
    calls = pa.concat_tables([workload(5, 3, tools=8, start=start), table(runaway)])
    rows = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")]).to_pylist()
    for i, row in enumerate(rows):
        row["span_id"] = f"{i + 1:016x}"
    return rows


def _request(rows: list[dict[str, Any]], canary: str) -> bytes:
    """The rows as tool spans, content attached everywhere a sender may put it."""
    content = {
        "gen_ai.tool.call.arguments": json.dumps({"q": canary}),
        "gen_ai.tool.call.result": canary,
        "traceloop.entity.input": canary,
        "traceloop.entity.output": canary,
        "mcp.request.argument.q": canary,
    }
    specs = []
    for row in rows:
        start_ns = int(row["start_time"].timestamp() * 1e6) * 1000
        specs.append(
            SpanSpec(
                {**record_attributes(row), **content},
                start_ns=start_ns,
                end_ns=start_ns + row["duration_us"] * 1000,
                status=2 if row["failed"] else 1,
                trace_id=bytes.fromhex(row["trace_id"]),
                span_id=bytes.fromhex(row["span_id"]),
                events=[("exception", start_ns, {"exception.message": canary})],
            )
        )
    request = ExportTraceServiceRequest.FromString(
        pb_request(specs, resource={"process.command_args": canary})
    )
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                span.status.message = canary
    return request.SerializeToString()


def _scored(server: Server) -> int:
    for line in server.get("/metrics")[1].decode().splitlines():
        if line.startswith("toolwatch_collector_live_calls_scored_total "):
            return int(float(line.split()[1]))
    return -1


def _send(server: Server, rows: list[dict[str, Any]], canary: str, scored: int) -> list[bytes]:
    answers = []
    for i in range(0, len(rows), 40):
        reply = post(server.url, _request(rows[i : i + 40], canary), PB)
        assert reply.status == 200
        answers.append(reply.body)
    wait_until(lambda: _scored(server) == scored, timeout=60)
    return answers


def test_no_canary_through_a_killed_collectors_catch_up(
    model_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canary = make_canary()
    rows = _rows()
    cut = next(i for i, r in enumerate(rows) if r["session_id"] == "runaway" and r["seq"] == 11)
    head, tail = rows[: cut + 1], rows[cut + 1 :]
    assert canary.encode() in _request(head[:1], canary)  # what is sent holds the canary
    extra = ["--model", str(model_path), "-v"]
    said: list[tuple[str, bytes | str]] = []
    first = Server(tmp_path, extra=extra)
    try:
        said += [("an OTLP answer", a) for a in _send(first, head, canary, len(head))]
    finally:
        first.proc.kill()  # SIGKILL before the first periodic save: the catch-up's case
        first.proc.wait(30)
    said.append(("the first run's log", first.log.read_text()))
    again = Server(tmp_path, extra=extra)
    try:
        assert _scored(again) == len(head)  # re-scored from the store before it listened
        said += [("an OTLP answer", a) for a in _send(again, tail, canary, len(rows))]
        said.append(("/metrics", again.get("/metrics")[1]))
    finally:
        log = again.stop()
    assert again.proc.returncode == 0
    assert f"caught up {counted(len(head), 'call')} stored after its state was last saved" in log
    said.append(("the second run's log", log))
    store = Store(again.store)
    assert store.query("SELECT count(*) AS n FROM calls").column("n")[0].as_py() == len(rows)
    alerts = store.query("SELECT session_id, call_index FROM alerts").to_pylist()
    assert {"session_id": "runaway", "call_index": 20} in alerts
    state = json.loads((again.store / "models" / "live-state.json").read_text())
    assert state["caught"]["seen"]  # the span ids it holds now
    for sql in ("SELECT * FROM calls", "SELECT * FROM alerts"):
        cmd = ["sql", sql, "--format", "csv", "--store", str(again.store), "-v"]
        assert main(cmd) == 0
        out, err = capsys.readouterr()
        said += [(f"sql csv {sql}", out), (f"sql csv {sql} stderr", err)]
    for where, text in said:
        assert_absent(text, canary, where)
    assert_store_clean(store, canary)
