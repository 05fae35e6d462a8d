"""The collector's counters: what it received, stored, rejected, ignored and refused, by reason.

One :class:`CollectorStats` per collector, written by the HTTP side and the writer under one
lock; read by the log lines, the Prometheus ``/metrics`` endpoint
(:mod:`toolwatch.collector.otlp.metrics`), the tests, and the ``ingest`` table
(:func:`ingest_row`), so ``toolwatch store info`` reports the same counts from the store.
Every span received ends in exactly one of: stored (a call or a tools/list span), rejected,
ignored or duplicate; a stored call whose times give no duration is also counted as flagged,
by reason (:mod:`toolwatch.collector.otlp.flaws`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

#: upper bounds (seconds) of the commit-latency histogram buckets (+Inf is implied)
LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(slots=True)
class Histogram:
    """A fixed-bucket latency histogram (Prometheus semantics: cumulative on export)."""

    bounds: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS) + 1))
    total: float = 0.0
    count: int = 0

    def observe(self, seconds: float) -> None:
        i = next((i for i, b in enumerate(self.bounds) if seconds <= b), len(self.bounds))
        self.counts[i] += 1
        self.total += seconds
        self.count += 1


def by_reason(counts: Mapping[str, int]) -> str:
    """`` (reason: n, ...)`` for a log line, or nothing when no span was counted."""
    return f" ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))})" if counts else ""


def _add(counts: dict[Any, int], more: dict[Any, int]) -> None:
    for key, n in more.items():
        counts[key] = counts.get(key, 0) + n


@dataclass(slots=True)
class CollectorStats:
    """Counters since start (read them for logs and tests; written by the collector only)."""

    requests: int = 0
    spans: int = 0  # received in answered requests (200)
    calls: int = 0
    tool_listings: int = 0  # tool_lists rows
    stored_spans: int = 0  # spans that became rows (calls and tools/list spans)
    rejected_spans: int = 0
    ignored_spans: int = 0
    duplicate_spans: int = 0
    flagged_spans: int = 0  # stored calls kept without a duration (of stored_spans)
    refused: dict[int, int] = field(default_factory=dict)  # HTTP status -> requests
    unavailable_by: dict[str, int] = field(default_factory=dict)  # 503 reason -> requests
    timed_out_by: dict[str, int] = field(default_factory=dict)  # 408 reason -> requests
    rejected_by: dict[str, int] = field(default_factory=dict)  # category -> spans
    ignored_by: dict[str, int] = field(default_factory=dict)  # reason -> spans
    flagged_by: dict[str, int] = field(default_factory=dict)  # flaw reason -> stored calls
    client_disconnects: int = 0
    batches: int = 0
    files: int = 0
    callback_errors: int = 0
    compactions: int = 0
    compacted_files: int = 0
    compaction_errors: int = 0
    commit_latency: Histogram = field(default_factory=Histogram)
    queue_spans: int = 0  # admitted, not yet durable (a gauge, kept by the writer)
    queue_bytes: int = 0  # bytes held for reading, decoding and writing (a gauge)

    def count_request(
        self,
        spans: int,
        stored: int,
        rejected: dict[str, int],
        ignored: dict[str, int],
        duplicates: int,
        flagged: dict[str, int] | None = None,
    ) -> None:
        self.requests += 1
        self.spans += spans
        self.stored_spans += stored
        self.rejected_spans += sum(rejected.values())
        self.ignored_spans += sum(ignored.values())
        self.duplicate_spans += duplicates
        _add(self.rejected_by, rejected)
        _add(self.ignored_by, ignored)
        self.flagged_spans += sum((flagged or {}).values())
        _add(self.flagged_by, flagged or {})

    def count_refusal(self, status: int, reason: str | None = None) -> None:
        """One refused request; a 503 also by its ``reason`` (a full queue, a failed write,
        a shutdown: one status, three different things for an operator to do), a 408 by
        which limit it broke (a silent body, or a trickle past the whole-body deadline)."""
        self.requests += 1
        self.refused[status] = self.refused.get(status, 0) + 1
        by = {503: self.unavailable_by, 408: self.timed_out_by}.get(status)
        if by is not None:
            key = reason or "other"
            by[key] = by.get(key, 0) + 1


def ingest_row(
    stats: CollectorStats, run_id: str, listen: str, started: datetime, *, final: bool
) -> dict[str, Any]:
    """The ``ingest`` table row of a collector run so far (counters are totals since start)."""
    return {
        "time": datetime.now(UTC),
        "run_id": run_id,
        "listen": listen,
        "started": started,
        "final": final,
        "requests": stats.requests,
        "spans": stats.spans,
        "calls": stats.calls,
        "tool_listings": stats.tool_listings,
        "stored_spans": stats.stored_spans,
        "rejected_spans": stats.rejected_spans,
        "ignored_spans": stats.ignored_spans,
        "duplicate_spans": stats.duplicate_spans,
        "flagged_spans": stats.flagged_spans,
        "refused_requests": sum(stats.refused.values()),
        "client_disconnects": stats.client_disconnects,
        "rejected_by": json.dumps(dict(sorted(stats.rejected_by.items()))),
        "ignored_by": json.dumps(dict(sorted(stats.ignored_by.items()))),
        "refused_by": json.dumps({str(k): v for k, v in sorted(stats.refused.items())}),
        "flagged_by": json.dumps(dict(sorted(stats.flagged_by.items()))),
        "files": stats.files,
        "compacted_files": stats.compacted_files,
    }
