"""The collector's counters in the store, and the store's recent spans in the collector.

:class:`IngestLog` appends one row of :func:`~toolwatch.collector.otlp.stats.ingest_row` to the
``ingest`` table every progress interval (when something changed) and at a clean stop, so
``toolwatch store info`` can report received / stored / rejected / ignored counts by reason
(and the calls kept without a duration, by flaw) long after the collector is gone.
:func:`prime_recent_spans` loads the span ids of the newest files into the retry filter at
start, so an exporter re-sending across a restart is caught.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import numpy as np
import pyarrow.parquet as pq

from toolwatch.collector.otlp.dedup import LISTING_SALT, RecentSpans, span_keys
from toolwatch.collector.otlp.mapping import (
    IGNORED_INTERNAL,
    IGNORED_OTHER,
    IGNORED_SDK,
    IGNORED_SERVER,
)
from toolwatch.collector.otlp.stats import CollectorStats, ingest_row
from toolwatch.collector.store import Store
from toolwatch.collector.store.compaction import not_a_file
from toolwatch.collector.store.parquet_store import CALLS, INGEST, TOOL_LISTS
from toolwatch.record import EPOCH, RECEIVED
from toolwatch.words import counted

log = logging.getLogger(__name__)


class IngestLog:
    """Writes a collector run's counters to the ``ingest`` table (never raises)."""

    def __init__(self, store: Store, stats: CollectorStats, lock: threading.Lock, run_id: str):
        self.store = store
        self.stats = stats
        self.lock = lock
        self.run_id = run_id
        self.listen = ""
        self.started = datetime.now(UTC)
        self._written: tuple[int, ...] | None = None

    def _snapshot(self) -> tuple[int, ...]:
        s = self.stats
        return (s.requests, s.spans, s.stored_spans, s.rejected_spans, s.ignored_spans,
                s.duplicate_spans, s.client_disconnects, s.compacted_files)  # fmt: skip

    def write_if_changed(self) -> None:
        with self.lock:
            changed = self._snapshot() != self._written
        if changed:
            self.write(final=False)

    def write(self, *, final: bool) -> None:
        with self.lock:
            if self._written is None and not self.stats.requests and not final:
                return
            row = ingest_row(self.stats, self.run_id, self.listen, self.started, final=final)
            snapshot = self._snapshot()
        try:
            self.store.append(INGEST, [row])
        except Exception as exc:  # the counters are a report: never fail ingest for them
            log.warning("could not write the ingest counters to %s: %s", self.store.root, exc)
            return
        self._written = snapshot


#: files written longer ago than this are not read at start: no exporter retries that late
PRIME_MAX_AGE_S: Final = 900.0


def prime_recent_spans(
    store: Store, recent: RecentSpans, max_age_s: float = PRIME_MAX_AGE_S
) -> int:
    """Add the span keys of the files written in the last ``max_age_s`` seconds (newest
    first, up to the filter's capacity); returns how many were added. Unreadable files are
    skipped (``store verify`` reports them)."""
    added = 0
    oldest = time.time() - max_age_s
    for table, salt in ((CALLS, np.uint64(0)), (TOOL_LISTS, LISTING_SALT)):
        budget = recent.capacity - added
        for path in sorted(store.files(table), key=_mtime, reverse=True):  # newest writes first
            if budget <= 0 or _mtime(path) < oldest:
                break
            try:
                problem = not_a_file(path)
                if problem is not None:
                    raise OSError(problem)
                ids = pq.read_table(path, columns=["trace_id", "span_id"], partitioning=None)
                keys = span_keys(ids["trace_id"], ids["span_id"]) ^ salt
            except Exception as exc:
                log.debug("not priming the retry filter from %s: %s", path, exc)
                continue
            keys = np.unique(keys)
            keys = keys[~recent.seen(keys)]
            recent.add(keys)
            added += keys.size
            budget -= keys.size
    return added


#: the newest calls files read for the last arrival mark at start (a run's files are newest)
RECEIVED_FILES: Final = 64


def newest_received_us(store: Store, files: int = RECEIVED_FILES) -> int:
    """The latest ``received_time`` (µs) in the newest calls files, from their footers' column
    statistics (0: none): the writer stamps later ones, so the arrival marks keep rising
    across a restart whose clock stepped back. Unreadable files are skipped."""
    newest = 0
    for path in sorted(store.files(CALLS), key=_mtime, reverse=True)[:files]:
        try:
            if not_a_file(path) is not None:
                continue
            meta = pq.ParquetFile(path).metadata
            i = meta.schema.to_arrow_schema().get_field_index(RECEIVED)
            for g in range(meta.num_row_groups) if i >= 0 else ():
                stats = meta.row_group(g).column(i).statistics
                if stats is not None and stats.has_min_max:
                    newest = max(newest, _micros(stats.max))
        except Exception as exc:
            log.debug("no arrival mark read from %s: %s", path, exc)
    return newest


def _micros(value: Any) -> int:
    """A timestamp statistic (a datetime, or an integer of µs) in µs since the epoch."""
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (value - EPOCH) // timedelta(microseconds=1)
    return int(value)


def _mtime(path: Any) -> float:
    try:
        return float(path.stat().st_mtime)
    except OSError:
        return 0.0


def ingest_summary(store: Store) -> dict[str, Any] | None:
    """Totals over every collector run recorded in the ``ingest`` table (each run's last row),
    or None when no collector has written to this store."""
    if not store.files(INGEST):
        return None
    table = store.query(
        f"SELECT * FROM {INGEST} QUALIFY row_number() OVER "
        "(PARTITION BY run_id ORDER BY time DESC, requests DESC) = 1"
    )
    rows = table.to_pylist()
    totals: dict[str, Any] = {"runs": len(rows), "last": max(r["time"] for r in rows)}
    for name in _COUNTS:
        totals[name] = sum(int(r[name] or 0) for r in rows)
    for name in ("rejected_by", "ignored_by", "refused_by", "flagged_by"):
        merged: dict[str, int] = {}
        for r in rows:
            for key, n in json.loads(r[name] or "{}").items():
                merged[key] = merged.get(key, 0) + int(n)
        totals[name] = dict(sorted(merged.items()))
    totals["unfinished_runs"] = sum(1 for r in rows if not r["final"])
    return totals


_COUNTS: Final = (
    "requests",
    "spans",
    "calls",
    "tool_listings",
    "stored_spans",
    "rejected_spans",
    "ignored_spans",
    "duplicate_spans",
    "flagged_spans",  # null in rows written before it existed: 0
    "refused_requests",
    "client_disconnects",
)


def format_ingest(summary: dict[str, Any]) -> list[str]:
    """``toolwatch store info``'s lines for an :func:`ingest_summary`."""
    s = summary
    unfinished = f", {s['unfinished_runs']} still running or killed" if s["unfinished_runs"] else ""
    lines = [
        f"ingest: {counted(s['runs'], 'collector run')}{unfinished}, last counted "
        f"{s['last']:%Y-%m-%d %H:%M:%S} UTC",
        f"  {counted(s['spans'], 'span')} received in {counted(s['requests'], 'request')}: "
        f"{s['stored_spans']:,} stored ({counted(s['calls'], 'call')}, "
        f"{counted(s['tool_listings'], 'tool listing')}), "
        f"{s['rejected_spans']:,} rejected, {s['ignored_spans']:,} ignored, "
        f"{counted(s['duplicate_spans'], 'duplicate')} dropped",
    ]
    for label, key in (
        ("rejected by reason", "rejected_by"),
        ("calls kept without a duration by reason", "flagged_by"),
        ("ignored by reason", "ignored_by"),
        ("refused requests by status", "refused_by"),
    ):
        if s[key]:
            parts = ", ".join(f"{k} {v:,}" for k, v in s[key].items())
            lines.append(f"  {label}: {parts}")
    if s["client_disconnects"]:
        lines.append(f"  clients that left mid-request: {s['client_disconnects']:,}")
    if not s["calls"]:  # spans came and none was a call: say why, per reason, and what to do
        hinted = [reason for reason in s["ignored_by"] if reason in IGNORED_HINTS]
        lines += [f"  {reason}: {IGNORED_HINTS[reason]}" for reason in hinted]
    return lines


_INSTRUMENT: Final = (
    "instrument the client with toolwatch.instrumentation.instrument() (or an MCP "
    "semantic-conventions instrumentation) to store one call per span"
)
#: Said when a store got spans of a reason and no call: a user who pointed an instrumentation
#: at the collector sees "0 calls" and an ignore reason, and needs to know why and what to do.
IGNORED_HINTS: Final[dict[str, str]] = {
    IGNORED_SDK: "the MCP SDK's own spans carry no sizes, outcome or session, so they are not "
    f"calls; {_INSTRUMENT}",
    IGNORED_OTHER: "no span was a tool call by the OTel GenAI/MCP conventions "
    "(gen_ai.operation.name=execute_tool or mcp.method.name=tools/call); tool spans under "
    "attribute names of an instrumentation's own (OpenLLMetry's <tool>.tool spans, "
    "traceloop.*; OpenInference's openinference.span.kind=TOOL, tool.name) are not read; "
    f"{_INSTRUMENT}",
    IGNORED_INTERNAL: "execute_tool spans of kind INTERNAL are an agent framework's own tool "
    "steps, not calls sent by an MCP client (one with mcp.method.name=tools/call is); "
    f"{_INSTRUMENT}",
    IGNORED_SERVER: "execute_tool spans of kind SERVER were recorded where the tool ran; "
    "export the client's spans (the agent's process) instead",
}
