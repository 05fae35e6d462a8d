"""The novelty cue (first uses mid-stream weighted by training rarity) and the order cue's
Kneser–Ney and open-vocabulary options: exact values, batch == online, the artifact, the
model's statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from support.detection import session, table, workload
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.calls.frame import prepare
from toolwatch.detection.cues.base import Call, StreamContext
from toolwatch.detection.cues.novelty import NoveltyCue
from toolwatch.detection.cues.order import KN_DISCOUNT, OrderCue


def training() -> pa.Table:
    return table(
        session(["Read", "Edit", "Bash", "Read"], name="a")
        + session(["Read", "Bash", "mcp__gh__issue"], name="b", start=100.0)
        + session(["Read", "Read", "mcp__gh__pr"], name="c", start=200.0)
    )


def online(cue: NoveltyCue | OrderCue, calls: pa.Table) -> list[float]:
    out, states, ctxs = [], {}, {}
    for row in calls.to_pylist():
        call = Call.from_mapping(row)
        key = (call.session_id, call.agent_id)
        state = states.setdefault(key, cue.new_state())
        ctx = ctxs.setdefault(key, StreamContext())
        out.append(cue.score_one(call, ctx, state))
        ctx.advance(call)
    return out


def test_novelty_scores_first_uses_after_the_warmup_by_training_rarity() -> None:
    cue = NoveltyCue(warmup=2).fit(prepare(training()))
    assert cue.streams == 3 and cue.df["Read"] == 3 and cue.df["mcp__gh__pr"] == 1
    probe = table(session(["Read", "Bash", "Read", "Edit", "Edit", "Zap", "Bash"], name="p"))
    scores = cue.score_many(prepare(probe)).tolist()
    edit = -math.log((1 + 0.5) / 4)  # Edit: one training stream of three
    unseen = -math.log(0.5 / 4)
    # Read and Bash are first used inside the warm-up; later repeats are not first uses
    assert scores == [0.0, 0.0, 0.0, edit, 0.0, unseen, 0.0]
    assert scores == online(cue, probe)
    # by server: the two gh tools are one key, so the second one is no first use
    by_server = NoveltyCue(key="server", warmup=0).fit(prepare(training()))
    assert by_server.df["server:gh"] == 2
    gh = table(session(["Read", "mcp__gh__issue", "mcp__gh__pr"], name="g"))
    s = by_server.score_many(prepare(gh)).tolist()
    assert s[1] == pytest.approx(-math.log(2.5 / 4)) and s[2] == 0.0
    assert s == online(by_server, gh)
    assert NoveltyCue.from_dict(cue.to_dict()).score_many(prepare(probe)).tolist() == scores
    with pytest.raises(ValueError, match="key"):
        NoveltyCue(key="colour")


def test_kneser_ney_is_a_distribution_and_differs_from_witten_bell() -> None:
    frame = prepare(workload(3, 25, tools=7))
    wb = OrderCue().fit(frame)
    kn = OrderCue(smoothing="kneser_ney").fit(frame)
    sums = np.asarray(kn._pg).sum(axis=1)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-12)  # every context, <unk> included
    # a seen pair loses the discount relative to its count, as the formula says
    v = len(kn.tools)
    counts = np.zeros((v + 2, v + 1))
    for prev, nxt, c in kn.bigrams:
        counts[v + 1 if prev is None else kn.tools.index(prev), kn.tools.index(nxt)] += c
    row = int(np.argmax(counts.sum(axis=1)))
    col = int(np.argmax(counts[row]))
    c_p = counts[row].sum()
    assert kn._pg[row, col] < counts[row, col] / c_p
    assert kn._pg[row, col] >= (counts[row, col] - KN_DISCOUNT) / c_p
    probe = workload(4, 5, tools=8)
    assert not np.allclose(wb.score_many(prepare(probe)), kn.score_many(prepare(probe)))
    assert kn.score_many(prepare(probe)).tolist() == online(kn, probe)
    again = OrderCue.from_dict(kn.to_dict())
    assert again.smoothing == "kneser_ney" and "smoothing" not in wb.to_dict()


def test_the_open_vocabulary_unigram_gives_unk_the_novel_type_mass() -> None:
    """``witten_bell_novel``: P_u(w) = C(w)/(N+T), P_u(<unk>) = T/(N+T); by hand on the
    module's example (N = 4 calls, T = 2 tools; the start context <s> saw one stream, one
    follower)."""
    calls = table(session(["Read", "Edit", "Read", "Edit"], name="a"))
    frame = prepare(calls)
    wb = OrderCue().fit(frame)
    novel = OrderCue(smoothing="witten_bell_novel").fit(frame)
    probe = table(session(["Zap", "Read"], name="p"))
    # first call: P_g(<unk> | <s>) = (0 + T(<s>) · P_u(<unk>)) / (C(<s>) + T(<s>))
    assert wb.score_many(prepare(probe))[0] == pytest.approx(math.log(2 * 7))  # P_u = 1/7
    assert novel.score_many(prepare(probe))[0] == pytest.approx(math.log(2 * 3))  # P_u = 2/6
    # a training tool after an unseen context backs off to P_u(Read) = 2/6 (add-one: 3/7)
    assert novel.score_many(prepare(probe))[1] == pytest.approx(math.log(3))
    assert wb.score_many(prepare(probe))[1] == pytest.approx(math.log(7 / 3))
    assert novel.score_many(prepare(probe)).tolist() == online(novel, probe)
    again = OrderCue.from_dict(novel.to_dict())
    assert again.smoothing == "witten_bell_novel"
    assert again.score_many(prepare(probe)).tolist() == novel.score_many(prepare(probe)).tolist()
    # a (decayed) count of zero is a novel tool, never a zero probability
    empty = OrderCue.from_counts(["Read", "Gone"], [4.0, 0.0], [], smoothing="witten_bell_novel")
    gone = table(session(["Gone"], name="g"))
    assert math.isfinite(empty.score_many(prepare(gone))[0])


def test_the_model_keeps_novelty_as_a_cue_set_of_its_own(tmp_path: Path) -> None:
    model = NormalModel.fit(workload(1, 30, tools=6)).calibrate(workload(2, 10, tools=6))
    assert model.novelty is not None and set(model.novelty.thresholds) == {
        "point",
        "ewma",
        "cusum",
    }
    frame = prepare(workload(5, 4, tools=9))
    stats = model.novelty_statistics(frame)
    mean, sd = model.novelty.standardisation
    z = (stats["novelty"] - mean) / sd
    np.testing.assert_array_equal(stats["novelty_point"], z)
    assert (stats["novelty_cusum"] >= 0).all()
    loaded = NormalModel.load(model.save(tmp_path / "m.json"))
    assert loaded.novelty is not None
    assert loaded.novelty.thresholds == model.novelty.thresholds
    np.testing.assert_array_equal(
        loaded.novelty_statistics(frame)["novelty_cusum"], stats["novelty_cusum"]
    )
    kn = NormalModel.fit(workload(1, 30, tools=6), {"order_smoothing": "kneser_ney"})
    assert kn.cues["order"].smoothing == "kneser_ney"  # type: ignore[attr-defined]


def test_live_novelty_alerts_where_the_batch_statistic_crosses(tmp_path: Path) -> None:
    train = workload(1, 40, tools=8)
    config = {"novelty_alert": "cusum", "novelty_warmup": 2}
    model = NormalModel.fit(train, config).calibrate(workload(2, 10, tools=8))
    assert model.novelty is not None
    # a stream that turns to eight tools it never used, three of them never seen in training
    tools = ["tool01", "tool02"] * 6 + [f"tool0{i}" for i in range(3, 8)] + ["x1", "x2", "x3"]
    calls = table(session(tools, name="hijacked"))
    stats = model.novelty_statistics(prepare(calls))["novelty_cusum"]
    threshold = model.novelty.thresholds["cusum"]
    expected = int(np.argmax(stats > threshold))
    assert stats[expected] > threshold  # the case crosses at all
    path = model.save(tmp_path / "m.json")
    live = LiveScorer(path, None)
    alerts = [a for a in live.process(calls) if a["cue"] == "novelty"]
    assert [(a["call_index"], a["detector"]) for a in alerts] == [(expected, "cusum")]
    assert alerts[0]["score"] == pytest.approx(stats[expected], rel=1e-12)
    assert alerts[0]["threshold"] == threshold
    assert f"of {model.novelty.cue.streams} training streams" in alerts[0]["explanation"]
    # off by default: no novelty alert
    plain = NormalModel.fit(train).calibrate(workload(2, 10, tools=8))
    assert not [a for a in LiveScorer(plain, None).process(calls) if a["cue"] == "novelty"]


def test_unseen_tools_can_be_left_to_the_listing_watcher() -> None:
    skip = NoveltyCue(warmup=2, unseen="skip").fit(prepare(training()))
    probe = table(session(["Read", "Bash", "Edit", "Zap"], name="p"))
    scores = skip.score_many(prepare(probe)).tolist()
    assert scores == [0.0, 0.0, pytest.approx(-math.log(1.5 / 4)), 0.0]  # Zap: never seen
    assert scores == online(skip, probe)
    assert NoveltyCue.from_dict(skip.to_dict()).unseen == "skip"
    model = NormalModel.fit(workload(1, 20, tools=6), {"novelty_unseen": "skip"})
    assert model.novelty is not None and model.novelty.cue.unseen == "skip"
