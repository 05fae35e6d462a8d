"""Cues: the shared contract every cue passes, then each cue against hand-computed values."""

from __future__ import annotations

import doctest
import importlib
import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from support.detection import call, session, table, workload
from toolwatch.detection.calls.frame import CallsError, prepare
from toolwatch.detection.cues.base import Call, Cue, NotFittedError, StreamContext
from toolwatch.detection.cues.failure import FailureCue
from toolwatch.detection.cues.order import OrderCue
from toolwatch.detection.cues.size import SizeCue
from toolwatch.detection.cues.timing import TimeCue
from toolwatch.detection.model.normal_model import CUE_CLASSES

LN10 = math.log(10)


def online_scores(cue: Cue, calls: pa.Table) -> list[float]:
    """Feed each stream's calls, in stream order, through ``score_one``."""
    frame = prepare(calls)
    streams: dict[tuple[str, str | None], tuple[StreamContext, Any]] = {}
    out = []
    for row in calls.take(frame.order).to_pylist():
        c = Call.from_mapping(row)
        ctx, state = streams.setdefault(
            (c.session_id, c.agent_id), (StreamContext(), cue.new_state())
        )
        out.append(cue.score_one(c, ctx, state))
        ctx.advance(c)
    return out


# ------------------------------------------------------------------ the contract, every cue

CUES = sorted(CUE_CLASSES.items())


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_unfitted_cue_refuses_to_score(name: str, cls: type[Cue]) -> None:
    cue = cls()
    assert not cue.fitted
    with pytest.raises(NotFittedError, match=name):
        cue.score_many(prepare(workload(0, 2)))


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_online_equals_batch_bit_for_bit(name: str, cls: type[Cue]) -> None:
    cue = cls().fit(prepare(workload(1, 20)))
    assert cue.fitted and cue.name == name
    test = workload(2, 15, tools=15)  # 3 tools unseen in training
    batch = cue.score_many(prepare(test))
    assert batch.dtype == np.float64
    assert batch.tolist() == online_scores(cue, test)


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_scores_are_finite_non_negative_even_for_unseen_tools(
    name: str, cls: type[Cue]
) -> None:
    cue = cls().fit(prepare(workload(1, 10)))
    odd = table(
        [
            *session(["never-seen", "tool00", "never-seen", "also-new"], name="odd", input_bytes=0),
            call("tool01", 0.0, session="odd2", response=None, output_bytes=None),
        ]
    )
    scores = cue.score_many(prepare(odd))
    assert scores.shape == (5,)
    assert np.isfinite(scores).all()
    assert (scores >= 0).all()


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_empty_input_gives_no_scores(name: str, cls: type[Cue]) -> None:
    cue = cls().fit(prepare(workload(1, 5)))
    empty = prepare(table([]))
    assert cue.score_many(empty).shape == (0,)


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_parameters_round_trip_through_json(name: str, cls: type[Cue]) -> None:
    cue = cls().fit(prepare(workload(4, 12)))
    again = cls.from_dict(json.loads(json.dumps(cue.to_dict())))
    test = prepare(workload(5, 6, tools=14))
    assert again.score_many(test).tolist() == cue.score_many(test).tolist()


@pytest.mark.parametrize(("name", "cls"), CUES)
def test_contract_mangled_parameters_are_rejected(name: str, cls: type[Cue]) -> None:
    params = cls().fit(prepare(workload(4, 3))).to_dict()
    key = sorted(params)[-1]
    del params[key]
    with pytest.raises((KeyError, ValueError)):
        cls.from_dict(params)


@pytest.mark.parametrize(
    "module",
    [
        "cues.order",
        "cues.size",
        "cues.timing",
        "cues.failure",
        "detectors.point",
        "detectors.ewma",
        "detectors.cusum",
        "model.thresholds",
        "scoring.batch",
        "scoring.online",
    ],
)
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module(f"toolwatch.detection.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_missing_column_and_nulls_are_named() -> None:
    calls = workload(0, 2)
    with pytest.raises(CallsError, match="'tool'"):
        prepare(calls.drop_columns(["tool"]))
    tools = calls.column("tool").to_pylist()
    tools[3] = None
    broken = calls.set_column(calls.schema.get_field_index("tool"), "tool", pa.array(tools))
    with pytest.raises(CallsError, match=r"'tool' has 1 null value.*row 3"):
        prepare(broken)


# ------------------------------------------------------------------ order, by hand


def test_order_global_witten_bell_bigram_by_hand() -> None:
    # vocabulary {Edit, Read, <unk>}; N = 4; P_u = 3/7, 3/7, 1/7
    # <s>->Read 1, Read->Edit 2, Edit->Read 1; every context has T = 1 follower
    train = table(session(["Read", "Edit", "Read", "Edit"]))
    cue = OrderCue().fit(prepare(train))
    got = cue.score_many(prepare(train)).tolist()
    # last call: session n(Read)=1, t=1, c=1 -> (1 + 1 * 17/21) / 2 = 19/21
    want = [-math.log(5 / 7), -math.log(17 / 21), -math.log(5 / 7), -math.log(19 / 21)]
    assert got == pytest.approx(want, rel=1e-12)


def test_order_unseen_tool_backs_off_and_the_session_mix_learns_it() -> None:
    cue = OrderCue().fit(prepare(table(session(["Read", "Edit", "Read", "Edit"]))))
    test = prepare(table(session(["Read", "Grep", "Read", "Grep"])))
    # Grep|Read: (0 + 1 * P_u(<unk>)) / (2 + 1) = 1/21; Read|Grep: unseen context -> P_u(Read)
    # second Grep|Read: session n=1, t=1, c=1 -> (1 + 1 * 1/21) / 2 = 11/21
    want = [-math.log(5 / 7), -math.log(1 / 21), -math.log(3 / 7), -math.log(11 / 21)]
    assert cue.score_many(test).tolist() == pytest.approx(want, rel=1e-12)
    plain = OrderCue(session_mix=False).fit(
        prepare(table(session(["Read", "Edit", "Read", "Edit"])))
    )
    assert plain.score_many(test).tolist() == pytest.approx(
        [-math.log(5 / 7), -math.log(1 / 21), -math.log(3 / 7), -math.log(1 / 21)], rel=1e-12
    )


def test_order_session_mix_uses_witten_bell_weight() -> None:
    cue = OrderCue().fit(prepare(table(session(["A", "B", "A", "C", "A", "B"]))))
    pg_ab = math.exp(-cue.score_many(prepare(table(session(["A", "B"])))).tolist()[1])
    # stream so far: A->B, A->C, A->B; the 4th A-context: n=3, t=2, c(A->B)=2
    stream = ["A", "B", "A", "C", "A", "B", "A", "B"]
    last = cue.score_many(prepare(table(session(stream)))).tolist()[-1]
    lam = 3 / (3 + 2)
    assert last == pytest.approx(-math.log(lam * 2 / 3 + (1 - lam) * pg_ab), rel=1e-12)


def test_order_subagent_is_its_own_stream() -> None:
    cue = OrderCue().fit(prepare(table(session(["A", "B", "A", "B"]))))
    parent = session(["A", "B"], name="s")
    child = [call("B", 1.0, session="s", agent="sub", response="x", n=9)]
    scores = cue.score_many(prepare(table(parent + child)))
    alone = cue.score_many(prepare(table([call("B", 0.0, session="z")])))
    # the subagent's B starts its own stream: scored after <s>, not after the parent's A
    assert scores.tolist()[-1] == alone.tolist()[0]


# ------------------------------------------------------------------ size, by hand


def test_size_upper_input_both_sided_result_by_hand() -> None:
    train = table(
        [
            call("A", 0, input_bytes=99, output_bytes=999),
            call("A", 1, input_bytes=999, output_bytes=999),
            call("A", 2, input_bytes=9999, output_bytes=999),
            call("B", 3, input_bytes=9, output_bytes=None),
        ]
    )
    cue = SizeCue(min_count=3, min_sd=0.25).fit(prepare(train))
    # A: in mean ln1000, sd ln10; out sd 0 -> floored 0.25; B has 1 value -> global stats:
    # in mean 2.5 ln10, sd ln10 * sd(1, 2, 3, 4)
    rows = [
        call("A", 0, input_bytes=99999, output_bytes=999),  # z_in = 2
        call("A", 1, input_bytes=9, output_bytes=99),  # in below: 0; out |−ln10 / 0.25|
        call("A", 2, input_bytes=999, output_bytes=99, truncated=True),  # lower bound: 0
        call("A", 3, input_bytes=99999, output_bytes=None),  # unknown result: input only
        call("B", 4, input_bytes=99999, output_bytes=None),  # global stats
        call("C", 5, input_bytes=99999, output_bytes=None),  # unseen: global stats
    ]
    got = cue.score_many(prepare(table(rows))).tolist()
    sd_global = float(np.std([1, 2, 3, 4], ddof=1))
    want = [2.0, LN10 / 0.25, 0.0, 2.0, 2.5 / sd_global, 2.5 / sd_global]
    assert got == pytest.approx(want, rel=1e-9)


# ------------------------------------------------------------------ time, by hand


def test_time_lower_tail_of_different_response_gaps_by_hand() -> None:
    train = table(
        [
            call("A", 0, response="r1"),
            call("A", 2, response="r2"),  # gap 2 s
            call("A", 6, response="r3"),  # 4 s
            call("A", 6.2, response="r3"),  # same response: not learnt
            call("A", 14.2, response="r4", restamped=True),  # restamped: not learnt
            call("A", 22.2, response="r5"),  # prev restamped: not learnt
            call("A", 30.2, response="r6"),  # 8 s
        ]
    )
    cue = TimeCue().fit(prepare(train))
    assert (cue.n, cue.knots_us, cue.counts) == (3, [2_000_000, 4_000_000, 8_000_000], [1, 2, 3])
    rows = [
        call("A", 0, response="a"),  # first call: 0
        call("A", 1, response="b"),  # 1 s, half the minimum: -log(1/3 · 1/2), graded
        call("A", 1.05, response="b"),  # same response: 0
        call("A", 5.05, response=None),  # unknown boundary = different; 4 s: -log(2/3)
        call("A", 5.06, response=None),  # 0.01 s, different: -log(1/3 · 0.01/2)
        call("A", 5.06, response="z"),  # 0 s: the 1 ms floor, -log(1/3 · 0.001/2)
        call("A", 20, response="c", restamped=True),  # restamped: 0
        call("A", 20.5, response="d"),  # previous restamped: 0
        call("A", 40, response="e"),  # 19.5 s, above all: -log(3/3) = 0
    ]
    got = cue.score_many(prepare(table(rows))).tolist()
    want = [
        0.0,
        -math.log(1 / 3 * 0.5),
        0.0,
        -math.log(2 / 3),
        -math.log(1 / 3 * 0.005),
        -math.log(1 / 3 * 0.0005),
        0.0,
        0.0,
        0.0,
    ]
    assert got == pytest.approx(want, rel=1e-12)
    assert got == online_scores(cue, table(rows))
    # the graded tail orders machine-speed gaps: faster scores higher, all above the minimum's
    assert got[5] > got[4] > got[1] > cue.score_gap(2_000_000)


def test_time_floor_variant_ties_every_gap_below_the_minimum() -> None:
    train = table([call("A", t, response=f"r{t}") for t in (0, 2, 6, 14)])
    cue = TimeCue(tail="floor").fit(prepare(train))
    rows = [call("A", 0, response="a"), call("A", 1, response="b"), call("A", 1.01, response="c")]
    got = cue.score_many(prepare(table(rows))).tolist()
    assert got == [0.0, math.log(4), math.log(4)]  # (0 + 1) / (3 + 1): a tie at the floor
    assert got == online_scores(cue, table(rows))
    with pytest.raises(ValueError, match="tail"):
        TimeCue(tail="cliff")


def test_time_subagent_first_call_and_late_call_score_zero() -> None:
    cue = TimeCue().fit(prepare(table(session(["A"] * 5, gap=3.0))))
    rows = [call("A", 0, response="p1"), call("A", 0.01, agent="sub", response="q1", n=1)]
    assert cue.score_many(prepare(table(rows))).tolist() == [0.0, 0.0]
    ctx = StreamContext()
    ctx.advance(Call.from_mapping(call("A", 10, response="x")))
    late = Call.from_mapping(call("A", 9, response="y"))  # arrived out of order
    assert cue.score_one(late, ctx, None) == 0.0


def test_time_without_training_gaps_is_silent() -> None:
    cue = TimeCue().fit(prepare(table([call("A", 0)])))
    scores = cue.score_many(prepare(table(session(["A", "A", "A"], gap=0.01))))
    assert scores.tolist() == [0.0, 0.0, 0.0]


def test_time_knot_budget_keeps_the_low_tail_exact() -> None:
    rows = [call("A", 0, response="r0")]
    t = 0.0
    for i in range(1, 400):
        t += 1.0 + i * 0.01
        rows.append(call("A", t, response=f"r{i}", n=i))
    full = TimeCue().fit(prepare(table(rows)))
    small = TimeCue(max_knots=50).fit(prepare(table(rows)))
    assert len(small.knots_us) <= 50 and small.n == full.n == 399
    probe = prepare(table(session(["A"] * 30, gap=1.05)))
    # the lowest 25 gaps are kept exactly: identical scores there
    assert small.score_many(probe).tolist() == full.score_many(probe).tolist()
    wide = prepare(table([call("A", 0, response="a"), call("A", 3.5, response="b")]))
    assert small.score_many(wide)[1] >= full.score_many(wide)[1]  # errs high, never low


# ------------------------------------------------------------------ failure, by hand


def test_failure_beta_smoothed_rate_by_hand() -> None:
    rows = [call("A", i) for i in range(10)] + [
        call("B", 20, failed=True),
        call("B", 21, failed=True),
    ]
    cue = FailureCue(prior_strength=2.0).fit(prepare(table(rows)))
    # p0 = (2 + 1) / (12 + 2) = 3/14; p_A = (0 + 2 p0) / 12 = 1/28; p_B = (2 + 2 p0) / 4 = 17/28
    assert cue.rate("A") == pytest.approx(1 / 28)
    assert cue.rate("B") == pytest.approx(17 / 28)
    assert cue.rate("never-seen") == pytest.approx(3 / 14)
    test = [
        call("A", 0, failed=True),
        call("A", 1),
        call("B", 2),
        call("Z", 3, failed=True),
    ]
    got = cue.score_many(prepare(table(test))).tolist()
    want = [math.log(28), -math.log(27 / 28), -math.log(11 / 28), -math.log(3 / 14)]
    assert got == pytest.approx(want, rel=1e-12)
