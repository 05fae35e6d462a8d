"""Shared helpers for the detection tests: hand-made sessions and a small Markov workload.

Kept free of the simulator so unit tests do not depend on it; the generator here is only a
source of varied, normal-looking sessions (random tools, sizes, responses and gaps).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.record import CallRecord

T0 = datetime(2026, 8, 4, 9, tzinfo=UTC)


def call(
    tool: str,
    t: float,
    *,
    session: str = "s1",
    agent: str | None = None,
    response: str | None = "r",
    input_bytes: int | None = 100,
    output_bytes: int | None = 1000,
    failed: bool = False,
    restamped: bool = False,
    truncated: bool = False,
    seq: int | None = None,
    label: str | None = None,
    n: int = 0,
) -> dict[str, Any]:
    """One call record dict at ``t`` seconds after :data:`T0`."""
    return CallRecord(
        trace_id=f"{n + 1:032x}",
        span_id=f"{n + 1:016x}",
        session_id=session,
        agent_id=agent,
        seq=seq,
        tool=tool,
        server=None,
        start_time=T0 + timedelta(microseconds=round(t * 1e6)),
        duration_us=1000,
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        failed=failed,
        error_type="tool_error" if failed else None,
        response_id=response,
        call_id=None,
        source="simulated",
        restamped=restamped,
        output_truncated=truncated,
        label=label,
    ).as_dict()


def table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    """Rows -> a calls table; ``seq`` and ``span_id`` are filled in per session if missing."""
    out = []
    per_session: dict[str, int] = {}
    for i, row in enumerate(rows):
        row = dict(row)
        k = per_session.get(row["session_id"], 0)
        per_session[row["session_id"]] = k + 1
        if row.get("seq") is None:
            row["seq"] = k
        row["span_id"] = f"{i + 1:016x}"
        out.append(row)
    return pa.Table.from_pylist(out, schema=CALLS_SCHEMA)


def session(
    tools: Sequence[str],
    *,
    name: str = "s1",
    gap: float = 5.0,
    start: float = 0.0,
    **kw: Any,
) -> list[dict[str, Any]]:
    """A session calling ``tools`` in order, one response per call, ``gap`` seconds apart."""
    return [
        call(tool, start + i * gap, session=name, response=f"{name}-r{i}", **kw)
        for i, tool in enumerate(tools)
    ]


def workload(
    seed: int,
    sessions: int = 30,
    *,
    tools: int = 12,
    min_calls: int = 5,
    max_calls: int = 60,
    subagents: float = 0.3,
    start: datetime = T0,
    prefix: str = "w",
    tool_prefix: str = "tool",
) -> pa.Table:
    """Varied normal sessions: a sticky random walk over ``tools``, parallel responses,
    subagent streams, log-normal sizes, a few failures, null response ids and restamps."""
    r = random.Random(seed)
    names = [f"{tool_prefix}{i:02d}" for i in range(tools)]
    rows: list[dict[str, Any]] = []
    for s in range(sessions):
        sid = f"{prefix}{seed}-{s:04d}"
        base = (start - T0).total_seconds() + s * 3600.0
        streams = [None] + ([f"agent{s}"] if r.random() < subagents else [])
        for agent in streams:
            t = base + (r.uniform(5, 60) if agent else 0.0)
            prev = r.choice(names)
            resp = 0
            for i in range(r.randint(min_calls, max_calls)):
                tool = prev if r.random() < 0.35 else r.choice(names)
                prev = tool
                if i == 0 or r.random() < 0.7:
                    resp += 1
                    t += r.uniform(1.5, 40.0)
                else:
                    t += r.uniform(0.005, 0.9)
                rows.append(
                    call(
                        tool,
                        t,
                        session=sid,
                        agent=agent,
                        response=None if r.random() < 0.03 else f"{sid}-{agent}-{resp}",
                        input_bytes=int(r.lognormvariate(5 + names.index(tool) % 3, 0.6)),
                        output_bytes=None if r.random() < 0.03 else int(r.lognormvariate(7, 1.5)),
                        failed=r.random() < 0.04,
                        restamped=r.random() < 0.01,
                        truncated=r.random() < 0.02,
                        seq=i,
                        n=len(rows),
                    )
                )
    return table(rows)
