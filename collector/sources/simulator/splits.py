"""Which split each stream of a call table falls in, by the stream's first call time (the study's
rule: each subagent is a session of its own). Works on any call table, simulated or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import pyarrow as pa

from toolwatch import study
from toolwatch.collector.sources.simulator.config import SPLIT_DATES, as_date, day_us

#: One stream of calls: ``(session_id, agent_id)``; ``agent_id`` is None for the main agent.
Stream = tuple[str, str | None]


def assign_splits(
    table: pa.Table,
    dates: Mapping[str, tuple[str, str]] | None = None,
    min_test_calls: int = study.TEST_MIN_CALLS,
) -> dict[str, list[Stream]]:
    """Streams ``(session_id, agent_id)`` per split by the stream's first call time (the
    study's rule: each subagent is a session of its own).

    Test-window streams with fewer than ``min_test_calls`` calls go to ``test_short`` (kept
    out of the study's test split); streams outside every window go nowhere. Within a split,
    streams are listed by first call time.
    """
    dates = dates or SPLIT_DATES
    bounds = [
        (name, day_us(as_date(a)), day_us(as_date(b) + timedelta(days=1)))
        for name, (a, b) in dates.items()
    ]
    out: dict[str, list[Stream]] = {name: [] for name in [*dates, "test_short"]}
    for key, (first, n) in sorted(_stream_firsts(table).items(), key=_by_first_time):
        for name, lo, hi in bounds:
            if lo <= first < hi:
                out["test_short" if name == "test" and n < min_test_calls else name].append(key)
                break
    return out


def _by_first_time(item: tuple[Stream, tuple[int, int]]) -> tuple[int, str, str]:
    (session, agent), (first, _) = item
    return first, session, agent or ""


def stream_calls(table: pa.Table) -> dict[Stream, int]:
    """Calls per stream ``(session_id, agent_id)`` of a call table."""
    return {key: n for key, (_, n) in _stream_firsts(table).items()}


def _stream_firsts(table: pa.Table) -> dict[Stream, tuple[int, int]]:
    """Per stream: first call time (µs since the epoch) and number of calls."""
    if table.num_rows == 0:
        return {}
    grouped = (
        table.select(["session_id", "agent_id", "start_time"])
        .group_by(["session_id", "agent_id"], use_threads=False)
        .aggregate([("start_time", "min"), ("start_time", "count")])
    )
    firsts = grouped.column("start_time_min").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return {
        (str(sid), agent): (int(t), int(n))
        for sid, agent, t, n in zip(
            grouped.column("session_id").to_pylist(),
            grouped.column("agent_id").to_pylist(),
            firsts.to_pylist(),
            grouped.column("start_time_count").to_pylist(),
            strict=True,
        )
    }
