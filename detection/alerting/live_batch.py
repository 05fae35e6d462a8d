"""A stored batch of calls as the live scorer reads it: in ``(start_time, seq)`` order, each
with its span id, whether its stream may be learnt and its provenance source.

Kept apart from :mod:`toolwatch.detection.alerting.live` (which scores what this returns) so
the one place that turns Arrow rows into :class:`~toolwatch.detection.cues.base.Call` objects
is small and reads alone. Nothing here may break ingest: a batch without the scoring columns,
an unreadable batch or row is logged and counted as skipped, never raised.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.detection.calls.frame import REQUIRED_COLUMNS, SCORING_COLUMNS
from toolwatch.detection.calls.split import LEARNING_EXCLUDED_QUIRKS
from toolwatch.detection.cues.base import Call
from toolwatch.words import counted, noun_for

log = logging.getLogger(__name__)

FIELDS = (*SCORING_COLUMNS, "span_id", "label", "client_quirk", "source_tool", "reused_encoding")
#: (call, span id, may its stream be learnt, (source tool, reused encoding))
BatchCall = tuple[Call, str | None, bool, tuple[str | None, str | None]]


def batch_calls(table: pa.Table) -> tuple[list[BatchCall], int]:
    """The batch's calls in (start_time, seq) order, each with its span id, whether its stream
    may be learnt (not injected, not a client artefact) and its provenance source (source tool,
    encoding), and how many rows were skipped (unreadable: logged)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        log.error(
            "live scoring: batch lacks %s %s; %s not scored",
            noun_for(len(missing), "column"),
            missing,
            counted(table.num_rows, "call"),
        )
        return [], table.num_rows
    try:
        keys = [
            (c, "ascending", "at_start") for c in ("start_time", "seq") if c in table.column_names
        ]
        table = table.take(pc.sort_indices(table, sort_keys=keys))
        cols: dict[str, list[Any]] = {}
        for name in FIELDS:
            if name not in table.column_names:
                cols[name] = [None] * table.num_rows
            elif name == "start_time":
                cols[name] = (
                    table.column(name)
                    .cast(pa.timestamp("us", tz="UTC"), safe=False)
                    .cast(pa.int64())
                    .to_pylist()
                )
            else:
                cols[name] = table.column(name).to_pylist()
    except (pa.ArrowException, ValueError, TypeError) as exc:
        log.error("live scoring: unreadable batch of %s: %s", counted(table.num_rows, "call"), exc)
        return [], table.num_rows
    out: list[BatchCall] = []
    skipped = 0
    for i in range(table.num_rows):
        row = {name: cols[name][i] for name in FIELDS}
        learn = row["label"] is None and row["client_quirk"] not in LEARNING_EXCLUDED_QUIRKS
        try:
            source = (row["source_tool"], row["reused_encoding"])
            out.append((Call.from_mapping(row), row["span_id"], learn, source))
        except (ValueError, TypeError) as exc:
            skipped += 1
            log.error(
                "live scoring: skipped call %s of session %s: %s",
                row.get("span_id"),
                row.get("session_id"),
                exc,
            )
    return out, skipped
