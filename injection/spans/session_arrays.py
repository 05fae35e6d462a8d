"""One session's call records as column arrays: the unit span injection transforms.

Injecting thousands of anomalies into Arrow tables row by row is slow, so the experiment turns
a split into per-session column arrays once (:func:`split_sessions`), every injector edits those
small arrays, and the injected sessions go back to one Arrow table (:func:`to_table`) for a
single batch scoring call. Nullable integer columns are float64 with NaN for null here (a
value past 2**53 — a hostile size the collector accepts — is rounded to the nearest float, and
one past the int64 range on the way back is its largest float); strings are object arrays;
``start_time`` is int64 microseconds since the epoch (UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.detection.calls.frame import SCORING_COLUMNS
from toolwatch.record import CALL_FIELDS

_INT_FIELDS = {f.name for f in CALL_FIELDS if f.arrow in ("int64", "int32")}
_BOOL_FIELDS = {f.name for f in CALL_FIELDS if f.arrow == "bool"}
_TIME_FIELDS = {f.name for f in CALL_FIELDS if f.arrow == "timestamp" and not f.nullable}
#: times that may be null (``received_time``): µs as float64, NaN for null, as nullable ints
_STAMP_FIELDS = {f.name for f in CALL_FIELDS if f.arrow == "timestamp" and f.nullable}
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in CALL_FIELDS)
#: The largest float64 an int64 column holds (2**63 - 1 itself rounds up, out of range).
_INT64_TOP_FLOAT: Final = float(np.nextafter(2.0**63, 0.0))
#: Microseconds per second (``start_time`` counts microseconds since the epoch, UTC).
US_PER_S: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class SessionCalls:
    """The calls of one session in time order, one numpy array per call-record field."""

    columns: dict[str, np.ndarray]
    _starts: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.columns["tool"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @property
    def session_id(self) -> str:
        return str(self.columns["session_id"][0]) if len(self) else ""

    def response_starts(self) -> np.ndarray:
        """Boolean per call: the call opens a new model response (null ids never join).

        Computed once per instance (sessions are immutable; :meth:`replace` makes a new one).
        """
        if self._starts:
            return self._starts[0]
        resp = self.columns["response_id"]
        starts = np.ones(len(resp), dtype=bool)
        if len(resp) > 1:
            prev, cur = resp[:-1], resp[1:]
            same = (prev == cur) & (prev != np.array(None))
            starts[1:] = ~same
        self._starts.append(starts)
        return starts

    def replace(self, **columns: np.ndarray) -> SessionCalls:
        merged = dict(self.columns)
        merged.update(columns)
        return SessionCalls(merged)


#: Columns span injection reads or writes besides those: enough for every injector.
INJECTION_COLUMNS: tuple[str, ...] = (
    *SCORING_COLUMNS,
    "server",
    "error_type",
    "label",
    "client_quirk",
)


def _missing(name: str, n: int) -> np.ndarray:
    if name in _BOOL_FIELDS:
        return np.zeros(n, dtype=bool)
    if name in _INT_FIELDS or name in _STAMP_FIELDS:
        return np.full(n, np.nan)
    return np.full(n, None, dtype=object)


def table_columns(table: pa.Table, columns: Sequence[str] = FIELD_NAMES) -> dict[str, np.ndarray]:
    """Arrow call table -> numpy column arrays in the layout described in the module doc.

    ``columns`` picks the record fields to keep (absent ones are filled with nulls).
    """
    out: dict[str, np.ndarray] = {}
    n = table.num_rows
    for name in columns:
        if name not in table.column_names:
            out[name] = _missing(name, n)
            continue
        col = table.column(name)
        if name in _TIME_FIELDS:
            col = pc.cast(col, pa.timestamp("us", tz="UTC")).cast(pa.int64())
            out[name] = col.to_numpy(zero_copy_only=False).astype(np.int64)
        elif name in _STAMP_FIELDS:
            col = pc.cast(col, pa.timestamp("us", tz="UTC")).cast(pa.int64())
            out[name] = col.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
        elif name in _BOOL_FIELDS:
            out[name] = col.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
        elif name in _INT_FIELDS:
            as_float = col.cast(pa.float64(), safe=False)  # past 2**53: the nearest float
            out[name] = as_float.to_numpy(zero_copy_only=False).astype(np.float64)
        else:
            out[name] = np.asarray(col.cast(pa.string()).to_pylist(), dtype=object)
    return out


def session_order(table: pa.Table) -> pa.Table:
    """Sort a call table into streams the way detection does: session, agent (main agent
    first), then start time and position; ties keep their input order."""
    names = ("session_id", "agent_id", "start_time", "seq")
    keys = [(c, "ascending", "at_start") for c in names if c in table.column_names]
    order = pc.sort_indices(table, sort_keys=keys)
    return table.take(order)


def split_sessions(table: pa.Table, columns: Sequence[str] = FIELD_NAMES) -> list[SessionCalls]:
    """One :class:`SessionCalls` per stream — ``(session_id, agent_id)``: a subagent is a
    session of its own, as in the study — calls in time order, with the given ``columns``
    (which must include ``session_id``, ``agent_id`` and ``response_id``)."""
    if table.num_rows == 0:
        return []
    table = session_order(table)
    cols = table_columns(table, columns)
    sid, agent = cols["session_id"], cols["agent_id"]
    bounds = np.flatnonzero((sid[1:] != sid[:-1]) | (agent[1:] != agent[:-1])) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(sid)]])
    return [
        SessionCalls({k: v[a:b] for k, v in cols.items()})
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]


def concat_columns(
    sessions: Sequence[SessionCalls], columns: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    names = columns if columns is not None else tuple(sessions[0].columns)
    return {name: np.concatenate([s.columns[name] for s in sessions]) for name in names}


def to_table(
    sessions: Sequence[SessionCalls] | dict[str, np.ndarray],
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Column arrays (or sessions) -> an Arrow table with the call schema.

    With ``columns`` only those fields (in schema order); otherwise every field, absent
    ones as nulls.
    """
    schema = CALLS_SCHEMA
    if columns is not None:
        schema = pa.schema([f for f in CALLS_SCHEMA if f.name in set(columns)])
    if not isinstance(sessions, dict) and not sessions:
        return schema.empty_table()
    if isinstance(sessions, dict):
        cols = sessions
    else:
        present = [f.name for f in schema if f.name in sessions[0].columns]
        cols = concat_columns(sessions, present)
    n = len(cols["tool"])
    arrays = []
    for fld in schema:
        values = cols.get(fld.name)
        if values is None:
            values = _missing(fld.name, n)
        if fld.name in _TIME_FIELDS:
            arrays.append(pa.array(values.astype(np.int64), type=fld.type))
        elif fld.name in _STAMP_FIELDS:
            stamps = pa.array(values, type=pa.float64(), from_pandas=True)
            arrays.append(stamps.cast(pa.int64()).cast(fld.type))
        elif fld.name in _INT_FIELDS:
            if fld.type == pa.int64() and values.dtype.kind == "f":
                values = np.minimum(values, _INT64_TOP_FLOAT)  # NaN stays NaN
            arrays.append(pa.array(values, type=fld.type, from_pandas=True))
        elif fld.name in _BOOL_FIELDS:
            arrays.append(pa.array(values.astype(bool), type=fld.type))
        else:
            arrays.append(pa.array(values, type=fld.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)
