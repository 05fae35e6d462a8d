"""When each replayed call arrives: the collector's future-clock guard on a stream's stamps."""

from __future__ import annotations

import numpy as np

from toolwatch.injection.experiment.replay_clock import arrivals, copy_arrivals, stamped_ahead
from toolwatch.injection.spans.session_arrays import SessionCalls

MIN = 60_000_000
GUARD = 5 * MIN
DAY = 1440 * MIN


def stream(minutes: list[float], seq: list[float] | None = None) -> SessionCalls:
    """A stream whose calls are stamped at these minutes, in this ``seq`` order by default."""
    n = len(minutes)
    return SessionCalls(
        {
            "tool": np.array(["Read"] * n, dtype=object),
            "start_time": (np.array(minutes) * MIN).astype(np.int64),
            "seq": np.arange(n, dtype=np.float64) if seq is None else np.array(seq, float),
            "label": np.full(n, None, dtype=object),
        }
    )


def test_a_call_stamped_two_days_ahead_arrives_with_the_next_call_of_its_stream() -> None:
    s = stream([0, 1, 2, 2 + 2 * 1440, 4, 5])
    arrive, came_with = arrivals(s, GUARD)
    assert came_with == {3: 4}
    assert arrive.tolist() == [0, MIN, 2 * MIN, 4 * MIN, 4 * MIN, 5 * MIN]


def test_a_run_of_calls_ahead_is_ahead_and_a_late_stamp_or_a_pause_is_trusted() -> None:
    run = stream([0, 1, 2, 3 + 1440, 4 + 1440, 5 + 1440, 6, 7, 8, 9])
    assert arrivals(run, GUARD)[1] == {3: 6, 4: 6, 5: 6}
    late = stream([0, 1, 2, 3 - 2 * 1440, 4, 5])  # behind its stream: left where it is
    assert arrivals(late, GUARD)[1] == {}
    paused = stream([0, 1, 2, 2 * 1440, 2 * 1440 + 1])  # a stream resumed two days on
    assert arrivals(paused, GUARD)[1] == {}
    jitter = stream([0, 1, 4, 3.5, 5])  # out of order within the guard
    assert arrivals(jitter, GUARD)[1] == {}
    unknown = stream([0, 1, 2 * 1440, 3], seq=[0, 1, np.nan, 3])  # no position: no evidence
    assert arrivals(unknown, GUARD)[1] == {}


def test_stamps_are_read_in_seq_order_and_counted_over_streams() -> None:
    s = stream([0, 2 * 1440, 1, 2], seq=[0, 1, 2, 3])
    t = stream([5, 6])
    arrive, ahead, at_mark = stamped_ahead([s, t], GUARD)
    assert (
        ahead == 1 and at_mark == 0 and arrive.tolist() == [0, MIN, MIN, 2 * MIN, 5 * MIN, 6 * MIN]
    )


def test_a_copy_with_calls_inserted_arrives_as_its_original() -> None:
    """Sessions are in time order (the skewed call last) and the injector renumbers a copy's
    seq in that order: the copy's call arrives with the copy of the call its original arrived
    with."""
    original = stream([0, 1, 3, 4, 2 + 2 * 1440], seq=[0, 1, 3, 4, 2])
    assert arrivals(original, GUARD)[1] == {4: 2}
    times = [0, 1, 1.5, 1.6, 3.6, 4.6, 2.6 + 2 * 1440]  # two calls inserted after the second
    copy = SessionCalls(
        {
            "tool": np.array(["Read"] * 7, dtype=object),
            "start_time": (np.array(times) * MIN).astype(np.int64),
            "seq": np.arange(7, dtype=np.float64),
            "label": np.array([None, None, "burst", "burst", None, None, None], dtype=object),
        }
    )
    expected = (np.array([0, 1, 1.5, 1.6, 3.6, 4.6, 3.6]) * MIN).astype(np.int64)
    assert copy_arrivals(copy, original, GUARD).tolist() == expected.tolist()


def marked(minutes: list[float], marks: list[float]) -> SessionCalls:
    """A stream stamped at these minutes whose calls the collector received at ``marks``
    (NaN: no mark)."""
    s = stream(minutes)
    return s.replace(received_time=np.array(marks, dtype=np.float64) * MIN)


def test_a_client_an_hour_fast_arrives_at_its_arrival_marks() -> None:
    """Every call stamped an hour after the collector received it: the stamps agree with each
    other, so the corpus rule saw nothing and the replay fed the stream an hour late; where a
    call has a mark, the mark decides."""
    fast = marked([60, 61, 62, 63], [0.1, 1.1, 2.1, 3.1])
    arrive, came_with = arrivals(fast, GUARD)
    assert came_with == {}
    assert arrive.tolist() == (np.array([0.1, 1.1, 2.1, 3.1]) * MIN).astype(np.int64).tolist()
    on_time = marked([0, 1, 2, 3], [0.1, 1.1, 2.1, 7.9])  # within the guard of its mark
    assert arrivals(on_time, GUARD)[0].tolist() == [0, MIN, 2 * MIN, 3 * MIN]
    normal = stream([5, 6])
    _, ahead, at_mark = stamped_ahead([fast, on_time, normal], GUARD)
    assert (ahead, at_mark) == (0, 4)


def test_the_mark_decides_over_the_corpus_rule_and_a_call_without_one_keeps_it() -> None:
    """A call stamped two days ahead of its stream but received then (its stream's other calls
    stamped by a slow clock) is on time by its mark; a call without a mark still goes by its
    stream."""
    s = marked([0, 1, 2 * 1440, 3, 4 + 2 * 1440], [0, 1, 2 * 1440, 3, np.nan])
    arrive, came_with = arrivals(s, GUARD)
    assert came_with == {} and arrive[2] == 2 * DAY
    t = marked([0, 1, 2 * 1440, 3], [np.nan, np.nan, np.nan, np.nan])
    assert arrivals(t, GUARD)[1] == {2: 3}


def test_a_copy_of_a_fast_stream_arrives_as_far_before_its_stamps_inserted_calls_too() -> None:
    """The copy of a stream an hour fast: each copied call arrives an hour before its stamp
    (the copy re-timed after the insertion), and the calls inserted after the second call
    an hour before theirs, not an hour after their neighbours."""
    original = marked([60, 61, 62, 63], [0, 1, 2, 3])
    times = [60, 61, 61.5, 61.6, 62.6, 63.6]
    copy = SessionCalls(
        {
            "tool": np.array(["Read"] * 6, dtype=object),
            "start_time": (np.array(times) * MIN).astype(np.int64),
            "seq": np.arange(6, dtype=np.float64),
            "label": np.array([None, None, "burst", "burst", None, None], dtype=object),
        }
    )
    expected = ((np.array(times) - 60) * MIN).astype(np.int64)
    assert copy_arrivals(copy, original, GUARD).tolist() == expected.tolist()
