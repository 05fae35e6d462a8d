"""kill -9 during compaction, N trials (default 20) on 1,000 small files of 20 calls each.

Per trial: build the partition, run ``toolwatch store compact`` (or ``--collector``: a
``toolwatch collector`` whose shutdown compaction is killed), ``kill -9`` it — alternately as
soon as its merged file appears (the sources are being unlinked: the worst instant) and at a
random instant — then count rows and distinct span ids through a fresh reader (``toolwatch
sql``, a new process, which recovers the interrupted merge first), compact again and count
again. Target: 0 duplicates and 0 lost in every trial. Prints one JSON line per trial, a
summary and the targets; exits 1 on a miss (a correctness contract: no ``--no-fail``). Run:
``.venv/bin/python benchmarks/bench_compaction_crash.py [--trials 20]``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from toolwatch.collector.store import Store
from toolwatch.usage import positive_int

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, command_line

DAY = datetime(2026, 1, 1, tzinfo=UTC)


def fill(store: Store, files: int, rows: int) -> int:
    for f in range(files):
        store.append(
            "calls",
            [
                dict(trace_id=uuid.uuid4().hex, span_id=uuid.uuid4().hex[:16], session_id="c",
                     tool="t", start_time=DAY + timedelta(seconds=f), input_bytes=f,
                     failed=False, source="otlp", restamped=False, output_truncated=False)
                for _ in range(rows)
            ],
            fsync=False,
        )  # fmt: skip
    return files * rows


def counts(root: Path) -> tuple[int, int]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolwatch",
            "sql",
            "--store",
            str(root),
            "--format",
            "csv",
            "SELECT count(*), count(DISTINCT span_id) FROM calls",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    a, b = out.stdout.strip().splitlines()[-1].split(",")
    return int(a), int(b)


def trial(root: Path, at_merge: bool, rng: random.Random, collector: bool) -> dict[str, Any]:
    part = next((root / "calls").iterdir())
    before = {p.name for p in part.glob("*.parquet")}
    if collector:  # the collector compacts at shutdown: SIGTERM it, then kill -9 mid-merge
        command = [sys.executable, "-m", "toolwatch", "collector", "--store", str(root),
                   "--port", "0", "--compact-interval", "0"]  # fmt: skip
    else:
        command = [sys.executable, "-m", "toolwatch", "store", "compact", "--store", str(root)]
    log = root.parent / f"{root.name}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    if collector:
        # SIGTERM once it listens (its handler is installed then; before, SIGTERM just kills
        # it, which on a loaded machine happened within a fixed 3 s)
        listening = time.monotonic() + 120
        while "listening on" not in log.read_text() and time.monotonic() < listening:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    deadline = started + (120 if at_merge else rng.uniform(0.2, 3.0))
    moment = "finished before the kill"
    while proc.poll() is None and time.monotonic() < deadline:
        if at_merge and {e.name for e in os.scandir(part) if e.name.endswith(".parquet")} - before:
            break
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        moment = "merged file in place" if at_merge else "random instant"
    proc.wait()
    killed_after = time.monotonic() - started
    left = len(list(part.glob("*.parquet")))
    rows, distinct = counts(root)
    subprocess.run(
        [sys.executable, "-m", "toolwatch", "store", "compact", "--store", str(root)],
        capture_output=True,
        check=True,
    )
    rows2, distinct2 = counts(root)
    return {
        "killed": moment,
        "after_s": round(killed_after, 2),
        "files_after_kill": left,
        "rows": rows,
        "duplicates": rows - distinct,
        "after_recompaction": {
            "rows": rows2,
            "duplicates": rows2 - distinct2,
            "files": len(list(part.glob("*.parquet"))),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--trials", type=positive_int, default=20)
    parser.add_argument("--files", type=positive_int, default=1000)
    parser.add_argument("--rows", type=positive_int, default=20)
    parser.add_argument("--collector", action="store_true", help="kill the collector's compaction")
    args = parser.parse_args(argv)
    rng = random.Random(14)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-compact-") as tmp:
        for n in range(args.trials):
            root = Path(tmp) / f"store{n}"
            expected = fill(Store(root), args.files, args.rows)
            r = trial(root, at_merge=n % 2 == 0, rng=rng, collector=args.collector)
            r["trial"], r["expected_rows"] = n, expected
            r["lost"] = expected - (r["rows"] - r["duplicates"])
            results.append(r)
            print(json.dumps(r), flush=True)
    bad = [
        r for r in results if r["duplicates"] or r["lost"] or r["after_recompaction"]["duplicates"]
    ]
    print(json.dumps({
        "trials": len(results),
        "killed_mid_merge": sum(1 for r in results if r["killed"] != "finished before the kill"),
        "trials_with_duplicates_or_loss": len(bad),
        "total_duplicates": sum(int(r["duplicates"]) for r in results),
        "total_lost": sum(int(r["lost"]) for r in results),
        "load_average": round(os.getloadavg()[0], 2),
    }))  # fmt: skip
    targets = Targets()
    targets.check("trials with duplicates or loss", len(bad), "==", 0)
    print(targets.report())
    return targets.exit_code(no_fail=False)


if __name__ == "__main__":
    sys.exit(main())
