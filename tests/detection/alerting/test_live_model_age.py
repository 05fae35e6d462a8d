"""An adaptive model deployed long after its newest call: warned of, or its gap skipped.

A simulated corpus, its first days to train and calibrate an adaptive model (default knobs:
half-life 14 d, no floor), its last days sent to the collector's live scorer (stored, then
scored, as the collector does) either at their own time or 316 days later (22.6 half-lives).
"""

from __future__ import annotations

import argparse
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting import CLOCK_AHEAD_S
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.commands import collector
from toolwatch.detection.model.adaptive import attach_adaptive
from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.usage import UsageError

LATER = timedelta(days=316)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """(the model file, the live calls at their own time): 12 days ending 330 days ago, so
    the live calls moved 316 days later are still in this machine's past."""
    start = (datetime.now(UTC) - timedelta(days=330)).date()
    calls = simulate(seed=5, sessions=80, start=start, days=12)
    first_day = _stream_start_day(calls)
    train = calls.filter(pc.less(first_day, 7))
    calib = calls.filter(pc.and_(pc.greater_equal(first_day, 7), pc.less(first_day, 9)))
    live = calls.filter(pc.greater_equal(first_day, 9))
    model = NormalModel.fit(train).calibrate(calib)
    attach_adaptive(model, train, calib, AdaptiveConfig())
    return model.save(tmp_path_factory.mktemp("aged") / "model.json"), live


def _stream_start_day(calls: pa.Table) -> pa.Array:
    """Each row's stream's first day (so a stream is wholly train, calibration or live)."""
    us = calls.column("start_time").cast(pa.int64()).to_numpy()
    days = ((us - us.min()) // 86_400_000_000).tolist()
    keys = list(zip(calls["session_id"].to_pylist(), calls["agent_id"].to_pylist(), strict=True))
    first: dict[tuple[str, str | None], int] = {}
    for key, day in zip(keys, days, strict=True):
        first[key] = min(first.get(key, day), day)
    return pa.array([first[k] for k in keys], pa.int64())


def _later(calls: pa.Table, by: timedelta) -> pa.Table:
    i = calls.column_names.index("start_time")
    return calls.set_column(i, "start_time", pc.add(calls.column("start_time"), by))


def alarmed_streams(model: Path, calls: pa.Table, store: Path, **options: bool) -> set[str]:
    """The streams that raised an alert, the calls sent in six batches through a collector's
    live scorer (each stored, then scored)."""
    calls = calls.sort_by([("start_time", "ascending"), ("seq", "ascending")])
    size = -(-calls.num_rows // 6)
    db = Store(store)
    alarmed: set[str] = set()
    with LiveScorer(model, db, clock_ahead_s=CLOCK_AHEAD_S, catch_up=True, **options) as live:
        for i in range(6):
            part = calls.slice(i * size, size)
            db.append("calls", part)
            alarmed |= {f"{a['session_id']}/{a['agent_id']}" for a in live.process(part)}
    return alarmed


def test_a_model_far_older_than_the_live_calls_alarms_and_is_warned_of(
    corpus: tuple[Path, pa.Table], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same normal streams alarm far more 316 days later (the first refresh compiles
    statistics faded to 2^-22.6), and the live scorer says why, once, with what to do."""
    model, live = corpus
    on_time = alarmed_streams(model, live, tmp_path / "a")
    with caplog.at_level(logging.WARNING):
        late = alarmed_streams(model, _later(live, LATER), tmp_path / "b")
    assert len(late) > 4 * max(len(on_time), 1)  # 8 of 28 streams, 1 at their own time
    warned = [r.getMessage() for r in caplog.records if r.name.endswith("model_age")]
    assert len(warned) == 1 and "--fade-from-first-call" in warned[0]
    assert "days (2" in warned[0] and "before the first call scored" in warned[0]


def test_fading_from_the_first_call_scores_a_late_deployment_as_an_early_one(
    corpus: tuple[Path, pa.Table], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``fade_from_first_call`` the 316 days count for nothing: the streams that alarm
    are those that alarm at their own time, and a restarted collector keeps the gap
    skipped (it is in the saved statistics)."""
    model, live = corpus
    on_time = alarmed_streams(model, live, tmp_path / "a", fade_from_first_call=True)
    with caplog.at_level(logging.INFO):
        late = alarmed_streams(
            model, _later(live, LATER), tmp_path / "b", fade_from_first_call=True
        )
    assert late == on_time
    said = [r for r in caplog.records if r.name.endswith("model_age")]
    assert len(said) == 1 and said[0].levelno == logging.INFO
    assert "are skipped (--fade-from-first-call)" in said[0].getMessage()
    with LiveScorer(model, Store(tmp_path / "b"), fade_from_first_call=True) as resumed:
        assert resumed.scorer.adaptive is not None
        assert resumed.scorer.adaptive.stats.skipped_s > LATER.total_seconds()


def test_the_collector_warns_at_start_and_refuses_the_option_without_a_model(
    corpus: tuple[Path, pa.Table], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``toolwatch collector --model M``: a model 318+ days old is warned of at start (once:
    not again at the first call); ``--fade-from-first-call`` alone is a usage error."""
    model, _ = corpus
    parser = argparse.ArgumentParser()
    collector.add_arguments(parser)
    store = Store(tmp_path / "s")
    args = parser.parse_args(["--store", str(store.root), "--model", str(model)])
    with caplog.at_level(logging.WARNING):
        live = collector._scorer(args, store, None)
    lines = [r.getMessage() for r in caplog.records if "half-lives" in r.getMessage()]
    assert len(lines) == 1 and "before now" in lines[0] and live.age_checked
    live.close()
    with pytest.raises(UsageError, match="--fade-from-first-call needs --model"):
        collector._check_usage(parser.parse_args(["--fade-from-first-call"]))
