"""The property-based fuzz of a live ``toolwatch proxy`` in front of a real MCP server (5,000
HTTP actions and 2,000 stdio lines per era by default; CI runs a few hundred in
``tests/injection/proxy/test_fuzz.py``): malformed JSON, wrong JSON-RPC shapes, unknown
methods, huge ids, wrong types in params, notifications with ids, responses to requests never
sent, garbage ``requestState`` / ``inputResponses`` / ``_meta``, hostile headers, session ids
of other clients, DELETEs mid-call, clients that leave mid-stream or without a DELETE, garbage
answers to the server's elicitation; a well-behaved client's round trip every 20 actions.

The contract: no 5xx but a 503, no connection dropped, every well-behaved round answered right,
no traceback in the proxy's log, every line a stdio proxy writes one JSON object, the proxy
alive throughout and its stdio form ending cleanly when its client leaves mid-call, memory
bounded (the proxy's peak RSS, its growth, the upstream processes it keeps). Prints one JSON
summary line and the targets; exits 1 on a miss (a correctness contract: no ``--no-fail``).
Run: ``.venv/bin/python benchmarks/fuzz_proxy.py [--requests 5000] [--stdio-lines 2000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from hypothesis.errors import HypothesisWarning

from toolwatch.usage import non_negative_int, positive_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.proxy_fuzz import FuzzResult, run_http, run_stdio
from support.proxy_fuzz_http import Http, good_round
from support.proxy_process import ProxyProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, command_line

#: The proxy's own peak RSS, and its growth from the first sample to the last (MiB).
TARGET_PEAK_MIB = 512
TARGET_GROWTH_MIB = 64


def _http(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    extra = ["--max-upstream-sessions", str(args.max_upstream_sessions)]
    proxy = ProxyProcess(tmp, "http", extra=extra)
    try:
        result = run_http(proxy, args.requests, every=args.every, seed=args.seed)
        after = good_round(Http(proxy.url), modern=False)
        alive = proxy.proc.poll() is None and after is None
    finally:
        log = proxy.stop()
    return _summary(result, log) | {"alive_after": alive}


def _stdio(tmp: Path, args: argparse.Namespace, modern: bool) -> dict[str, Any]:
    proxy = ProxyProcess(tmp / ("modern" if modern else "legacy"), "stdio")
    try:
        result, not_json = run_stdio(
            proxy, args.stdio_lines, modern=modern, every=args.every, seed=args.seed
        )
    finally:
        log = proxy.stop()
    return _summary(result, log) | {"not_json": not_json, "exit": proxy.proc.returncode}


def _summary(result: FuzzResult, log: str) -> dict[str, Any]:
    first, last = result.memory[0], result.memory[-1]
    return {
        "actions": dict(result.actions),
        "seconds": round(result.seconds, 1),
        "statuses": {str(k): v for k, v in sorted(result.statuses.items())},
        "bad": result.bad[:5],
        "bad_count": len(result.bad),
        "timeouts": dict(result.timeouts),
        "good_rounds": result.good,
        "good_wrong": result.good_failed[:5],
        "good_wrong_count": len(result.good_failed),
        "tracebacks_in_log": log.count("Traceback"),
        "rss_first_mib": first["proxy_rss"],
        "rss_last_mib": last["proxy_rss"],
        "rss_peak_mib": max(m["proxy_peak"] for m in result.memory),
        "processes_max": max(m["processes"] for m in result.memory),
        "tree_rss_max_mib": max(m["tree_rss"] for m in result.memory),
    }


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--requests", type=positive_int, default=5000, help="HTTP actions (default 5000)"
    )
    parser.add_argument(
        "--stdio-lines", type=positive_int, default=2000, help="stdio lines per era (default 2000)"
    )
    parser.add_argument(
        "--every", type=positive_int, default=20, help="a well-behaved round every N"
    )
    parser.add_argument(
        "--max-upstream-sessions",
        type=positive_int,
        default=8,
        help="the proxy's bound on clients' own upstream sessions (default 8)",
    )
    parser.add_argument("--seed", type=non_negative_int, default=32, help="seed (default 32)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=HypothesisWarning)  # "overly large repr" noise
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="fuzz-proxy-") as tmp:
        runs = {"http": _http(Path(tmp), args)}
        for modern in (False, True):
            runs[f"stdio {'2026-07-28' if modern else 'handshake'}"] = _stdio(
                Path(tmp), args, modern
            )
    print(json.dumps(runs))
    targets = Targets()
    http = runs["http"]
    targets.check("HTTP: 5xx but 503, or connections dropped", http["bad_count"], "==", 0)
    targets.check("HTTP: actions unanswered", sum(http["timeouts"].values()), "==", 0)
    targets.check("HTTP: proxy alive and answering after", int(bool(http["alive_after"])), "==", 1)
    bound = args.max_upstream_sessions + 2  # the proxy, its shared upstream, clients' own
    targets.check("HTTP: processes of the proxy at most", http["processes_max"], "<=", bound)
    for name, run in runs.items():
        targets.check(f"{name}: well-behaved rounds wrong", run["good_wrong_count"], "==", 0)
        targets.check(f"{name}: tracebacks in the proxy's log", run["tracebacks_in_log"], "==", 0)
        targets.check(f"{name}: proxy peak RSS", run["rss_peak_mib"], "<=", TARGET_PEAK_MIB, " MiB")
        growth = run["rss_last_mib"] - run["rss_first_mib"]
        targets.check(f"{name}: proxy RSS growth", growth, "<=", TARGET_GROWTH_MIB, " MiB")
        if name != "http":
            targets.check(
                f"{name}: lines written that are no JSON object", run["not_json"], "==", 0
            )
            targets.check(f"{name}: exit code after its client left mid-call", run["exit"], "==", 0)
    print(targets.report())
    return targets.exit_code(no_fail=False)


if __name__ == "__main__":
    sys.exit(main())
