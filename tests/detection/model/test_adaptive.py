"""The adaptive normal model: decayed statistics, compiled snapshots, bounded novelty, artifact."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from support.detection import T0, session, table, workload
from toolwatch.detection import NormalModel, OnlineScorer, score_calls
from toolwatch.detection.calls.frame import prepare
from toolwatch.detection.cues.base import Call
from toolwatch.detection.model.adaptive import (
    AdaptiveModel,
    DecayedStats,
    attach_adaptive,
    bin_knot_us,
    gap_bins,
)
from toolwatch.detection.model.adaptive_config import MAX_SPAN_DAYS, AdaptiveConfig
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.scoring.adaptive import StreamScorer
from toolwatch.injection.experiment.replay import ReplayConfig

DAY = 86_400.0
HOUR = 3_600.0


def trained(config: AdaptiveConfig) -> tuple[NormalModel, AdaptiveModel]:
    train, calib = workload(1, 40), workload(2, 15, start=T0 + timedelta(days=3), prefix="c")
    model = NormalModel.fit(train).calibrate(calib)
    return model, attach_adaptive(model, train, calib, config)


def test_without_decay_or_novelty_the_snapshot_is_the_frozen_model() -> None:
    model, adaptive = trained(AdaptiveConfig(half_life_days=math.inf, novelty_streams=0))
    snap = adaptive.snapshot(adaptive.stats.t_ref)
    test = prepare(workload(3, 15, tools=15))  # 3 tools the training never saw
    for cue in ("order", "failure"):  # integer counts: bit for bit
        assert snap.cues[cue].score_many(test).tolist() == model.cues[cue].score_many(test).tolist()
    np.testing.assert_allclose(
        snap.cues["size"].score_many(test), model.cues["size"].score_many(test), atol=1e-9
    )
    # time: the decayed histogram (1/50 decade bins) instead of the exact knots
    a, b = snap.cues["time"].score_many(test), model.cues["time"].score_many(test)
    assert np.corrcoef(a, b)[0, 1] > 0.99
    assert snap.cues["time"].score_gap(1_000) > snap.cues["time"].score_gap(1_000_000)  # graded


def test_gap_bins_and_knots_bracket_every_gap() -> None:
    gaps = np.array([0, 999, 1_000, 1_500_000, 11_100_000, 10**12 * 3])
    bins = gap_bins(gaps)
    assert bins.tolist()[0] == bins.tolist()[1] == bins.tolist()[2] == 0
    assert bins.max() == 449
    for g, b in zip(gaps.tolist()[2:5], bins.tolist()[2:5], strict=True):
        assert g <= bin_knot_us(b) and (b == 0 or g > bin_knot_us(b - 1))


def test_decay_halves_an_observation_per_half_life() -> None:
    stats = DecayedStats(half_life_s=7 * DAY)
    frame = prepare(table(session(["A", "B", "A"], name="s", gap=10.0)))
    stats.fold(frame)
    t_end = float(frame.start_us.max()) / 1e6
    a = stats.order_cue(t_end, session_mix=True, novel=frozenset(), cap=None)
    later = stats.order_cue(t_end + 14 * DAY, session_mix=True, novel=frozenset(), cap=None)
    assert sum(later.unigram) == pytest.approx(sum(a.unigram) / 4, rel=1e-9)  # two half-lives
    assert stats.factor(t_end + 7 * DAY) == pytest.approx(0.5)
    # renormalising (every 20 half-lives) keeps the effective counts and prunes what faded
    stats.fold(prepare(table(session(["C"], name="late", start=200 * DAY))))
    assert stats.t_ref == pytest.approx(T0.timestamp() + 200 * DAY)
    assert set(stats.unigram) == {stats.tools.index("C")}  # A and B decayed below 1e-3


def test_a_new_tool_is_bounded_until_seen_in_enough_streams() -> None:
    config = AdaptiveConfig(half_life_days=math.inf, novelty_streams=3, novelty_zcap=2.0)
    _, adaptive = trained(config)
    now = adaptive.stats.t_ref
    mean, sd = adaptive.standardisation["order"]
    cap = mean + 2.0 * sd
    probe = table(session(["tool01", "mcp__newserver__fetch", "tool01"], name="probe"))
    plain = adaptive.snapshot(now, novelty=False).cues["order"].score_many(prepare(probe))
    capped = adaptive.snapshot(now).cues["order"].score_many(prepare(probe))
    assert plain[1] > cap and capped[1] == pytest.approx(cap)  # bounded novelty
    for i in range(3):  # seen in three folded streams: no longer novel, and learnt
        adaptive.fold(table(session(["tool02", "mcp__newserver__fetch"], name=f"n{i}")))
    after = adaptive.snapshot(now).cues["order"].score_many(prepare(probe))
    assert "mcp__newserver__fetch" not in adaptive.stats.novel_tools(now, 3)
    assert after[1] < plain[1]
    # a snapshot scores online exactly as in batch, novelty caps included
    snap = adaptive.snapshot(now)
    online = OnlineScorer(snap)
    rows = probe.to_pylist()
    assert [online.update(r)["all_cusum"] for r in rows] == score_calls(snap, probe).column(
        "all_cusum"
    ).to_pylist()


def test_the_initial_pool_is_the_calibration_streams_maxima() -> None:
    _model, adaptive = trained(AdaptiveConfig(min_calls=20))
    calib = workload(2, 15, start=T0 + timedelta(days=3), prefix="c")
    scored = score_calls(adaptive.snapshot(adaptive.stats.t_ref), calib)
    frame = prepare(calib)
    lengths = np.bincount(frame.stream)
    maxima = np.maximum.reduceat(scored.column("all_cusum").to_numpy(), np.flatnonzero(frame.start))
    assert sorted(adaptive.pool["all_cusum"]) == sorted(maxima[lengths >= 20].tolist())


def test_the_artifact_carries_the_adaptive_part(tmp_path: Path) -> None:
    model, adaptive = trained(AdaptiveConfig(half_life_days=10, quarantine_h=6))
    path = model.save(tmp_path / "m.json")
    loaded = AdaptiveModel.from_model(NormalModel.load(path))
    assert loaded.config == adaptive.config and loaded.pool == adaptive.pool
    probe = prepare(workload(5, 5))
    now = adaptive.stats.t_ref + DAY
    a, b = adaptive.snapshot(now), loaded.snapshot(now)
    for cue in ("order", "size", "time", "failure"):
        assert a.cues[cue].score_many(probe).tolist() == b.cues[cue].score_many(probe).tolist()
    with pytest.raises(ModelError, match="--adaptive"):
        AdaptiveModel.from_model(NormalModel.fit(workload(1, 5)))
    doc = NormalModel.load(path).to_dict()
    doc["adaptive"]["stats"]["bigram"].append([0, 999, 1.0])  # a tool id off the registry
    body = {k: v for k, v in doc.items() if k != "checksum"}
    from toolwatch.detection.model.normal_model import _checksum

    doc["checksum"] = _checksum(body)
    with pytest.raises(ModelError, match="adaptive part is invalid"):
        AdaptiveModel.from_model(NormalModel.from_dict(doc))


def test_adaptive_config_validates_and_round_trips() -> None:
    with pytest.raises(ModelError, match="target_fa"):
        AdaptiveConfig(target_fa=1.5)
    with pytest.raises(ModelError, match=r"has no field \[.half_lfe_days.\]"):
        AdaptiveConfig.from_dict({"half_lfe_days": 3})
    config = AdaptiveConfig(half_life_days=math.inf)
    assert AdaptiveConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["half_life_days"] == "inf"  # JSON has no infinity


def test_folding_needs_calls() -> None:
    _, adaptive = trained(AdaptiveConfig())
    before = adaptive.stats.to_dict()
    adaptive.fold(pa.Table.from_pylist([], schema=workload(1, 1).schema))
    assert adaptive.stats.to_dict() == before


def test_folding_learns_no_input_size_from_calls_without_one() -> None:
    # a semantic-conventions span carries no sizes (input_bytes null): it was refused
    # (every fold of such a stream failed) and, as 0 bytes, would drag the mean down
    _, adaptive = trained(AdaptiveConfig(half_life_days=math.inf))
    before = list(adaptive.stats.size_all)
    adaptive.fold(table(session(["tool01"] * 5, name="semconv", input_bytes=None)))
    after = adaptive.stats.size_all
    assert after[:3] == before[:3]  # input: weight, sum, sum of squares untouched
    assert after[3] == before[3] + 5  # the known result sizes are learnt


def test_time_spans_are_bounded_and_the_bound_scores() -> None:
    # a quarantine of 1e300 h overflowed the scorer's microseconds: every fold failed
    for bad in ({"quarantine_h": 1e300}, {"pool_days": 1e300}, {"idle_min": 1e300}):
        with pytest.raises(ModelError, match=rf"{next(iter(bad))}=1e\+300 \(needs "):
            AdaptiveConfig(**bad)
    longest = AdaptiveConfig(quarantine_h=MAX_SPAN_DAYS * 24, pool_days=MAX_SPAN_DAYS)
    assert AdaptiveConfig(pool_days=math.inf).pool_days == math.inf  # "no limit" stays
    model, adaptive = trained(longest)
    scorer = StreamScorer(
        model, watch=["all_cusum"], adaptive=adaptive, calls_of=lambda streams: workload(1, 1)
    )
    for row in table(session(["tool01"] * 3, name="late")).to_pylist():
        scorer.score(Call.from_mapping(row))
    assert len(scorer.advance(scorer.now_us + 10**12)) == 1  # closes; the fold waits a century
    assert len(scorer.pending) == 1 and scorer.counts["folded"] == 0


# ------------------------------------------------------------------ the decay floor


def weight(stats: DecayedStats, tool: str, now_s: float) -> float:
    """The effective count of ``tool``'s calls at ``now_s``."""
    return stats.unigram[stats.tools.index(tool)] * stats.factor(now_s)


def test_a_stream_learnt_a_month_later_costs_old_behaviour_at_most_e_to_the_minus_one_over_f() -> (
    None
):
    stats = DecayedStats(half_life_s=7 * DAY, floor_streams=10)
    stats.fold(prepare(table(session(["A", "A", "A"], name="old"))))
    assert stats.clock_step_s == pytest.approx(7 * DAY / (10 * math.log(2)))
    stats.fold(prepare(table(session(["B"], name="new", start=30 * DAY))))
    now = T0.timestamp() + 30 * DAY
    assert weight(stats, "A", now) == pytest.approx(3 * math.exp(-0.1), rel=1e-12)
    assert weight(stats, "B", now) == pytest.approx(1.0, rel=1e-12)
    # without a floor, 30 days are 30/7 half-lives
    plain = DecayedStats(half_life_s=7 * DAY)
    plain.fold(prepare(table(session(["A", "A", "A"], name="old"))))
    plain.fold(prepare(table(session(["B"], name="new", start=30 * DAY))))
    assert weight(plain, "A", now) == pytest.approx(3 * 2 ** (-30 / 7), rel=1e-4)  # own times
    # nothing learnt, nothing forgotten: a year without traffic leaves the weights as they are
    assert stats.factor(now + 365 * DAY) == stats.factor(now)
    assert stats.learnt_until_s == pytest.approx(now)


def test_streams_closer_than_the_clock_step_decay_by_event_time() -> None:
    stats = DecayedStats(half_life_s=7 * DAY, floor_streams=10)  # step ≈ 1.01 days
    stats.fold(prepare(table(session(["A"], name="a") + session(["B"], name="b", start=HOUR))))
    now = T0.timestamp() + HOUR
    assert weight(stats, "A", now) == pytest.approx(2 ** (-HOUR / (7 * DAY)), rel=1e-12)


def test_the_effective_weight_settles_at_the_floor_of_streams() -> None:
    stats = DecayedStats(half_life_s=14 * DAY, floor_streams=20)
    rows = [row for i in range(400) for row in session(["A"], name=f"s{i}", start=i * 3 * DAY)]
    stats.fold(prepare(table(rows)))  # one stream every 3 days: time alone would keep ~6.7
    total = weight(stats, "A", T0.timestamp() + 399 * 3 * DAY)
    assert total == pytest.approx((1 - math.exp(-20)) / (1 - math.exp(-1 / 20)), rel=1e-9)  # 20.5
    off = DecayedStats(half_life_s=14 * DAY)
    off.fold(prepare(table(rows)))
    assert weight(off, "A", T0.timestamp() + 399 * 3 * DAY) == pytest.approx(
        1 / (1 - 2 ** (-3 / 14)), rel=1e-9
    )


def test_no_decay_means_no_floor_and_a_bad_floor_is_refused() -> None:
    stats = DecayedStats(half_life_s=math.inf, floor_streams=10)
    assert not stats.floored
    stats.fold(prepare(table(session(["A"]) + session(["A"], name="b", start=99 * DAY))))
    assert weight(stats, "A", T0.timestamp()) == 2.0
    for bad in (-1.0, math.inf):
        with pytest.raises(ModelError, match="floor_streams"):
            AdaptiveConfig(floor_streams=bad)


def test_the_floor_is_saved_and_loaded_with_the_model_and_the_replay(tmp_path: Path) -> None:
    model, adaptive = trained(AdaptiveConfig(half_life_days=5, floor_streams=30))
    assert adaptive.stats.floored
    loaded = AdaptiveModel.from_model(NormalModel.load(model.save(tmp_path / "m.json")))
    assert loaded.config.floor_streams == 30
    assert (loaded.stats.clock_t, loaded.stats.clock_d) == (
        adaptive.stats.clock_t,
        adaptive.stats.clock_d,
    )
    now = adaptive.stats.learnt_until_s + 40 * DAY
    assert loaded.stats.factor(now) == adaptive.stats.factor(now)
    assert "floor 30 streams" in loaded.describe()
    replay = ReplayConfig(adaptive=AdaptiveConfig(floor_streams=30))
    assert ReplayConfig.from_dict(replay.to_dict()).adaptive.floor_streams == 30
    # a model learnt without the floor, loaded with one: the clock starts at its reference
    _, plain = trained(AdaptiveConfig(half_life_days=5))
    floored = plain.with_config(AdaptiveConfig(half_life_days=5, floor_streams=30))
    assert floored.stats.clock_t == floored.stats.clock_d == plain.stats.t_ref
