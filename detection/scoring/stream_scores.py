"""Per-stream scores: every stream's peak against the operating point, one row per statistic.

The scan (:mod:`toolwatch.detection.scoring.scan`) reports the flagged sessions; this keeps the
same facts for *every* stream (peak, where it is, the margin over the threshold and, when it
crossed, the first call above it and the cue that explains it), as rows of the registered
``stream_scores`` table (:data:`toolwatch.tables.STREAM_SCORES`). ``toolwatch scan`` writes
them, so a reader (the app's Sessions page) lists and ranks streams by aggregating stored rows
in DuckDB instead of scoring every session on page load.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.detection.cues.names import CUE_NAMES
from toolwatch.detection.detectors.names import parse_statistic, stat_column
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.detection.scoring.explain import dominant_cues

STREAM_SCORES_TABLE: Final = tables.STREAM_SCORES.name
STREAM_SCORES_SCHEMA: Final = SCHEMAS[STREAM_SCORES_TABLE]


def stream_scores(
    model: NormalModel,
    scored: pa.Table,
    statistics: Sequence[str] | None = None,
    *,
    scored_time: datetime | None = None,
) -> pa.Table:
    """One row per stream × statistic of ``scored`` (the output of
    :func:`~toolwatch.detection.scoring.batch.score_calls`: streams contiguous, each starting at
    ``call_index`` 0)."""
    n = scored.num_rows
    if n == 0:
        return STREAM_SCORES_SCHEMA.empty_table()
    when = scored_time or datetime.now(UTC)
    call_index = scored.column("call_index").to_numpy()
    stream = np.cumsum(call_index == 0) - 1
    streams = int(stream[-1]) + 1
    starts = np.flatnonzero(call_index == 0)
    lengths = np.bincount(stream, minlength=streams)
    ends = starts + lengths - 1
    times = scored.column("start_time")
    seq = scored.column("seq")
    tools = scored.column("tool")
    parts = []
    for name in statistics or model.config.alert_on:
        cue_set, detector = parse_statistic(name)
        threshold = float(model.threshold(cue_set, detector))
        values = np.nan_to_num(scored.column(name).to_numpy(), nan=-np.inf)
        peaks = np.full(streams, -np.inf)
        np.maximum.at(peaks, stream, values)
        # first call reaching each stream's peak: the earliest row whose value equals it
        at_peak = np.flatnonzero(values == peaks[stream])
        peak_rows = at_peak[np.unique(stream[at_peak], return_index=True)[1]]
        over = values > threshold
        calls_over = np.bincount(stream, weights=over, minlength=streams).astype(np.int64)
        over_rows = np.flatnonzero(over)
        first_streams, first_pos = np.unique(stream[over_rows], return_index=True)
        first_rows = np.full(streams, -1)
        first_rows[first_streams] = over_rows[first_pos]
        flagged = first_rows >= 0
        cues = np.full(streams, None, dtype=object)
        if flagged.any():
            rows = first_rows[flagged]
            explain = {
                stat_column(c, d): scored.column(stat_column(c, d)).to_numpy()[rows]
                for c in CUE_NAMES
                for d in ("point", "ewma")
            }
            cues[flagged] = dominant_cues(cue_set, detector, explain)
        safe_first = np.where(flagged, first_rows, 0)
        parts.append(
            pa.table(
                {
                    "scored_time": pa.array([when] * streams, pa.timestamp("us", tz="UTC")),
                    "model_id": pa.array([model.model_id] * streams, pa.string()),
                    "statistic": pa.array([name] * streams, pa.string()),
                    "session_id": scored.column("session_id").take(starts),
                    "agent_id": scored.column("agent_id").take(starts),
                    "calls": pa.array(lengths, pa.int64()),
                    "first_time": times.take(starts),
                    "last_time": times.take(ends),
                    "peak": pa.array(peaks, pa.float64()),
                    "peak_index": pa.array(call_index[peak_rows], pa.int32()),
                    "threshold": pa.array([threshold] * streams, pa.float64()),
                    "margin": pa.array(peaks - threshold, pa.float64()),
                    "flagged": pa.array(flagged),
                    "first_over_index": pa.array(call_index[safe_first], pa.int32(), mask=~flagged),
                    "first_over_seq": _masked(seq.take(safe_first), flagged),
                    "first_over_tool": _masked(tools.take(safe_first), flagged),
                    "first_over_time": _masked(times.take(safe_first), flagged),
                    "cue": pa.array(cues.tolist(), pa.string()),
                    "calls_over": pa.array(calls_over, pa.int64()),
                }
            )
        )
    table = pa.concat_tables(parts)
    return table.cast(STREAM_SCORES_SCHEMA, safe=False)


def _masked(column: pa.ChunkedArray, keep: np.ndarray) -> pa.Array:
    """``column`` with nulls where ``keep`` is false."""
    values = column.combine_chunks()
    return pc.if_else(pa.array(keep), values, pa.nulls(len(values), values.type))
