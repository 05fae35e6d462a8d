"""A ``toolwatch collector`` process under resource attacks (the issue's reproductions):

* 96 clients each sending 15 KB of gzip that unpacks to one span with a 15 MiB attribute: the
  collector's resident memory stays under 512 MiB (peak, sampled), any excess gets 503 +
  ``Retry-After``, and ``/health`` is answered meanwhile;
* 1,100 connections that send headers and part of a body, then stall, against a collector
  whose descriptor limit is 1,024 (soft and hard): a well-behaved client is answered
  throughout, nothing logs "Too many open files" in a loop, no traceback.

The 1-second latency target is measured in ``benchmarks/bench_hostile_clients.py`` (timings
belong in benchmarks); here the bound is generous so a loaded CI machine does not fail it.
"""

from __future__ import annotations

import gzip
import os
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.collector_process import Server, request, tool_span

FAT = 15 * 2**20
RSS_LIMIT_MIB = 512


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    yield s
    if s.proc.poll() is None:
        s.stop()


def test_96_fat_clients_keep_memory_under_512_mib(server: Server) -> None:
    fat = [{"key": "fat", "value": {"stringValue": "a" * FAT}}]
    body = gzip.compress(request([tool_span("fat", fat)]), 9)
    assert len(body) < 20_000
    stop = threading.Event()
    statuses: dict[int, int] = {}
    missing_retry_after = []
    lock = threading.Lock()

    def client() -> None:
        while not stop.is_set():
            status, retry_after = server.post(body, gz=True, timeout=120)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 503 and not retry_after:
                    missing_retry_after.append(status)

    threads = [threading.Thread(target=client) for _ in range(96)]
    for t in threads:
        t.start()
    peak, health = 0.0, []
    began = time.monotonic()
    while time.monotonic() - began < 8:
        peak = max(peak, server.rss_mib())
        t0 = time.perf_counter()
        health.append((server.get("/health", timeout=30)[0], time.perf_counter() - t0))
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    print(f"96 fat clients: peak RSS {peak:.0f} MiB, statuses {statuses}")
    assert peak <= RSS_LIMIT_MIB, f"peak RSS {peak:.0f} MiB"
    # Whether the byte budget fills depends on how fast this machine drains it (some runs see
    # no 503 at all): the full budget's 503 + Retry-After is tested deterministically, with
    # the writer held, in test_hostile_input.test_memory_is_bounded_in_bytes_with_503_and_...
    assert statuses.get(200, 0) > 0, statuses
    assert not missing_retry_after and set(statuses) <= {200, 503}
    assert all(code == 200 for code, _ in health)
    assert server.post(request([tool_span("after")]))[0] == 200
    assert "Traceback" not in server.stop()


def test_slow_clients_cannot_starve_a_well_behaved_one(tmp_path: Path) -> None:
    server = Server(tmp_path, fd_limit=1024)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1300:
        pytest.skip("this test process needs 1,300 file descriptors")
    attackers: list[socket.socket] = []
    latencies: list[tuple[int, float]] = []
    try:
        for _ in range(1100):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n" + b'{"resourceSpans": ['
            )
            attackers.append(conn)
        for i in range(6):
            t0 = time.perf_counter()
            status, _ = server.post(request([tool_span(f"good-{i}")]), timeout=15)
            latencies.append((status, time.perf_counter() - t0))
            time.sleep(0.3)
    finally:
        for conn in attackers:
            conn.close()
    time.sleep(0.5)
    after = server.post(request([tool_span("after")]), timeout=15)[0]
    log = server.stop()
    print(f"well-behaved client with 1,100 slow ones: {[round(s, 3) for _, s in latencies]}")
    assert [status for status, _ in latencies] == [200] * 6 and after == 200
    assert max(s for _, s in latencies[1:]) < 1.0  # once the burst is accepted: milliseconds
    assert latencies[0][1] < 5.0  # the first waits behind the burst (benchmark: see above)
    assert log.count("Too many open files") <= 1 and "Traceback" not in log
    assert os.path.getsize(server.log) < 64 * 1024
