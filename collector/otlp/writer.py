"""The collector's write path: group commit of admitted requests into the Parquet store.

A mapper thread takes every request waiting in the queue as one group and maps it to records in
one columnar pass; a writer thread writes every mapped group waiting as one Parquet file per
table and date (temp file, fsync, rename, directory fsync) — group commit; Parquet encoding
releases the GIL, so writing one group overlaps mapping the next. Only then are the group's
requests answered (their futures resolved), so an acknowledged span survives ``kill -9``.
``on_batch(calls)`` (and ``on_listings(tool_lists)``) then runs on its own thread, so a slow or
failing consumer (the live scorer, the listing watcher) never holds up ingest and never loses
data: its exceptions are logged, the rows are already stored. A maintenance thread compacts
small files periodically. The HTTP side (:mod:`toolwatch.collector.otlp.server`) admits
requests and waits for their writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolwatch.collector.otlp.columnar import map_parsed
from toolwatch.collector.otlp.decode import OtlpError, SpanData
from toolwatch.collector.otlp.mapping import Mapped, map_spans
from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.collector.store.parquet_store import CALLS, TOOL_LISTS

log = logging.getLogger(__name__)

MAX_GROUP_SPANS: Final = 100_000  # spans per group commit (bounds one write's latency)
CALLBACK_BACKLOG_WARNING: Final = 100  # warn every this many batches on_batch lags behind
_STOP: Final = object()


class WriteFailed(Exception):
    """The group's Parquet write failed; its requests get 503 and will be retried."""


@dataclass(slots=True)
class PendingRequest:
    """One admitted request waiting for its group's write."""

    spans: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Mapped]
    body: bytes = b""
    request: ExportTraceServiceRequest | None = None  # protobuf
    decoded: list[SpanData] | None = None  # OTLP/JSON


@dataclass(slots=True)
class CollectorStats:
    """Counters since start (read them for logs and tests; written by the collector only)."""

    requests: int = 0
    spans: int = 0
    calls: int = 0
    tool_listings: int = 0
    rejected_spans: int = 0
    ignored_spans: int = 0
    refused: dict[int, int] = field(default_factory=dict)  # HTTP status -> requests
    batches: int = 0
    files: int = 0
    callback_errors: int = 0
    compacted_files: int = 0


class GroupCommitWriter:
    """Admits requests against a bounded queue, maps and writes them in groups, answers them.

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
        retry_after: int,
        compact_interval: float | None,
        progress_interval: float,
    ) -> None:
        self.store = store
        self.stats = stats
        self.on_batch = on_batch
        self.on_listings = on_listings
        self.queue_limit = queue_limit
        self.retry_after = retry_after
        self.compact_interval = compact_interval
        self.progress_interval = progress_interval
        self._lock = lock
        self._logged = CollectorStats()  # the counters at the last progress line
        self._logged_at = 0.0  # monotonic time of that line (0: none yet, so the first shows)
        self._pending = 0  # spans admitted, not yet answered
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
        if self.compact_interval:
            self._spawn("toolwatch-compact", self._maintenance_loop)

    def shutdown(self, timeout: float = 60.0) -> None:
        with self._lock:
            self._closing = True  # no request is admitted after the writer's stop mark
        self._queue.put(_STOP)
        self._join("toolwatch-mapper", timeout)
        self._join("toolwatch-writer", timeout)
        self._callbacks.put(_STOP)
        self._join("toolwatch-on-batch", timeout)
        self._stop_maintenance.set()
        self._join("toolwatch-compact", timeout)

    def admit(self, item: PendingRequest) -> None:
        """Queue a request for writing, or refuse it (503) when closing or the queue is full."""
        with self._lock:
            if self._closing:
                raise OtlpError(503, "the collector is shutting down")
            if self._pending and self._pending + item.spans > self.queue_limit:
                raise OtlpError(
                    503,
                    f"write queue full ({self._pending} spans waiting, limit "
                    f"{self.queue_limit}); retry after {self.retry_after} s",
                )
            self._pending += item.spans
        self._queue.put(item)

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
                self._commit(group, [m for _, mapped in batch for m in mapped])
            if stopping:
                return

    def _commit(self, group: list[PendingRequest], results: list[Mapped | None]) -> None:
        started = time.perf_counter()
        ok = [(item, m) for item, m in zip(group, results, strict=True) if m is not None]
        calls = _concat([m.calls for _, m in ok], CALLS_SCHEMA)
        lists = _concat([m.tool_lists for _, m in ok], TOOL_LISTS_SCHEMA)
        try:
            files = []
            if calls.num_rows:
                files += self.store.append(CALLS, calls)
            if lists.num_rows:
                files += self.store.append(TOOL_LISTS, lists)
        except Exception as exc:
            log.error("could not write %d calls to %s: %s", calls.num_rows, self.store.root, exc)
            self._release(group)  # before answering: a refused client may retry at once
            for item, _ in ok:
                _resolve(item, exception=WriteFailed(str(exc)))
            return
        with self._lock:
            s = self.stats
            s.batches += 1
            s.files += len(files)
            s.calls += calls.num_rows
            s.tool_listings += lists.num_rows
            for _, m in ok:
                s.requests += 1
                s.spans += m.spans
                s.rejected_spans += m.rejected
                s.ignored_spans += m.ignored
        self._release(group)  # before answering: a client that got its 200 may send again
        for item, m in ok:
            _resolve(item, result=m)
        self._log_progress()
        log.debug(
            "group of %d requests: %d calls (%d mapped column-wise), %d tool listings "
            "durable in %d files (%.1f ms)",
            len(group),
            calls.num_rows,
            sum(m.columnar for _, m in ok),
            lists.num_rows,
            len(files),
            (time.perf_counter() - started) * 1000,
        )
        hooks = [(self.on_listings, lists), (self.on_batch, calls)]  # listings first
        for hook, table in hooks:
            if hook is not None and table.num_rows:
                self._callbacks.put((hook, table))
        if any(hook is not None and table.num_rows for hook, table in hooks):
            backlog = self._callbacks.qsize()
            if backlog and backlog % CALLBACK_BACKLOG_WARNING == 0:
                log.warning(
                    "on_batch is %d batches behind ingest (they are stored; it catches up)",
                    backlog,
                )

    def _log_progress(self) -> None:
        """One INFO line for the first stored batch, then at most one per progress interval."""
        now = time.monotonic()
        if self._logged_at and now - self._logged_at < self.progress_interval:
            return
        with self._lock:
            s, last = self.stats, self._logged
            delta = {
                name: getattr(s, name) - getattr(last, name)
                for name in ("requests", "spans", "calls", "tool_listings", "rejected_spans")
            }
            self._logged = CollectorStats(**{name: getattr(s, name) for name in delta})
            total_calls = s.calls
        since = f"in the last {now - self._logged_at:.0f} s" if self._logged_at else "first batch"
        self._logged_at = now
        log.info(
            "stored %d calls and %d tool listings from %d spans in %d requests (%s; "
            "%d spans rejected); %d calls since start",
            delta["calls"],
            delta["tool_listings"],
            delta["spans"],
            delta["requests"],
            since,
            delta["rejected_spans"],
            total_calls,
        )

    def _map(self, group: list[PendingRequest]) -> list[Mapped | None]:
        """Map every request of the group; a request whose mapping fails gets a 500."""
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
                log.exception("could not map a request of %d spans", item.spans)
                _resolve(item, exception=exc)
        return out

    def _release(self, group: list[PendingRequest]) -> None:
        with self._lock:
            self._pending -= sum(item.spans for item in group)

    def _callback_loop(self) -> None:
        while True:
            item = self._callbacks.get()
            if item is _STOP:
                return
            hook, table = item
            try:
                hook(table)
            except Exception:
                self.stats.callback_errors += 1
                log.exception(
                    "%s failed for %d rows (they are stored; ingest continues)",
                    "on_listings" if hook is self.on_listings else "on_batch",
                    table.num_rows,
                )

    def _maintenance_loop(self) -> None:
        assert self.compact_interval
        while not self._stop_maintenance.wait(self.compact_interval):
            self.compact()

    def compact(self) -> None:
        """Merge small files of the collector's tables (logged; a failure leaves data intact)."""
        for table in (CALLS, TOOL_LISTS):
            try:
                removed = self.store.compact(table)
            except Exception as exc:
                log.error("compaction of %s failed (data is intact): %s", table, exc)
                continue
            if removed:
                with self._lock:
                    self.stats.compacted_files += removed
                log.info("compacted %s: %d small files merged away", table, removed)


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


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return schema.empty_table()
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _resolve(
    item: PendingRequest, *, result: Mapped | None = None, exception: BaseException | None = None
) -> None:
    def settle() -> None:
        if item.future.done():
            return
        if exception is not None:
            item.future.set_exception(exception)
        else:
            assert result is not None
            item.future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
        item.loop.call_soon_threadsafe(settle)
