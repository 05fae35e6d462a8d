"""POST alerts to a webhook from a background thread, so ingest never waits on the network.

:meth:`WebhookPoster.post` only enqueues (a bounded queue; when it is full the batch is dropped
and counted, never blocking the caller). One daemon thread sends the batches as
``{"alerts": [...]}`` JSON — every batch waiting when it is free in one POST, in order, up to
``max_post_alerts`` alerts (a batch is never split), so a slow receiver gets a backlog in one
answer's time instead of one batch per answer — through a ``urllib3`` pool whose
:class:`urllib3.util.Retry` retries connection errors, timeouts, 408, 429 and 5xx with
exponential backoff (``backoff_s · 2^attempt``, capped at ``max_backoff_s``; a ``Retry-After``
is honoured up to the cap) for ``max_attempts`` attempts in all. Other 4xx answers are not
retried (the receiver rejected the payload). Outcomes are logged and counted in
:attr:`WebhookPoster.stats`. Only an answer's status counts: its body is never read into memory
(the connection is dropped instead).

The sender is a daemon thread, so it never holds a process open; instead, alerts still queued
when the interpreter exits get up to ``exit_timeout_s`` to be delivered (an ``atexit`` hook,
registered while the thread runs) — a collector stopped by SIGINT/SIGTERM right after an
incident still posts it. :meth:`WebhookPoster.close` does the same explicitly.

:attr:`WebhookPoster.alerts` counts alerts, not batches: ``delivered`` (a 2xx answer) and
``undelivered`` — given up after the retries, rejected, dropped from a full queue, or still
queued or in flight when :meth:`close` gave up waiting — so a receiver that is down shows in
the collector's ``/metrics`` and its shutdown line, not only in scattered log lines.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import queue
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import urllib3
from urllib3.util import Retry

from toolwatch.detection.alerting.alerts import alert_json
from toolwatch.words import counted

log = logging.getLogger(__name__)

_STOP = object()
#: Answers worth another attempt: the receiver is busy or broken, not refusing the payload.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def webhook_metrics(poster: WebhookPoster | None) -> dict[str, tuple[str, str, float]]:
    """The webhook's alert counts, every kind (model, rule, listing) through one poster, for
    the collector's metrics (none without a webhook), so a receiver that is down shows in
    ``/metrics``, not only in the log."""
    if poster is None:
        return {}
    return {
        "live_webhook_alerts_delivered": (
            "counter",
            "live alerts (model, rule, listing) the webhook took (2xx)",
            poster.alerts["delivered"],
        ),
        "live_webhook_alerts_undelivered": (
            "counter",
            "live alerts (model, rule, listing) the webhook never got (retries given up, "
            "rejected, queue full, left at shutdown)",
            poster.alerts["undelivered"],
        ),
    }


def metrics_line(metrics: Mapping[str, tuple[str, str, float]]) -> str:
    """``name=value, ...`` of metrics without their ``live_`` prefix: the shutdown lines'
    counts (the live scorer's, or the webhook's alone when no scorer runs)."""
    return ", ".join(
        f"{name.removeprefix('live_')}={value:g}" for name, (_, _, value) in metrics.items()
    )


class WebhookPoster:
    """Deliver alert batches to ``url`` in the background (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        max_queue: int = 1000,
        max_attempts: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        timeout_s: float = 5.0,
        exit_timeout_s: float = 5.0,
        max_post_alerts: int = 500,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"webhook URL must be http(s)://host/..., got {url!r}")
        self.url = url
        self.max_attempts = max(1, int(max_attempts))
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.timeout_s = float(timeout_s)
        self.exit_timeout_s = float(exit_timeout_s)
        self.max_post_alerts = max(1, int(max_post_alerts))
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.stats = {"sent": 0, "failed": 0, "dropped": 0, "retries": 0}
        #: alerts (not batches) the receiver took, and those it never got (module docstring)
        self.alerts = {"delivered": 0, "undelivered": 0}
        self._in_flight = 0  # alerts of the POST being sent now
        self._held: Any = None  # a batch taken from the queue that did not fit the last POST
        self._abandoned = False  # close() gave up: a late answer no longer counts
        self._closed = False
        self._pool = urllib3.PoolManager(
            retries=Retry(
                total=self.max_attempts - 1,
                backoff_factor=self.backoff_s,
                backoff_max=self.max_backoff_s,
                status_forcelist=RETRY_STATUSES,
                allowed_methods=None,  # POST too: a receiver that deduplicates is assumed
                respect_retry_after_header=True,
                raise_on_status=False,  # the last answer is returned, then counted below
            ),
            timeout=urllib3.Timeout(total=self.timeout_s),
            headers={"Content-Type": "application/json", "User-Agent": "toolwatch"},
        )

    def post(self, alerts: Sequence[Mapping[str, Any]]) -> bool:
        """Queue a batch for delivery; ``False`` if it was dropped (queue full or closed)."""
        if not alerts:
            return True
        if self._stop.is_set():
            self.stats["dropped"] += 1
            self.alerts["undelivered"] += len(alerts)
            return False
        self._ensure_thread()
        try:
            self._queue.put_nowait([alert_json(a) for a in alerts])
        except queue.Full:
            self.stats["dropped"] += 1
            self.alerts["undelivered"] += len(alerts)
            log.error(
                "webhook queue full: dropped %s for %s", counted(len(alerts), "alert"), self.url
            )
            return False
        return True

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued batch was delivered or given up; ``False`` on timeout."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Stop the sender after what it can deliver within ``timeout`` seconds (default
        ``exit_timeout_s``); what is left is counted undelivered and logged."""
        if self._closed:  # one poster serves the scorer, the rules and the listings
            return
        self._closed = True
        timeout = self.exit_timeout_s if timeout is None else timeout
        atexit.unregister(self._at_exit)
        self.flush(timeout)
        self._stop.set()
        left = 0
        while True:  # batches the sender will never reach
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                left += len(item)
            self._queue.task_done()
        thread = self._thread
        if thread is not None:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_STOP)
            thread.join(timeout)
            if thread.is_alive():  # still waiting on the receiver: the process ends first
                self._abandoned = True
                held = self._held
                left += self._in_flight + (len(held) if isinstance(held, list) else 0)
        if left:
            self.alerts["undelivered"] += left
            log.error(
                "webhook %s: %s not delivered before the sender stopped",
                self.url,
                counted(left, "alert"),
            )

    # ---------------------------------------------------------------- sender thread

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="toolwatch-webhook", daemon=True
                )
                self._thread.start()
                atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        pending = self._queue.unfinished_tasks
        if pending:
            log.info("webhook %s: delivering %d pending batch(es) before exit", self.url, pending)
        self.close(self.exit_timeout_s)

    def _run(self) -> None:
        while True:
            first, self._held = (self._queue.get() if self._held is None else self._held), None
            if first is _STOP:
                self._queue.task_done()
                return
            batch, taken = self._coalesce(first)
            try:
                self._deliver(batch)
            finally:
                for _ in range(taken):
                    self._queue.task_done()

    def _coalesce(self, first: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """``first`` and the batches queued behind it, in order, as one POST's alerts (at most
        ``max_post_alerts`` unless ``first`` alone is more), and how many queue items that is;
        the batch that does not fit (or the stop) waits in ``_held`` for the next round."""
        batch, taken = list(first), 1
        while self._held is None:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP or len(batch) + len(item) > self.max_post_alerts:
                self._held = item  # its task_done comes when it is sent (or on stop)
                break
            batch.extend(item)
            taken += 1
        return batch, taken

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        self._in_flight = len(batch)
        try:
            self._send(batch)
        finally:
            self._in_flight = 0

    def _send(self, batch: list[dict[str, Any]]) -> None:
        body = json.dumps({"alerts": batch}).encode("utf-8")
        try:
            # the answer's body is never read (only its status counts): a receiver that
            # answers with gigabytes must not fill the collector's memory
            response = self._pool.request("POST", self.url, body=body, preload_content=False)
        except urllib3.exceptions.HTTPError as exc:  # connection errors after every retry
            if self._abandoned:  # already counted undelivered by close()
                return
            self.stats["retries"] += self.max_attempts - 1
            self.stats["failed"] += 1
            self.alerts["undelivered"] += len(batch)
            reason = getattr(exc, "reason", None) or exc
            log.error(
                "webhook %s: gave up on %s: %s", self.url, counted(len(batch), "alert"), reason
            )
            return
        try:
            self._count(response, len(batch))
        finally:
            response.close()  # drops the connection with the body unread; the pool opens anew
            response.release_conn()

    def _count(self, response: urllib3.BaseHTTPResponse, alerts: int) -> None:
        """Count and log the final answer to one batch (and the retries before it)."""
        if self._abandoned:  # already counted undelivered by close()
            return
        history = response.retries.history if response.retries is not None else ()
        self.stats["retries"] += len(history)
        for attempt in history:
            log.warning("webhook %s: %s; retried", self.url, attempt.status or attempt.error)
        if response.status < 300:
            self.stats["sent"] += 1
            self.alerts["delivered"] += alerts
            return
        self.stats["failed"] += 1
        self.alerts["undelivered"] += alerts
        if response.status in RETRY_STATUSES:
            log.error(
                "webhook %s: gave up on %s: HTTP %d",
                self.url,
                counted(alerts, "alert"),
                response.status,
            )
        else:
            log.error(
                "webhook %s rejected %s: HTTP %d",
                self.url,
                counted(alerts, "alert"),
                response.status,
            )
