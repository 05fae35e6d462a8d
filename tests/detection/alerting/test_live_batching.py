"""The live scorer gives the same alerts and state however the stored calls were batched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.detection import session, table, workload
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.model.adaptive import attach_adaptive
from toolwatch.detection.model.adaptive_config import AdaptiveConfig


def _model(kind: str, folder: Path) -> Path:
    train, calib = workload(1, 40, tools=8), workload(2, 12, tools=8, prefix="c")
    model = NormalModel.fit(train).calibrate(calib)
    if kind == "adaptive":  # streams close after 10 min, fold after 1 h, refresh at once
        config = AdaptiveConfig(
            quarantine_h=1, idle_min=10, min_calls=10, min_pool=3, refresh_min=0
        )
        attach_adaptive(model, train, calib, config)
    return model.save(folder / "model.json")


@pytest.fixture(scope="module", params=["frozen", "adaptive"])
def model_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model(request.param, tmp_path_factory.mktemp(request.param))


def _calls() -> pa.Table:
    """Normal sessions every half hour and a failing stream that sleeps 9 h mid-way."""
    first = session(["tool03"] * 12, name="sleeper", gap=10.0, failed=True, start=1800)
    back = session(["tool03"] * 25, name="sleeper", gap=10.0, failed=True, start=34200)
    for i, row in enumerate(back):
        row["response_id"] = f"sleeper-back-r{i}"
    calls = pa.concat_tables(
        [workload(5, 16, tools=8), workload(6, 16, tools=8, prefix="v"), table(first + back)]
    )
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    ids = pa.array([f"{i + 1:016x}" for i in range(calls.num_rows)])
    return calls.set_column(calls.schema.get_field_index("span_id"), "span_id", ids)


def _run(
    model_path: Path, root: Path, calls: pa.Table, size: int, cap: int = 100_000
) -> tuple[Any, ...]:
    store = Store(root)
    store.append("calls", calls)  # stored before scored, as the collector does
    live = LiveScorer(model_path, store, record=False, max_open_streams=cap)
    alerts = []
    for i in range(0, calls.num_rows, size):
        alerts += live.process(calls.slice(i, size))
    keys = ("session_id", "agent_id", "seq", "call_index", "span_id", "cue", "score", "threshold")
    return [tuple(a[k] for k in keys) for a in alerts], live.scorer.state(), live._above


def test_alerts_and_state_do_not_depend_on_how_the_calls_were_batched(
    model_path: Path, tmp_path: Path
) -> None:
    """Streams closed (adaptive: pooled, folded, refreshed) only at a batch's end, so a stream
    asleep for 9 h went on where it slept when its waking call came in the batch that moved the
    clock past its idle time, and was closed and started afresh when the batches were cut
    otherwise: one batch (the catch-up after a kill) alerted at another call than 40-call
    requests. Now they act at minute boundaries of event time: the same alerts, state and
    above-threshold bits for one batch, 40-call batches and one call a batch."""
    calls = _calls()
    whole = _run(model_path, tmp_path / "whole", calls, calls.num_rows)
    assert _run(model_path, tmp_path / "forty", calls, 40) == whole
    assert _run(model_path, tmp_path / "single", calls, 1) == whole
    woke = [a for a in whole[0] if a[0] == "sleeper"]
    assert woke and all(a[2] >= 12 and a[3] == a[2] - 12 for a in woke)  # a new stream


def test_a_stream_evicted_at_the_cap_is_pooled_alike_however_the_calls_were_batched(
    tmp_path: Path,
) -> None:
    """An adaptive model at its open-stream cap pooled an evicted stream's peak at the next
    advance, which a batch's end also is: with one stream open at most, a 15-call failing
    stream evicted by a second one moved the threshold after the second's first call when
    each call was a batch, but only at the next minute in one batch, so the second alerted at
    its 5th call against 2.79 in one batch and at its 8th against 5.29 one call a batch. The
    evicted stream is now pooled at once, before the evicting call is scored: the same
    alerts and state both ways, the second's crossing against the raised threshold."""
    model_path = _model("adaptive", tmp_path)
    start = 100 * 3600.0  # one minute of event time, no boundary inside
    first = session(["tool03"] * 15, name="first", gap=1.0, failed=True, start=start)
    second = session(["tool03"] * 30, name="second", gap=1.0, failed=True, start=start + 15)
    calls = table(first + second)
    ids = pa.array([f"{i + 1:016x}" for i in range(calls.num_rows)])
    calls = calls.set_column(calls.schema.get_field_index("span_id"), "span_id", ids)
    whole = _run(model_path, tmp_path / "whole", calls, calls.num_rows, cap=1)
    assert _run(model_path, tmp_path / "single", calls, 1, cap=1) == whole
    crossings = [(a[0], a[3], round(a[7], 2)) for a in whole[0]]
    assert crossings == [("first", 4, 2.79), ("second", 7, 5.29)]
    assert whole[1]["counts"]["evicted"] == 1 and whole[1]["counts"]["pooled"] == 1
