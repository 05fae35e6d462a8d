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
from toolwatch.detection.model.config import ModelError
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
