"""What the live scorer reads back from the store: the calls of closed streams for an adaptive
model's folds (:func:`store_calls_of`), and after a kill the calls its state never saw.

**Catch-up after a kill.**
The collector stores every batch durably *before* the live scorer sees it, and the scorer saves
its state only every 60 s (and after a crossing). A collector killed in between loses from its
state the calls scored since the last save — a half-built runaway restarts from a lower CUSUM —
though the store holds every one of them. The stored calls are the source of truth, so the
state records how far it got, and ``toolwatch collector --model`` re-scores the rest at start.

How far it got is the **arrival mark** of the last batch it scored: the collector stamps every
row it writes with ``received_time``, one value per write, rising (compaction keeps it), so the
stored calls whose mark is later are exactly the batches the state never saw. They are
re-scored before the collector listens, write by write in the order they were written
(:func:`arrived_since`): the very batches, so the restarted collector ends as the
uninterrupted one did — a call that arrived long after its start time included.

A state saved before arrival marks existed has none; then, once, the older rule: a
:class:`ScoredWindow`, a lower bound ``from_us`` (the newest call time scored, less
:data:`LATE_S`) and the span id of every call scored since whose start time is at or after it;
a stored call in the window whose span id is not there is re-scored (one that arrived more
than :data:`LATE_S` behind the newest in the last minute before the kill is lost: nothing
tells it from the older ones). The window is still kept with the state, and rows without a
mark (written by an older collector, or appended to the store by code rather than received)
are still caught up by it, first, as before. With no window (a first start) the calls
already stored count as seen, and the newest mark stored becomes the state's: a collector
never scores history it was not running for. An alert the catch-up would raise again (stored,
then the process killed before the state was saved) is recognised by its span id, cue set and
detector in the ``alerts`` table and not raised twice.

Calls stamped ahead of the window (a skewed client clock) are kept in it too, at most
:data:`MAX_AHEAD` of them (the farthest dropped first: scored once more after a kill).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.alerts import ALERTS_TABLE
from toolwatch.detection.calls.windows import call_columns_sql
from toolwatch.detection.scoring.adaptive import CallsOf, Closed
from toolwatch.record import RECEIVED

#: How far (event time) behind the newest call scored a call may arrive and still be re-scored
#: after a kill; the window holds the span ids of about this much traffic (≈ 25 B each).
LATE_S: Final = 300.0
#: Span ids of calls stamped after the newest trusted call time kept at most (a skewed or
#: hostile clock must not grow the state).
MAX_AHEAD: Final = 10_000
_TS = "make_timestamp(?::BIGINT)"


class ScoredWindow:
    """The calls scored lately: every call scored with a start at or after ``from_us`` has its
    span id in ``seen`` (span id -> start µs)."""

    def __init__(self, from_us: int, seen: dict[str, int] | None = None, newest_us: int = 0):
        self.from_us = from_us
        self.seen: dict[str, int] = {} if seen is None else seen
        self.newest_us = newest_us  # the newest trusted call time: later ones are "ahead"

    def add(self, span_id: str | None, start_us: int) -> None:
        if span_id is not None and start_us >= self.from_us:
            self.seen[span_id] = start_us

    def prune(self, newest_us: int) -> None:
        """Move the bound to ``newest_us`` − :data:`LATE_S` (never back) and forget what lies
        before it; keep at most :data:`MAX_AHEAD` calls after the newest trusted time."""
        self.newest_us = newest = max(self.newest_us, newest_us)
        self.from_us = max(self.from_us, newest - int(LATE_S * 1e6))
        bound = self.from_us
        self.seen = {k: t for k, t in self.seen.items() if t >= bound}
        ahead = sorted((t, k) for k, t in self.seen.items() if t > newest)
        for _, key in ahead[MAX_AHEAD:]:
            del self.seen[key]

    def to_json(self) -> dict[str, Any]:
        seen = [[k, t] for k, t in self.seen.items()]
        return {"from_us": self.from_us, "newest_us": self.newest_us, "seen": seen}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ScoredWindow:
        """From :meth:`to_json`; ValueError/TypeError/KeyError when damaged."""
        seen = {str(k): int(t) for k, t in doc["seen"]}
        return cls(int(doc["from_us"]), seen, int(doc["newest_us"]))


def baseline(store: Store, latest_us: int | None) -> ScoredWindow:
    """A first window: the calls already stored count as seen (up to ``latest_us``, the latest
    believable call time, for the bound; every later one is kept as seen too)."""
    cap = "" if latest_us is None else f"WHERE start_time <= {_TS}"
    row = store.query(
        f"SELECT epoch_us(max(start_time)) AS t FROM calls {cap}",
        [] if latest_us is None else [latest_us],
    )
    newest = row.column("t")[0].as_py() if row.num_rows else None
    if newest is None:
        return ScoredWindow(0)
    window = ScoredWindow(newest - int(LATE_S * 1e6), newest_us=newest)
    stored = store.query(
        f"SELECT span_id, epoch_us(start_time) AS t FROM calls WHERE start_time >= {_TS}",
        [window.from_us],
    )
    for span_id, t in zip(
        stored.column("span_id").to_pylist(), stored.column("t").to_pylist(), strict=True
    ):
        window.add(span_id, int(t))
    window.prune(newest)
    return window


def missed_calls(
    store: Store, window: ScoredWindow, latest_us: int | None, *, unmarked: bool = False
) -> pa.Table:
    """The stored calls of the window (up to ``latest_us``) that were never scored; with
    ``unmarked``, only those without an arrival mark (the others go by :func:`arrived_since`)."""
    upper = "" if latest_us is None else f" AND c.start_time <= {_TS}"
    if unmarked:
        upper += f" AND c.{RECEIVED} IS NULL"
    table = store.query(
        f"SELECT {call_columns_sql(store, 'c')} FROM calls c WHERE c.start_time >= {_TS}{upper}",
        [window.from_us] + ([] if latest_us is None else [latest_us]),
    )
    if not window.seen or table.num_rows == 0:
        return table
    scored = pc.is_in(table.column("span_id"), value_set=pa.array(list(window.seen)))
    return table.filter(pc.invert(scored))


def newest_received(store: Store) -> int:
    """The latest arrival mark stored (``received_time``, µs), 0 when no row has one."""
    row = store.query(f"SELECT epoch_us(max({RECEIVED})) AS t FROM calls")
    newest = row.column("t")[0].as_py() if row.num_rows else None
    return 0 if newest is None else int(newest)


def arrived_since(store: Store, received_us: int) -> list[pa.Table]:
    """The stored calls written after the arrival mark ``received_us``, one table per write in
    the order they were written: the very batches the collector handed the scorer."""
    table = store.query(
        f"SELECT {call_columns_sql(store, 'c')} FROM calls c WHERE c.{RECEIVED} > {_TS} "
        f"ORDER BY c.{RECEIVED}",
        [received_us],
    )
    if table.num_rows == 0:
        return []
    marks = table.column(RECEIVED).cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    values = marks.to_numpy()
    cuts = [0, *(i for i in range(1, len(values)) if values[i] != values[i - 1]), len(values)]
    return [table.slice(a, b - a) for a, b in pairwise(cuts)]


def alert_key(alert: Mapping[str, Any]) -> tuple[Any, ...]:
    """What tells an alert raised for a call apart: its span id, cue set and detector."""
    return (alert["span_id"], alert["cue_set"], alert["detector"])


def raised_before(store: Store, span_ids: Iterable[str | None]) -> set[tuple[Any, ...]]:
    """(span id, cue set, detector) of the alerts already stored for these calls."""
    ids = [s for s in span_ids if s is not None]
    if not ids:
        return set()
    rows = store.query(
        f"SELECT span_id, cue_set, detector FROM {ALERTS_TABLE} "
        "WHERE span_id IN (SELECT unnest(?::VARCHAR[]))",
        [ids],
    )
    return set(
        zip(*(rows.column(c).to_pylist() for c in ("span_id", "cue_set", "detector")), strict=True)
    )


def store_calls_of(store: Store) -> CallsOf:
    """Read back closed streams' calls from the store (for the adaptive model's folds)."""

    def calls_of(streams: Sequence[Closed]) -> pa.Table:
        if not streams:
            return CALLS_SCHEMA.empty_table()
        keys = [f"{c.key[0]}\x1f{chr(30) if c.key[1] is None else c.key[1]}" for c in streams]
        first = min(c.first_us for c in streams)
        last = max(c.last_us for c in streams)
        columns = call_columns_sql(store, "c")
        table = store.query(
            f"SELECT {columns} FROM calls c WHERE c.session_id || chr(31) || "
            "coalesce(c.agent_id, chr(30)) IN (SELECT unnest(?::VARCHAR[])) "
            "AND c.start_time >= make_timestamp(?) AND c.start_time <= make_timestamp(?) "
            "AND c.label IS NULL",
            [keys, first, last],
        )
        if table.num_rows == 0:
            return CALLS_SCHEMA.empty_table()
        bounds = {c.key: (c.first_us, c.last_us) for c in streams}
        t = table.column("start_time").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        keep = [
            bounds[(s, a)][0] <= int(x) <= bounds[(s, a)][1]
            for s, a, x in zip(
                table.column("session_id").to_pylist(),
                table.column("agent_id").to_pylist(),
                t.to_pylist(),
                strict=True,
            )
        ]
        return table.filter(pa.array(keep)).cast(CALLS_SCHEMA)

    return calls_of
