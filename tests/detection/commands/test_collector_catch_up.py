"""``toolwatch collector --model`` killed between two saves of its live state, over real
OTLP/HTTP: the restarted process re-scores the calls stored after the last save."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.collector import wait_until
from support.collector_process import Server
from support.detection import T0, session, table, workload
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.instrumentation.export.replay import send_records


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def _traffic() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Normal sessions and a slow runaway over the last 8 hours, cut after its 12th call
    (it crosses at its 20th); span ids unique (the collector drops one seen before)."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    offset = (start - T0).total_seconds()
    runaway = session(["tool03"] * 40, name="runaway", gap=10.0, failed=True, start=offset + 1e4)
    calls = pa.concat_tables([workload(5, 6, tools=8, start=start), table(runaway)])
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    rows = calls.to_pylist()
    for i, row in enumerate(rows):
        row["span_id"] = f"{i + 1:016x}"
    cut = T0 + timedelta(seconds=offset + 1e4 + 11 * 10.0)
    return [r for r in rows if r["start_time"] <= cut], [r for r in rows if r["start_time"] > cut]


def _scored(server: Server) -> float:
    text = server.get("/metrics")[1].decode()
    found = re.search(r"^toolwatch_collector_live_calls_scored_total (\S+)$", text, re.M)
    return float(found.group(1)) if found else -1.0


def _send(server: Server, rows: list[dict[str, Any]], scored: int) -> None:
    for i in range(0, len(rows), 40):  # several requests, several batches
        assert send_records(rows[i : i + 40], server.url) == len(rows[i : i + 40])
    wait_until(lambda: _scored(server) == scored, timeout=60)


def _outcome(root: Path) -> tuple[Any, ...]:
    state = json.loads((root / "models" / "live-state.json").read_text())
    alerts = Store(root).query("SELECT * FROM alerts ORDER BY call_time, span_id").to_pylist()
    keys = ("session_id", "agent_id", "seq", "call_index", "span_id", "score", "threshold")
    return (
        state["streams"],
        state["now_us"],
        state["above"],
        [tuple(a[k] for k in keys) for a in alerts],
    )


def test_a_collector_killed_before_its_periodic_save_resumes_as_if_never_stopped(
    model_path: Path, tmp_path: Path
) -> None:
    """Before, the calls scored since the last periodic save (every 60 s) were gone from the
    restored state after a SIGKILL: the runaway's CUSUM restarted from its 13th call and the
    alert came late, at another score. Now the restarted collector re-scores them from the
    store before it listens: the same open streams, scores and alerts as an uninterrupted run,
    no alert twice."""
    head, tail = _traffic()
    model = ["--model", str(model_path)]
    straight = Server(tmp_path / "straight", extra=model)
    try:
        _send(straight, head, len(head))
        _send(straight, tail, len(head) + len(tail))
    finally:
        straight.stop()
    assert straight.proc.returncode == 0
    expected = _outcome(straight.store)
    assert [a[3] for a in expected[3] if a[0] == "runaway"] == [20]

    first = Server(tmp_path / "killed", extra=model)
    try:
        _send(first, head, len(head))
    finally:
        first.proc.kill()  # SIGKILL: no periodic save yet, no close
        first.proc.wait(30)
    state = first.store / "models" / "live-state.json"
    saved = json.loads(state.read_text()) if state.exists() else {"streams": []}
    assert saved["streams"] == []  # no save since the start: every call scored is lost
    again = Server(tmp_path / "killed", extra=model)
    try:
        assert _scored(again) == len(head)  # re-scored before it listened
        _send(again, tail, len(head) + len(tail))
    finally:
        log = again.stop()
    assert again.proc.returncode == 0
    assert f"caught up {len(head)} call(s) stored after its state was last saved" in log
    assert _outcome(again.store) == expected
