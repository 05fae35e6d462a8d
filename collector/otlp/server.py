"""The OTLP/HTTP collector: ``POST /v1/traces`` → call records in the Parquet store.

Request path (event-loop thread): bearer token (401) → media type and content coding (415) →
body size, on the wire and after bounded gunzip (413) → decode (400: protobuf is parsed as
``ExportTraceServiceRequest``, JSON by hand) → admission against the write queue (503 +
``Retry-After``) → wait for the write → 200, with ``partial_success`` when spans were rejected.
Responses use the request's encoding; errors carry a ``google.rpc.Status``.

Write path: a mapper thread takes every request waiting in the queue as one group and maps it
to records in one columnar pass; a writer thread writes every mapped group waiting as one
Parquet file per table and date (temp file, fsync, rename, directory fsync) — group commit;
Parquet encoding releases the GIL, so writing one group overlaps mapping the next. Only then
are the group's requests answered, so an acknowledged span survives ``kill -9``.
``on_batch(calls)`` then runs on its own thread, so a slow or failing consumer (the live
scorer) never holds up ingest and never loses data: its exceptions are logged, the rows are
already stored. A maintenance thread compacts small files periodically, and
:meth:`Collector.stop` drains everything, then compacts once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolwatch.collector.otlp.columnar import map_parsed
from toolwatch.collector.otlp.decode import (
    CONTENT_TYPES,
    JSON,
    PROTOBUF,
    TRACES_PATH,
    OtlpError,
    SpanData,
    count_protobuf_spans,
    decode_json,
    gunzip_bounded,
    media_type,
    parse_protobuf,
    status_body,
    success_body,
)
from toolwatch.collector.otlp.mapping import Mapped, map_spans
from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA, TOOL_LISTS_SCHEMA
from toolwatch.collector.store.parquet_store import CALLS, TOOL_LISTS, Store

log = logging.getLogger(__name__)

DEFAULT_PORT: Final = 4318
DEFAULT_MAX_BODY: Final = 16 * 1024 * 1024  # bytes, on the wire and after decompression
DEFAULT_QUEUE_LIMIT: Final = 100_000  # spans admitted but not yet durable (~0.2 GB parsed)
DEFAULT_COMPACT_INTERVAL: Final = 300.0  # seconds
MAX_GROUP_SPANS: Final = 100_000  # spans per group commit (bounds one write's latency)
CALLBACK_BACKLOG_WARNING: Final = 100  # warn every this many batches on_batch lags behind
DEFAULT_PROGRESS_INTERVAL: Final = 60.0  # seconds between "stored ..." log lines under traffic
_STOP: Final = object()


class _WriteFailed(Exception):
    """The group's Parquet write failed; its requests get 503 and will be retried."""


@dataclass(slots=True)
class _Item:
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


class Collector:
    """An OTLP/HTTP trace receiver writing call records durably into ``store``.

    ``start()`` serves on a background thread and returns once listening (``port``/``url``
    are then final; ``port=0`` picks a free one). ``stop()`` stops accepting, answers every
    admitted request after its write, drains ``on_batch`` and compacts.
    """

    def __init__(
        self,
        store: Store,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        on_batch: Callable[[pa.Table], None] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        *,
        compact_interval: float | None = DEFAULT_COMPACT_INTERVAL,
        retry_after: int = 1,
        progress_interval: float = DEFAULT_PROGRESS_INTERVAL,
    ) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.token = token or None
        self.on_batch = on_batch
        self.max_body = max_body
        self.queue_limit = queue_limit
        self.compact_interval = compact_interval
        self.retry_after = retry_after
        self.progress_interval = progress_interval
        self.stats = CollectorStats()
        self._logged = CollectorStats()  # the counters at the last progress line
        self._logged_at = 0.0  # monotonic time of that line (0: none yet, so the first shows)
        self._lock = threading.Lock()
        self._pending = 0  # spans admitted, not yet answered
        self._closing = False
        self._queue: queue.Queue[Any] = queue.Queue()  # admitted requests
        self._mapped: queue.Queue[Any] = queue.Queue()  # mapped groups waiting for the disk
        self._callbacks: queue.Queue[Any] = queue.Queue()
        self._stop_maintenance = threading.Event()
        self._server: uvicorn.Server | None = None
        self._threads: dict[str, threading.Thread] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def traces_url(self) -> str:
        return self.url + TRACES_PATH

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Collector:
        """Bind, start the writer and the HTTP server; return once it accepts connections."""
        if self._server is not None or self._threads:
            raise RuntimeError("a Collector starts once; create a new one to serve again")
        self.store.root.mkdir(parents=True, exist_ok=True)
        sock = _bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        app = Starlette(
            routes=[
                Route(TRACES_PATH, self._traces, methods=["POST"]),
                Route("/health", self._health, methods=["GET"]),
            ]
        )
        config = uvicorn.Config(
            app,
            log_config=None,  # leave the application's logging alone
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
            timeout_graceful_shutdown=30,
        )
        self._server = uvicorn.Server(config)
        self._spawn("toolwatch-mapper", self._mapper_loop)
        self._spawn("toolwatch-writer", self._writer_loop)
        self._spawn("toolwatch-on-batch", self._callback_loop)
        if self.compact_interval:
            self._spawn("toolwatch-compact", self._maintenance_loop)
        server = self._server
        self._spawn("toolwatch-http", lambda: server.run(sockets=[sock]))
        deadline = time.monotonic() + 30
        while not server.started:
            if not self._threads["toolwatch-http"].is_alive() or time.monotonic() > deadline:
                sock.close()
                self._shutdown_workers()
                raise RuntimeError(f"collector could not start listening on {self.url}")
            time.sleep(0.01)
        log.info(
            "toolwatch collector listening on %s (store %s; %s; max body %s MiB)",
            self.traces_url,
            self.store.root,
            "bearer token required" if self.token else "no token",
            f"{self.max_body / 2**20:g}",
        )
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Graceful stop: finish in-flight requests (their writes included), then compact."""
        server = self._server
        if server is None:
            return
        log.info("collector shutting down: finishing in-flight requests")
        server.should_exit = True
        http = self._threads.get("toolwatch-http")
        if http is not None:
            http.join(timeout)
        self._shutdown_workers(timeout)
        self._compact()
        s = self.stats
        log.info(
            "collector stopped: %d requests, %d spans received, %d calls and %d tool listings "
            "stored in %d files, %d spans rejected, %d ignored, refused requests %s",
            s.requests,
            s.spans,
            s.calls,
            s.tool_listings,
            s.files,
            s.rejected_spans,
            s.ignored_spans,
            dict(sorted(s.refused.items())) or "none",
        )
        self._server = None

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads[name] = thread
        thread.start()

    def _shutdown_workers(self, timeout: float = 60.0) -> None:
        with self._lock:
            self._closing = True  # no request is admitted after the writer's stop mark
        self._queue.put(_STOP)
        self._join("toolwatch-mapper", timeout)
        self._join("toolwatch-writer", timeout)
        self._callbacks.put(_STOP)
        self._join("toolwatch-on-batch", timeout)
        self._stop_maintenance.set()
        self._join("toolwatch-compact", timeout)

    def _join(self, name: str, timeout: float) -> None:
        thread = self._threads.get(name)
        if thread is not None and thread.is_alive():
            thread.join(timeout)
            if thread.is_alive():
                log.error("%s did not finish within %.0f s", name, timeout)

    # ------------------------------------------------------------------ HTTP

    async def _health(self, request: Request) -> Response:
        return Response(b"ok\n", media_type="text/plain")

    async def _traces(self, request: Request) -> Response:
        ctype = media_type(request.headers.get("content-type"))
        reply = ctype if ctype in CONTENT_TYPES else JSON
        try:
            self._authorize(request)
            if ctype not in CONTENT_TYPES:
                raise OtlpError(
                    415,
                    f"unsupported Content-Type {ctype or '(none)'!r}; send {PROTOBUF} or {JSON}",
                )
            coding = request.headers.get("content-encoding", "identity").strip().lower()
            if coding not in ("identity", "gzip", ""):
                raise OtlpError(415, f"unsupported Content-Encoding {coding!r}; use gzip or none")
            body = await self._read_body(request)
            if coding == "gzip":
                body = gunzip_bounded(body, self.max_body)
            item = self._decode(ctype, body)
            if item.spans == 0:
                self._count(0)
                return Response(success_body(reply), media_type=reply)
            self._admit(item)
            try:
                mapped = await item.future
            except _WriteFailed as exc:
                raise OtlpError(503, f"the store could not write this batch: {exc}") from None
        except OtlpError as exc:
            return self._refuse(request, reply, exc)
        except Exception:
            log.exception("internal error while handling an OTLP request")
            self._tally_refusal(500)
            return Response(status_body(reply, 500, "internal error"), 500, media_type=reply)
        if mapped.rejected:
            log.warning(
                "request from %s: %d of %d spans rejected: %s",
                _client(request),
                mapped.rejected,
                mapped.spans,
                mapped.message(),
            )
        body = success_body(reply, mapped.rejected, mapped.message())
        return Response(body, media_type=reply)

    def _authorize(self, request: Request) -> None:
        if self.token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            raise OtlpError(401, "missing or wrong bearer token")

    async def _read_body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise OtlpError(400, f"invalid Content-Length {declared!r}") from None
            if size > self.max_body:
                raise OtlpError(413, f"body of {size} bytes exceeds the limit of {self.max_body}")
        chunks = []
        total = 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > self.max_body:
                raise OtlpError(413, f"body exceeds the limit of {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _decode(self, ctype: str, body: bytes) -> _Item:
        loop = asyncio.get_running_loop()
        if ctype == PROTOBUF:
            request = parse_protobuf(body)
            n = count_protobuf_spans(request)
            return _Item(n, loop, loop.create_future(), body=body, request=request)
        decoded = decode_json(body)
        return _Item(len(decoded), loop, loop.create_future(), decoded=decoded)

    def _admit(self, item: _Item) -> None:
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

    def _refuse(self, request: Request, reply: str, exc: OtlpError) -> Response:
        self._tally_refusal(exc.status)
        level = logging.INFO if exc.status == 503 else logging.WARNING
        log.log(level, "refused request from %s: %d %s", _client(request), exc.status, exc)
        headers = {}
        if exc.status == 503:
            headers["Retry-After"] = str(self.retry_after)
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return Response(
            status_body(reply, exc.status, exc.message),
            exc.status,
            headers=headers,
            media_type=reply,
        )

    def _tally_refusal(self, status: int) -> None:
        with self._lock:
            self.stats.requests += 1
            self.stats.refused[status] = self.stats.refused.get(status, 0) + 1

    def _count(self, spans: int) -> None:
        with self._lock:
            self.stats.requests += 1
            self.stats.spans += spans

    # ------------------------------------------------------------------ writing

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

    def _commit(self, group: list[_Item], results: list[Mapped | None]) -> None:
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
                _resolve(item, exception=_WriteFailed(str(exc)))
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
        if self.on_batch is not None and calls.num_rows:
            self._callbacks.put(calls)
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

    def _map(self, group: list[_Item]) -> list[Mapped | None]:
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

    def _release(self, group: list[_Item]) -> None:
        with self._lock:
            self._pending -= sum(item.spans for item in group)

    def _callback_loop(self) -> None:
        while True:
            table = self._callbacks.get()
            if table is _STOP:
                return
            if self.on_batch is None:
                continue
            try:
                self.on_batch(table)
            except Exception:
                self.stats.callback_errors += 1
                log.exception(
                    "on_batch failed for %d calls (they are stored; ingest continues)",
                    table.num_rows,
                )

    # ------------------------------------------------------------------ compaction

    def _maintenance_loop(self) -> None:
        assert self.compact_interval
        while not self._stop_maintenance.wait(self.compact_interval):
            self._compact()

    def _compact(self) -> None:
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


# ---------------------------------------------------------------------- helpers


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


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.set_inheritable(True)
    return sock


def _client(request: Request) -> str:
    client = request.client
    return f"{client.host}:{client.port}" if client else "unknown client"


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return schema.empty_table()
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _resolve(
    item: _Item, *, result: Mapped | None = None, exception: BaseException | None = None
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
