"""The full property-based HTTP fuzz of a live ``toolwatch collector`` (10,000 requests by
default; CI runs 500 in ``tests/collector/otlp/test_fuzz.py``): hostile OTLP/JSON and protobuf
documents, mostly-valid tool spans with one hostile field, random bytes, gzip of each.

The contract: no 5xx except 503 with ``Retry-After``, the server alive afterwards, spans stored
before the run intact, no traceback in the collector's log. Prints one JSON summary line and the
targets; exits 1 on a miss (a correctness contract: no ``--no-fail``), and 1 with one line quoting
its log's last lines when the collector does not answer ``/health`` within ``--start-timeout``
seconds (default 30; it is stopped, not left running).
Run: ``.venv/bin/python benchmarks/fuzz_http.py [--requests 10000] [--start-timeout 30]``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from toolwatch.usage import positive_float, positive_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.collector import SpanSpec, call, pb_request, post
from support.collector_process import START_TIMEOUT, CollectorDidNotStart, Server
from support.http_fuzz import run_fuzz
from toolwatch.collector.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, command_line


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--requests", type=positive_int, default=10_000)
    parser.add_argument("--start-timeout", type=positive_float, default=START_TIMEOUT)
    args = parser.parse_args(argv)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="fuzz-http-") as tmp:
        try:
            server = Server(Path(tmp), start_timeout=args.start_timeout)
        except CollectorDidNotStart as exc:
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
        try:
            earlier = [SpanSpec(call(session="before-fuzz", seq=i)) for i in range(50)]
            assert post(server.url, pb_request(earlier)).status == 200
            result = run_fuzz(server.port, args.requests)
            alive = server.get("/health")[0]
        finally:
            text = server.stop(timeout=300)
        proc = server.proc
        store = Store(server.store)
        kept = store.query("SELECT count(*) AS n FROM calls WHERE session_id = 'before-fuzz'")
        summary = {
            "requests": result.examples,
            "seconds": round(result.seconds, 1),
            "per_s": round(result.examples / result.seconds, 1),
            "statuses": {str(k): v for k, v in sorted(result.statuses.items())},
            "bad_5xx": len(result.bad),
            "unanswered": result.unanswered,
            "health_after": alive,
            "earlier_rows_kept": kept.column("n")[0].as_py(),
            "tracebacks_in_log": text.count("Traceback"),
            "collector_exit": proc.returncode,
            "load_average": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(summary))
        targets = Targets()
        targets.check("5xx other than 503 + Retry-After", len(result.bad), "==", 0)
        targets.check("requests unanswered", result.unanswered, "==", 0)
        targets.check("/health status after", alive, "==", 200)
        targets.check("rows stored before the fuzz kept", summary["earlier_rows_kept"], "==", 50)
        targets.check("tracebacks in the collector's log", summary["tracebacks_in_log"], "==", 0)
        print(targets.report())
        if targets.missed:
            print(text[-5000:], file=sys.stderr)
        return targets.exit_code(no_fail=False)


if __name__ == "__main__":
    sys.exit(main())
