"""Live scoring: alert rows in the store, crossing semantics, webhook delivery, robustness."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pytest

from support.detection import session, table, workload
from support.webhook import Hook, webhook_receiver
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel, score_calls
from toolwatch.detection.alerting.alerts import ALERTS_SCHEMA, describe
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.detection.cues.names import CUE_NAMES
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.model.normal_model import VERSION
from toolwatch.detection.scoring.explain import dominant_cue, dominant_cues


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def incident_batch() -> pa.Table:
    """Normal sessions plus a runaway retry loop in a subagent and a machine-speed burst."""
    retry = session(
        ["tool03"] * 25, name="w5-0001", agent="sub-retry", gap=2.0, failed=True, start=20_000.0
    )
    burst = session([f"tool0{i % 8}" for i in range(15)], name="burst", gap=0.1)
    return pa.concat_tables([workload(5, 6, tools=8), table(retry + burst)])


def expected_alerts(model: NormalModel, calls: pa.Table, stat: str = "all_cusum") -> list[tuple]:
    """Crossings computed independently from the batch scorer."""
    scored = score_calls(model, calls).to_pylist()
    cue_set, _, det = stat.rpartition("_")
    thr = model.threshold(cue_set, det)
    out, above = [], False
    for row in scored:
        if row["call_index"] == 0:
            above = False
        now = row[stat] > thr
        if now and not above:
            out.append(
                (row["session_id"], row["agent_id"], row["seq"], row["call_index"], row[stat])
            )
        above = now
    return out


def key(alert: dict[str, Any]) -> tuple:
    return (
        alert["session_id"],
        alert["agent_id"],
        alert["seq"],
        alert["call_index"],
        alert["score"],
    )


def test_live_scorer_writes_the_expected_alert_rows(model_path: Path, tmp_path: Path) -> None:
    model = NormalModel.load(model_path)
    calls = incident_batch()
    want = expected_alerts(model, calls)
    assert any(a[1] == "sub-retry" for a in want) and any(a[0] == "burst" for a in want)
    store = Store(tmp_path / "store")
    with LiveScorer(model_path, store) as live:
        alerts = live.process(calls)
    assert sorted(map(key, alerts)) == sorted(want)
    retry = next(a for a in alerts if a["agent_id"] == "sub-retry")
    assert retry["cue_set"] == "all" and retry["detector"] == "cusum"
    assert retry["threshold"] == model.threshold("all", "cusum")
    assert retry["tool"] == "tool03" and retry["cue"] in ("failure", "time")
    assert retry["model_id"] == model.model_id and retry["model_version"] == VERSION
    stored = store.query("SELECT * EXCLUDE (date) FROM alerts ORDER BY call_time").to_pylist()
    assert sorted(map(key, stored)) == sorted(want)
    assert store.query("SELECT * FROM alerts LIMIT 0").schema.names[: len(ALERTS_SCHEMA)] == (
        ALERTS_SCHEMA.names
    )


def test_state_carries_across_batches(model_path: Path, tmp_path: Path) -> None:
    calls = incident_batch()
    whole = LiveScorer(model_path, tmp_path / "a").process(calls)
    live = LiveScorer(model_path, tmp_path / "b")
    pieces: list[dict[str, Any]] = []
    order = np.argsort(calls.column("start_time").to_numpy(), kind="stable")
    for chunk in np.array_split(order, 7):  # arrival order, in seven collector batches
        pieces += live.process(calls.take(pa.array(chunk)))
    assert sorted(map(key, pieces)) == sorted(map(key, whole))


def test_one_alert_per_excursion_not_per_call(model_path: Path, tmp_path: Path) -> None:
    retry = table(session(["tool03"] * 40, name="loop", gap=2.0, failed=True))
    alerts = LiveScorer(model_path, tmp_path / "s").process(retry)
    assert len(alerts) == 1  # the CUSUM stays above threshold for the rest of the loop


def test_bad_rows_are_skipped_never_raised(model_path: Path, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    live = LiveScorer(model_path, tmp_path / "s")
    assert live.process(workload(5, 1, tools=8).drop_columns(["tool"])) == []
    assert "lacks column" in caplog.text
    good = workload(5, 1, tools=8)
    sizes = good.column("input_bytes").to_pylist()
    sizes[0] = -5
    bad = good.set_column(
        good.schema.get_field_index("input_bytes"), "input_bytes", pa.array(sizes, pa.int64())
    )
    live.process(bad)
    assert live.calls_skipped == good.num_rows + 1
    assert live.calls_scored == good.num_rows - 1
    assert live.process(table([])) == []
    strings = good.set_column(
        good.schema.get_field_index("start_time"),
        "start_time",
        pa.array(["not a time"] * good.num_rows),
    )
    assert live.process(strings) == []
    assert "unreadable batch" in caplog.text


def test_uncalibrated_or_broken_model_is_refused(tmp_path: Path) -> None:
    from toolwatch.detection import ModelError

    path = NormalModel.fit(workload(1, 5)).save(tmp_path / "raw.json")
    with pytest.raises(ModelError, match="never calibrated"):
        LiveScorer(path, tmp_path / "s")
    path.write_text("{")
    with pytest.raises(ModelError, match="not valid JSON"):
        LiveScorer(path, tmp_path / "s")


def test_an_alarm_is_explained_by_the_cue_behind_its_statistic() -> None:
    scores = {stat_column(c, d): 0.0 for c in CUE_NAMES for d in DETECTORS}
    scores.update(order_point=5.0, time_point=1.0, order_ewma=0.5, time_ewma=2.0, failure_ewma=1.9)
    assert dominant_cue("all", "point", scores) == "order"  # the call's own spike
    assert dominant_cue("all", "ewma", scores) == "time"  # what built the statistic up
    assert dominant_cue("all", "cusum", scores) == "time"
    assert dominant_cue("size", "cusum", scores) == "size"  # a single cue explains itself
    arrays = {k: np.array([v, v]) for k, v in scores.items()}
    assert dominant_cues("all", "cusum", arrays).tolist() == ["time", "time"]
    assert dominant_cues("all", "point", arrays).tolist() == ["order", "order"]


def test_all_ewma_is_the_mean_of_the_cue_ewmas(model_path: Path) -> None:
    """Why the cues' EWMAs explain an ``all`` alarm: ``all_ewma`` decomposes into them."""
    model = NormalModel.load(model_path)
    scored = score_calls(model, incident_batch())
    parts = sum(scored.column(stat_column(c, "ewma")).to_numpy() for c in CUE_NAMES)
    rebuilt = parts / 4.0
    np.testing.assert_allclose(scored.column("all_ewma").to_numpy(), rebuilt, atol=1e-9)


# ------------------------------------------------------------------ webhook


@pytest.fixture
def hook() -> Iterator[tuple[str, type[Hook]]]:
    with webhook_receiver() as receiver:
        yield receiver


def test_webhook_gets_the_alerts_after_retries(model_path: Path, tmp_path: Path, hook) -> None:  # type: ignore[no-untyped-def]
    url, handler = hook
    handler.script = [500, 503]  # two failures, then success
    poster = WebhookPoster(url, backoff_s=0.01)
    live = LiveScorer(model_path, tmp_path / "s", poster=poster)
    alerts = live.process(incident_batch())
    assert poster.flush(10)
    live.close()
    assert len(handler.received) == 1
    posted = handler.received[0]["alerts"]
    assert [(a["session_id"], a["call_index"], a["score"]) for a in posted] == [
        (a["session_id"], a["call_index"], a["score"]) for a in alerts
    ]
    assert isinstance(posted[0]["alert_time"], str)
    assert poster.stats == {"sent": 1, "failed": 0, "dropped": 0, "retries": 2}


def test_webhook_does_not_retry_a_rejection(hook) -> None:  # type: ignore[no-untyped-def]
    url, handler = hook
    handler.script = [400]
    poster = WebhookPoster(url, backoff_s=0.01)
    poster.post([{"session_id": "s"}])
    assert poster.flush(10)
    poster.close()
    assert handler.received == [] and poster.stats["failed"] == 1
    assert poster.stats["retries"] == 0


def test_a_slow_webhook_never_blocks_ingest(model_path: Path, tmp_path: Path, hook) -> None:  # type: ignore[no-untyped-def]
    url, handler = hook
    handler.delay = 1.0
    live = LiveScorer(model_path, tmp_path / "s", poster=WebhookPoster(url, max_queue=1))
    started = time.perf_counter()
    for _ in range(3):
        live.process(table(session(["tool03"] * 25, name=f"loop{_}", gap=2.0, failed=True)))
    assert time.perf_counter() - started < 0.9
    assert live.poster is not None and live.poster.stats["dropped"] >= 1
    live.close()


def test_alerts_still_queued_at_exit_are_delivered(hook) -> None:  # type: ignore[no-untyped-def]
    """A process that exits right after queueing alerts (a collector stopped after an
    incident) still delivers them: the sender thread is a daemon, an atexit hook drains it."""
    url, handler = hook
    handler.delay = 0.3
    code = (
        "from toolwatch.detection.alerting.webhook import WebhookPoster\n"
        f"p = WebhookPoster({url!r})\n"
        "p.post([{'session_id': 'a'}])\n"
        "p.post([{'session_id': 'b'}])\n"
    )  # no close(): the interpreter exits at once
    subprocess.run([sys.executable, "-c", code], timeout=60, check=True)
    assert [a["session_id"] for b in handler.received for a in b["alerts"]] == ["a", "b"]


class _HugeAnswer(BaseHTTPRequestHandler):
    """Accepts every batch, then answers with a 256 MiB body it streams until the client
    goes away (counting what it managed to send)."""

    SIZE = 256 << 20
    received: ClassVar[list[dict[str, Any]]] = []
    streamed: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", str(self.SIZE))
        self.end_headers()
        chunk, sent = b"x" * (1 << 20), 0
        try:
            while sent < self.SIZE:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        self.streamed.append(sent)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_webhook_answering_with_a_huge_body_is_not_read_into_memory() -> None:
    """Only the status of an answer counts: a receiver answering with 256 MiB (or an endless
    stream) had every byte read into the collector's memory (4 GiB gave 4 GiB RSS)."""
    handler = type("Huge", (_HugeAnswer,), {"received": [], "streamed": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        poster = WebhookPoster(f"http://127.0.0.1:{server.server_address[1]}/alerts")
        for name in ("a", "b"):  # two POSTs, two huge answers
            poster.post([{"session_id": name}])
            assert poster.flush(30)
        poster.close()
        deadline = time.monotonic() + 10
        while len(handler.streamed) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.shutdown()
        server.server_close()
    assert [b["alerts"][0]["session_id"] for b in handler.received] == ["a", "b"]
    assert poster.stats == {"sent": 2, "failed": 0, "dropped": 0, "retries": 0}
    assert len(handler.streamed) == 2 and max(handler.streamed) < 64 << 20, handler.streamed


def test_webhook_url_is_validated() -> None:
    with pytest.raises(ValueError, match="http"):
        WebhookPoster("ftp://example.org/x")


def test_spans_over_otlp_to_a_collector_with_a_model_produce_alert_rows(
    model_path: Path, tmp_path: Path
) -> None:
    """Records → OTLP/HTTP spans → the collector (real HTTP on loopback) → durable write →
    ``on_batch`` = the live scorer → alert rows in the store's ``alerts`` view."""
    server = pytest.importorskip("toolwatch.collector.otlp.server")
    replay = pytest.importorskip("toolwatch.instrumentation.export.replay")
    calls = incident_batch()
    calls = calls.set_column(
        calls.schema.get_field_index("span_id"),
        "span_id",
        pa.array([f"{i + 1:016x}" for i in range(calls.num_rows)]),
    )
    calls = calls.take(
        pa.compute.sort_indices(calls, [("start_time", "ascending"), ("seq", "ascending")])
    )
    store = Store(tmp_path / "store")
    live = LiveScorer(model_path, store)
    collector = server.Collector(store, port=0, on_batch=live.process, compact_interval=None)
    collector.start()
    try:
        sent = replay.send_records(calls.to_pylist(), collector.url, batch=100)
    finally:
        collector.stop()
    assert sent == calls.num_rows
    stored = store.query("SELECT * EXCLUDE (date) FROM calls")
    assert stored.num_rows == calls.num_rows
    want = expected_alerts(NormalModel.load(model_path), stored)
    assert want and live.calls_scored == calls.num_rows
    got = store.query("SELECT * EXCLUDE (date) FROM alerts").to_pylist()
    assert sorted(map(key, got)) == sorted(want)
    assert {a["session_id"] for a in got} >= {"burst", "w5-0001"}


# ------------------------------------------------------------------ the adaptive live scorer


@pytest.fixture(scope="module")
def adaptive_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from toolwatch.detection.model.adaptive import attach_adaptive
    from toolwatch.detection.model.adaptive_config import AdaptiveConfig

    train, calib = workload(1, 40, tools=8), workload(2, 12, tools=8, prefix="c")
    model = NormalModel.fit(train).calibrate(calib)
    config = AdaptiveConfig(quarantine_h=1, idle_min=10, min_calls=10, min_pool=3, refresh_min=0)
    attach_adaptive(model, train, calib, config)
    return model.save(tmp_path_factory.mktemp("adaptive") / "model.json")


def _batches(calls: pa.Table, n: int) -> list[pa.Table]:
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    size = -(-calls.num_rows // n)
    return [calls.slice(i * size, size) for i in range(n)]


def test_an_adaptive_collector_restarted_resumes_where_it_stopped(
    adaptive_path: Path, tmp_path: Path
) -> None:
    """Kill-and-restart between two batches gives the alerts an uninterrupted run gives:
    the folds read the calls back from the store, the state file carries everything else."""
    from datetime import timedelta

    from support.detection import T0

    traffic = pa.concat_tables(
        [workload(7, 30, tools=8, start=T0 + timedelta(days=4), prefix="z"), incident_batch()]
    )
    parts = _batches(traffic, 6)

    def run(store: Store, restart_after: int | None) -> list[tuple]:
        alerts: list[tuple] = []
        live = LiveScorer(adaptive_path, store)
        assert live.adaptive and live.state_path == store.root / "models" / "live-state.json"
        for i, part in enumerate(parts):
            store.append("calls", part)  # the collector stores a batch, then scores it
            alerts += [key(a) for a in live.process(part)]
            if i == restart_after:
                live.close()  # saves the state
                live = LiveScorer(adaptive_path, store)  # a new process
        live.close()
        return alerts

    straight = run(Store(tmp_path / "a"), None)
    restarted = run(Store(tmp_path / "b"), 2)
    assert straight and restarted == straight
    state = json.loads((tmp_path / "b" / "models" / "live-state.json").read_text())
    assert (
        state["counts"]["folded"] > 0
        and state["model_id"] == NormalModel.load(adaptive_path).model_id
    )


def test_novelty_alerts_resume_across_a_restart(tmp_path: Path) -> None:
    """The novelty watch's per-stream state (keys used, position, running CUSUM) is saved
    with the live state: a restart mid-stream neither re-arms the warm-up nor forgets the
    tools already used, so the alerts equal an uninterrupted run's."""
    from toolwatch.detection.model.adaptive import attach_adaptive
    from toolwatch.detection.model.adaptive_config import AdaptiveConfig

    train, calib = workload(1, 40, tools=8), workload(2, 12, tools=8, prefix="c")
    model = NormalModel.fit(train, {"novelty_alert": "cusum", "novelty_warmup": 2})
    model.calibrate(calib)
    config = AdaptiveConfig(quarantine_h=1, idle_min=10, min_calls=10, min_pool=3, refresh_min=0)
    attach_adaptive(model, train, calib, config)
    path = model.save(tmp_path / "model.json")
    # twelve calls of two tools, then eight first uses (three never seen in training)
    tools = ["tool01", "tool02"] * 6 + [f"tool0{i}" for i in range(3, 8)] + ["x1", "x2", "x3"]
    calls = table(session(tools, name="hijacked", start=3 * 86_400.0))
    head, tail = calls.slice(0, 12), calls.slice(12)

    def run(store: Store, restart: bool) -> list[tuple[int, str]]:
        live = LiveScorer(path, store)
        out = []
        for i, part in enumerate((head, tail)):
            store.append("calls", part)
            out += [(a["call_index"], a["cue"]) for a in live.process(part)]
            if restart and i == 0:
                live.close()
                live = LiveScorer(path, store)
        live.close()
        return out

    straight = run(Store(tmp_path / "a"), restart=False)
    assert "novelty" in {cue for _, cue in straight}, straight
    assert run(Store(tmp_path / "b"), restart=True) == straight
    saved = json.loads((tmp_path / "b" / "models" / "live-state.json").read_text())
    assert [row[0] for row in saved["novelty"]] == ["hijacked"]


def test_an_unusable_state_file_is_set_aside_with_a_warning(
    adaptive_path: Path, tmp_path: Path, caplog
) -> None:  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "s")
    state = store.root / "models" / "live-state.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"format": "toolwatch.live-state", "version": 1, "model_id": "other"}')
    with LiveScorer(adaptive_path, store) as live:
        assert live.scorer.open_streams == 0
    assert "starting afresh" in caplog.text and "belongs to model 'other'" in caplog.text


def _saved_state(adaptive_path: Path, store: Store) -> dict[str, Any]:
    """A real state file: the incident batch scored, then the scorer closed."""
    calls = incident_batch()
    store.append("calls", calls)
    with LiveScorer(adaptive_path, store) as live:
        live.process(calls)
    state: dict[str, Any] = json.loads((store.root / "models" / "live-state.json").read_text())
    assert state["pools"][0] and state["streams"]
    return state


@pytest.mark.parametrize(
    "damage",
    ["null", "list", "nan_pool", "year_1970_snapshot", "counts_not_a_table"],
)
def test_a_damaged_state_file_never_stops_the_collector(
    adaptive_path: Path, tmp_path: Path, damage: str, caplog
) -> None:  # type: ignore[no-untyped-def]
    """Hand-edited or damaged state (valid JSON of the wrong shape, a NaN — river's quantile
    aborted the process on it —, a time the decay overflows at) is set aside with one warning
    and the scorer starts afresh; the next start finds no unusable file."""
    store = Store(tmp_path / "s")
    state = _saved_state(adaptive_path, store)
    if damage == "nan_pool":
        state["pools"][0][0][1] = float("nan")
    elif damage == "year_1970_snapshot":
        state["snapshot_s"] = 1.0
    elif damage == "counts_not_a_table":
        state["counts"] = 3
    text = {"null": "null", "list": "[]"}.get(damage) or json.dumps(state)
    path = store.root / "models" / "live-state.json"
    path.write_text(text)
    live = LiveScorer(adaptive_path, store)
    assert live.scorer.open_streams == 0 and live.scorer.counts["closed"] == 0
    assert caplog.text.count("starting afresh") == 1
    assert "set aside as live-state.json.unusable" in caplog.text
    assert not path.exists() and (path.parent / "live-state.json.unusable").read_text() == text
    assert live.process(incident_batch())  # it scores (and alerts) as a fresh scorer
    live.close()
    caplog.clear()
    LiveScorer(adaptive_path, store).close()  # the state it saved is usable
    assert "starting afresh" not in caplog.text


def test_a_call_stamped_in_the_future_does_not_close_the_open_streams(
    model_path: Path, tmp_path: Path, caplog
) -> None:  # type: ignore[no-untyped-def]
    """One span from a skewed clock (year 2100) moved the event clock there: every open stream
    closed at once (the retry loop restarted from nothing and alerted a second time) and an
    adaptive model aged to 2100. With the collector's guard its time moves no clock, the
    alerts are an unskewed run's, and the call is counted and logged."""
    from datetime import UTC, datetime

    from support.detection import T0

    ago = (datetime.now(UTC) - T0).total_seconds() - 120.0  # the loop ran two minutes ago
    loop = table(session(["tool03"] * 25, name="loop", gap=2.0, failed=True, start=ago))
    skewed = table(
        session(
            ["tool01"], name="skewed", start=(datetime(2100, 1, 1, tzinfo=UTC) - T0).total_seconds()
        )
    )
    head, tail = loop.slice(0, 6), loop.slice(6)  # the loop alerts at its call #4

    def run(parts: list[pa.Table], guard: float | None) -> tuple[list[tuple], LiveScorer]:
        live = LiveScorer(model_path, None, clock_ahead_s=guard)
        return [key(a) for part in parts for a in live.process(part)], live

    straight, _ = run([head, tail], 300.0)
    assert len(straight) == 1  # one excursion, one alert
    guarded, live = run([head, skewed, tail], 300.0)
    assert guarded == straight
    assert live.calls_ahead == 1 and live.scorer.open_streams == 2
    assert "1 call stamped up to" in caplog.text and "(+300 s allowed)" in caplog.text
    _, trusting = run([head, skewed, tail], None)  # a replay trusts event time: the old harm
    assert trusting.scorer.now_us == skewed.column("start_time")[0].value  # clock in 2100
    assert live.scorer.now_us < trusting.scorer.now_us


def test_a_replay_gives_the_guard_its_own_clock(model_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """A replay has no clock of its own time: the guard measured its stored calls against
    this machine's clock. ``clock_us`` (the batch's arrival) is the guard's clock now: a call
    stamped a day after its batch arrived is distrusted, counted, and left to the replay to
    report (no WARNING line per batch)."""
    loop = table(session(["tool03"] * 25, name="loop", gap=2.0, failed=True))
    arrived = int(loop.column("start_time").cast(pa.int64())[-1].as_py())
    skewed = table(session(["tool01"], name="skewed", start=86_400.0))
    live = LiveScorer(model_path, None, clock_ahead_s=300.0)
    live.process(loop, clock_us=arrived)
    live.process(skewed, clock_us=arrived)
    assert live.calls_ahead == 1
    assert live.scorer.now_us == arrived + 300_000_000  # as the collector: its clock + 5 min
    assert "stamped up to" not in caplog.text


def test_an_adaptive_model_is_not_aged_by_a_call_from_the_future(
    adaptive_path: Path, tmp_path: Path
) -> None:
    """Unguarded, the call from 2100 made the adaptive model compile a snapshot decayed to
    2100 (every later fold then failed); guarded, its clock stays at this machine's."""
    from datetime import UTC, datetime

    from support.detection import T0

    now = datetime.now(UTC)
    loop = table(
        session(["tool03"] * 25, name="loop", gap=2.0, start=(now - T0).total_seconds() - 60)
    )
    skewed = table(
        session(
            ["tool01"], name="skewed", start=(datetime(2100, 1, 1, tzinfo=UTC) - T0).total_seconds()
        )
    )
    store = Store(tmp_path / "s")
    with LiveScorer(adaptive_path, store, clock_ahead_s=300.0) as live:
        for part in (loop, skewed):
            store.append("calls", part)
            live.process(part)
        assert live.scorer.now_us <= (now.timestamp() + 400) * 1e6
        assert live.scorer.snapshot_s <= now.timestamp() + 400
        assert live.scorer.counts["fold_errors"] == 0 and live.calls_ahead == 1


def test_a_killed_adaptive_collector_does_not_raise_an_alert_twice(
    adaptive_path: Path, tmp_path: Path
) -> None:
    """SIGKILL right after an alert (no close, long before the periodic save): the restarted
    scorer knew nothing of the crossing, the loop's stream restarted and alerted again."""
    loop = table(session(["tool03"] * 25, name="loop", gap=2.0, failed=True, start=86_400.0))
    head, tail = loop.slice(0, 6), loop.slice(6)  # the loop alerts within its first calls
    store = Store(tmp_path / "s")
    store.append("calls", head)
    first = LiveScorer(adaptive_path, store, save_every_s=3600.0)
    raised = first.process(head)
    assert [a["session_id"] for a in raised] == ["loop"]
    del first  # killed: neither close() nor a periodic save ran
    store.append("calls", tail)
    again = LiveScorer(adaptive_path, store, save_every_s=3600.0)
    assert again.process(tail) == []
    assert again.scorer.open_streams == 1 and again.scorer.tracks[("loop", None)].calls == 25


def test_an_alert_line_names_a_position_only_when_the_call_has_one() -> None:
    """Another sender's span carries no position: its alert line said "seq None"."""
    row = {
        "cue_set": "all",
        "detector": "cusum",
        "session_id": "s",
        "agent_id": None,
        "call_index": 3,
        "tool": "Grep",
        "score": 7.51,
        "threshold": 6.88,
        "cue": "failure",
    }
    assert "call #3 (Grep) score 7.51 > 6.88" in describe({**row, "seq": None})
    assert "call #3 (seq 12, Grep) score" in describe({**row, "seq": 12})
