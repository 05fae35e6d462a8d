"""Durability and flow control: acknowledged means on disk (kill -9), graceful shutdown
flushes, a full write queue answers 503 + Retry-After, writes are grouped, ``on_batch`` can
fail without losing anything, and small files are compacted.
"""

from __future__ import annotations

import logging
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.collector import PB, GatedStore, SpanSpec, call, pb_request, post, scrape_metrics
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_status, decode_success
from toolwatch.collector.store import CALLS_SCHEMA, Store

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)/v1/traces")


def _count(store: Store) -> int:
    return int(store.query("SELECT count(*) AS n FROM calls").column("n")[0].as_py())


class _CollectorProcess:
    """``toolwatch collector`` as a real subprocess, its stderr read on a thread."""

    def __init__(self, store: Path, *extra: str) -> None:
        command = [sys.executable, "-m", "toolwatch", "collector", "--port", "0"]
        self.proc = subprocess.Popen(
            [*command, "--store", str(store), *extra],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for(LISTENING).group(1)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            self.lines.put(line)

    def _wait_for(self, pattern: re.Pattern[str], timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            match = pattern.search(line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern.pattern!r}; log:\n{''.join(self.log)}")


def test_acknowledged_spans_survive_kill_9(tmp_path: Path) -> None:
    root = tmp_path / "store"
    proc = _CollectorProcess(root)
    try:
        bodies = [
            pb_request([SpanSpec(call(seq=i * 100 + j)) for j in range(100)]) for i in range(8)
        ]
        with ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(lambda b: post(proc.url, b), bodies))
        proc.proc.kill()  # SIGKILL right after the last 200: no chance to flush anything
        proc.proc.wait(30)
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
    assert [r.status for r in replies] == [200] * 8
    assert proc.proc.returncode == -signal.SIGKILL
    store = Store(root)
    assert store.verify() == []  # no torn file is visible to readers
    assert _count(store) == 800
    assert store.query("SELECT count(DISTINCT span_id) AS n FROM calls").to_pylist() == [{"n": 800}]


def test_sigterm_drains_compacts_and_logs_counts(tmp_path: Path) -> None:
    root = tmp_path / "store"
    proc = _CollectorProcess(root, "--compact-interval", "0")
    try:
        for i in range(10):
            assert post(proc.url, pb_request([SpanSpec(call(seq=i))])).status == 200
        assert len(Store(root).files("calls")) == 10
        proc.proc.send_signal(signal.SIGTERM)
        stopped = proc._wait_for(re.compile(r"collector stopped: (\d+) requests?.* (\d+) calls?"))
        assert proc.proc.wait(30) == 0
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
    assert stopped.group(1) == "10" and stopped.group(2) == "10"
    # the first stored batch is logged at once (later ones at most once a minute)
    assert any(
        "stored 1 call and 0 tool listings from 1 span in 1 request (first batch" in line
        for line in proc.log
    ), "".join(proc.log)
    assert len(Store(root).files("calls")) == 1  # ten one-row files compacted at shutdown
    assert _count(Store(root)) == 10


def test_full_write_queue_answers_503_with_retry_after(tmp_path: Path) -> None:
    store = GatedStore(tmp_path)
    big = pb_request([SpanSpec(call(seq=i)) for i in range(1000)])
    small = pb_request([SpanSpec(call(seq=5000))])
    with Collector(store, queue_limit=1000, retry_after=3) as c, ThreadPoolExecutor(2) as pool:
        store.gate.clear()
        first = pool.submit(post, c.url, big)
        assert store.waiting.wait(30)  # the writer holds 1,000 spans that are not durable yet
        refused = post(c.url, small)
        assert refused.status == 503
        assert refused.headers["retry-after"] == "3"
        assert "queue full" in decode_status(PB, refused.body)[1]
        store.gate.set()
        assert first.result(60).status == 200
        assert post(c.url, small).status == 200  # retried once the queue drained
        assert c.stats.unavailable_by == {"queue_spans": 1}  # said apart from other 503s
        scraped = scrape_metrics(c.port)[1].splitlines()
        assert 'toolwatch_collector_requests_unavailable_total{reason="queue_spans"} 1.0' in scraped
    assert _count(store) == 1001


def test_a_request_refused_for_a_full_queue_gives_its_bytes_back(tmp_path: Path) -> None:
    """Back-pressure must not eat the byte budget: once the queue drains and every request is
    answered, nothing is held (a refused request's reservation used to stay held for good)."""
    store = GatedStore(tmp_path)
    big = pb_request([SpanSpec(call(seq=i)) for i in range(1000)])
    with Collector(store, queue_limit=1000) as c, ThreadPoolExecutor(2) as pool:
        store.gate.clear()
        first = pool.submit(post, c.url, big)
        assert store.waiting.wait(30)
        refusals = [post(c.url, pb_request([SpanSpec(call(seq=5000 + i))])) for i in range(5)]
        assert [r.status for r in refusals] == [503] * 5
        assert c.stats.queue_bytes > 0  # the admitted request still holds its bytes
        store.gate.set()
        assert first.result(60).status == 200
        assert c.stats.queue_bytes == 0 and c.stats.queue_spans == 0
    assert _count(store) == 1000


def test_a_request_larger_than_the_byte_budget_is_let_in_when_alone(tmp_path: Path) -> None:
    """Body, then three times it for decoding: both steps count the request's own bytes as its
    own, so an idle collector takes a request above a quarter of ``queue_bytes`` (it used to be
    refused with 503 for ever, the bytes 'held' being its own body)."""
    store = Store(tmp_path)
    body = pb_request([SpanSpec(call(seq=i)) for i in range(500)])
    with Collector(store, queue_bytes=len(body) * 2, max_body=len(body) * 10) as c:
        assert post(c.url, body).status == 200
        assert post(c.url, body, gzip_body=True).status == 200  # inflates past the budget
        assert c.stats.queue_bytes == 0
    assert _count(store) == 500  # the second copy is the same spans, stored once


def test_concurrent_requests_are_written_as_one_group(tmp_path: Path) -> None:
    store = GatedStore(tmp_path)
    bodies = [pb_request([SpanSpec(call(seq=i * 10 + j)) for j in range(10)]) for i in range(6)]
    with Collector(store) as c, ThreadPoolExecutor(6) as pool:
        store.gate.clear()
        first = pool.submit(post, c.url, bodies[0])
        assert store.waiting.wait(30)
        rest = [pool.submit(post, c.url, b) for b in bodies[1:]]

        def mapped_and_waiting() -> int:  # the mapper keeps going while the writer is held
            groups = [g for g in list(c._writer._mapped.queue) if isinstance(g, tuple)]
            return sum(len(items) for items, _ in groups) if c._writer._queue.empty() else -1

        deadline = time.monotonic() + 30
        while mapped_and_waiting() < 5 and time.monotonic() < deadline:  # all five waiting
            time.sleep(0.01)
        assert mapped_and_waiting() == 5
        store.gate.set()
        assert [f.result(60).status for f in [first, *rest]] == [200] * 6
        c.stop()
        assert (c.stats.batches, c.stats.calls) == (2, 60)  # 1 + one group of 5 requests
    assert _count(store) == 60


def test_stop_answers_in_flight_requests_after_their_write(tmp_path: Path) -> None:
    store = GatedStore(tmp_path)
    c = Collector(store).start()
    with ThreadPoolExecutor(2) as pool:
        store.gate.clear()
        in_flight = pool.submit(post, c.url, pb_request([SpanSpec(call(seq=i)) for i in range(5)]))
        assert store.waiting.wait(30)
        stopping = pool.submit(c.stop)
        time.sleep(0.3)
        assert not stopping.done()  # stop waits for the admitted request
        store.gate.set()
        reply = in_flight.result(60)
        stopping.result(60)
    assert reply.status == 200
    assert _count(store) == 5


def test_stop_answers_a_body_still_trickling_in_with_503(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sender writing a byte every 0.2 s never trips the body timeout (it is per chunk): the
    stop used to wait out uvicorn's 30 s grace, then cancel the request with an ERROR
    traceback and no answer. Now the next chunk after stop() gets a counted 503."""
    import socket

    c = Collector(Store(tmp_path)).start()
    sock = socket.create_connection(("127.0.0.1", c.port))
    sock.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    done = threading.Event()

    def trickle() -> None:
        while not done.is_set():
            try:
                sock.sendall(b"\x00")
            except OSError:
                return
            time.sleep(0.2)

    sender = threading.Thread(target=trickle)
    sender.start()
    time.sleep(0.5)
    stopper = threading.Thread(target=c.stop)
    began = time.monotonic()
    stopper.start()
    sock.settimeout(10)
    answer = sock.recv(4096)
    stopper.join(20)
    done.set()
    sender.join()
    sock.close()
    assert answer.startswith(b"HTTP/1.1 503"), answer
    assert not stopper.is_alive() and time.monotonic() - began < 10
    assert c.stats.refused.get(503) == 1 and c.stats.unavailable_by == {"shutting_down": 1}
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text


class _FailingOnce(Store):
    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self.failures = 1

    def append(self, table_name: str, rows: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise OSError(28, "No space left on device")
        return super().append(table_name, rows, **kwargs)


def test_a_failed_write_is_503_and_nothing_is_acknowledged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _FailingOnce(tmp_path)
    body = pb_request([SpanSpec(call())])
    with caplog.at_level(logging.INFO, "toolwatch.collector"), Collector(store) as c:
        reply = post(c.url, body)
        assert reply.status == 503 and "retry-after" in reply.headers
        assert "No space left" in decode_status(PB, reply.body)[1]
        assert post(c.url, body).status == 200  # the client's retry succeeds
        assert c.stats.unavailable_by == {"store_write_failed": 1}  # not a full queue
    assert _count(store) == 1
    assert "refused requests {503: 1} (store_write_failed: 1)" in caplog.text  # the last line


def test_on_batch_sees_durable_batches_and_its_errors_lose_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    seen: list[tuple[int, int]] = []

    def on_batch(table: pa.Table) -> None:
        assert table.schema == CALLS_SCHEMA
        seen.append((table.num_rows, _count(store)))  # already on disk when called
        if len(seen) == 1:
            raise RuntimeError("scorer crashed")

    with Collector(store, on_batch=on_batch) as c:
        for n in (3, 4):
            specs = [SpanSpec(call(seq=i)) for i in range(n)]
            assert decode_success(PB, post(c.url, pb_request(specs)).body) == (0, "")
    assert [rows for rows, _ in seen] == [3, 4]
    assert seen[0][1] >= 3 and seen[1][1] >= 7  # each batch was durable before the call
    assert c.stats.callback_errors == 1
    assert _count(store) == 7


def test_slow_on_batch_does_not_hold_up_ingest(tmp_path: Path) -> None:
    release = threading.Event()
    with Collector(Store(tmp_path), on_batch=lambda t: release.wait(30)) as c:
        started = time.monotonic()
        for i in range(5):
            assert post(c.url, pb_request([SpanSpec(call(seq=i))])).status == 200
        assert time.monotonic() - started < 10
        release.set()


@pytest.mark.parametrize("interval", [0.2])
def test_periodic_compaction_keeps_every_row(tmp_path: Path, interval: float) -> None:
    store = Store(tmp_path)
    with Collector(store, compact_interval=interval) as c:
        for i in range(12):
            assert post(c.url, pb_request([SpanSpec(call(seq=i))])).status == 200
        deadline = time.monotonic() + 20

        # a pass merges a partition once it has 8 small files (Store.compact's min_files), so
        # 12 files end as 1 to 5 depending on when the passes fall between the requests (the
        # count is of calls files: compacted_files also counts the ingest table's merges)
        # the file listing takes no lock: it can show a merge mid-commit, before the pass has
        # counted it, so wait for both
        def merged() -> bool:
            return len(store.files("calls")) <= 5 and c.stats.compacted_files >= 7

        while not merged() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert merged()
        assert _count(store) == 12
        assert post(c.url, pb_request([SpanSpec(call(seq=99))])).status == 200
    assert _count(store) == 13


def test_a_full_disk_is_one_error_line_per_10_s_not_one_per_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every group write failing while senders retry logged one ERROR per group (hundreds a
    second under load, into a log that may share the full disk); now one per cause per 10 s,
    then how many were held back. Every request is still answered 503."""
    store = _FailingOnce(tmp_path)
    store.failures = 10**9
    with caplog.at_level("INFO"), Collector(store, compact_interval=None) as c:
        replies = [post(c.url, pb_request([SpanSpec(call(seq=i))])) for i in range(20)]
    assert {r.status for r in replies} == {503}
    errors = [
        r for r in caplog.records if r.levelname == "ERROR" and "could not write" in r.message
    ]
    assert len(errors) == 1 and "No space left on device" in errors[0].message


def test_each_write_carries_a_rising_arrival_mark_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live scorer's catch-up re-scores the writes after the last one it scored, so every
    row carries its write's ``received_time``: one value per write, the one ``on_batch`` sees,
    rising — also across a restart whose clock stepped back an hour (the writer starts from the
    newest mark stored)."""
    store = Store(tmp_path)
    seen: list[set[Any]] = []

    def on_batch(table: pa.Table) -> None:
        seen.append(set(table.column("received_time").to_pylist()))

    with Collector(store, on_batch=on_batch) as c:
        for n in (3, 4):
            specs = [SpanSpec(call(seq=n * 10 + i)) for i in range(n)]
            assert decode_success(PB, post(c.url, pb_request(specs)).body) == (0, "")
    first = store.query("SELECT DISTINCT received_time AS t FROM calls ORDER BY t")
    marks = first.column("t").to_pylist()
    assert len(marks) == 2 and marks[0] < marks[1] and [{m} for m in marks] == seen

    hour_ago = time.time_ns() - 3_600_000_000_000
    monkeypatch.setattr("toolwatch.collector.otlp.writer.time.time_ns", lambda: hour_ago)
    with Collector(store) as c:
        specs = [SpanSpec(call(seq=90 + i)) for i in range(2)]
        assert decode_success(PB, post(c.url, pb_request(specs)).body) == (0, "")
    later = store.query("SELECT DISTINCT received_time AS t FROM calls ORDER BY t")
    assert later.num_rows == 3 and later.column("t")[2].as_py() > marks[1]
