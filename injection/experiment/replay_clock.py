"""When each replayed call reached the replay: the collector's future-clock guard in the
corpus's own terms, or by the call's own arrival mark where it has one.

The collector distrusts a call stamped more than
:data:`~toolwatch.detection.alerting.CLOCK_AHEAD_S` (5 min) after its own clock: the call is
scored, but its time moves neither the event clock nor its stream's life, and its stream is
never learnt. A replay trusts event time, so it fed a call stamped, say, +2 days two days late:
its stream was scored, pooled and folded without it, and it opened a one-call stream of its
own, learnt, two days on.

**Arrival marks.** A call the collector stored carries the write's ``received_time``; where a
call has one, the mark decides: a call stamped more than the guard after its mark is
**stamped ahead of its arrival** and arrives at its mark (a client whose clock is an hour fast
has every call so; its stamps agree with each other, so the corpus alone cannot tell). A call
within the guard of its mark arrives at its stamp, as before.

**No mark** (imported and simulated rows, a store written before the column): a stream's own
order tells such a call apart: its calls are made in ``seq`` order, so their
stamps rise with it. The calls kept in time order are the longest run of the stream whose
stamps do not fall (in ``seq`` order); a call outside that run stamped more than the guard
after the next call kept is **stamped ahead of the corpus**. It arrives with that call (just
before it in the replay order), and the live scorer, given that arrival as its clock
(``LiveScorer.process(..., clock_us=)``), handles it as the collector does. A call stamped
behind its stream (a late stamp) is left where its stamp puts it, as before; a stream whose
``seq`` is missing gives no evidence and is trusted. An injected copy (whose ``seq`` the
injector renumbers in time order) has such a call arrive with the copy of the same call as the
original, and a call ahead of its mark as far before its copy's stamp as the original arrived
before its own, the copy's inserted calls as the call before them (:func:`copy_arrivals`). A
corpus without such calls gets every arrival equal to its stamp: the replay is the very one it
was.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from toolwatch.injection.spans.session_arrays import SessionCalls
from toolwatch.record import RECEIVED


def ahead_of_mark(session: SessionCalls, guard_us: int) -> np.ndarray:
    """Per call (the session's row order): it has an arrival mark and is stamped more than
    ``guard_us`` after it."""
    t = np.asarray(session["start_time"], dtype=np.int64)
    mark = session.columns.get(RECEIVED)
    if mark is None:
        return np.zeros(len(t), dtype=bool)
    mark = np.asarray(mark, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ~np.isnan(mark) & (t > mark + guard_us)


def arrivals(session: SessionCalls, guard_us: int) -> tuple[np.ndarray, dict[int, int]]:
    """Per call (the session's row order), when it reached the replay, in µs: its own stamp;
    its arrival mark when stamped more than ``guard_us`` after it; without a mark, stamped
    more than ``guard_us`` ahead of the next call of its stream kept in time order, that
    call's arrival. Also the rows stamped ahead of the corpus -> the row they arrived with."""
    t = np.asarray(session["start_time"], dtype=np.int64)
    out = t.copy()
    at_mark = ahead_of_mark(session, guard_us)
    if at_mark.any():
        out[at_mark] = np.asarray(session[RECEIVED], dtype=np.float64)[at_mark].astype(np.int64)
    came_with = _ahead_of_corpus(session, t, guard_us)
    mark = session.columns.get(RECEIVED)
    if came_with and mark is not None:  # where a call has a mark, the mark decides
        marked = ~np.isnan(np.asarray(mark, dtype=np.float64))
        came_with = {r: w for r, w in came_with.items() if not marked[r]}
    for r, w in came_with.items():
        out[r] = out[w]
    return out, came_with


def _ahead_of_corpus(session: SessionCalls, t: np.ndarray, guard_us: int) -> dict[int, int]:
    """The rows stamped more than ``guard_us`` ahead of the next call of their stream kept
    in time order (module docstring) -> that call's row."""
    came_with: dict[int, int] = {}
    if len(t) < 2 or "seq" not in session.columns:
        return came_with
    seq = np.asarray(session["seq"], dtype=np.float64)
    if np.isnan(seq).any():
        return came_with
    order = np.argsort(seq, kind="stable")
    ts = t[order]
    if (np.maximum.accumulate(ts) - ts <= guard_us).all():  # no stamp far ahead of a later one
        return came_with
    kept = _kept(ts.tolist())
    next_kept: int | None = None
    for i in range(len(ts) - 1, -1, -1):
        if kept[i]:
            next_kept = i
        elif next_kept is not None and ts[i] > ts[next_kept] + guard_us:
            came_with[int(order[i])] = int(order[next_kept])
    return came_with


def stamped_ahead(sessions: Sequence[SessionCalls], guard_us: int) -> tuple[np.ndarray, int, int]:
    """The arrivals of the sessions' calls, concatenated in their order (as ``to_table`` writes
    them), how many calls are stamped ahead of the corpus and how many ahead of their arrival
    mark."""
    if not sessions:
        return np.empty(0, dtype=np.int64), 0, 0
    parts, ahead, at_mark = [], 0, 0
    for s in sessions:
        arrive, came_with = arrivals(s, guard_us)
        parts.append(arrive)
        ahead += len(came_with)
        at_mark += int(ahead_of_mark(s, guard_us).sum())
    return np.concatenate(parts), ahead, at_mark


def copy_arrivals(copy: SessionCalls, original: SessionCalls, guard_us: int) -> np.ndarray:
    """When each call of an injected copy of ``original`` arrived: a call stamped ahead in the
    original arrives with the copy of the call it arrived with there (if still more than
    ``guard_us`` before it), one ahead of its mark as far before its stamp as in the original
    (and a call inserted after it as far before its own), every other call at its stamp. The
    copy's own calls are the rows the injector did not label, in the original's order (all
    rows, when it only re-timed)."""
    t = np.asarray(copy["start_time"], dtype=np.int64)
    out = t.copy()
    arrive, came_with = arrivals(original, guard_us)
    lead = np.where(ahead_of_mark(original, guard_us), original["start_time"] - arrive, 0)
    if not came_with and not lead.any():
        return out
    if len(copy) == len(original):
        rows = np.arange(len(copy))
    else:
        rows = np.flatnonzero(copy["label"] == None)  # noqa: E711 (object array)
        if len(rows) != len(original):
            return out  # not a copy row for row: its stamps are trusted
    if lead.any():
        # each row's original: itself, or for an inserted row the copied row before it
        before = np.maximum(np.searchsorted(rows, np.arange(len(copy)), side="right") - 1, 0)
        out -= lead[before].astype(np.int64)
    for r, w in came_with.items():
        if t[rows[r]] > t[rows[w]] + guard_us:
            out[rows[r]] = out[rows[w]]
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
