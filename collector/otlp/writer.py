"""The collector's write path: group commit of admitted requests into the Parquet store.

A mapper thread takes every request waiting in the queue as one group and maps it to records in
one columnar pass; a writer thread writes every mapped group waiting as one Parquet file per
table and date (temp file, fsync, rename, directory fsync) — group commit; Parquet encoding
releases the GIL, so writing one group overlaps mapping the next. Only then are the group's
requests answered (their futures resolved), so an acknowledged span survives ``kill -9``.
Spans already stored (an exporter's retry) are dropped before the write and counted as
duplicates (:mod:`toolwatch.collector.otlp.dedup`).

Isolation: a group whose write fails for a reason other than the disk (``OSError``: answered
503 + ``Retry-After``, the sender retries) is written again request by request, so one bad
request is refused (400) alone and never fails another client's.

Memory is bounded in bytes, not spans: every request holds a reservation from the moment its
body is read until its write is answered (:meth:`GroupCommitWriter.reserve`), and requests
beyond the budget are refused with 503 + ``Retry-After``.

``on_batch(calls)`` (and ``on_listings(tool_lists)``) then runs on its own thread, so a slow or
failing consumer (the live scorer, the listing watcher) never holds up ingest and never loses
data: its exceptions are logged, the rows are already stored. A maintenance thread compacts
small files and writes the counters to the ``ingest`` table periodically. The HTTP side
(:mod:`toolwatch.collector.otlp.server`) admits requests and waits for their writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolwatch.collector.otlp.columnar import map_parsed
from toolwatch.collector.otlp.decode import OtlpError, SpanData
from toolwatch.collector.otlp.dedup import LISTING_SALT, RecentSpans, span_keys
from toolwatch.collector.otlp.mapping import Mapped, map_spans
from toolwatch.collector.otlp.stats import CollectorStats, by_reason
from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.collector.store.parquet_store import CALLS, INGEST, TOOL_LISTS
from toolwatch.log_limits import RateLimiter
from toolwatch.record import RECEIVED
from toolwatch.words import counted

log = logging.getLogger(__name__)

MAX_GROUP_SPANS: Final = 100_000  # spans per group commit (bounds one write's latency)
CALLBACK_BACKLOG_WARNING: Final = 100  # warn every this many batches on_batch lags behind
_STOP: Final = object()


class WriteFailed(Exception):
    """The group's Parquet write failed on the disk; its requests get 503 and will be retried."""


@dataclass(slots=True)
class PendingRequest:
    """One admitted request waiting for its group's write.

    ``cost`` is the bytes reserved for it (released once answered).
    """

    spans: int
    body: bytes = b""
    request: ExportTraceServiceRequest | None = None  # protobuf
    decoded: list[SpanData] | None = None  # OTLP/JSON
    cost: int = 0
    loop: asyncio.AbstractEventLoop | None = None  # set when admitted
    future: asyncio.Future[Mapped] | None = None


class GroupCommitWriter:
    """Admits requests against bounded queues (spans and bytes), maps and writes them in
    groups, answers them.

    ``stats`` and ``lock`` are shared with the HTTP side, which counts what it refuses.
    ``start()`` runs the threads; ``shutdown()`` stops admitting, writes and answers every
    admitted request, drains ``on_batch`` and stops compacting.
    """

    def __init__(
        self,
        store: Store,
        stats: CollectorStats,
        lock: threading.Lock,
        *,
        on_batch: Callable[[pa.Table], None] | None,
        queue_limit: int,
        on_listings: Callable[[pa.Table], object] | None = None,
        queue_bytes: int,
        retry_after: int,
        compact_interval: float | None,
        progress_interval: float,
        on_progress: Callable[[], None] | None = None,
        recent: RecentSpans | None = None,
    ) -> None:
        self.store = store
        self.stats = stats
        self.on_batch = on_batch
        self.on_listings = on_listings
        self.queue_limit = queue_limit
        self.queue_bytes = queue_bytes
        self.retry_after = retry_after
        self.compact_interval = compact_interval
        self.progress_interval = progress_interval
        self.on_progress = on_progress
        self.recent = recent if recent is not None else RecentSpans()
        #: the ``received_time`` (µs) of the last write: each write's is later, even when the
        #: clock steps back (the server sets it at start from the newest stored rows)
        self.received_us = 0
        self._lock = lock
        # a full disk fails every group while senders retry: one line per cause per 10 s
        self._limited = RateLimiter(log)
        self._logged = CollectorStats()  # the counters at the last progress line
        self._logged_at = 0.0  # monotonic time of that line (0: none yet, so the first shows)
        self._pending = 0  # spans admitted, not yet answered
        self._bytes = 0  # bytes reserved by requests being read, decoded or written
        self._closing = False
        self._queue: queue.Queue[Any] = queue.Queue()  # admitted requests
        self._mapped: queue.Queue[Any] = queue.Queue()  # mapped groups waiting for the disk
        self._callbacks: queue.Queue[Any] = queue.Queue()
        self._stop_maintenance = threading.Event()
        self._threads: dict[str, threading.Thread] = {}

    def start(self) -> None:
        self._spawn("toolwatch-mapper", self._mapper_loop)
        self._spawn("toolwatch-writer", self._writer_loop)
        self._spawn("toolwatch-on-batch", self._callback_loop)
        self._spawn("toolwatch-maintenance", self._maintenance_loop)

    def shutdown(self, timeout: float = 60.0) -> None:
        with self._lock:
            self._closing = True  # no request is admitted after the writer's stop mark
        self._queue.put(_STOP)
        self._join("toolwatch-mapper", timeout)
        self._join("toolwatch-writer", timeout)
        self._callbacks.put(_STOP)
        self._join("toolwatch-on-batch", timeout)
        self._stop_maintenance.set()
        self._join("toolwatch-maintenance", timeout)

    # ------------------------------------------------------------------ admission

    def _full(self, what: str, reason: str) -> OtlpError:
        return OtlpError(
            503, f"write queue full ({what}); retry after {self.retry_after} s", reason=reason
        )

    def reserve(self, nbytes: int, *, own: int = 0) -> None:
        """Hold ``nbytes`` more of the byte budget for a request that holds ``own`` already
        (503 when it is spent).

        A request is always let in when nothing but its own bytes is held, so a request larger
        than the budget is slow, not refused forever (its body, then what decoding it costs).
        """
        with self._lock:
            if self._closing:
                raise OtlpError(503, "the collector is shutting down", reason="shutting_down")
            if self._bytes > own and self._bytes + nbytes > self.queue_bytes:
                raise self._full(
                    f"{counted(self._bytes, 'byte')} held, limit {self.queue_bytes}", "queue_bytes"
                )
            self._bytes += nbytes
            self.stats.queue_bytes = self._bytes

    def release(self, nbytes: int) -> None:
        with self._lock:
            self._bytes -= nbytes
            self.stats.queue_bytes = self._bytes

    def admit(self, item: PendingRequest) -> None:
        """Queue a request for writing, or refuse it (503) when closing or the queue is full.

        ``item.cost`` bytes must be reserved already; they pass to the writer, which releases
        them once the request is answered.
        """
        with self._lock:
            if self._closing:
                raise OtlpError(503, "the collector is shutting down", reason="shutting_down")
            if self._pending and self._pending + item.spans > self.queue_limit:
                raise self._full(
                    f"{counted(self._pending, 'span')} waiting, limit {self.queue_limit}",
                    "queue_spans",
                )
            self._pending += item.spans
            self.stats.queue_spans = self._pending
        self._queue.put(item)

    def _release(self, group: list[PendingRequest]) -> None:
        with self._lock:
            self._pending -= sum(item.spans for item in group)
            self._bytes -= sum(item.cost for item in group)
            self.stats.queue_spans = self._pending
            self.stats.queue_bytes = self._bytes

    # ------------------------------------------------------------------ threads

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads[name] = thread
        thread.start()

    def _join(self, name: str, timeout: float) -> None:
        thread = self._threads.get(name)
        if thread is not None and thread.is_alive():
            thread.join(timeout)
            if thread.is_alive():
                log.error("%s did not finish within %.0f s", name, timeout)

    def _mapper_loop(self) -> None:
        """Take every admitted request as one group and map it (then hand it to the writer)."""
        while True:
            group, stopping = _drain(self._queue, lambda item: item.spans)
            if group:
                self._mapped.put((group, self._map(group)))
            if stopping:
                self._mapped.put(_STOP)
                return

    def _writer_loop(self) -> None:
        """Write every mapped group waiting as one commit. Parquet encoding releases the GIL,
        so a write overlaps the mapping of the next group."""
        while True:
            batch, stopping = _drain(self._mapped, lambda g: sum(i.spans for i in g[0]))
            if batch:
                group = [item for items, _ in batch for item in items]
                mapped = [m for _, results in batch for m in results]
                self._commit(group, mapped)
            if stopping:
                return

    # ------------------------------------------------------------------ mapping and writing

    def _map(self, group: list[PendingRequest]) -> list[Mapped | None]:
        """Map every request of the group; a request whose mapping fails gets a 400."""
        out: list[Mapped | None] = [None] * len(group)
        protobuf = [i for i, item in enumerate(group) if item.request is not None]
        if protobuf:
            try:
                pairs = [
                    (item.body, item.request)
                    for item in (group[i] for i in protobuf)
                    if item.request is not None
                ]
                mapped = map_parsed(pairs)
                for i, m in zip(protobuf, mapped, strict=True):
                    out[i] = m
            except Exception:
                log.debug("group mapping failed; mapping requests one by one", exc_info=True)
        for i, item in enumerate(group):
            if out[i] is not None:
                continue
            try:
                if item.request is not None:
                    out[i] = map_parsed([(item.body, item.request)])[0]
                else:
                    out[i] = map_spans(item.decoded or [])
            except Exception as exc:
                log.exception("could not map a request of %s", counted(item.spans, "span"))
                _resolve(item, exception=OtlpError(400, f"request could not be mapped: {exc}"))
        for item in group:  # the rows are built: the request's bytes are no longer needed
            item.body, item.request, item.decoded = b"", None, None
        return out

    def _commit(self, group: list[PendingRequest], results: list[Mapped | None]) -> None:
        started = time.perf_counter()
        ok = [(item, m) for item, m in zip(group, results, strict=True) if m is not None]
        try:
            files, calls, lists = self._write([m for _, m in ok])
        except OSError as exc:
            self._limited.log(
                logging.ERROR,
                f"write:{exc.errno}",
                "could not write %s to %s (answered 503, the senders retry): %s",
                counted(len(ok), "request"),
                self.store.root,
                exc,
            )
            self._release(group)  # before answering: a refused client may retry at once
            for item, _ in ok:
                _resolve(item, exception=WriteFailed(str(exc)))
            return
        except Exception as exc:
            if len(ok) > 1:  # find the request at fault: the others must not suffer from it
                log.warning("a group write failed (%s); writing its requests one by one", exc)
                for item, m in ok:
                    self._commit([item], [m])
                self._release([item for item, m in zip(group, results, strict=True) if m is None])
                return
            log.exception("could not store a request")
            self._release(group)
            for item, _ in ok:
                _resolve(item, exception=OtlpError(400, f"the store refused this request: {exc}"))
            return
        elapsed = time.perf_counter() - started
        with self._lock:
            s = self.stats
            s.batches += 1
            s.files += len(files)
            s.calls += calls.num_rows
            s.tool_listings += lists.num_rows
            s.commit_latency.observe(elapsed)
            for _, m in ok:
                stored = m.spans - m.rejected - m.ignored - m.duplicates
                s.count_request(
                    m.spans, stored, m.rejected_by, m.ignored_by, m.duplicates, m.flagged_by
                )
        self._release(group)  # before answering: a client that got its 200 may send again
        for item, m in ok:
            _resolve(item, result=m)
        self._log_progress()
        if log.isEnabledFor(logging.DEBUG):  # a line per group: its words only when shown
            log.debug(
                "group of %s: %s (%d mapped column-wise), %s durable in %s (%.1f ms)",
                counted(len(group), "request"),
                counted(calls.num_rows, "call"),
                sum(m.columnar for _, m in ok),
                counted(lists.num_rows, "tool listing"),
                counted(len(files), "file"),
                elapsed * 1000,
            )
        hooks = [(self.on_listings, lists), (self.on_batch, calls)]  # listings first
        for hook, table in hooks:
            if hook is not None and table.num_rows:
                self._callbacks.put((hook, table))
        if any(hook is not None and table.num_rows for hook, table in hooks):
            backlog = self._callbacks.qsize()
            if backlog and backlog % CALLBACK_BACKLOG_WARNING == 0:
                log.warning(
                    "on_batch is %s behind ingest (they are stored; it catches up)",
                    counted(backlog, "batch", "batches"),
                )

    def _write(self, mapped: list[Mapped]) -> tuple[list[Any], pa.Table, pa.Table]:
        """Drop the spans stored already (in place: each ``Mapped`` loses them and counts
        them), append the rest and remember their keys; returns the files written and the
        calls and tool listings appended."""
        call_keys = _keys_by_request([m.calls for m in mapped], CALLS_SCHEMA)
        list_keys = [
            k ^ LISTING_SALT
            for k in _keys_by_request([m.tool_lists for m in mapped], TOOL_LISTS_SCHEMA)
        ]
        spans = _span_level(call_keys, list_keys)
        if spans.size:
            seen = self.recent.seen(spans)
            if seen.any():
                _drop_seen(mapped, call_keys, list_keys, seen)
        calls = _concat([m.calls for m in mapped], CALLS_SCHEMA)
        lists = _concat([m.tool_lists for m in mapped], TOOL_LISTS_SCHEMA)
        files = []
        if calls.num_rows:  # one arrival mark per write, rising: the live scorer's catch-up
            self.received_us = max(time.time_ns() // 1000, self.received_us + 1)
            stamp = pa.array([self.received_us] * calls.num_rows, pa.int64())
            i = calls.schema.get_field_index(RECEIVED)
            calls = calls.set_column(
                i, calls.schema.field(i), stamp.cast(calls.schema.field(i).type)
            )
        # keys are remembered as soon as their rows are durable: if the next append fails and
        # the group is written again request by request, these rows are not written twice
        if calls.num_rows:
            files += self.store.append(CALLS, calls)
            self.recent.add(np.concatenate(call_keys))
        if lists.num_rows:
            files += self.store.append(TOOL_LISTS, lists)
            self.recent.add(np.unique(np.concatenate(list_keys)))
        return files, calls, lists

    def _log_progress(self) -> None:
        """One INFO line for the first stored batch, then at most one per progress interval."""
        now = time.monotonic()
        if self._logged_at and now - self._logged_at < self.progress_interval:
            return
        with self._lock:
            s, last = self.stats, self._logged
            names = (
                "requests",
                "spans",
                "calls",
                "tool_listings",
                "rejected_spans",
                "ignored_spans",
                "duplicate_spans",
                "flagged_spans",
            )
            delta = {name: getattr(s, name) - getattr(last, name) for name in names}
            flagged_by = {
                reason: n - last.flagged_by.get(reason, 0)
                for reason, n in s.flagged_by.items()
                if n > last.flagged_by.get(reason, 0)
            }
            self._logged = CollectorStats(
                **{name: getattr(s, name) for name in delta}, flagged_by=dict(s.flagged_by)
            )
            total_calls = s.calls
        since = f"in the last {now - self._logged_at:.0f} s" if self._logged_at else "first batch"
        self._logged_at = now
        # calls kept with a flaw in their times, as the stop line counts them: only when any
        flagged = (
            f", {delta['flagged_spans']} kept without a duration{by_reason(flagged_by)}"
            if delta["flagged_spans"]
            else ""
        )
        log.info(
            "stored %s and %s from %s in %s (%s; %s rejected, %s ignored, %s dropped%s); "
            "%s since start",
            counted(delta["calls"], "call"),
            counted(delta["tool_listings"], "tool listing"),
            counted(delta["spans"], "span"),
            counted(delta["requests"], "request"),
            since,
            counted(delta["rejected_spans"], "span"),
            f"{delta['ignored_spans']:,}",
            counted(delta["duplicate_spans"], "duplicate"),
            flagged,
            counted(total_calls, "call"),
        )

    # ------------------------------------------------------------------ consumers, upkeep

    def _callback_loop(self) -> None:
        while True:
            item = self._callbacks.get()
            if item is _STOP:
                return
            hook, table = item
            try:
                hook(table)
            except Exception:
                with self._lock:
                    self.stats.callback_errors += 1
                log.exception(
                    "%s failed for %s (they are stored; ingest continues)",
                    "on_listings" if hook is self.on_listings else "on_batch",
                    counted(table.num_rows, "row"),
                )

    def _maintenance_loop(self) -> None:
        tick = min(self.progress_interval, self.compact_interval or self.progress_interval)
        next_compact = time.monotonic() + (self.compact_interval or float("inf"))
        while not self._stop_maintenance.wait(max(tick, 0.05)):
            if self.on_progress is not None:
                self.on_progress()
            if time.monotonic() >= next_compact:
                self.compact()
                next_compact = time.monotonic() + (self.compact_interval or float("inf"))

    def compact(self) -> None:
        """Merge small files of the collector's tables (logged; a failure leaves data intact)."""
        for table in (CALLS, TOOL_LISTS, INGEST):
            skipped: list[str] = []
            try:
                removed = self.store.compact(table, skipped=skipped)
            except Exception as exc:
                with self._lock:
                    self.stats.compaction_errors += 1
                log.error("compaction of %s failed (data is intact): %s", table, exc)
                continue
            with self._lock:  # a partition left alone (damaged file, logged) is a failure too
                self.stats.compaction_errors += len(skipped)
                self.stats.compactions += 1
                self.stats.compacted_files += removed
            if removed:
                log.info("compacted %s: %s merged away", table, counted(removed, "small file"))


def _keys_by_request(parts: list[pa.Table], schema: pa.Schema) -> list[np.ndarray]:
    """The span keys of each table, computed in one pass over all of them."""
    every = _concat(parts, schema)
    keys = span_keys(every["trace_id"], every["span_id"])
    bounds = np.cumsum([0, *(t.num_rows for t in parts)])
    return [keys[bounds[i] : bounds[i + 1]] for i in range(len(parts))]


def _span_level(call_keys: list[np.ndarray], list_keys: list[np.ndarray]) -> np.ndarray:
    """One key per span: a tools/list span's rows share its key, counted once."""
    firsts = [_first_of_runs(k) for k in list_keys]
    parts = [*call_keys, *(k[f] for k, f in zip(list_keys, firsts, strict=True))]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


def _first_of_runs(keys: np.ndarray) -> np.ndarray:
    """Positions starting a run of equal keys (a span's tools/list rows are contiguous)."""
    if not keys.size:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))


def _drop_seen(
    mapped: list[Mapped],
    call_keys: list[np.ndarray],
    list_keys: list[np.ndarray],
    seen: np.ndarray,
) -> None:
    """Remove the rows of spans stored already; count them as the requests' duplicates."""
    at = 0
    for i, m in enumerate(mapped):
        ck = call_keys[i]
        dup_calls = seen[at : at + ck.size]
        at += ck.size
        if dup_calls.any():
            m.calls = m.calls.filter(pa.array(~dup_calls))
            m.flaws = m.flaws[~dup_calls]  # a retry's flawed call was flagged when stored
            call_keys[i] = ck[~dup_calls]
            m.duplicates += int(dup_calls.sum())
    for i, m in enumerate(mapped):
        lk = list_keys[i]
        firsts = _first_of_runs(lk)
        dup_spans = seen[at : at + firsts.size]
        at += firsts.size
        if dup_spans.any():
            run = np.cumsum(np.isin(np.arange(lk.size), firsts)) - 1
            keep = ~dup_spans[run]
            m.tool_lists = m.tool_lists.filter(pa.array(keep))
            list_keys[i] = lk[keep]
            m.duplicates += int(dup_spans.sum())


def _drain(source: queue.Queue[Any], size: Callable[[Any], int]) -> tuple[list[Any], bool]:
    """Block for one entry, then take whatever else is waiting (up to MAX_GROUP_SPANS).

    Returns (entries, stop seen); the stop mark is only ever queued last.
    """
    first = source.get()
    if first is _STOP:
        return [], True
    entries = [first]
    total = size(first)
    while total < MAX_GROUP_SPANS:
        try:
            entry = source.get_nowait()
        except queue.Empty:
            break
        if entry is _STOP:
            return entries, True
        entries.append(entry)
        total += size(entry)
    return entries, False


def _concat(tables_: list[pa.Table], schema: pa.Schema) -> pa.Table:
    tables_ = [t for t in tables_ if t.num_rows]
    if not tables_:
        return schema.empty_table()
    return tables_[0] if len(tables_) == 1 else pa.concat_tables(tables_)


def _resolve(
    item: PendingRequest, *, result: Mapped | None = None, exception: BaseException | None = None
) -> None:
    future, loop = item.future, item.loop
    assert future is not None and loop is not None

    def settle() -> None:
        if future.done():
            return
        if exception is not None:
            future.set_exception(exception)
        else:
            assert result is not None
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
        loop.call_soon_threadsafe(settle)
