"""A standard OpenTelemetry collector in front of toolwatch — the shape of a multi-agent
deployment: agents export to ``rotel`` (a Rust OTLP collector, PyPI ``rotel``, a dev
dependency), which batches and forwards OTLP/HTTP protobuf + gzip with the bearer token to
toolwatch. Records and Node-style semconv spans arrive; when toolwatch is slower than rotel's
request timeout, rotel re-sends, and the retried spans are stored once.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.collector import GatedStore, record, rows
from support.collector_process import free_port
from toolwatch.collector.otlp import Collector
from toolwatch.collector.store import Store
from toolwatch.instrumentation import send_records

rotel = pytest.importorskip("rotel")
AGENT = Path(rotel.__file__).parent / "rotel-agent"
TOKEN = "front-s3cret"


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"rotel exited: {proc.stderr.read() if proc.stderr else b''!r}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("rotel did not start listening")


def start_rotel(
    collector: Collector, tmp_path: Path, *extra: str
) -> tuple[str, subprocess.Popen[bytes]]:
    """rotel forwarding to ``collector`` (OTLP/HTTP, gzip, the token); returns its URL."""
    http, grpc = free_port(), free_port()
    command = [
        str(AGENT), "start",
        "--otlp-http-endpoint", f"127.0.0.1:{http}",
        "--otlp-grpc-endpoint", f"127.0.0.1:{grpc}",
        "--exporter", "otlp",
        "--otlp-exporter-endpoint", collector.url,
        "--otlp-exporter-protocol", "http",
        "--otlp-exporter-compression", "gzip",
        "--otlp-exporter-custom-headers", f"Authorization=Bearer {TOKEN}",
        "--traces-batch-timeout", "200ms",
        "--pid-file", str(tmp_path / "rotel.pid"),
        *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_port(http, proc)
    return f"http://127.0.0.1:{http}", proc


def _until(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.1)


@pytest.fixture
def collector(store: Store) -> Iterator[Collector]:
    with Collector(store, token=TOKEN, compact_interval=None) as c:
        yield c


def test_records_arrive_through_rotel_with_the_token(
    collector: Collector, store: Store, tmp_path: Path
) -> None:
    url, proc = start_rotel(collector, tmp_path)
    try:
        records = [record(i) for i in range(300)]
        assert send_records(records, url, batch=100) == 300  # rotel answers at once
        _until(lambda: collector.stats.stored_spans >= 300)
    finally:
        proc.terminate()
        proc.wait(20)
    got = rows(store)
    assert len(got) == 300 and len({r["span_id"] for r in got}) == 300
    assert {r["input_bytes"] for r in got} == {100 + i for i in range(300)}
    assert collector.stats.refused == {}  # the token went through


def test_rotel_retries_are_stored_once(tmp_path: Path) -> None:
    """toolwatch holds its writes for 3 s; rotel's 1 s request timeout makes it re-send the
    same batch: every span is stored exactly once, the re-sends are counted as duplicates."""
    store = GatedStore(tmp_path / "store")
    with Collector(store, token=TOKEN, compact_interval=None) as collector:
        url, proc = start_rotel(
            collector,
            tmp_path,
            "--otlp-exporter-request-timeout", "1s",
            "--otlp-exporter-retry-initial-backoff", "200ms",
        )  # fmt: skip
        try:
            store.gate.clear()
            assert send_records([record(i) for i in range(50)], url) == 50
            _until(lambda: collector.stats.queue_spans >= 50 or store.waiting.is_set())
            time.sleep(3)  # rotel times out and re-sends meanwhile
            store.gate.set()
            _until(lambda: collector.stats.duplicate_spans >= 50, timeout=60)
        finally:
            store.gate.set()
            proc.terminate()
            proc.wait(20)
        stats = collector.stats
    assert len(rows(store)) == 50
    assert stats.stored_spans == 50 and stats.duplicate_spans >= 50
