"""The OTLP/HTTP collector: ``POST /v1/traces`` → call records in the Parquet store.

Request path (event-loop thread): bearer token (401) → media type and content coding (415) →
body size, on the wire and after bounded gunzip (413) → decode (400: protobuf is parsed as
``ExportTraceServiceRequest``, JSON by hand) → admission against the write queue (503 +
``Retry-After``) → wait for the write → 200, with ``partial_success`` when spans were rejected.
Responses use the request's encoding; errors carry a ``google.rpc.Status``.

Write path (:mod:`toolwatch.collector.otlp.writer`): admitted requests are mapped and written
in groups — group commit — and only then answered, so an acknowledged span survives ``kill
-9``; ``on_batch(calls)`` and ``on_listings(tool_lists)`` run on their own thread after the
durable write, so a slow or failing consumer (the live scorer, the listing watcher) never holds
up ingest and never loses data. A maintenance thread compacts small files periodically, and
:meth:`Collector.stop` drains everything, then compacts once more.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Final

import pyarrow as pa
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

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
from toolwatch.collector.otlp.writer import (
    CollectorStats,
    GroupCommitWriter,
    PendingRequest,
    WriteFailed,
)
from toolwatch.collector.store import Store

log = logging.getLogger(__name__)

DEFAULT_PORT: Final = 4318
DEFAULT_MAX_BODY: Final = 16 * 1024 * 1024  # bytes, on the wire and after decompression
DEFAULT_QUEUE_LIMIT: Final = 100_000  # spans admitted but not yet durable (~0.2 GB parsed)
DEFAULT_COMPACT_INTERVAL: Final = 300.0  # seconds
DEFAULT_PROGRESS_INTERVAL: Final = 60.0  # seconds between "stored ..." log lines under traffic


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
        on_listings: Callable[[pa.Table], object] | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.token = token or None
        self.max_body = max_body
        self.retry_after = retry_after
        self.stats = CollectorStats()
        self._lock = threading.Lock()  # guards stats, shared with the writer
        self._writer = GroupCommitWriter(
            store,
            self.stats,
            self._lock,
            on_batch=on_batch,
            on_listings=on_listings,
            queue_limit=queue_limit,
            retry_after=retry_after,
            compact_interval=compact_interval,
            progress_interval=progress_interval,
        )
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
        self._writer.shutdown(timeout)
        self._writer.compact()
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
            self._writer.admit(item)
            try:
                mapped = await item.future
            except WriteFailed as exc:
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

    def _decode(self, ctype: str, body: bytes) -> PendingRequest:
        loop = asyncio.get_running_loop()
        if ctype == PROTOBUF:
            request = parse_protobuf(body)
            n = count_protobuf_spans(request)
            return PendingRequest(n, loop, loop.create_future(), body=body, request=request)
        decoded = decode_json(body)
        return PendingRequest(len(decoded), loop, loop.create_future(), decoded=decoded)

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


# ---------------------------------------------------------------------- helpers


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
