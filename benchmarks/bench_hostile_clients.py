"""Benchmark: a ``toolwatch collector`` process under the issue's attacks, measured.

* **fat clients** — N clients (default 96) loop 15 KB gzip bodies that unpack to one span with
  a 15 MiB attribute, OTLP/JSON and protobuf: the collector's peak resident memory (sampled
  every 50 ms; target ≤ 512 MiB), the statuses (503s must carry ``Retry-After``);
* **slow clients** — first the well-behaved client alone (the baseline: each 200 waits for an
  fsync, which on a shared disk may itself take a second), then 1,100 connections send headers
  and part of a body, then stall, against a collector limited to 1,024 descriptors (soft and
  hard: it cannot raise them) and, separately, a soft limit of 1,024 it may raise: a
  well-behaved client sends a request every 250 ms from the start of the burst; its worst and
  median latency (target: every one within 1 s) and when the slow ones were sent, the log's
  growth, "Too many open files" lines;
* **poisoned requests** — 4 clients × 100 valid requests beside one sending year-10000, 10^30,
  "²" and deeply nested spans: valid requests affected (target 0).

The machine is shared: the load average is printed before and after, and the well-behaved
client alone is the slow-client run's baseline. Each target is printed met or MISSED; exits 1
when one is missed (``--no-fail``: report only), and 1 with one line quoting its log's last lines
when a collector does not answer ``/health`` within ``--start-timeout`` seconds (default 30; it
is stopped, not left running). Run:
``.venv/bin/python benchmarks/bench_hostile_clients.py [--fat-clients 96] [--slow 1100]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from toolwatch.usage import positive_float, positive_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from support.collector_process import (
    START_TIMEOUT,
    CollectorDidNotStart,
    Server,
    request,
    tool_span,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, add_no_fail, command_line

FAT = 15 * 2**20
#: the collector's peak resident memory under the fat clients
TARGET_RSS_MIB = 512
#: the well-behaved client's every answer during the slow-client burst
TARGET_LATENCY_S = 1.0


def fat_bodies() -> dict[str, tuple[bytes, str]]:
    fat = [{"key": "fat", "value": {"stringValue": "a" * FAT}}]
    as_json = request([tool_span("fat", fat)])
    pb = ExportTraceServiceRequest()
    span = pb.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = os.urandom(16), os.urandom(8)
    span.start_time_unix_nano = span.end_time_unix_nano = time.time_ns()
    for key, value in (
        ("gen_ai.conversation.id", "fat"),
        ("gen_ai.tool.name", "t"),
        ("fat", "a" * FAT),
    ):
        kv = span.attributes.add()
        kv.key, kv.value.string_value = key, value
    kv = span.attributes.add()
    kv.key, kv.value.int_value = "toolwatch.tool.call.arguments.size", 1
    return {
        "json": (gzip.compress(as_json, 9), "application/json"),
        "protobuf": (gzip.compress(pb.SerializeToString(), 9), "application/x-protobuf"),
    }


def fat_clients(
    tmp: Path, clients: int, seconds: float, *, start_timeout: float = START_TIMEOUT
) -> dict[str, object]:
    return {
        kind: _fat_run(tmp / f"fat-{kind}", body, ctype, clients, seconds, start_timeout)
        for kind, (body, ctype) in fat_bodies().items()
    }


def _fat_run(
    tmp: Path, body: bytes, ctype: str, clients: int, seconds: float, start_timeout: float
) -> dict[str, object]:
    import http.client

    server = Server(tmp, start_timeout=start_timeout)
    statuses: dict[int, int] = {}
    no_retry_after = 0
    lock, stop = threading.Lock(), threading.Event()
    headers = {"Content-Type": ctype, "Content-Encoding": "gzip"}

    def client() -> None:
        nonlocal no_retry_after
        while not stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            conn.request("POST", "/v1/traces", body, headers)
            response = conn.getresponse()
            response.read()
            conn.close()
            with lock:
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.status == 503 and not response.getheader("Retry-After"):
                    no_retry_after += 1

    base = server.rss_mib()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    peak, health = base, []
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        peak = max(peak, server.rss_mib())
        t0 = time.perf_counter()
        server.get("/health", timeout=30)
        health.append(time.perf_counter() - t0)
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    after = server.rss_mib()
    server.stop()
    return {
        "clients": clients,
        "rss_start_mib": round(base),
        "rss_peak_mib": round(peak),
        "rss_after_mib": round(after),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "503_without_retry_after": no_retry_after,
        "health_max_s": round(max(health), 3),
    }


def slow_clients(
    tmp: Path, n: int, seconds: float, *, hard: bool, start_timeout: float = START_TIMEOUT
) -> dict[str, object]:
    server = Server(tmp, fd_limit=1024 if hard else None, start_timeout=start_timeout)
    latencies: list[float] = []
    offsets: list[float] = []  # when each request was sent, from the start of the burst
    statuses: dict[str, int] = {}
    stop = threading.Event()
    began = time.perf_counter()

    def well_behaved() -> None:
        i = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                status = str(server.post(request([tool_span(f"good-{i}")]), timeout=15)[0])
            except OSError as exc:
                status = type(exc).__name__
            latencies.append(time.perf_counter() - t0)
            offsets.append(t0 - began)
            statuses[status] = statuses.get(status, 0) + 1
            i += 1
            time.sleep(0.25)

    log0 = server.log.stat().st_size
    good = threading.Thread(target=well_behaved)
    good.start()
    attackers = []
    t0 = time.monotonic()
    for _ in range(n):
        try:
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n" + b'{"resourceSpans": ['
            )
            attackers.append(conn)
        except OSError:
            break
    opened_s = time.monotonic() - t0
    time.sleep(max(0.0, seconds - (time.monotonic() - t0)))
    stop.set()
    good.join()
    grew = server.log.stat().st_size - log0
    for conn in attackers:
        conn.close()
    log = server.stop()
    return {
        "descriptor_limit": "1024 soft+hard" if hard else "1024 soft (raised to hard)",
        "slow_connections": len(attackers),
        "opened_in_s": round(opened_s, 2),
        "good_requests": len(latencies),
        "good_statuses": statuses,
        "good_max_s": round(max(latencies), 3),
        "good_median_s": round(statistics.median(latencies), 3),
        "good_over_1s": sum(1 for s in latencies if s > 1.0),
        "good_over_1s_sent_at_s": [
            round(o, 1) for o, s in zip(offsets, latencies, strict=True) if s > 1.0
        ],
        "log_growth_kib": round(grew / 1024, 1),
        "too_many_open_files": log.count("Too many open files"),
        "tracebacks": log.count("Traceback"),
    }


def poisoned(tmp: Path, *, start_timeout: float = START_TIMEOUT) -> dict[str, object]:
    server = Server(tmp / "poison", start_timeout=start_timeout)
    poisons = [
        request([tool_span("p") | {"startTimeUnixNano": "253402300800000000000"}]),
        request([tool_span("p") | {"startTimeUnixNano": str(10**30)}]),
        request(
            [
                tool_span(
                    "p", [{"key": "toolwatch.session.position", "value": {"stringValue": "\u00b2"}}]
                )
            ]
        ),
        b"[" * 1000 + b"]" * 1000,
    ]
    stop = threading.Event()
    valid: list[int] = []
    poison: list[int] = []

    def poisoner() -> None:
        i = 0
        while not stop.is_set():
            poison.append(server.post(poisons[i % len(poisons)])[0])
            i += 1

    def client(n: int) -> None:
        for i in range(100):
            valid.append(server.post(request([tool_span(f"v{n}-{i}"), tool_span(f"w{n}-{i}")]))[0])

    bad = threading.Thread(target=poisoner)
    bad.start()
    workers = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    bad.join()
    log = server.stop()
    return {
        "valid_requests": len(valid),
        "valid_not_200": sum(1 for s in valid if s != 200),
        "poison_requests": len(poison),
        "poison_statuses": {str(s): poison.count(s) for s in sorted(set(poison))},
        "tracebacks": log.count("Traceback"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--fat-clients", type=positive_int, default=96)
    parser.add_argument("--fat-seconds", type=positive_float, default=15)
    parser.add_argument("--slow", type=positive_int, default=1100)
    parser.add_argument("--slow-seconds", type=positive_float, default=15)
    parser.add_argument("--start-timeout", type=positive_float, default=START_TIMEOUT)
    add_no_fail(parser)
    args = parser.parse_args(argv)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    try:
        results = _run(args)
    except CollectorDidNotStart as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    targets = check(results)
    print(targets.report())
    return targets.exit_code(args.no_fail)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    """Every attack's results, each printed as it ends."""
    results: dict[str, Any] = {}
    wait = args.start_timeout
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        root = Path(tmp)
        results["poisoned"] = poisoned(root, start_timeout=wait)
        print(json.dumps({"poisoned": results["poisoned"]}), flush=True)
        results["fat_clients"] = fat_clients(
            root, args.fat_clients, args.fat_seconds, start_timeout=wait
        )
        print(json.dumps({"fat_clients": results["fat_clients"]}), flush=True)
        # the baseline: the well-behaved client alone (its 200 waits for an fsync, which on a
        # shared disk can itself take over a second)
        runs = [("slow_clients_baseline_no_attackers", 0, False)]
        for hard in (True, False):
            runs.append((f"slow_clients_{'hard' if hard else 'soft'}_limit", args.slow, hard))
        for key, n, hard in runs:
            results[key] = slow_clients(
                root / key, n, args.slow_seconds, hard=hard, start_timeout=wait
            )
            print(json.dumps({key: results[key]}), flush=True)
    return results


def check(results: dict[str, Any]) -> Targets:
    """The docstring's targets against one run's results (the well-behaved client alone is
    shown beside the attacked runs, not held to the target: its answers wait for the disk)."""
    targets = Targets()
    for kind, run in results["fat_clients"].items():
        peak = run["rss_peak_mib"]
        targets.check(f"fat clients ({kind}) peak RSS", peak, "<=", TARGET_RSS_MIB, " MiB")
        missing = run["503_without_retry_after"]
        targets.check(f"fat clients ({kind}) 503s without Retry-After", missing, "==", 0)
    alone = results["slow_clients_baseline_no_attackers"]["good_max_s"]
    for key, run in results.items():
        if key.startswith("slow_clients_") and key != "slow_clients_baseline_no_attackers":
            name = f"{key} worst answer (alone: {alone} s)"
            targets.check(name, run["good_max_s"], "<=", TARGET_LATENCY_S, " s")
    affected = results["poisoned"]["valid_not_200"]
    targets.check("valid requests affected by poison", affected, "==", 0)
    return targets


if __name__ == "__main__":
    sys.exit(main())
