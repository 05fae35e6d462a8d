"""Online == batch (property test), the session mix's effect, and the scorers' behaviour."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.detection import call, session, table, workload
from toolwatch.detection import (
    ModelConfig,
    NormalModel,
    OnlineScorer,
    score_calls,
    session_max_stats,
)
from toolwatch.detection.calls.frame import prepare
from toolwatch.detection.scoring.online import SCORE_NAMES

_MODEL: NormalModel | None = None


def model() -> NormalModel:
    global _MODEL
    if _MODEL is None:
        _MODEL = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return _MODEL


def interleave(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Merge the streams in random order, keeping each stream's own order."""
    queues: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for row in rows:
        queues.setdefault((row["session_id"], row["agent_id"]), []).append(row)
    rng = random.Random(seed)
    out = []
    live = [q for q in queues.values() if q]
    while live:
        q = rng.choice(live)
        out.append(q.pop(0))
        live = [q for q in live if q]
    return out


# gaps: ties, parallel calls, machine-speed, model-speed and idle
GAPS = st.sampled_from([0.0, 0.000_001, 0.05, 0.4, 1.2, 3.0, 11.1, 90.0, 4000.0])
CALLS = st.tuples(
    st.sampled_from([f"tool{i:02d}" for i in range(8)] + ["unseen-a", "unseen-b"]),
    GAPS,
    st.sampled_from(["new", "same", "null"]),
    st.one_of(st.none(), st.integers(0, 50_000)),  # None: a span without sizes
    st.one_of(st.none(), st.integers(0, 10**6)),
    st.booleans(),
    st.sampled_from([False, False, False, True]),  # restamped
    st.sampled_from([False, False, True]),  # truncated
)
STREAMS = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from([None, None, "a1", "a2"]),
        st.lists(CALLS, max_size=25),
    ),
    max_size=6,
)


def build(streams: list[Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for k, (sid, agent, calls) in enumerate(streams):
        t = 100.0 * k
        resp = 0
        for tool, gap, kind, nin, nout, failed, restamped, truncated in calls:
            t += gap
            if kind == "new":
                resp += 1
            rid = None if kind == "null" else f"{sid}-{agent}-{k}-{resp}"
            rows.append(
                call(
                    tool,
                    t,
                    session=sid,
                    agent=agent,
                    response=rid,
                    input_bytes=nin,
                    output_bytes=nout,
                    failed=failed,
                    restamped=restamped,
                    truncated=truncated,
                    seq=len(rows),
                    n=len(rows),
                )
            )
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams=STREAMS, seed=st.integers(0, 2**16))
def test_online_scores_equal_batch_scores_bit_for_bit(streams: list[Any], seed: int) -> None:
    rows = build(streams)
    m = model()
    batch = score_calls(m, table(rows))
    # feed the online scorer stream-ordered calls, streams interleaved at random
    calls = table(rows)
    ordered = calls.take(prepare(calls).order).to_pylist()
    for i, row in enumerate(ordered):
        row["_row"] = i
    scorer = OnlineScorer(m)
    online: dict[int, dict[str, float]] = {}
    for row in interleave(ordered, seed):
        online[row["_row"]] = dict(scorer.update(row))
    assert batch.num_rows == len(rows)
    for name in SCORE_NAMES:
        got = [online[i][name] for i in range(len(ordered))]
        assert got == batch.column(name).to_pylist(), name


def test_calls_without_sizes_are_fitted_and_scored_as_unknown_sizes() -> None:
    # a semantic-conventions sender's spans carry no sizes (input_bytes null): the batch
    # path scores them as the online one does, and fits on the sizes that are known
    train = workload(1, 40, tools=8)
    unknown = pa.array([i % 3 == 0 for i in range(train.num_rows)])
    blanked = train.set_column(
        train.schema.get_field_index("input_bytes"),
        "input_bytes",
        pc.if_else(unknown, pa.scalar(None, pa.int64()), train.column("input_bytes")),
    )
    fitted = NormalModel.fit(blanked)
    known_only = NormalModel.fit(train.filter(pc.invert(unknown)))
    assert fitted.cues["size"].stats["*"]["in"] == known_only.cues["size"].stats["*"]["in"]
    m = model()
    rows = [
        call("tool01", 0, input_bytes=None, n=0),
        call("tool01", 5, input_bytes=None, output_bytes=None, n=1),
        call("tool02", 9, n=2),
    ]
    batch = score_calls(m, table(rows))
    scorer = OnlineScorer(m)
    online = [dict(scorer.update(r)) for r in table(rows).to_pylist()]
    for name in SCORE_NAMES:
        assert batch.column(name).to_pylist() == [o[name] for o in online], name
    assert batch.column("size").to_pylist()[1] == 0.0  # neither size known: no size score


def test_batch_output_is_in_stream_order_with_identity_columns() -> None:
    rows = [
        call("tool01", 5, session="b", n=0),
        call("tool02", 1, session="b", agent="sub", n=1),
        call("tool03", 0, session="a", n=2),
        call("tool04", 2, session="b", n=3),
    ]
    out = score_calls(model(), table(rows))
    assert out.column("session_id").to_pylist() == ["a", "b", "b", "b"]
    assert out.column("agent_id").to_pylist() == [None, None, None, "sub"]
    assert out.column("tool").to_pylist() == ["tool03", "tool04", "tool01", "tool02"]
    assert out.column("call_index").to_pylist() == [0, 0, 1, 0]
    assert out.column("span_id").to_pylist() == [f"{i:016x}" for i in (3, 4, 1, 2)]
    assert out.column_names[-15:] == list(SCORE_NAMES[5:])


def test_online_scorer_returns_a_mapping_and_forgets_idle_streams() -> None:
    scorer = OnlineScorer(model())
    first = scorer.update(call("tool01", 0, session="x"))
    assert set(first) == set(SCORE_NAMES) and len(first) == 20
    assert first["time"] == 0.0 and first["all_cusum"] >= 0.0
    scorer.update(call("tool01", 10, session="y"))
    scorer.update(call("tool01", 7200, session="z"))
    assert scorer.open_streams == 3
    assert sorted(scorer.evict_idle(3600)) == [("x", None), ("y", None)]
    assert scorer.close_session("z") == 1 and scorer.open_streams == 0
    assert set(scorer.drift_means()) == {"all", "order", "size", "time", "failure"}


def test_a_retry_loop_and_a_burst_stand_out_at_the_operating_point() -> None:
    m = model()
    normal = workload(5, 10, tools=8)
    retry = session(["tool03"] * 20, name="retry", gap=2.0, failed=True)
    burst = session([f"tool0{i % 8}" for i in range(20)], name="burst", gap=0.1)
    scored = score_calls(m, pa.concat_tables([normal, table(retry + burst)]))
    sids = sorted(set(scored.column("session_id").to_pylist()))
    maxima = dict(zip(sids, session_max_stats(scored, "all_cusum"), strict=True))
    thr = m.threshold("all", "cusum")
    assert maxima["retry"] > thr and maxima["burst"] > thr
    assert sum(v > thr for v in maxima.values()) <= 4


def test_maxima_per_session_or_per_stream() -> None:
    """A subagent shares its parent's session id; per stream it is counted on its own."""
    scored = pa.table(
        {
            "session_id": ["b", "a", "a", "a"],
            "agent_id": [None, "x", None, "x"],
            "all_cusum": [3.0, 5.0, 1.0, 2.0],
        }
    )
    assert session_max_stats(scored, "all_cusum").tolist() == [5.0, 3.0]
    assert session_max_stats(scored, "all_cusum", per_stream=True).tolist() == [1.0, 5.0, 3.0]


# ------------------------------------------------------------------ the session mix


def procedures(seed: int, n: int, tools: int = 20) -> pa.Table:
    """Normal sessions that each repeat a procedure of their own (3-6 tools, 4-10 times)."""
    r = random.Random(seed)
    names = [f"t{i:02d}" for i in range(tools)]
    rows: list[dict[str, Any]] = []
    for s in range(n):
        sid = f"p{seed}-{s:03d}"
        proc = [r.choice(names) for _ in range(r.randint(3, 6))]
        t = s * 3600.0
        for _ in range(r.randint(4, 10)):
            for tool in proc:
                t += r.uniform(2, 20)
                tool = r.choice(names) if r.random() < 0.1 else tool
                rows.append(call(tool, t, session=sid, response=f"{sid}-{len(rows)}", n=len(rows)))
    return table(rows)


def test_witten_bell_session_mix_lowers_false_alarms_on_repeated_procedures() -> None:
    """Thresholds come from ordinary traffic (sessions that do not repeat a fixed procedure);
    the normal test sessions each repeat a procedure of their own. Without the session's own
    bigram every repetition pays the global price again and the order CUSUM runs away."""

    def diverse(seed: int, n: int) -> pa.Table:
        return workload(seed, n, tools=20, subagents=0.0, prefix="d", tool_prefix="t")

    train = pa.concat_tables([diverse(11, 60), procedures(1, 60)])
    calib, test = diverse(12, 30), procedures(3, 60)
    share: dict[bool, float] = {}
    mean_order: dict[bool, float] = {}
    for mix in (True, False):
        m = NormalModel.fit(train, ModelConfig(order_session_mix=mix)).calibrate(calib)
        scored = score_calls(m, test)
        maxima = session_max_stats(scored, "order_cusum")
        share[mix] = float(np.mean(maxima > m.threshold("order", "cusum")))
        mean_order[mix] = float(np.mean(scored.column("order").to_numpy()))
    assert share[False] >= 0.2
    assert share[True] <= share[False] / 4
    assert mean_order[True] < 0.7 * mean_order[False]
