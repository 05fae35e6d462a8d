"""The last step of ``workload.generate``: the calls as an Arrow table of the calls schema, with
ids that are deterministic per configuration.

The columns come from ``CALLS_SCHEMA`` (derived from :class:`toolwatch.record.CallRecord`): the
simulator supplies the values it generates, and every other field takes the record's default, so
a new record field with a default needs no change here and one without a default fails loudly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch.collector.sources.simulator.config import (
    CALL_PREFIX,
    RESPONSE_PREFIX,
    SERVICE,
    SESSION_PREFIX,
    SOURCE,
    SimulationConfig,
    as_date,
)
from toolwatch.collector.sources.simulator.plan import SessionPlan
from toolwatch.collector.sources.simulator.tools import (
    ALL_TOOLS,
)
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.conventions import ERROR_TYPE_TOOL_ERROR
from toolwatch.record import CallRecord


def calls_table(
    config: SimulationConfig,
    plans: Sequence[SessionPlan],
    lengths: np.ndarray,
    tool: np.ndarray,
    new_resp: np.ndarray,
    failed: np.ndarray,
    input_bytes: np.ndarray,
    output_bytes: np.ndarray,
    duration: np.ndarray,
    start_us: np.ndarray,
) -> pa.Table:
    """Columnar Arrow table; ids are deterministic per configuration and unique within it."""
    n = len(tool)
    # ids depend on every setting, so two different corpora never share a call id
    keys = np.random.SeedSequence(
        [config.seed, config.sessions, as_date(config.start).toordinal(), config.days,
         config.runaway_retries]
    ).generate_state(6, dtype=np.uint64)  # fmt: skip
    session_of = np.repeat(np.arange(len(plans)), lengths)
    counter = np.arange(len(plans), dtype=np.uint64)
    trace_hex = [
        f"{a:016x}{b:016x}"
        for a, b in zip(_mix(keys[0], counter), _mix(keys[1], counter), strict=True)
    ]
    agent_hex = [f"{x:016x}"[:8] for x in _mix(keys[2], counter)]
    # a subagent belongs to its parent's conversation: the parent's session id and trace, its
    # own agent id (as Claude Code's subagent files and the importer have it)
    owner = [p.parent if p.subagent and p.parent >= 0 else p.index for p in plans]
    trace_ids = [trace_hex[o] for o in owner]
    session_ids = [
        f"{SESSION_PREFIX}{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" for h in trace_ids
    ]
    agent_ids = [agent_hex[p.index] if p.subagent else None for p in plans]
    response = (np.cumsum(new_resp) - 1).astype(np.uint64)
    calls = np.arange(n, dtype=np.uint64)
    span_ids = [f"{x:016x}" for x in _mix(keys[5], calls)]
    call_ids = [f"{CALL_PREFIX}{x:016x}" for x in _mix(keys[4], calls)]
    response_ids = [f"{RESPONSE_PREFIX}{x:016x}" for x in _mix(keys[3], response)]
    error_types = [ERROR_TYPE_TOOL_ERROR if f else None for f in failed.tolist()]
    seq = _conversation_positions(np.asarray(owner, dtype=np.int64)[session_of], start_us)
    names = [t.full_name for t in ALL_TOOLS]
    servers = [t.server for t in ALL_TOOLS]
    tl, so = tool.tolist(), session_of.tolist()
    generated: dict[str, Any] = {
        "trace_id": [trace_ids[i] for i in so],
        "span_id": span_ids,
        "session_id": [session_ids[i] for i in so],
        "agent_id": [agent_ids[i] for i in so],
        "seq": seq,
        "tool": [names[t] for t in tl],
        "server": [servers[t] for t in tl],
        "start_time": start_us,
        "duration_us": np.round(duration * 1e6).astype(np.int64),
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "failed": failed,
        "error_type": error_types,
        "response_id": response_ids,
        "call_id": call_ids,
        "source": SOURCE,
        "service": SERVICE,
    }
    return schema_table(generated, n)


#: What a field the simulator does not generate holds: the call record's default.
RECORD_DEFAULTS: Final[dict[str, Any]] = {
    f.name: f.default
    for f in dataclasses.fields(CallRecord)
    if f.default is not dataclasses.MISSING
}


def schema_table(values: Mapping[str, Any], n: int) -> pa.Table:
    """``n`` rows of ``CALLS_SCHEMA``, column by column in its order and types: a field's values
    from ``values`` (an array of ``n``, or one value for every row), else the record's default.

    Raises :class:`ValueError` naming a value that is no call record field, or a field without
    a default that ``values`` lacks.
    """
    unknown = sorted(set(values).difference(CALLS_SCHEMA.names))
    if unknown:
        raise ValueError(f"not fields of the call record: {', '.join(unknown)}")
    arrays = []
    for f in CALLS_SCHEMA:
        if f.name in values:
            value = values[f.name]
        elif f.name in RECORD_DEFAULTS:
            value = RECORD_DEFAULTS[f.name]
        else:
            raise ValueError(f"no value for the call record field {f.name!r} (it has no default)")
        arrays.append(_column(value, f.type, n))
    return pa.Table.from_arrays(arrays, schema=CALLS_SCHEMA)


def _column(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    """One column of ``n`` rows: an array as given, a single value repeated, None as nulls."""
    if value is None:
        return pa.nulls(n, type_)
    if isinstance(value, str | bool | int | float):
        return pa.array([value] * n, type_)
    return pa.array(value, type_)


def _conversation_positions(conversation: np.ndarray, start_us: np.ndarray) -> np.ndarray:
    """0-based position of each call in its conversation by start time (main agent and
    subagents together, as the importer and the instrumentation number ``seq``); ties keep
    row order."""
    n = len(conversation)
    order = np.lexsort((np.arange(n), start_us, conversation))
    grouped = conversation[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    seq = np.empty(n, dtype=np.int64)
    seq[order] = rank
    return seq


def _mix(key: np.uint64, counter: np.ndarray) -> list[int]:
    """SplitMix64 of ``key + counter``: a bijection, so distinct counters give distinct ids."""
    with np.errstate(over="ignore"):
        z = counter.astype(np.uint64) + key + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return list((z ^ (z >> np.uint64(31))).tolist())
