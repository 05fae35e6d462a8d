"""When each replayed call reached the replay: the collector's future-clock guard in the
corpus's own terms.

The collector distrusts a call stamped more than
:data:`~toolwatch.detection.alerting.CLOCK_AHEAD_S` (5 min) after its own clock: the call is
scored, but its time moves neither the event clock nor its stream's life, and its stream is
never learnt. A replay has no arrival clock (imported and simulated rows carry no
``received_time``) and trusts event time, so it fed a call stamped, say, +2 days two days late:
its stream was scored, pooled and folded without it, and it opened a one-call stream of its
own, learnt, two days on.

A stream's own order tells such a call apart: its calls are made in ``seq`` order, so their
stamps rise with it. The calls kept in time order are the longest run of the stream whose
stamps do not fall (in ``seq`` order); a call outside that run stamped more than the guard
after the next call kept is **stamped ahead of the corpus**. It arrives with that call (just
before it in the replay order), and the live scorer, given that arrival as its clock
(``LiveScorer.process(..., clock_us=)``), handles it as the collector does. A call stamped
behind its stream (a late stamp) is left where its stamp puts it, as before; a stream whose
``seq`` is missing gives no evidence and is trusted. An injected copy (whose ``seq`` the
injector renumbers in time order) has such a call arrive with the copy of the same call as the
original (:func:`copy_arrivals`). A corpus without such calls gets every
arrival equal to its stamp: the replay is the very one it was.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from toolwatch.injection.spans.session_arrays import SessionCalls


def arrivals(session: SessionCalls, guard_us: int) -> tuple[np.ndarray, dict[int, int]]:
    """Per call (the session's row order), when it reached the replay, in µs: its own stamp,
    or, stamped more than ``guard_us`` ahead of the next call of its stream kept in time
    order, that call's stamp; and the rows stamped ahead -> the row they arrived with."""
    t = np.asarray(session["start_time"], dtype=np.int64)
    out = t.copy()
    came_with: dict[int, int] = {}
    if len(t) < 2 or "seq" not in session.columns:
        return out, came_with
    seq = np.asarray(session["seq"], dtype=np.float64)
    if np.isnan(seq).any():
        return out, came_with
    order = np.argsort(seq, kind="stable")
    ts = t[order]
    if (np.maximum.accumulate(ts) - ts <= guard_us).all():  # no stamp far ahead of a later one
        return out, came_with
    kept = _kept(ts.tolist())
    next_kept: int | None = None
    for i in range(len(ts) - 1, -1, -1):
        if kept[i]:
            next_kept = i
        elif next_kept is not None and ts[i] > ts[next_kept] + guard_us:
            out[order[i]] = ts[next_kept]
            came_with[int(order[i])] = int(order[next_kept])
    return out, came_with


def stamped_ahead(sessions: Sequence[SessionCalls], guard_us: int) -> tuple[np.ndarray, int]:
    """The arrivals of the sessions' calls, concatenated in their order (as ``to_table`` writes
    them), and how many calls are stamped ahead of the corpus."""
    if not sessions:
        return np.empty(0, dtype=np.int64), 0
    parts, ahead = [], 0
    for s in sessions:
        arrive, came_with = arrivals(s, guard_us)
        parts.append(arrive)
        ahead += len(came_with)
    return np.concatenate(parts), ahead


def copy_arrivals(copy: SessionCalls, original: SessionCalls, guard_us: int) -> np.ndarray:
    """When each call of an injected copy of ``original`` arrived: a call stamped ahead in the
    original arrives with the copy of the call it arrived with there (if still more than
    ``guard_us`` before it), every other call at its stamp. The copy's own calls are the rows
    the injector did not label, in the original's order (all rows, when it only re-timed)."""
    t = np.asarray(copy["start_time"], dtype=np.int64)
    out = t.copy()
    _, came_with = arrivals(original, guard_us)
    if not came_with:
        return out
    if len(copy) == len(original):
        rows = np.arange(len(copy))
    else:
        rows = np.flatnonzero(copy["label"] == None)  # noqa: E711 (object array)
        if len(rows) != len(original):
            return out  # not a copy row for row: its stamps are trusted
    for r, w in came_with.items():
        if t[rows[r]] > t[rows[w]] + guard_us:
            out[rows[r]] = t[rows[w]]
    return out


def _kept(ts: list[int]) -> list[bool]:
    """Which stamps form the longest run that does not fall (patience sorting, O(n log n));
    of runs as long, the one ending lowest."""
    tails: list[int] = []  # the lowest last stamp of a run of each length
    ends: list[int] = []  # the index of that stamp
    before = [-1] * len(ts)
    for i, v in enumerate(ts):
        j = bisect_right(tails, v)
        before[i] = ends[j - 1] if j else -1
        if j == len(tails):
            tails.append(v)
            ends.append(i)
        else:
            tails[j], ends[j] = v, i
    kept = [False] * len(ts)
    i = ends[-1]
    while i >= 0:
        kept[i] = True
        i = before[i]
    return kept
