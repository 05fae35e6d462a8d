"""The live path's scorer: frozen thresholds, the adaptive threshold (a rolling quantile of
stream maxima), quarantine and folds, and a saved state that resumes bit for bit."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest

from support.detection import T0, session, table, workload
from toolwatch.detection import NormalModel, OnlineScorer
from toolwatch.detection.cues.base import Call
from toolwatch.detection.model.adaptive import AdaptiveModel, attach_adaptive
from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.scoring.adaptive import Closed, StreamScorer

HOUR = 3600.0


def _model(config: AdaptiveConfig) -> NormalModel:
    train, calib = workload(1, 40), workload(2, 20, start=T0 + timedelta(days=3), prefix="c")
    model = NormalModel.fit(train).calibrate(calib)
    attach_adaptive(model, train, calib, config)
    return model


def _calls(t: pa.Table) -> list[Call]:
    rows = t.sort_by([("start_time", "ascending"), ("seq", "ascending")]).to_pylist()
    return [Call.from_mapping(r) for r in rows]


def _source(t: pa.Table):  # type: ignore[no-untyped-def]
    """calls_of over an in-memory table, recording what was asked."""
    asked: list[Closed] = []

    def calls_of(streams: Sequence[Closed]) -> pa.Table:
        asked.extend(streams)
        keys = {c.key for c in streams}
        rows = [r for r in t.to_pylist() if (r["session_id"], r["agent_id"]) in keys]
        return pa.Table.from_pylist(rows, schema=t.schema)

    return calls_of, asked


def test_frozen_scores_are_the_online_scorers_against_the_operating_point() -> None:
    model = _model(AdaptiveConfig())
    scorer = StreamScorer(model, watch=["all_cusum", "time_point"])
    plain = OnlineScorer(model)
    assert scorer.thresholds == [model.threshold("all", "cusum"), model.threshold("time", "point")]
    for call in _calls(workload(3, 10)):
        _, scores, mask = scorer.score(call)
        want = plain.score(call)[1]
        assert dict(scores) == dict(want)
        assert mask == (want["all_cusum"] > scorer.thresholds[0]) | (
            (want["time_point"] > scorer.thresholds[1]) << 1
        )


def test_the_adaptive_threshold_is_the_rolling_quantile_of_long_stream_maxima() -> None:
    config = AdaptiveConfig(min_calls=20, window=30, min_pool=5, target_fa=0.1, quarantine_h=0)
    model = _model(config)
    adaptive = AdaptiveModel.from_model(model)
    traffic = workload(4, 25, start=T0 + timedelta(days=5), prefix="x", min_calls=20)
    calls_of, _ = _source(traffic)
    scorer = StreamScorer(model, adaptive=adaptive, calls_of=calls_of)
    pool = list(adaptive.pool["all_cusum"])
    assert scorer.thresholds[0] == pytest.approx(np.quantile(pool[-30:], 0.9))
    peaks: dict[tuple[str, str | None], float] = {}
    for call in _calls(traffic):
        _, scores, _ = scorer.score(call)
        key = (call.session_id, call.agent_id)
        peaks[key] = max(peaks.get(key, -math.inf), scores["all_cusum"])
        scorer.advance()
    scorer.advance(scorer.now_us + int(2 * HOUR * 1e6))  # everything closes
    assert scorer.open_streams == 0 and scorer.counts["pooled"] > 0
    lengths = {}
    for r in traffic.to_pylist():
        k = (r["session_id"], r["agent_id"])
        lengths[k] = lengths.get(k, 0) + 1
    # streams closed (in time order of closing) enter the pool when they have 20 calls
    assert len(scorer.pools[0]) == min(30, len(pool) + scorer.counts["pooled"])
    maxima = [x for _, x in scorer.pools[0]]
    assert max(maxima) >= max(v for k, v in peaks.items() if lengths[k] >= 20)
    assert scorer.thresholds[0] == pytest.approx(np.quantile(maxima, 0.9))


def test_quarantine_then_fold_never_an_alarmed_or_labelled_stream() -> None:
    config = AdaptiveConfig(quarantine_h=24, idle_min=30, min_calls=5, refresh_min=0)
    model = _model(config)
    quiet = session(["tool01", "tool02"] * 5, name="quiet", start=10 * 86_400, gap=20.0)
    loud = session(["tool03"] * 30, name="loud", start=10 * 86_400, gap=0.01, failed=True)
    copy = session(["tool04"] * 6, name="copy", start=10 * 86_400, label="burst")
    traffic = table([*quiet, *loud, *copy])
    calls_of, asked = _source(traffic)
    scorer = StreamScorer(model, adaptive=AdaptiveModel.from_model(model), calls_of=calls_of)
    for call in _calls(traffic):
        scorer.score(call, learn=call.session_id != "copy")
    assert scorer.tracks[("loud", None)].alarmed and not scorer.tracks[("quiet", None)].alarmed
    end = scorer.now_us
    closed = scorer.advance(end + int(HOUR * 1e6))  # idle: all three close, nothing folds yet
    assert {c.key[0] for c in closed} == {"quiet", "loud", "copy"} and not asked
    assert [c.key[0] for _, _, c in scorer.pending] == ["quiet"]  # only what may be learnt
    scorer.advance(end + int(23 * HOUR * 1e6))
    assert not asked  # still in quarantine
    snapshot = scorer.snapshot_s
    scorer.advance(end + int(26 * HOUR * 1e6))
    assert [c.key[0] for c in asked] == ["quiet"] and scorer.counts["folded_calls"] == 10
    assert scorer.snapshot_s > snapshot  # a new snapshot was compiled after the fold


def test_a_saved_state_resumes_bit_for_bit() -> None:
    config = AdaptiveConfig(quarantine_h=1, idle_min=10, min_calls=10, min_pool=3, refresh_min=0)
    model = _model(config)
    traffic = workload(6, 30, start=T0 + timedelta(days=5), prefix="y")
    calls = _calls(traffic)
    calls_of, _ = _source(traffic)

    def fresh() -> StreamScorer:
        return StreamScorer(model, adaptive=AdaptiveModel.from_model(model), calls_of=calls_of)

    whole, first = fresh(), fresh()
    want = []
    for call in calls:
        want.append(dict(whole.score(call)[1]))
        whole.advance()
    got = []
    half = len(calls) // 2
    for call in calls[:half]:
        got.append(dict(first.score(call)[1]))
        first.advance()
    saved = json.loads(json.dumps(first.state()))  # through JSON, as on disk
    assert saved["streams"] and saved["counts"]["folded"] > 0
    resumed = fresh()
    resumed.restore(saved)
    for call in calls[half:]:
        got.append(dict(resumed.score(call)[1]))
        resumed.advance()
    assert got == want
    assert resumed.thresholds == whole.thresholds and resumed.counts == whole.counts
    other = StreamScorer(
        model, watch=["all_ewma"], adaptive=AdaptiveModel.from_model(model), calls_of=calls_of
    )
    with pytest.raises(ModelError, match="belongs to model"):
        other.restore(saved)
    saved["streams"][0][8][1] = "nonsense"
    with pytest.raises(ModelError, match="damaged"):
        fresh().restore(saved)


# ------------------------------------------------------------------ the cap on open streams


def _one(name: str, t: float, tool: str = "tool01") -> Call:
    return _calls(table(session([tool], name=name, start=t)))[0]


def test_a_new_stream_past_the_cap_evicts_the_least_recently_active() -> None:
    """Open streams were never capped: a sender inventing a session id per call grew the
    scorer until its streams idled out. At the cap one more closes the least recently active
    at once (its online state too), as if idle; its key may open again as a new stream."""
    scorer = StreamScorer(_model(AdaptiveConfig()), max_open_streams=3)
    told: list[tuple[str, str | None]] = []
    scorer.on_evict = told.append
    for i, name in enumerate(["a", "b", "c", "a"]):  # a is active again: b is the oldest
        scorer.score(_one(name, 10.0 * i))
    assert [k[0] for k in scorer.tracks] == ["b", "c", "a"]
    index, _, _ = scorer.score(_one("d", 50.0))
    assert index == 0 and told == [("b", None)] and scorer.counts["evicted"] == 1
    assert list(scorer.tracks) == [("c", None), ("a", None), ("d", None)]
    assert scorer.online.open_streams == 3 and scorer.tracks[("a", None)].calls == 2
    closed = scorer.advance()  # handed out like an idle stream, once
    assert [(c.key, c.calls) for c in closed] == [(("b", None), 1)]
    assert scorer.counts["closed"] == 1 and scorer.advance() == []
    assert scorer.score(_one("b", 60.0))[0] == 0  # a fresh stream; c, the oldest, goes
    assert told == [("b", None), ("c", None)]
    for i in range(1000):  # one new session id per call: memory stays at the cap
        scorer.score(_one(f"x{i}", 70.0 + i))
    assert scorer.open_streams == scorer.online.open_streams == 3
    assert scorer.counts["evicted"] == 1002 and len(scorer.advance()) == 1001
    with pytest.raises(ValueError, match="at least 1, not 0"):
        StreamScorer(_model(AdaptiveConfig()), max_open_streams=0)


def test_an_evicted_stream_enters_the_pool_only_by_the_usual_rules() -> None:
    """Adaptive: an evicted stream is closed early exactly as an idle one: pooled if it has
    ``min_calls`` calls and was learnt, queued for the fold if it never alarmed."""
    model = _model(AdaptiveConfig(min_calls=5, idle_min=30))
    calls_of, _ = _source(workload(3, 1))
    scorer = StreamScorer(
        model, adaptive=AdaptiveModel.from_model(model), calls_of=calls_of, max_open_streams=2
    )
    pool = len(scorer.pools[0])
    t0 = 3 * 86_400.0 + 7 * 86_400.0
    for i in range(6):
        scorer.score(_one("long", t0 + i))
    scorer.score(_one("short", t0 + 10))
    scorer.score(_one("new", t0 + 11))  # evicts "long" (six calls: pooled)
    scorer.score(_one("new2", t0 + 12))  # evicts "short" (one call: not pooled)
    closed = scorer.advance()
    assert [(c.key[0], c.calls) for c in closed] == [("long", 6), ("short", 1)]
    assert scorer.counts["evicted"] == 2 and scorer.counts["pooled"] == 1
    assert scorer.adaptive is not None
    assert len(scorer.pools[0]) == min(pool + 1, scorer.adaptive.config.window)
    assert [c.key[0] for _, _, c in scorer.pending] == ["long", "short"]


def test_a_state_saved_under_a_higher_cap_is_evicted_down_to_the_new_one() -> None:
    model = _model(AdaptiveConfig())
    wide = StreamScorer(model, max_open_streams=10)
    for i, name in enumerate("abcde"):
        wide.score(_one(name, float(i)))
    narrow = StreamScorer(model, max_open_streams=3)
    narrow.restore(json.loads(json.dumps(wide.state())))
    assert [k[0] for k in narrow.tracks] == ["c", "d", "e"] and narrow.counts["evicted"] == 2
    assert narrow.online.open_streams == 3
    assert [c.key[0] for c in narrow.advance()] == ["a", "b"]
