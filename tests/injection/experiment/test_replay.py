"""The replay's text on a synthetic corpus (the real-data checks are in test_real_data.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from support.clock import received
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.formats import percent
from toolwatch.injection.experiment.replay import ReplayConfig, ReplayResult, run_replay
from toolwatch.injection.experiment.replay_report import (
    alarm_text,
    detection_text,
    render,
    summary,
)
from toolwatch.injection.experiment.split import stream_name
from toolwatch.injection.experiment.storage import load_calls
from toolwatch.injection.spans.session_arrays import split_sessions


def test_the_replay_names_the_target_it_was_given() -> None:
    """--target-fa 0.053 was printed "target 5%", "the 95% quantile" and "2× the target (11%)"."""
    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,), target_fa=0.053),
            replay_kinds=("burst",),
        ),
    )
    text = render(result)
    assert "(burst; 1 seed)" in text  # was "1 seeds"
    assert "target 5.3% of streams alarming" in text
    assert "threshold = the 94.7% quantile of the last 200 stream maxima" in text
    assert "more than 2× the target (10.6%) of their streams alarming" in text


def test_a_replay_without_calibration_streams_says_what_it_calibrated_on() -> None:
    """An empty calibration split: the model is calibrated on its training streams, and the
    header said "calibrated on 0"."""
    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.5, 0.0), seeds=(0,)),
            replay_kinds=("burst",),
        ),
    )
    assert result.split["calibration"][0] == 0
    assert (
        f"model fitted on {result.split['train'][0]} streams, calibrated on the same (the "
        "calibration split is empty); watched: all_cusum"
    ) in render(result)


def test_a_thin_replay_shows_the_next_level_as_the_experiment_does() -> None:
    """Fewer than 50 normal streams: the experiment shows detection at both levels around the
    target; the replay's one-threshold line showed the lower one only."""
    from toolwatch.injection.experiment.protocol import run_experiment

    experiment = ExperimentConfig(
        split_shares=(0.44, 0.07), seeds=(0,), kinds=("burst",), ablation=False, bootstrap=0
    )
    corpus = simulate(seed=2, scale=0.25)
    result = run_replay(corpus, ReplayConfig(experiment=experiment, replay_kinds=("burst",)))
    n = result.totals["frozen"]["streams"]
    assert 0 < n < 50
    oracle = result.totals["frozen"]["oracle"]
    up = oracle["next_level"]
    assert up is not None and up["alarmed"] > oracle["alarmed"]
    assert up["threshold"] < oracle["threshold"]
    # the frozen model's figures are the experiment's, at both levels
    exp = run_experiment(corpus, experiment)
    for mode, level in (("fa_target", oracle), ("fa_next", up)):
        cell = exp.cell("burst", "all", "cusum", mode=mode)
        hits, runs = level["detection"]["burst"]
        assert cell is not None and (cell.detected, cell.runs) == (hits, runs)
        t = exp.thresholds[("standard", "all", "cusum", mode)]
        assert round(t.fa_reached * n) == level["alarmed"]
    text = render(result)
    assert (
        f"so also at the next level above the target ({up['alarmed']}/{n} alarm, "
        f"{up['threshold']:.2f}): burst " in text
    )
    assert summary(result)["totals"]["frozen"]["oracle"]["next_level"]["detection"]["burst"] == [
        hits,
        runs,
    ]


def test_the_replay_writes_each_share_as_the_experiment_writes_that_kind_of_number() -> None:
    """Detection of the copies printed to a tenth ("100.0%", "6.2%") where the experiment's
    tables print whole percents; a level of streams alarming keeps its tenth (as the
    experiment's "4.7% = 3/64 streams"). No figure changes, only how it is written."""
    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)),
            replay_kinds=("burst", "runaway_retry"),
        ),
    )
    text = render(result)
    table = [re.split(r" {2,}", line) for line in text.splitlines() if line.startswith("all ")]
    (total,) = table
    for model, first in (("adaptive", 2), ("frozen", 4 + 1)):
        t = result.totals[model]
        k, n = t["alarmed"], t["streams"]
        assert total[first].startswith(f"{k}/{n} {percent(k / n, 1)}%")
        hits = [t["detection"][kind] for kind in ("burst", "runaway_retry")]
        shown = total[first + 1 : first + 3] if model == "adaptive" else total[first + 1 :]
        assert shown == [f"{percent(h / r)}%" for h, r in hits]
        o = t["oracle"]
        line = next(x for x in text.splitlines() if x.startswith(f"{model}, at one threshold"))
        h, r = o["detection"]["burst"]
        assert f"): burst {percent(h / r)}%, runaway " in line
    assert not re.search(r"\b(burst|runaway) \d+\.\d%", text)


def test_the_replays_json_is_strict_json_when_a_threshold_is_infinite() -> None:
    """A threshold no normal stream reaches is ±inf, which ``json.dumps`` wrote as
    ``Infinity``: ``jq`` and ``JSON.parse`` refuse the whole document. ``--json`` writes null."""
    import json
    import math

    from toolwatch.injection.experiment.results import finite_tree

    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)),
            replay_kinds=("burst",),
        ),
    )
    result.totals["frozen"]["oracle"]["threshold"] = math.inf
    result.weeks[0].threshold["adaptive"] = -math.inf
    doc = summary(result)
    assert "Infinity" in json.dumps(doc)
    strict = json.loads(json.dumps(finite_tree(doc), allow_nan=False))
    assert strict["totals"]["frozen"]["oracle"]["threshold"] is None
    assert strict["weeks"][0]["threshold"]["adaptive"] is None
    assert strict["totals"]["frozen"]["alarmed"] == doc["totals"]["frozen"]["alarmed"]


def test_a_share_that_is_a_half_is_rounded_up_as_by_hand() -> None:
    """The replay's week table, checked by hand against its --json on a simulated store,
    showed 39/40 copies detected as 98% but 1/40 as 2% (and 1/16 streams alarming as 6.2%):
    Python's format rounds a half to the even neighbour. Shares now round a half up, in the
    replay's cells and the experiment's tables alike; the JSON's counts are unchanged."""
    assert [detection_text(h) for h in ((39, 40), (1, 40), (3, 8), (1, 3))] == [
        "98%",
        "3%",
        "38%",
        "33%",
    ]
    assert alarm_text(1, 16) == "1/16 6.3%"
    assert alarm_text(2, 20, interval=True) == "2/20 10.0% (3–30%)"
    assert percent(0.145) == "15"  # 14.4999… in binary: the half it stands for


def test_a_level_every_stream_reaches_and_a_single_count_read_as_words() -> None:
    """With one normal stream the level above the target is 1/1, reached at any score: the
    line printed ``-inf`` there, and the model's counts read "1 streams folded in"."""
    import math

    from toolwatch.injection.experiment.replay_report import counts_line, oracle_line

    result = run_replay(
        simulate(seed=2, scale=0.25),
        ReplayConfig(
            experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)),
            replay_kinds=("burst",),
        ),
    )
    doc = summary(result)
    n = doc["totals"]["frozen"]["streams"]
    up = doc["totals"]["frozen"]["oracle"]["next_level"]
    assert up is not None
    up["threshold"], up["alarmed"] = -math.inf, n
    line = oracle_line(doc, "frozen")
    assert f"({n}/{n} alarm, any score): burst " in line and "inf" not in line
    doc["totals"]["adaptive"]["counts"].update(folded=1, folded_calls=1, pooled=1, refreshes=1)
    assert counts_line(doc).startswith(
        "adaptive model: 1 stream folded in (1 call), 1 maximum pooled, 1 snapshot;"
    )


def _moved(corpus: pa.Table, stream: str, days: float) -> pa.Table:
    """``corpus`` with the middle call (in ``seq`` order) of ``stream`` stamped ``days`` later:
    a client clock skewed for one call."""
    session, _, agent = stream.partition("/")
    rows = [
        i
        for i, (s, a) in enumerate(
            zip(
                corpus.column("session_id").to_pylist(),
                corpus.column("agent_id").to_pylist(),
                strict=True,
            )
        )
        if s == session and a == (agent or None)
    ]
    rows.sort(key=corpus.column("seq").to_pylist().__getitem__)
    t = corpus.column("start_time").cast(pa.int64()).to_numpy().copy()
    t[rows[len(rows) // 2]] += int(days * 86_400e6)
    column = pa.array(t, pa.int64()).cast(corpus.schema.field("start_time").type)
    return corpus.set_column(corpus.schema.get_field_index("start_time"), "start_time", column)


def test_a_call_stamped_two_days_ahead_of_its_stream_is_distrusted_as_the_collector_does() -> None:
    """A replay trusted every stamp, so one call of a long stream stamped +2 days was fed two
    days late: its stream closed, was pooled and folded without it, and it opened a stream of
    its own two days on (a stream more closed, a batch of its own; so did each injected copy).
    Now it arrives with the next call of its stream (in a copy, with that call's copy), is
    counted and named as stamped ahead of the corpus, and the collector's guard handles it:
    the replay's batches and closed streams are the unskewed corpus's, and its stream is never
    learnt (one maximum fewer pooled)."""
    corpus = simulate(seed=2, scale=0.25)
    config = ReplayConfig(experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)))
    base = run_replay(corpus, config)
    stream = sorted(n for n, alarmed in base.models["adaptive"].alarmed.items() if not alarmed)[0]
    skewed = run_replay(_moved(corpus, stream, 2.0), config)

    assert base.split["stamped_ahead"] == 0 and skewed.split["stamped_ahead"] == 1
    assert summary(skewed)["split"]["stamped_ahead"] == 1  # --json
    assert (
        "1 call stamped ahead of the corpus (more than 5 min after a later call of its own "
        "stream): replayed where it arrived"
    ) in render(skewed)
    assert "stamped ahead" not in render(base)
    for model in ("adaptive", "frozen"):
        before, after = base.models[model], skewed.models[model]
        minute = 60_000_000  # the batches: the same minutes of event time
        assert [t // minute for t, _ in after.thresholds] == [
            t // minute for t, _ in before.thresholds
        ]
        assert after.counts["closed"] == before.counts["closed"]  # not split in two
        assert after.calls == before.calls and after.alarmed == before.alarmed
    assert (
        skewed.models["adaptive"].counts["pooled"] == base.models["adaptive"].counts["pooled"] - 1
    )


def test_a_stream_whose_client_is_an_hour_fast_arrives_at_its_arrival_marks(
    tmp_path: Path,
) -> None:
    """A store the collector wrote (every call with its received_time), one test stream's
    client clock an hour fast: its stamps agree with each other, so the replay fed the whole
    stream an hour late, learnt and pooled it, in batches of its own. Now each call arrives at
    its mark, is counted as stamped ahead of its arrival (text and --json), and the
    collector's guard handles it: the batches and closed streams are the unskewed store's, the
    stream never learnt (one maximum fewer pooled)."""
    corpus = simulate(seed=2, scale=0.25)
    config = ReplayConfig(experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)))
    base_store = Store(tmp_path / "base")
    base_store.append("calls", received(corpus))
    base = run_replay(load_calls(base_store), config)
    stream = sorted(n for n, alarmed in base.models["adaptive"].alarmed.items() if not alarmed)[0]
    calls = next(len(s) for s in split_sessions(corpus) if stream_name(s) == stream)
    store = Store(tmp_path / "fast")
    store.append("calls", received(corpus, stream, 1.0))
    fast = run_replay(load_calls(store), config)

    assert base.split["stamped_ahead_of_arrival"] == 0
    assert fast.split["stamped_ahead_of_arrival"] == calls > 30
    assert fast.split["stamped_ahead"] == 0
    assert summary(fast)["split"]["stamped_ahead_of_arrival"] == calls  # --json
    assert (
        f"{calls} calls stamped ahead of their arrival (more than 5 min after the collector "
        "received them, received_time): replayed when they arrived"
    ) in render(fast)
    assert "stamped ahead" not in render(base)
    for model in ("adaptive", "frozen"):
        before, after = base.models[model], fast.models[model]
        minute = 60_000_000
        assert [t // minute for t, _ in after.thresholds] == [
            t // minute for t, _ in before.thresholds
        ]
        assert after.counts["closed"] == before.counts["closed"]
        assert after.calls == before.calls
    assert fast.models["adaptive"].counts["pooled"] == base.models["adaptive"].counts["pooled"] - 1


def test_a_stream_whose_client_is_a_year_fast_is_in_the_week_its_arrival_places_it(
    tmp_path: Path,
) -> None:
    """A test stream whose client clock is a year fast is placed in the split, and fed, by its
    arrival marks; its week was still that of its first stamp, a thin week of its own a year
    ahead in the weekly table. Now it counts in the week its arrival places it: the weeks and
    their streams and copies are the unskewed store's."""
    corpus = simulate(seed=2, scale=0.25)
    config = ReplayConfig(
        experiment=ExperimentConfig(split_shares=(0.44, 0.07), seeds=(0,)),
        replay_kinds=("burst",),
    )
    base_store = Store(tmp_path / "base")
    base_store.append("calls", received(corpus))
    base = run_replay(load_calls(base_store), config)
    stream = sorted(base.models["frozen"].alarmed)[-1]
    store = Store(tmp_path / "fast")
    store.append("calls", received(corpus, stream, 365 * 24.0))
    fast = run_replay(load_calls(store), config)

    assert fast.split["placed_by_arrival"] == 1
    assert len(base.weeks) > 1

    def table(result: ReplayResult) -> list[tuple[str, int, tuple[int, int]]]:
        return [(r.week, r.normal, r.detection["frozen"]["burst"]) for r in result.weeks]

    assert table(fast) == table(base)
