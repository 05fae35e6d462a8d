"""``GET /metrics``: the collector's counters in the Prometheus text format (``prometheus-client``).

Read straight from :class:`~toolwatch.collector.otlp.stats.CollectorStats` at scrape time (one
set of numbers, no double bookkeeping), through a private registry, so several collectors in one
process never collide and no process metrics are mixed in; ``extra`` adds the numbers of what
the collector feeds (the live scorer's, which this package may not import). Counts only: no
attribute value, no span id, no client address. Label values are closed sets (rejection
categories name record attributes; ignore and flaw reasons and HTTP statuses are fixed lists).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from toolwatch.collector.otlp.stats import CollectorStats

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
PREFIX: Final = "toolwatch_collector"
#: More numbers from whatever the collector feeds (the live scorer, which this package must not
#: import): name -> (``"counter"`` or ``"gauge"``, help, value), read at scrape time.
ExtraMetrics = Callable[[], Mapping[str, tuple[str, str, float]]]


class _StatsCollector:
    """A ``prometheus_client`` custom collector over one :class:`CollectorStats`."""

    def __init__(
        self, stats: CollectorStats, lock: threading.Lock, extra: ExtraMetrics | None = None
    ) -> None:
        self.stats = stats
        self.lock = lock
        self.extra = extra

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            s = self.stats
            counters = {
                "requests": ("requests answered or refused", s.requests),
                "spans_received": ("spans in accepted requests", s.spans),
                "spans_stored": ("spans that became rows", s.stored_spans),
                "calls_stored": ("calls rows written", s.calls),
                "tool_listings_stored": ("tool_lists rows written", s.tool_listings),
                "spans_duplicate": ("spans dropped as stored already", s.duplicate_spans),
                "client_disconnects": ("requests whose client left", s.client_disconnects),
                "group_commits": ("durable writes", s.batches),
                "files_written": ("Parquet files written", s.files),
                "compactions": ("compaction passes", s.compactions),
                "compacted_files": ("small files merged away", s.compacted_files),
                "compaction_errors": ("compaction passes that failed", s.compaction_errors),
                "callback_errors": ("on_batch failures", s.callback_errors),
            }
            rejected = dict(s.rejected_by)
            ignored = dict(s.ignored_by)
            flagged = dict(s.flagged_by)
            refused = dict(s.refused)
            unavailable = dict(s.unavailable_by)
            timed_out = dict(s.timed_out_by)
            hist = s.commit_latency
            buckets = list(hist.counts)
            total, count = hist.total, hist.count
            queue_spans, queue_bytes = s.queue_spans, s.queue_bytes
        for name, (doc, value) in counters.items():
            yield CounterMetricFamily(f"{PREFIX}_{name}", doc, value=value)
        for name, doc, label, values in (
            ("spans_rejected", "tool spans rejected, by reason", "reason", rejected),
            ("spans_ignored", "spans that are no tool call, by reason", "reason", ignored),
            (
                "spans_flagged",
                "tool calls stored without a duration (times flawed), by reason",
                "reason",
                flagged,
            ),
            ("requests_refused", "requests refused, by HTTP status", "status", refused),
            (
                "requests_unavailable",
                "requests answered 503 (retry later), by reason",
                "reason",
                unavailable,
            ),
            (
                "requests_timed_out",
                "requests answered 408 (body too slow), by reason",
                "reason",
                timed_out,
            ),
        ):
            family = CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=[label])
            for key, n in sorted(values.items(), key=lambda kv: str(kv[0])):
                family.add_metric([str(key)], n)
            yield family
        yield GaugeMetricFamily(
            f"{PREFIX}_queue_spans", "spans admitted, not yet durable", value=queue_spans
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_queue_bytes",
            "bytes held by requests being read, decoded or written",
            value=queue_bytes,
        )
        cumulative, running = [], 0
        for bound, n in zip([*map(str, hist.bounds), "+Inf"], buckets, strict=True):
            running += n
            cumulative.append((bound, running))
        assert running == count
        yield HistogramMetricFamily(
            f"{PREFIX}_commit_seconds",
            "time to map and durably write one group commit",
            buckets=cumulative,
            sum_value=total,
        )
        for name, (kind, doc, number) in (self.extra() if self.extra else {}).items():
            if kind == "counter":
                yield CounterMetricFamily(f"{PREFIX}_{name}", doc, value=number)
            else:
                yield GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=number)


def metrics_renderer(
    stats: CollectorStats, lock: threading.Lock, extra: ExtraMetrics | None = None
) -> Callable[[], bytes]:
    """A function producing the exposition text of ``stats`` and ``extra`` (a private
    registry)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StatsCollector(stats, lock, extra))
    return lambda: generate_latest(registry)
