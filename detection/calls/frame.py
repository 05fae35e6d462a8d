"""Calls laid out as streams: the numpy view every cue and detector works on in batch.

:func:`prepare` validates a calls table (columns of :data:`toolwatch.record.CALL_FIELDS`),
sorts it into streams — ``(session_id, agent_id)``, then ``(start_time, seq)`` within a stream,
ties kept in input order — and precomputes what the cues share: stream starts, positions,
previous-call gaps and whether the previous call came from the same model response.

Fallbacks, documented once here:

* a NULL ``agent_id`` is the main agent (its own stream);
* a NULL ``response_id`` means the response boundary is unknown, so the call counts as coming
  from a *different* response than its neighbour (never as parallel);
* a NULL ``input_bytes`` / ``output_bytes`` is an unknown size (a span that carried none):
  it scores no size on that side and is not learnt; NULL ``restamped`` /
  ``output_truncated`` are false;
* a gap touching a ``restamped`` call (either end) is not a real time: it is not scored and
  not learnt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.conventions import EGRESS_CLASSES
from toolwatch.usage import UserError
from toolwatch.words import counted, noun_for

#: Columns a calls table must have; the rest of the record is optional here.
REQUIRED_COLUMNS: tuple[str, ...] = ("session_id", "tool", "start_time", "input_bytes", "failed")
#: ... of which these may hold no NULL (``input_bytes`` may: a span without sizes).
NOT_NULL_COLUMNS: tuple[str, ...] = ("session_id", "tool", "start_time", "failed")
OPTIONAL_COLUMNS: tuple[str, ...] = (
    "agent_id",
    "seq",
    "output_bytes",
    "output_truncated",
    "response_id",
    "restamped",
    # argument provenance (null = not measured): read by the provenance cue only
    "egress",
    "payload_longest",
    "payload_total",
)

#: Every column the scorers read (the rest of the record is not needed to score).
SCORING_COLUMNS: tuple[str, ...] = (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)

#: Columns kept as Arrow data in :attr:`CallFrame.table` (identity and pass-through).
FRAME_COLUMNS: tuple[str, ...] = (
    "session_id",
    "agent_id",
    "seq",
    "start_time",
    "tool",
    "span_id",
    "label",
)


class CallsError(UserError, ValueError):
    """A calls table cannot be scored; the message names the column and the problem."""


@dataclass(frozen=True)
class CallFrame:
    """Calls in stream order as numpy arrays (one element per call)."""

    table: pa.Table  # the identity columns (FRAME_COLUMNS) of the input, in stream order
    order: np.ndarray  # int64: input row of each frame row (``calls.take(order)``)
    start: np.ndarray  # bool: first call of its stream
    stream: np.ndarray  # int64: stream number, 0.. in order
    position: np.ndarray  # int64: 0-based index within the stream
    tool_names: list[str]  # distinct tool names of this frame
    tool: np.ndarray  # int64: index into tool_names
    start_us: np.ndarray  # int64: start time, µs since the epoch
    gap_us: np.ndarray  # int64: µs since the previous call of the stream (0 at a start)
    input_bytes: np.ndarray  # int64 (0 where unknown: a span without sizes)
    input_known: np.ndarray  # bool
    output_bytes: np.ndarray  # int64 (0 where unknown)
    output_known: np.ndarray  # bool
    output_truncated: np.ndarray  # bool
    failed: np.ndarray  # bool
    same_response: np.ndarray  # bool: same non-null response_id as the previous call
    timing_valid: np.ndarray  # bool: not a start, neither end of the gap restamped
    egress: np.ndarray  # int64: index into conventions.EGRESS_CLASSES, -1 = not measured
    payload_longest: np.ndarray  # int64: provenance payload bytes, -1 = not measured
    payload_total: np.ndarray  # int64: -1 = not measured

    @property
    def n(self) -> int:
        return int(self.start.shape[0])

    @property
    def prev_tool(self) -> np.ndarray:
        """Index of the previous call's tool, ``-1`` at a stream start."""
        prev = np.empty_like(self.tool)
        if self.n:
            prev[0] = -1
            prev[1:] = self.tool[:-1]
            prev[self.start] = -1
        return prev

    @property
    def stream_count(self) -> int:
        return int(self.start.sum())


def prepare(calls: pa.Table) -> CallFrame:
    """Validate and sort a calls table into streams (see the module docstring)."""
    if not isinstance(calls, pa.Table):
        raise CallsError(f"calls must be a pyarrow.Table, not {type(calls).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in calls.column_names]
    if missing:
        raise CallsError(
            f"calls table lacks the {noun_for(len(missing), 'column')} "
            f"{', '.join(map(repr, missing))} "
            "(see toolwatch.record.CALL_FIELDS)"
        )
    for name in NOT_NULL_COLUMNS:
        nulls = calls.column(name).null_count
        if nulls:
            first = _first_null(calls.column(name))
            raise CallsError(
                f"column {name!r} has {counted(nulls, 'null value')}, first at row {first}"
            )
    table = _with_optional_columns(calls)
    try:
        start_col = table.column("start_time").cast(pa.timestamp("us", tz="UTC"), safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CallsError(
            f"column 'start_time' ({table.schema.field('start_time').type}) cannot be read as "
            f"a UTC timestamp: {exc}"
        ) from None
    table = table.set_column(table.schema.get_field_index("start_time"), "start_time", start_col)
    n = table.num_rows
    if n:
        order = np.asarray(
            pc.sort_indices(
                table.select(["session_id", "agent_id", "start_time", "seq"]),
                sort_keys=[
                    ("session_id", "ascending", "at_start"),
                    ("agent_id", "ascending", "at_start"),
                    ("start_time", "ascending", "at_start"),
                    ("seq", "ascending", "at_start"),
                ],
            ).to_numpy(),
            dtype=np.int64,
        )
    else:
        order = np.zeros(0, dtype=np.int64)
    # only the identity columns are reordered as Arrow data; the rest become numpy arrays
    keep = [c for c in FRAME_COLUMNS if c in table.column_names]
    out_table = table.select(keep).take(pa.array(order)).combine_chunks()

    session = _codes(table.column("session_id"))[order]
    agent = _codes(table.column("agent_id"))[order]
    start = np.ones(n, dtype=bool)
    if n:
        start[1:] = (session[1:] != session[:-1]) | (agent[1:] != agent[:-1])
    stream = np.cumsum(start, dtype=np.int64) - 1
    idx = np.arange(n, dtype=np.int64)
    first_of_stream = idx[start]
    position = idx - first_of_stream[stream] if n else idx

    tool_dict = pc.dictionary_encode(table.column("tool")).combine_chunks()
    tool_names = [str(t) for t in tool_dict.dictionary.to_pylist()]
    tool = np.asarray(tool_dict.indices.to_numpy(zero_copy_only=False), dtype=np.int64)[order]

    start_us = _int_array(start_col.cast(pa.int64()))[order]
    gap_us = np.zeros(n, dtype=np.int64)
    if n:
        gap_us[1:] = start_us[1:] - start_us[:-1]
        gap_us[start] = 0

    in_col = table.column("input_bytes").cast(pa.int64())
    input_known = ~_bool_array(pc.is_null(in_col))[order]
    input_bytes = _int_array(pc.fill_null(in_col, 0))[order]
    out_col = table.column("output_bytes").cast(pa.int64())
    output_known = ~_bool_array(pc.is_null(out_col))[order]
    output_bytes = _int_array(pc.fill_null(out_col, 0))[order]
    for name, arr in (("input_bytes", input_bytes), ("output_bytes", output_bytes)):
        if n and arr.min() < 0:
            raise CallsError(f"column {name!r} has negative values (min {int(arr.min())})")

    response = _codes(table.column("response_id"))[order]
    same_response = np.zeros(n, dtype=bool)
    restamped = _bool_array(pc.fill_null(table.column("restamped"), False))[order]
    timing_valid = ~start & ~restamped
    if n:
        same_response[1:] = (response[1:] == response[:-1]) & (response[1:] >= 0)
        same_response[start] = False
        timing_valid[1:] &= ~restamped[:-1]
    truncated = _bool_array(pc.fill_null(table.column("output_truncated"), False))[order]
    egress = _egress_codes(table.column("egress"))[order]
    payload_longest = _int_array(pc.fill_null(table.column("payload_longest").cast(pa.int64()), -1))
    payload_total = _int_array(pc.fill_null(table.column("payload_total").cast(pa.int64()), -1))

    return CallFrame(
        table=out_table,
        order=order,
        start=start,
        stream=stream,
        position=position,
        tool_names=tool_names,
        tool=tool,
        start_us=start_us,
        gap_us=gap_us,
        input_bytes=input_bytes,
        input_known=input_known,
        output_bytes=output_bytes,
        output_known=output_known,
        output_truncated=truncated,
        failed=_bool_array(table.column("failed"))[order],
        same_response=same_response,
        timing_valid=timing_valid,
        egress=egress,
        payload_longest=payload_longest[order],
        payload_total=payload_total[order],
    )


def sweep(
    x: np.ndarray,
    starts: np.ndarray,
    first: Callable[[np.ndarray], np.ndarray],
    step: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Run a one-step recursion along every stream, vectorised across streams.

    ``out[start] = first(x[start])`` and ``out[i] = step(out[i-1], x[i])`` inside a stream.
    The loop runs over positions (at most the longest stream's length), each step handling
    every stream still that long at once; the arithmetic per element is exactly the scalar
    recursion's, so results equal a per-call loop bit for bit.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    out = np.empty_like(x)
    if n == 0:
        return out
    mask = starts_mask(starts, n)
    begin = np.flatnonzero(mask)
    lengths = np.diff(np.append(begin, n))
    order = np.argsort(-lengths, kind="stable")
    begin = begin[order]
    lengths = lengths[order]
    out[begin] = first(x[begin])
    # active[t] = how many streams are longer than t (lengths sorted descending)
    neg = -lengths
    for t in range(1, int(lengths[0])):
        k = int(np.searchsorted(neg, -t, side="left"))
        cur = begin[:k] + t
        out[cur] = step(out[cur - 1], x[cur])
    return out


def starts_mask(starts: np.ndarray, n: int) -> np.ndarray:
    """A boolean stream-start mask from a mask or from start indices (index 0 always starts)."""
    starts = np.asarray(starts)
    if starts.dtype == bool:
        if starts.shape != (n,):
            raise ValueError(f"session_starts mask has shape {starts.shape}, scores have ({n},)")
        mask = starts.copy()
    else:
        if starts.size and (starts.min() < 0 or starts.max() >= n):
            raise ValueError("session_starts indices fall outside the scores")
        mask = np.zeros(n, dtype=bool)
        mask[starts.astype(np.int64)] = True
    if n:
        mask[0] = True
    return mask


# ------------------------------------------------------------------------------ helpers


def _with_optional_columns(calls: pa.Table) -> pa.Table:
    defaults: dict[str, pa.DataType] = {
        "agent_id": pa.string(),
        "seq": pa.int32(),
        "output_bytes": pa.int64(),
        "output_truncated": pa.bool_(),
        "response_id": pa.string(),
        "restamped": pa.bool_(),
        "egress": pa.string(),
        "payload_longest": pa.int64(),
        "payload_total": pa.int64(),
    }
    table = calls
    for name in OPTIONAL_COLUMNS:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, defaults[name]))
    return table


def _egress_codes(column: pa.ChunkedArray) -> np.ndarray:
    """Index of each call's egress class in ``EGRESS_CLASSES``; null is ``-1``; an unknown
    class is a :class:`CallsError` naming it."""
    codes = pc.index_in(column.cast(pa.string()), value_set=pa.array(EGRESS_CLASSES))
    unknown = pc.and_(pc.is_null(codes), pc.is_valid(column))
    if pc.any(unknown).as_py():
        bad = pc.filter(column, unknown)[0].as_py()
        raise CallsError(f"column 'egress' has an unknown class {bad!r} (known: {EGRESS_CLASSES})")
    return np.asarray(pc.fill_null(codes, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Integer codes of a column's values (equal values, equal codes); NULL is ``-1``."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    return np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(), dtype=np.int64)


def _int_array(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(column.to_numpy(), dtype=np.int64)


def _bool_array(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=bool)


def _first_null(column: pa.ChunkedArray) -> int:
    nulls = np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=bool)
    return int(np.flatnonzero(nulls)[0])
