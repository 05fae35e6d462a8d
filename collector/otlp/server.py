"""The OTLP/HTTP collector: ``POST /v1/traces`` → call records in the Parquet store.

Request path: bearer token (401) → media type and content coding (415) → body, read with a
byte reservation (503 + ``Retry-After`` when the collector holds too much already), within
:data:`~toolwatch.collector.otlp.defaults.DEFAULT_BODY_TIMEOUT` of silence and
:data:`~toolwatch.collector.otlp.defaults.DEFAULT_BODY_DEADLINE` in all (408), and the size
limit (413) → gunzip and decode *off the event loop*, on a small pool (400: protobuf is parsed as
``ExportTraceServiceRequest``, JSON by ``orjson``) → admission against the write queue (503 +
``Retry-After``) → wait for the write → 200, with ``partial_success`` when spans were rejected
(or, ``rejected_spans`` 0, a warning naming calls kept without a duration).
Responses use the request's encoding; errors carry a ``google.rpc.Status``. ``GET /health``
answers at once whatever the load; ``GET /metrics`` gives the counters to Prometheus (behind
the token when there is one).

Write path (:mod:`toolwatch.collector.otlp.writer`): admitted requests are mapped and written
in groups — group commit — and only then answered, so an acknowledged span survives ``kill
-9``; a span stored already (an exporter's retry) is not stored again. ``on_batch(calls)`` and
``on_listings(tool_lists)`` run on their own thread after the durable write, so a slow or
failing consumer (the live scorer, the listing watcher) never holds up ingest and never loses
data. Connections are policed by :mod:`toolwatch.collector.otlp.connections` (header/body
timeouts, a connection cap). A maintenance thread compacts small files periodically, and
:meth:`Collector.stop` drains everything, compacts once more and writes the counters to the
store's ``ingest`` table.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import uvicorn
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from toolwatch.collector.otlp import signals
from toolwatch.collector.otlp.columnar import warm_up
from toolwatch.collector.otlp.connections import (
    ACCEPT_BACKLOG,
    ConnectionGuard,
    default_max_connections,
    guarded_protocol,
    rate_limit_third_party_logs,
    return_large_blocks_to_the_os,
    within,
)
from toolwatch.collector.otlp.decode import (
    CONTENT_TYPES,
    JSON,
    PROTOBUF,
    TRACES_PATH,
    OtlpError,
    count_protobuf_spans,
    decode_json,
    gunzip_bounded,
    media_type,
    parse_protobuf,
    status_body,
    success_body,
)
from toolwatch.collector.otlp.defaults import (
    DEFAULT_BODY_DEADLINE,
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_COMPACT_INTERVAL,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_PROGRESS_INTERVAL,
    DEFAULT_QUEUE_BYTES,
    DEFAULT_QUEUE_LIMIT,
)
from toolwatch.collector.otlp.ingest import IngestLog, newest_received_us, prime_recent_spans
from toolwatch.collector.otlp.metrics import CONTENT_TYPE as METRICS_TYPE
from toolwatch.collector.otlp.metrics import ExtraMetrics, metrics_renderer
from toolwatch.collector.otlp.stats import CollectorStats, by_reason
from toolwatch.collector.otlp.writer import GroupCommitWriter, PendingRequest, WriteFailed
from toolwatch.collector.store import Store, StoreError
from toolwatch.collector.store.compaction import probe_writable
from toolwatch.instrumentation.export.processor import Delivery
from toolwatch.log_limits import RateLimiter
from toolwatch.words import counted

log = logging.getLogger(__name__)

LISTEN_QUEUE: Final = 4096  # the kernel caps it at net.core.somaxconn
DECODE_WORKERS: Final = 2  # requests gunzipped/parsed at once (each holds up to 3x its body)
#: A plain protobuf body up to this size is parsed on the event loop itself (about 1 ms per
#: 1,000 spans: handing it to the decode pool and back cost more than the parse); larger,
#: gzipped and JSON bodies go to the pool, so no request holds the loop for long.
INLINE_DECODE_BYTES: Final = 1 << 20
#: bytes held per decoded body byte: the body, its parse and the rows built from it
DECODED_COST: Final = 3
_READ_CHUNK_HOLD: Final = 64 * 1024  # reserve at least this per body chunk


@dataclass(slots=True)
class _Hold:
    """Bytes a request holds from the writer's budget (released unless handed to the writer)."""

    nbytes: int = 0


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
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        compact_interval: float | None = DEFAULT_COMPACT_INTERVAL,
        retry_after: int = 1,
        progress_interval: float = DEFAULT_PROGRESS_INTERVAL,
        on_listings: Callable[[pa.Table], object] | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        body_deadline: float = DEFAULT_BODY_DEADLINE,
        max_connections: int | None = None,
        extra_metrics: ExtraMetrics | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.token = token or None
        self.max_body = max_body
        self.retry_after = retry_after
        self.body_timeout = body_timeout
        self.body_deadline = body_deadline
        self.stats = CollectorStats()
        self.run_id = uuid.uuid4().hex[:16]
        self._lock = threading.Lock()  # guards stats, shared with the writer
        self._ingest = IngestLog(store, self.stats, self._lock, self.run_id)
        self._writer = GroupCommitWriter(
            store,
            self.stats,
            self._lock,
            on_batch=on_batch,
            on_listings=on_listings,
            queue_limit=queue_limit,
            queue_bytes=queue_bytes,
            retry_after=retry_after,
            compact_interval=compact_interval,
            progress_interval=progress_interval,
            on_progress=self._ingest.write_if_changed,
        )
        self._guard_settings = (max_connections, header_timeout, body_timeout)
        self._guard: ConnectionGuard | None = None
        self._stopping = False  # set by stop(): a body still arriving is answered 503
        self._graceful_s = body_timeout + 10.0
        self._limited = RateLimiter(log)
        self._pool: ThreadPoolExecutor | None = None
        self._render_metrics = metrics_renderer(self.stats, self._lock, extra_metrics)
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
        try:
            self.store.root.mkdir(parents=True, exist_ok=True)
            probe_writable(self.store.root)
        except OSError as exc:  # refused at start: a 503 for every request would say it late
            raise StoreError(
                f"cannot write the store {self.store.root}: {exc.strerror or exc}"
            ) from exc
        self.store.recover()  # finish (or undo) a compaction a crash interrupted
        rate_limit_third_party_logs()
        return_large_blocks_to_the_os()  # memory bounded by the queue, not by the last burst
        max_connections, header_timeout, body_timeout = self._guard_settings
        self._guard = ConnectionGuard(
            max_connections=max_connections or default_max_connections(),
            header_timeout=header_timeout,
            body_timeout=body_timeout + 5,  # the receiver's own 408 comes first
            body_deadline=self.body_deadline + 5,
            on_close=self._closed_slow,
        )
        primed = prime_recent_spans(self.store, self._writer.recent)
        self._writer.received_us = newest_received_us(self.store)  # marks keep rising
        warm_up()  # the compiled wire walks load now, not in the first request
        sock = _bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._ingest.listen = self.url
        app = _Router(
            {
                (TRACES_PATH, "POST"): self._traces,
                ("/health", "GET"): self._health,
                ("/metrics", "GET"): self._metrics,
                **{(path, "POST"): self._other_signal for path in signals.PATHS},
            }
        )
        config = uvicorn.Config(
            app,
            log_config=None,  # leave the application's logging alone
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http=guarded_protocol(self._guard),
            backlog=ACCEPT_BACKLOG,
            # past the body timeout, so a silent body ends in a counted 408, not a cancellation
            timeout_graceful_shutdown=math.ceil(self._graceful_s),
        )
        self._server = uvicorn.Server(config)
        self._pool = ThreadPoolExecutor(DECODE_WORKERS, thread_name_prefix="toolwatch-decode")
        self._writer.start()
        server = self._server
        self._spawn("toolwatch-http", lambda: server.run(sockets=[sock]))
        deadline = time.monotonic() + 30
        while not server.started:
            if not self._threads["toolwatch-http"].is_alive() or time.monotonic() > deadline:
                sock.close()
                self._writer.shutdown()
                raise RuntimeError(f"collector could not start listening on {self.url}")
            time.sleep(0.01)
        # a deep listen queue (asyncio's own listen() used the per-round accept count): a burst
        # of connections must not make the kernel drop a well-behaved client's SYN (a 1 s stall)
        with contextlib.suppress(OSError):
            sock.listen(LISTEN_QUEUE)
        log.info(
            "toolwatch collector listening on %s (store %s; %s; max body %s MiB; at most %s; "
            "%s loaded to drop retried exports)",
            self.traces_url,
            self.store.root,
            "bearer token required" if self.token else "no token",
            f"{self.max_body / 2**20:g}",
            counted(self._guard.max_connections, "connection"),
            counted(primed, "recent span id"),
        )
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Graceful stop: finish in-flight requests (their writes included), then compact."""
        server = self._server
        if server is None:
            return
        log.info("collector shutting down: finishing in-flight requests")
        self._stopping = True
        server.should_exit = True
        http = self._threads.get("toolwatch-http")
        if http is not None:
            http.join(max(timeout, self._graceful_s + 5.0))
        self._writer.shutdown(timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._writer.compact()
        self._ingest.write(final=True)
        s = self.stats
        log.info(
            "collector stopped: %s, %s received, %s and %s stored in %s (%s, %s kept "
            "without a duration%s), %s rejected%s, %s ignored%s, %s dropped, refused "
            "requests %s%s",
            counted(s.requests, "request"),
            counted(s.spans, "span"),
            counted(s.calls, "call"),
            counted(s.tool_listings, "tool listing"),
            counted(s.files, "file"),
            counted(s.stored_spans, "span"),
            f"{s.flagged_spans:,}",
            by_reason(s.flagged_by),
            counted(s.rejected_spans, "span"),
            by_reason(s.rejected_by),
            f"{s.ignored_spans:,}",
            by_reason(s.ignored_by),
            counted(s.duplicate_spans, "duplicate"),
            dict(sorted(s.refused.items())) or "none",
            by_reason(s.unavailable_by),  # the 503s: which limit said "later"
        )
        self._server = None

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads[name] = thread
        thread.start()

    def check_delivery(self, sent: Delivery | None) -> str | None:
        """Whether every span a (flushed) processor sent here arrived and was accepted: None,
        or one line saying what is missing (commands that emit spans print it)."""
        if sent is None:
            return None
        with self._lock:
            received, rejected = self.stats.spans, self.stats.rejected_spans
        return sent.check(received, rejected)

    # ------------------------------------------------------------------ HTTP

    async def _health(self, request: Request) -> Response:
        return Response(b"ok\n", media_type="text/plain")

    async def _metrics(self, request: Request) -> Response:
        try:
            self._authorize(request)
        except OtlpError as exc:
            return Response(exc.message.encode(), exc.status, media_type="text/plain")
        return Response(self._render_metrics(), media_type=METRICS_TYPE)

    async def _traces(self, request: Request) -> Response:
        ctype = media_type(request.headers.get("content-type"))
        reply = ctype if ctype in CONTENT_TYPES else JSON
        hold = _Hold()
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
            body = await self._read_body(request, hold)
            loop = asyncio.get_running_loop()
            gzipped = coding == "gzip"
            if ctype == PROTOBUF and not gzipped and len(body) <= INLINE_DECODE_BYTES:
                item = self._decode(ctype, gzipped, body, hold)  # a millisecond: no hand-off
            else:
                assert self._pool is not None
                item = await loop.run_in_executor(
                    self._pool, self._decode, ctype, gzipped, body, hold
                )
            del body
            if item.spans == 0:
                with self._lock:
                    self.stats.count_request(0, 0, {}, {}, 0)
                return Response(success_body(reply), media_type=reply)
            item.loop, item.future = loop, loop.create_future()
            item.cost = hold.nbytes
            self._writer.admit(item)  # refused (503): the hold is still ours to release
            hold.nbytes = 0  # admitted: the writer releases item.cost once answered
            try:
                mapped = await item.future
            except WriteFailed as exc:
                raise OtlpError(
                    503, f"the store could not write this batch: {exc}", reason="store_write_failed"
                ) from None
        except OtlpError as exc:
            return self._refuse(request, reply, exc)
        except ClientDisconnect:
            with self._lock:
                self.stats.client_disconnects += 1
            self._limited.log(
                logging.INFO, "disconnect", "a client left before sending its whole request"
            )
            return Response(b"", 400)
        except Exception:
            self._limited.log(
                logging.ERROR,
                "internal",
                "internal error while handling an OTLP request",
                exc_info=True,
            )
            with self._lock:
                self.stats.count_refusal(500)
            return Response(status_body(reply, 500, "internal error"), 500, media_type=reply)
        finally:
            if hold.nbytes:
                self._writer.release(hold.nbytes)
        if mapped.rejected:
            self._limited.log(
                logging.WARNING,
                "rejected",
                "request from %s: %d of %s rejected: %s",
                _client(request),
                mapped.rejected,
                counted(mapped.spans, "span"),
                mapped.message(),
            )
        elif mapped.flaws.any():  # kept, but a sender whose clock steps should hear of it
            self._limited.log(
                logging.WARNING,
                "flagged",
                "request from %s: %s",
                _client(request),
                mapped.message(),
            )
        body_out = success_body(reply, mapped.rejected, mapped.message())
        return Response(body_out, media_type=reply)

    async def _other_signal(self, request: Request) -> Response:
        """``POST /v1/logs`` or ``/v1/metrics``: a 404 whose ``google.rpc.Status`` (in the
        request's encoding, as OTLP wants of every 4xx) names the signal and how to turn its
        exporter off; counted as refused, like any request not taken."""
        ctype = media_type(request.headers.get("content-type"))
        reply = ctype if ctype in CONTENT_TYPES else JSON
        signal = signals.PATHS[request.url.path]
        return self._refuse(request, reply, OtlpError(404, signals.other_path_message(signal)))

    def _authorize(self, request: Request) -> None:
        if self.token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            raise OtlpError(401, "missing or wrong bearer token")

    async def _read_body(self, request: Request, hold: _Hold) -> bytes:
        """The body, within the size limit and the body timeout, with bytes reserved for it."""
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise OtlpError(400, f"invalid Content-Length {declared!r}") from None
            if size > self.max_body:
                raise OtlpError(
                    413, f"body of {counted(size, 'byte')} exceeds the limit of {self.max_body}"
                )
            if size:
                self._writer.reserve(size, own=hold.nbytes)
                hold.nbytes += size
        chunks = []
        total = 0
        async for chunk in within(request.stream(), self.body_timeout, self.body_deadline):
            total += len(chunk)
            if total > self.max_body:
                raise OtlpError(413, f"body exceeds the limit of {counted(self.max_body, 'byte')}")
            if total > hold.nbytes:  # chunked (or a lying Content-Length): reserve as it comes
                more = max(total - hold.nbytes, _READ_CHUNK_HOLD)
                self._writer.reserve(more, own=hold.nbytes)
                hold.nbytes += more
            if self._stopping:  # a slow sender would hold the shutdown past its grace period
                raise OtlpError(503, "the collector is shutting down", reason="shutting_down")
            chunks.append(chunk)
        return b"".join(chunks)

    def _decode(self, ctype: str, gzipped: bool, body: bytes, hold: _Hold) -> PendingRequest:
        """Gunzip and parse (on the decode pool), holding bytes for what the result costs."""
        if gzipped:
            body = gunzip_bounded(body, self.max_body)
        cost = DECODED_COST * len(body)
        if cost > hold.nbytes:
            self._writer.reserve(cost - hold.nbytes, own=hold.nbytes)
            hold.nbytes = cost
        if ctype == PROTOBUF:
            request = parse_protobuf(body)
            return PendingRequest(count_protobuf_spans(request), body=body, request=request)
        decoded = decode_json(body)
        return PendingRequest(len(decoded), decoded=decoded)

    def _refuse(self, request: Request, reply: str, exc: OtlpError) -> Response:
        with self._lock:
            self.stats.count_refusal(exc.status, exc.reason)
        level = logging.INFO if exc.status == 503 else logging.WARNING
        self._limited.log(
            level,
            f"refused-{exc.status}",
            "refused request from %s: %d %s",
            _client(request),
            exc.status,
            exc,
        )
        headers = {}
        if exc.status == 503:
            headers["Retry-After"] = str(self.retry_after)
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if exc.status == 408:
            headers["Connection"] = "close"  # a stalled body is not waited for again
        return Response(
            status_body(reply, exc.status, exc.message),
            exc.status,
            headers=headers,
            media_type=reply,
        )

    def _closed_slow(self, reason: str) -> None:
        self._limited.log(
            logging.WARNING,
            f"closed-{reason}",
            "closed a connection (%s; at most %s, headers within %g s, body "
            "bytes at least every %g s, a whole body within %g s)",
            reason,
            counted(self._guard.max_connections if self._guard else 0, "connection"),
            self._guard_settings[1],
            self.body_timeout,
            self.body_deadline,
        )


# ---------------------------------------------------------------------- helpers


class _Router:
    """The collector's three routes as a bare ASGI app: a dict lookup, no middleware stack.

    (Starlette's application and router cost about half of what a request that only sends
    headers costs the event loop; a thousand slow clients must cost it little.)
    """

    def __init__(self, routes: dict[tuple[str, str], Callable[[Request], Any]]) -> None:
        self.routes = routes
        self.paths = {path for path, _ in routes}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        handler = self.routes.get((scope["path"], scope["method"]))
        if handler is None:
            known = scope["path"] in self.paths
            if known:
                body, status = b"method not allowed\n", 405
            else:
                body, status = b"not found\n", 404
            response = Response(body, status, media_type="text/plain")
        else:
            try:
                response = await handler(Request(scope, receive))
            except Exception:
                log.exception("internal error in %s %s", scope["method"], scope["path"])
                response = Response(b"internal error\n", 500, media_type="text/plain")
        await response(scope, receive, send)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it every keep-alive response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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
