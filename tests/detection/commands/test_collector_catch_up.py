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
from toolwatch.words import counted


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
    assert f"caught up {counted(len(head), 'call')} stored after its state was last saved" in log
    assert _outcome(again.store) == expected


def _traffic_with_a_sleeper() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two normal sessions an hour over the last 20 hours and a slow failing stream that makes
    12 calls, sleeps 9 hours while the others go on, then makes 25 more; cut after its 5th
    call back, so the sleep lies in the calls a killed collector must catch up."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=20)
    offset = (start - T0).total_seconds()
    first = session(["tool03"] * 12, name="sleeper", gap=10.0, failed=True, start=offset + 1800)
    back = session(["tool03"] * 25, name="sleeper", gap=10.0, failed=True, start=offset + 34200)
    for i, row in enumerate(back):
        row["response_id"] = f"sleeper-back-r{i}"
    calls = pa.concat_tables(
        [
            workload(5, 16, tools=8, start=start),
            workload(6, 16, tools=8, start=start + timedelta(minutes=30), prefix="v"),
            table(first + back),
        ]
    )
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    rows = calls.to_pylist()
    for i, row in enumerate(rows):
        row["span_id"] = f"{i + 1:016x}"
    cut = T0 + timedelta(seconds=offset + 34200 + 4 * 10.0)
    return [r for r in rows if r["start_time"] <= cut], [r for r in rows if r["start_time"] > cut]


def test_a_stream_idle_inside_the_caught_up_calls_closes_as_it_did_live(
    model_path: Path, tmp_path: Path
) -> None:
    """The catch-up scored the calls missed by a kill as one batch, and streams idle for 6 h
    closed only at a batch's end: a stream asleep for 9 h inside those calls was not closed,
    so when it woke its CUSUM went on from where it slept and alerted at another call than the
    uninterrupted collector, which had closed it and started it afresh. Streams now close at
    minute boundaries of event time, however the calls were batched: the restarted collector
    ends with the uninterrupted one's streams, scores and alerts."""
    head, tail = _traffic_with_a_sleeper()
    model = ["--model", str(model_path)]
    straight = Server(tmp_path / "straight", extra=model)
    try:
        _send(straight, head, len(head))
        _send(straight, tail, len(head) + len(tail))
    finally:
        straight.stop()
    expected = _outcome(straight.store)
    woke = [a for a in expected[3] if a[0] == "sleeper"]
    assert [a[3] for a in woke] == [20]  # the stream that woke up alerted as a new stream
    assert woke[0][2] == 12 + 20  # index 20 counted from its waking call (seq 12), not from 0

    first = Server(tmp_path / "killed", extra=model)
    try:
        _send(first, head, len(head))
    finally:
        first.proc.kill()  # SIGKILL before the first periodic save: the whole head is caught up
        first.proc.wait(30)
    again = Server(tmp_path / "killed", extra=model)
    try:
        assert _scored(again) == len(head)
        _send(again, tail, len(head) + len(tail))
    finally:
        log = again.stop()
    assert f"caught up {counted(len(head), 'call')}" in log
    assert _outcome(again.store) == expected


def _late_traffic() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Normal sessions over the last 8 hours, then a slow failing runaway stamped 40 minutes
    before the newest of them (a sender whose spans were held back): its first 12 calls, then
    the rest (it crosses at its 20th)."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    head = workload(5, 6, tools=8, start=start).sort_by([("start_time", "ascending")])
    newest = head.column("start_time")[-1].as_py()
    late_start = (newest - T0).total_seconds() - 2400
    late = session(["tool03"] * 40, name="late", gap=10.0, failed=True, start=late_start)
    rows = head.to_pylist() + table(late).to_pylist()
    for i, row in enumerate(rows):
        row["span_id"] = f"{i + 1:016x}"
    n = head.num_rows
    return rows[:n], rows[n : n + 12], rows[n + 12 :]


def test_calls_arriving_long_after_their_start_are_caught_up_after_a_kill(
    model_path: Path, tmp_path: Path
) -> None:
    """The catch-up re-scored the calls stored after the last save by event time, from 5 min
    behind the newest call scored: a runaway's first 12 calls, stamped 40 min behind the
    newest and arriving after the last save, lay before that bound: lost to a SIGKILL (none
    caught up), the runaway's CUSUM started again from its 13th call. Each write
    now carries an arrival mark (``received_time``) and the restarted collector re-scores the
    writes after the last scored one: the same streams, scores and alerts as without the
    kill."""
    head, late, tail = _late_traffic()
    model = ["--model", str(model_path)]
    runs = {}
    for name in ("straight", "killed"):
        root = tmp_path / name
        first = Server(root, extra=model)
        try:
            _send(first, head, len(head))
        finally:
            first.stop()  # the state is saved at close: the late calls come after it
        second = Server(root, extra=model)
        try:
            _send(second, late, len(late))  # no crossing: no save before the next minute
        finally:
            if name == "killed":
                second.proc.kill()
                second.proc.wait(30)
            else:
                second.stop()
        third = Server(root, extra=model)
        try:
            assert _scored(third) == (len(late) if name == "killed" else 0)
            _send(third, tail, _scored(third) + len(tail))
        finally:
            log = third.stop()
        assert third.proc.returncode == 0
        runs[name] = (_outcome(third.store), log)
    expected, _ = runs["straight"]
    assert [(a[0], a[3]) for a in expected[3] if a[0] == "late"] == [("late", 20)]
    assert (
        f"caught up {counted(len(late), 'call')} stored after its state was last saved"
        in runs["killed"][1]
    )
    assert runs["killed"][0] == expected
    marked = Store(third.store).query("SELECT count(received_time) AS n FROM calls")
    assert marked.column("n")[0].as_py() == len(head) + len(late) + len(tail)
