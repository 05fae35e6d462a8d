"""A span processor that sends toolwatch's spans to a collector and *counts* what became of them.

The SDK's ``BatchSpanProcessor`` drops spans when its queue (2,048) is full, says so only in a
log line, and cannot tell anyone how many went missing: a run of the workbench lost up to 48 %
of its calls that way. :class:`ToolwatchSpanProcessor` batches and exports the same way, but

* keeps only the spans of the scopes it is given (toolwatch's own, by default), so it can be
  added to an application's existing tracer provider next to its other exporters;
* when its queue is full either waits for room (``block=True``: nothing is lost, the caller is
  slowed) or drops the span — and counts every span ended, exported, failed and dropped, so
  :meth:`ToolwatchSpanProcessor.flush` returns a :class:`Delivery` a caller can check against
  what the collector stored.

Only the SDK's public ``SpanProcessor``/``SpanExporter`` interfaces are used (no private
state), so it behaves the same across the supported OpenTelemetry versions.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from toolwatch.words import counted

log = logging.getLogger(__name__)

DEFAULT_MAX_QUEUE: Final = 8192
DEFAULT_MAX_BATCH: Final = 512
DEFAULT_DELAY_S: Final = 0.5
#: How long :meth:`ToolwatchSpanProcessor.shutdown` — the provider's exit hook — waits for the
#: collector: a dead or hung one must not hold up the agent's exit (the SDK's 30 s flush and
#: the exporter's retries held it 7-40 s).
DEFAULT_SHUTDOWN_S: Final = 5.0
#: At most one WARNING per this many seconds while the collector cannot be reached: the OTLP
#: exporter logged each retry of each batch (a line every 1-2 s for as long as it was down).
WARN_INTERVAL_S: Final = 60.0
#: Seconds for that budget when the code gives none (``shutdown_timeout=None``): an agent's
#: operator sets it without touching code, as the OTel SDK's own settings are set.
ENV_SHUTDOWN_TIMEOUT: Final = "TOOLWATCH_SHUTDOWN_TIMEOUT"


def shutdown_timeout_from_env() -> float:
    """``$TOOLWATCH_SHUTDOWN_TIMEOUT`` in seconds, else :data:`DEFAULT_SHUTDOWN_S`; a value
    that is not a finite number >= 0 is said in one WARNING and the default used (a setting
    must not stop the agent)."""
    raw = os.environ.get(ENV_SHUTDOWN_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_SHUTDOWN_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds < math.inf:
        log.warning(
            "toolwatch: %s=%r is not a number of seconds >= 0; using %g s",
            ENV_SHUTDOWN_TIMEOUT,
            raw,
            DEFAULT_SHUTDOWN_S,
        )
        return DEFAULT_SHUTDOWN_S
    return seconds


@dataclass(frozen=True, slots=True)
class Delivery:
    """What became of the spans a processor was given (counts since it was made)."""

    ended: int  # spans of the kept scopes that ended
    exported: int  # accepted by the endpoint (HTTP success)
    failed: int  # in a batch the endpoint refused or could not be reached for
    dropped: int  # never sent: the queue was full (or the processor shut down)
    queued: int  # still waiting (0 after a successful flush)

    @property
    def lost(self) -> int:
        return self.failed + self.dropped

    def check(self, received: int, rejected: int = 0) -> str | None:
        """None when every span ended was exported and the collector ``received`` them all
        and ``rejected`` none, else one line saying what is missing and why (for a command
        to print: its results rest on incomplete telemetry)."""
        if not self.lost and not self.queued and received == self.ended and not rejected:
            return None
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped:,} dropped by a full export queue")
        if self.failed:
            parts.append(f"{self.failed:,} in batches the collector refused or never got")
        if self.queued:
            parts.append(f"{self.queued:,} still queued at the end")
        if rejected:
            parts.append(f"{rejected:,} rejected by the collector")
        if received != self.exported:
            parts.append(f"the collector counted {received:,}, the exporter {self.exported:,}")
        stored = min(received, self.exported) - rejected
        return f"{stored:,} of {counted(self.ended, 'span')} reached the store ({'; '.join(parts)})"


class ToolwatchSpanProcessor(SpanProcessor):
    """Batches the spans of ``scopes`` to ``exporter`` on a background thread, counting them.

    ``scopes=None`` keeps every span. ``block``: wait for room when the queue is full (up to
    ``block_timeout`` seconds, then drop) instead of dropping at once. ``shutdown_timeout``:
    what :meth:`shutdown` (the provider's exit hook) spends delivering before it counts the
    rest as lost; ``None``: ``$TOOLWATCH_SHUTDOWN_TIMEOUT``, else 5 s. ``warn_interval``: a
    failed export is one WARNING at most this often (seconds), the exporter's own log lines of
    it kept back (:class:`_ExporterLogGate`).
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        scopes: Collection[str] | None,
        max_queue_size: int = DEFAULT_MAX_QUEUE,
        max_export_batch_size: int = DEFAULT_MAX_BATCH,
        schedule_delay: float = DEFAULT_DELAY_S,
        block: bool = False,
        block_timeout: float = 30.0,
        shutdown_timeout: float | None = None,
        warn_interval: float = WARN_INTERVAL_S,
    ) -> None:
        if shutdown_timeout is None:
            shutdown_timeout = shutdown_timeout_from_env()
        if max_queue_size < 1 or max_export_batch_size < 1:
            raise ValueError("queue and batch sizes must be at least 1")
        if not shutdown_timeout >= 0:
            raise ValueError(f"shutdown_timeout must be >= 0 seconds, got {shutdown_timeout}")
        self.exporter = exporter
        self.scopes = frozenset(scopes) if scopes is not None else None
        self.max_queue_size = max_queue_size
        self.max_export_batch_size = min(max_export_batch_size, max_queue_size)
        self.schedule_delay = schedule_delay
        self.block = block
        self.block_timeout = block_timeout
        self.shutdown_timeout = shutdown_timeout
        self._cond = threading.Condition()
        self._queue: collections.deque[ReadableSpan] = collections.deque()
        self._in_flight = 0
        self._ended = self._exported = self._failed = self._dropped = 0
        self._flush_wanted = False
        self._closed = False
        self._abandoned = False  # the batch in flight at shutdown was counted as failed then
        self._warned_full = False
        self.warn_interval = warn_interval
        self._warned_at: float | None = None  # monotonic time of the last failure warning
        self._unsaid = 0  # spans failed since then
        self._reason: str | None = None  # what the exporter logged of the last failure
        self._worker: threading.Thread | None = None
        _live.add(self)

    # ------------------------------------------------------------------ SpanProcessor

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        pass

    def keeps(self, span: ReadableSpan) -> bool:
        if self.scopes is None:
            return True
        scope = span.instrumentation_scope
        return scope is not None and scope.name in self.scopes

    def on_end(self, span: ReadableSpan) -> None:
        if not self.keeps(span):
            return
        with self._cond:
            self._ended += 1
            if self._closed:
                self._dropped += 1
                return
            self._ensure_worker()
            if len(self._queue) >= self.max_queue_size:
                room = self.block and self._cond.wait_for(
                    lambda: len(self._queue) < self.max_queue_size or self._closed,
                    self.block_timeout,
                )
                if not room or self._closed:
                    self._dropped += 1
                    if not self._warned_full:
                        self._warned_full = True
                        log.warning(
                            "toolwatch: export queue full (%s); dropping spans (counted)",
                            counted(self.max_queue_size, "span"),
                        )
                    return
            self._queue.append(span)
            if len(self._queue) >= self.max_export_batch_size:
                self._cond.notify_all()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            if self._worker is None and not self._queue:
                return True
            self._ensure_worker()
            self._flush_wanted = True
            self._cond.notify_all()
            done = self._cond.wait_for(
                lambda: not self._queue and not self._in_flight,
                max(0.0, deadline - time.monotonic()),
            )
            self._flush_wanted = False
            return bool(done)

    def shutdown(self) -> None:
        """Deliver what is queued for at most ``shutdown_timeout`` seconds, then stop: spans
        still queued count as dropped and a batch still being sent as failed (its answer is
        not waited for; the export thread is a daemon), logged once at WARNING."""
        deadline = time.monotonic() + self.shutdown_timeout
        self.force_flush(int(self.shutdown_timeout * 1000))
        with self._cond:
            if self._closed:
                return
            self._closed = True
            queued = len(self._queue)
            self._dropped += queued
            self._queue.clear()
            self._cond.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            sending = self._in_flight
            if sending:
                self._failed += sending
                self._in_flight = 0
                self._abandoned = True
        if self._unsaid:  # failed since the last warning: said before the process goes
            log.warning(
                "toolwatch: %s failed to reach the collector since the last warning",
                counted(self._unsaid, "more span"),
            )
            self._unsaid = 0
        if queued or sending:
            log.warning(
                "toolwatch: %s not delivered at shutdown (the collector did not take them "
                "within %.1f s); counted as lost",
                counted(queued + sending, "span"),
                self.shutdown_timeout,
            )
        self.exporter.shutdown()

    # ------------------------------------------------------------------ counts

    def delivery(self) -> Delivery:
        with self._cond:
            return Delivery(
                ended=self._ended,
                exported=self._exported,
                failed=self._failed,
                dropped=self._dropped,
                queued=len(self._queue) + self._in_flight,
            )

    def flush(self, timeout: float = 30.0) -> Delivery:
        """Export everything queued (up to ``timeout`` seconds) and return the counts."""
        self.force_flush(int(timeout * 1000))
        return self.delivery()

    # ------------------------------------------------------------------ worker

    def _after_fork(self) -> None:
        """In a forked child: fresh lock, no thread, and the parent's queue is the parent's."""
        self._cond = threading.Condition()
        self._queue.clear()
        self._in_flight = 0
        self._worker = None

    def _ensure_worker(self) -> None:
        """Start the export thread (once; again in a forked child); the lock is held."""
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(
                target=self._run, name="toolwatch-span-export", daemon=True
            )
            self._worker.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: (
                        self._closed
                        or self._flush_wanted
                        or len(self._queue) >= self.max_export_batch_size
                    ),
                    self.schedule_delay,
                )
                if self._closed and not self._queue:
                    return
                batch = [
                    self._queue.popleft()
                    for _ in range(min(len(self._queue), self.max_export_batch_size))
                ]
                self._in_flight = len(batch)
                self._cond.notify_all()  # room for a blocked on_end
            if batch:
                ok = self._export(batch)
            with self._cond:
                if batch and not self._abandoned:  # else shutdown counted it as failed
                    if ok:
                        self._exported += len(batch)
                    else:
                        self._failed += len(batch)
                self._in_flight = 0
                self._cond.notify_all()

    def _export(self, batch: Sequence[ReadableSpan]) -> bool:
        _GATE.install()
        _exporting.processor = self  # the exporter's log lines of this export come to us
        self._reason = None
        # suppressed: an instrumented HTTP client must not trace the export's own request
        with suppress_instrumentation():
            try:
                ok = self.exporter.export(batch) is SpanExportResult.SUCCESS
            except Exception as exc:  # an exporter raising (old versions, on a refused connection)
                self._reason = type(exc).__name__
                ok = False
            finally:
                _exporting.processor = None
        if not ok:
            self._say_failed(len(batch))
        return ok

    def _say_failed(self, spans: int) -> None:
        """One WARNING per ``warn_interval`` for the failed exports, with the spans they held
        and the exporter's last word on why (a collector down for hours is a few lines)."""
        self._unsaid += spans
        now = time.monotonic()
        if self._warned_at is not None and now - self._warned_at < self.warn_interval:
            return
        since = "" if self._warned_at is None else f" in the last {now - self._warned_at:.0f} s"
        log.warning(
            "toolwatch: could not deliver %s to the collector%s (%s); counted as failed, "
            "said at most every %g s",
            counted(self._unsaid, "span"),
            since,
            self._reason or "the export failed",
            self.warn_interval,
        )
        self._warned_at = now
        self._unsaid = 0

    def _heard(self, record: logging.LogRecord) -> None:
        """A log line of the exporter during this processor's export: the first is kept as the
        reason (it names the cause; the last only says the retries ran out)."""
        if self._reason is not None:
            return
        message = record.getMessage()
        self._reason = message if len(message) <= 300 else message[:297] + "..."


#: The processor whose export the current thread is running (the exporter's logs are its).
_exporting = threading.local()


class _ExporterLogGate(logging.Filter):
    """Keeps back the OTLP exporter's log lines of toolwatch's own exports (each retry of each
    batch was a WARNING) and hands them to the processor, which says it once per interval.
    Installed on every ``opentelemetry.exporter`` logger (their names differ between
    OpenTelemetry releases); lines of other threads — the application's own exporters — pass.
    """

    def __init__(self) -> None:
        super().__init__()
        self._seen = -1  # how many loggers existed at the last scan

    def filter(self, record: logging.LogRecord) -> bool:
        processor = getattr(_exporting, "processor", None)
        if processor is None:
            return True
        processor._heard(record)
        return False

    def install(self) -> None:
        loggers = logging.Logger.manager.loggerDict
        if len(loggers) == self._seen:
            return
        self._seen = len(loggers)
        for name, logger in list(loggers.items()):
            if (
                name.startswith("opentelemetry.exporter")
                and isinstance(logger, logging.Logger)
                and self not in logger.filters
            ):
                logger.addFilter(self)


_GATE = _ExporterLogGate()


_live: weakref.WeakSet[ToolwatchSpanProcessor] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for processor in list(_live):
        processor._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
