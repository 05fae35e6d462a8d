"""The live state of a frozen model: a restarted collector resumes its open streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.detection import T0, session, table, workload
from support.disk import record_fsync_and_replace
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer

#: a slow retry loop (a failure every 10 s): its all·CUSUM builds up over 20 calls to cross
GAP, START = 10.0, 3 * 3600.0 + 100.0


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def _alert(a: dict[str, Any]) -> tuple[Any, ...]:
    return (a["session_id"], a["agent_id"], a["seq"], a["call_index"], a["score"], a["threshold"])


def _traffic() -> tuple[pa.Table, pa.Table]:
    """Normal sessions with the runaway among them, cut in two after its 12th call."""
    runaway = session(["tool03"] * 40, name="runaway", gap=GAP, failed=True, start=START)
    calls = pa.concat_tables([workload(5, 6, tools=8), table(runaway)])
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    cut = pa.scalar(int((T0.timestamp() + START + 11 * GAP) * 1e6), pa.timestamp("us", tz="UTC"))
    early = pc.less_equal(calls.column("start_time"), cut)
    return calls.filter(early), calls.filter(pc.invert(early))


def _run(model_path: Path, store: Store, parts: list[pa.Table], restart: bool) -> list[tuple]:
    alerts: list[tuple] = []
    live = LiveScorer(model_path, store)
    for i, part in enumerate(parts):
        store.append("calls", part)
        alerts += [_alert(a) for a in live.process(part)]
        if restart and i == 0:
            live.close()  # saves the state
            live = LiveScorer(model_path, store)  # a new process
    live.close()
    return alerts


def test_a_restarted_frozen_collector_resumes_a_half_built_runaway(
    model_path: Path, tmp_path: Path
) -> None:
    """Only an adaptive model's state was saved: a frozen collector restarted mid-stream started
    the runaway's CUSUM again from 0 and alerted 12 calls late, at another score. Now the
    restart raises exactly the uninterrupted run's alert, bit for bit."""
    head, tail = _traffic()
    straight = _run(model_path, Store(tmp_path / "a"), [head, tail], restart=False)
    runaway = [a for a in straight if a[0] == "runaway"]
    assert [a[3] for a in runaway] == [20]  # one excursion, crossed after the cut
    restarted = _run(model_path, Store(tmp_path / "b"), [head, tail], restart=True)
    assert restarted == straight
    saved = json.loads((tmp_path / "b" / "models" / "live-state.json").read_text())
    assert saved["adaptive"] is None and saved["pools"] == [] and saved["pending"] == []
    assert ["runaway", None] in [row[:2] for row in saved["streams"]]


def test_a_killed_frozen_collector_does_not_raise_an_alert_twice(
    model_path: Path, tmp_path: Path
) -> None:
    """Killed right after an alert (no close, long before the periodic save): the state saved
    with the crossing batch holds the stream above its threshold, so no second alert."""
    loop = table(session(["tool03"] * 25, name="loop", gap=2.0, failed=True))
    head, tail = loop.slice(0, 6), loop.slice(6)  # the loop crosses at its call #4
    store = Store(tmp_path / "s")
    store.append("calls", head)
    first = LiveScorer(model_path, store, save_every_s=3600.0)
    assert [a["call_index"] for a in first.process(head)] == [4]
    del first  # killed: neither close() nor a periodic save ran
    store.append("calls", tail)
    again = LiveScorer(model_path, store, save_every_s=3600.0)
    assert again.process(tail) == []
    assert again.scorer.open_streams == 1 and again.scorer.tracks[("loop", None)].calls == 25


def _state_of(path: Path, store: Store, **kw: Any) -> Path:
    with LiveScorer(path, store, **kw) as live:
        live.process(table(session(["tool03"] * 6, name="loop", gap=2.0, failed=True)))
    return store.root / "models" / "live-state.json"


def test_a_state_of_the_other_mode_is_set_aside_with_the_reason(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolwatch.detection.model.adaptive import attach_adaptive
    from toolwatch.detection.model.adaptive_config import AdaptiveConfig

    train, calib = workload(1, 40, tools=8), workload(2, 12, tools=8, prefix="c")
    model = NormalModel.fit(train).calibrate(calib)
    attach_adaptive(model, train, calib, AdaptiveConfig(min_pool=3))
    path = model.save(tmp_path / "model.json")
    store = Store(tmp_path / "s")
    state = _state_of(path, store, adaptive=False)  # the same model, scored frozen
    live = LiveScorer(path, store)  # adaptive now
    assert live.adaptive and live.scorer.open_streams == 0
    assert "saved by a frozen scorer, this one is adaptive" in caplog.text
    assert "set aside as live-state.json.unusable" in caplog.text and not state.exists()
    live.close()
    caplog.clear()
    assert LiveScorer(path, store, adaptive=False).scorer.open_streams == 0
    assert "saved by a adaptive" not in caplog.text
    assert "saved by an adaptive scorer, this one is frozen" in caplog.text


def test_a_frozen_state_of_another_model_is_set_aside(
    model_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(tmp_path / "s")
    state = _state_of(model_path, store)
    other = NormalModel.fit(workload(3, 40, tools=8)).calibrate(workload(4, 10, tools=8))
    live = LiveScorer(other.save(tmp_path / "other.json"), store)
    assert live.scorer.open_streams == 0 and caplog.text.count("starting afresh") == 1
    assert f"belongs to model {NormalModel.load(model_path).model_id!r}" in caplog.text
    assert (state.parent / "live-state.json.unusable").exists()


def test_a_full_disk_under_live_scoring_is_counted_and_leaves_no_temp_file(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alerts table and the state file on a full disk: each failed write was one ERROR
    line, but /metrics and the shutdown line said nothing (``alerts_raised`` counted alerts
    stored nowhere), and the state's partial temp file stayed. Now both are counted."""
    store = Store(tmp_path / "store")
    parts = _traffic()
    for part in parts:
        store.append("calls", part)
    real_append = Store.append
    real_write = Path.write_text

    def append(self: Store, table_name: str, rows: Any, **kwargs: Any) -> Any:
        if table_name == "alerts":
            raise OSError(28, "No space left on device")
        return real_append(self, table_name, rows, **kwargs)

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith("live-state"):
            real_write(self, data[:10], *args, **kwargs)  # as much as fitted
            raise OSError(28, "No space left on device")
        return real_write(self, data, *args, **kwargs)

    monkeypatch.setattr(Store, "append", append)
    monkeypatch.setattr(Path, "write_text", write_text)
    live = LiveScorer(model_path, store)
    raised = [a for part in parts for a in live.process(part)]
    live.close()
    metrics = live.metrics()
    assert raised and metrics["live_alerts_unstored"][2] == len(raised)
    assert metrics["live_state_save_errors"][2] >= 1
    assert not list(live.state_path.parent.glob("*.tmp"))  # type: ignore[union-attr]


def test_the_state_is_fsynced_before_its_rename_and_reads_back_identically(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state was written to a temp file and renamed without an fsync: a power cut could
    leave a zero-length ``live-state.json`` after the rename. Now the temp file is fsynced
    before the rename and the directory after it (a power cut itself cannot be simulated, so
    the order of the calls is checked), and what is written reads back as the same state."""
    store = Store(tmp_path / "s")
    live = LiveScorer(model_path, store)
    head, _ = _traffic()
    store.append("calls", head)
    live.process(head)
    events = record_fsync_and_replace(monkeypatch)
    path = live.save_state()
    monkeypatch.undo()
    assert path is not None
    tmp = f"{path}.tmp"
    assert events == [("fsync", tmp), ("replace", f"{tmp} -> {path}"), ("fsync", str(path.parent))]
    written = live.scorer.state()
    again = LiveScorer(model_path, store)
    assert again.scorer.state() == written and again._above == live._above
    assert any(row[0] == "runaway" for row in written["streams"])


def _unique(calls: pa.Table) -> pa.Table:
    """Span ids unique across the whole traffic (the collector drops a span id seen before)."""
    ids = pa.array([f"{i + 1:016x}" for i in range(calls.num_rows)])
    return calls.set_column(calls.schema.get_field_index("span_id"), "span_id", ids)


def _chunks(calls: pa.Table, n: int = 3) -> list[pa.Table]:
    size = -(-calls.num_rows // n)
    return [calls.slice(i, size) for i in range(0, calls.num_rows, size)]


def _stored_alerts(store: Store) -> list[tuple]:
    rows = store.query("SELECT * FROM alerts ORDER BY call_time, span_id").to_pylist()
    return [_alert(a) for a in rows]


def test_a_collector_killed_between_saves_catches_up_from_the_store(
    model_path: Path, tmp_path: Path
) -> None:
    """Killed between periodic saves, the collector lost from its state every call scored
    since the last one, though the store held them all: the runaway's CUSUM restarted lower and
    alerted late. Now the calls stored after the last save are re-scored at start, and the run
    ends exactly as an uninterrupted one: same open streams, same alerts, none twice."""
    head, tail = (_chunks(part) for part in _traffic_unique())
    straight = Store(tmp_path / "a")
    live = LiveScorer(model_path, straight, catch_up=True)
    for part in head + tail:
        straight.append("calls", part)
        live.process(part)
    live.close()

    store = Store(tmp_path / "b")
    first = LiveScorer(model_path, store, catch_up=True, save_every_s=3600.0)
    for part in head:
        store.append("calls", part)
        first.process(part)
    saved = json.loads((store.root / "models" / "live-state.json").read_text())
    assert saved["streams"] == [] and saved["caught"]["seen"] == []  # only the start's save
    del first  # SIGKILL: no close, no periodic save
    again = LiveScorer(model_path, store, catch_up=True, save_every_s=3600.0)
    assert again.calls_scored == sum(p.num_rows for p in head)
    for part in tail:
        store.append("calls", part)
        again.process(part)
    again.close()
    assert again.scorer.state() == live.scorer.state() and again._above == live._above
    assert _stored_alerts(store) == _stored_alerts(straight)
    assert [a[3] for a in _stored_alerts(store) if a[0] == "runaway"] == [20]


def _traffic_unique() -> tuple[pa.Table, pa.Table]:
    head, tail = _traffic()
    both = _unique(pa.concat_tables([head, tail]))
    return both.slice(0, head.num_rows), both.slice(head.num_rows)


def test_an_alert_stored_before_the_kill_is_not_raised_again_by_the_catch_up(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the crossing's alert was stored but before the state was saved: the
    catch-up re-scores the crossing call, finds its alert in the ``alerts`` table (span id, cue
    set, detector) and does not raise it twice; the stream is above its threshold again."""
    loop = table(session(["tool03"] * 25, name="loop", gap=2.0, failed=True))
    head, tail = loop.slice(0, 6), loop.slice(6)  # the loop crosses at its call #4
    store = Store(tmp_path / "s")
    first = LiveScorer(model_path, store, catch_up=True, save_every_s=3600.0)
    monkeypatch.setattr(first, "save_state", lambda: None)  # killed before the save
    store.append("calls", head)
    assert [a["call_index"] for a in first.process(head)] == [4]
    del first
    again = LiveScorer(model_path, store, catch_up=True, save_every_s=3600.0)
    assert again.calls_scored == 6 and again.alerts_raised == 0
    assert again._above == {("loop", None): 1}
    store.append("calls", tail)
    assert again.process(tail) == []
    assert [a[3] for a in _stored_alerts(store)] == [4]


def test_a_first_start_takes_the_stored_calls_as_seen_and_never_scores_them(
    model_path: Path, tmp_path: Path
) -> None:
    """History stored before the collector ran with --model (or under a state saved before
    catch-up existed) is not scored at start, nor after a kill."""
    store = Store(tmp_path / "s")
    old, _ = _traffic_unique()
    store.append("calls", old)
    live = LiveScorer(model_path, store, catch_up=True)
    assert live.calls_scored == 0 and live.window is not None and live.window.seen
    del live
    again = LiveScorer(model_path, store, catch_up=True)
    assert again.calls_scored == 0 and again.alerts_raised == 0
    path = store.root / "models" / "live-state.json"
    doc = json.loads(path.read_text())
    doc.pop("caught")  # a state from before catch-up
    path.write_text(json.dumps(doc))
    assert LiveScorer(model_path, store, catch_up=True).calls_scored == 0
