"""The live scorer's cap on open streams: eviction, its counters, log line and metrics."""

from __future__ import annotations

import http.client
import logging
from pathlib import Path

import pyarrow as pa
import pytest

from support.detection import session, table, workload
from toolwatch.collector.otlp import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def _invented(first: int, n: int, start: float) -> pa.Table:
    """A sender inventing a session id per call."""
    return table(
        row for i in range(n) for row in session(["tool01"], name=f"id{first + i}", start=start + i)
    )


def test_the_cap_evicts_counts_and_logs_once_per_burst(
    model_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    live = LiveScorer(model_path, Store(tmp_path / "s"), max_open_streams=3)
    live.process(_invented(0, 10, 0.0))
    assert live.scorer.open_streams == live.scorer.online.open_streams == 3
    assert live.streams_evicted == 7 and [k[0] for k in live.scorer.tracks] == [
        "id7",
        "id8",
        "id9",
    ]
    live.process(_invented(10, 10, 20.0))  # the same burst: no second line
    assert live.streams_evicted == 17 and live.scorer.counts["closed"] == 17
    lines = [r.getMessage() for r in caplog.records if "evicted, the least" in r.getMessage()]
    assert lines == [
        "live scoring: 7 open streams evicted, the least recently active, to hold "
        "max_open_streams = 3 (7 evicted since start): each closed as if idle; a sender inventing "
        "a session id per call?"
    ]
    metrics = live.metrics()
    assert metrics["live_streams_evicted"] == ("counter", metrics["live_streams_evicted"][1], 17)
    assert metrics["live_open_streams"][::2] == ("gauge", 3)
    assert metrics["live_calls_scored"][2] == 20
    live.close()
    assert "streams_evicted=17" in caplog.text and "open_streams=3" in caplog.text


def test_every_live_counter_restarts_from_zero_with_the_process(
    model_path: Path, tmp_path: Path
) -> None:
    """``live_streams_evicted`` was restored from the live state while every other live
    counter started from 0, so a scrape after a restart mixed two conventions. Now all count
    since the process started, as Prometheus expects of a counter (``rate()`` reads the
    reset); the open streams (a gauge) and the state's running total are kept, and streams
    evicted by the restart itself (a lower cap) count in the new run."""
    live = LiveScorer(model_path, Store(tmp_path / "s"), max_open_streams=3)
    live.process(_invented(0, 10, 0.0))
    live.close()
    assert live.metrics()["live_streams_evicted"][2] == 7
    again = LiveScorer(model_path, Store(tmp_path / "s"), max_open_streams=3)
    metrics = again.metrics()
    counters = {name: v for name, (kind, _, v) in metrics.items() if kind == "counter"}
    assert set(counters.values()) == {0} and "live_streams_evicted" in counters
    assert metrics["live_open_streams"][2] == 3 and again.scorer.counts["evicted"] == 7
    again.process(_invented(10, 2, 20.0))
    assert again.metrics()["live_streams_evicted"][2] == 2
    again.close()
    narrower = LiveScorer(model_path, Store(tmp_path / "s"), max_open_streams=1)
    assert narrower.streams_evicted == 2 and narrower.scorer.counts["evicted"] == 11


def test_a_stream_evicted_and_opened_again_in_one_batch_starts_clean(tmp_path: Path) -> None:
    """The evicted stream's above-threshold bit and novelty state go at once (the novelty
    watch never holds more than the cap): the same key opened again later in the batch is a
    new stream (as after idling out) and may alert again; its own state is not dropped when
    the evicted stream is handed out at the batch's end."""
    model = NormalModel.fit(workload(1, 40, tools=8), {"novelty_alert": "cusum"})
    path = model.calibrate(workload(2, 10, tools=8)).save(tmp_path / "model.json")
    loop = session(["tool03"] * 12, name="loop", gap=2.0, failed=True)  # crosses at call #4
    others = [r for i in range(3) for r in session(["tool01"], name=f"o{i}", start=30.0 + i)]
    again = session(["tool03"] * 12, name="loop", gap=2.0, failed=True, start=40.0)
    live = LiveScorer(path, None, max_open_streams=3)
    assert live.novelty is not None
    held: list[int] = []
    live.on_scored = lambda *_: held.append(len(live.novelty.streams))  # type: ignore[union-attr]
    alerts = live.process(table(loop + others + again))
    model_alerts = [a for a in alerts if a["cue_set"] == "all"]
    assert [(a["session_id"], a["call_index"]) for a in model_alerts] == [("loop", 4)] * 2
    assert live.streams_evicted == 2 and live._above.get(("loop", None))
    assert live.novelty.streams[("loop", None)][1].index == 12  # not 24: a new stream
    assert max(held) == 3
    assert live.process(table(session(["tool03"] * 3, name="loop", start=70.0, failed=True))) == []


def test_the_collector_exposes_the_live_counters_on_metrics(
    model_path: Path, tmp_path: Path
) -> None:
    store = Store(tmp_path / "s")
    live = LiveScorer(model_path, store, max_open_streams=3)
    with Collector(store, port=0, compact_interval=None, extra_metrics=live.metrics) as collector:
        live.process(_invented(0, 5, 0.0))
        conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
    lines = set(text.splitlines())
    assert "toolwatch_collector_live_streams_evicted_total 2.0" in lines
    assert "toolwatch_collector_live_open_streams 3.0" in lines
    assert "toolwatch_collector_live_calls_scored_total 5.0" in lines
