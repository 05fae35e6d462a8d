"""Benchmark: what ``toolwatch store info`` costs for its checks of the imported calls on a store
of a million calls (the unflagged forks, the calls without result).

Builds a store with :meth:`Store.append` from synthetic imported call records (``--calls`` in
``--files`` files over 24 days: a session of 60 calls each, half of them by subagents, one
subagent stream in twelve an unflagged compaction fork, some calls without result), then
measures in the same run, the best of ``--repeat`` rounds each:

* baseline: ``SELECT count(*)`` of the imported calls (one connection, one scan);
* before: each check in a query of its own, as ``store info`` ran them (the fork patterns
  matched on every call of an unflagged subagent, then a second connection and scan for the
  calls without result);
* after: :func:`~toolwatch.collector.sources.stale_flags.imported_checks` (one query: the
  patterns once per stream).

Both give the same counts (checked). Printed: seconds, before/after ratio, after/baseline
ratio. No target: the figures are for comparing runs (``docs/ARCHITECTURE.md``, *Importer*).

Run: ``.venv/bin/python benchmarks/bench_store_info.py [--calls 1000000] [--files 1000]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from toolwatch.collector.sources.stale_flags import fork_cases, imported_checks
from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.conventions import ERROR_TYPE_NO_RESULT, ERROR_TYPE_TOOL_ERROR
from toolwatch.usage import positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import command_line

START = datetime(2026, 1, 1, tzinfo=UTC)
TOOLS = ("Bash", "Read", "Edit", "Grep", "Glob", "Write")


def _part(first: int, n: int) -> pa.Table:
    """Calls ``first`` … ``first + n - 1``: a session per 60 calls, its calls 30–59 by two
    subagents (the second, every 12th session, an unflagged compaction fork)."""
    rows: dict[str, list[Any]] = {f.name: [] for f in CALLS_SCHEMA}
    for i in range(first, first + n):
        session, k = divmod(i, 60)
        agent = None if k < 30 else f"a{session:016x}"
        if k >= 45:
            agent = f"acompact-{session:016x}" if session % 12 == 0 else f"a{session:015x}1"
        lost, pending, failed = i % 997 == 0, i % 1009 == 0, i % 19 == 0
        values = {
            "trace_id": f"{session:032x}",
            "span_id": f"{i:016x}",
            "session_id": f"{session:08x}-0000-4000-8000-{session * 7919 % 10**12:012d}",
            "agent_id": agent,
            "seq": k,
            "tool": TOOLS[i % len(TOOLS)],
            "start_time": START + timedelta(seconds=2 * i),
            "duration_us": None if lost or pending else 1_000 + i % 50_000,
            "input_bytes": 40 + i % 900,
            "output_bytes": None if lost or pending else 100 + i % 20_000,
            "failed": lost or (failed and not pending),
            "error_type": ERROR_TYPE_NO_RESULT
            if lost
            else (ERROR_TYPE_TOOL_ERROR if failed and not pending else None),
            "response_id": f"msg_{i // 2:020x}",
            "call_id": f"toolu_{i:020x}",
            "source": "import",
            "service": "claude-code",
            "restamped": False,
            "output_truncated": False,
        }
        for name, column in rows.items():
            column.append(values.get(name))
    return pa.Table.from_pydict(rows, schema=CALLS_SCHEMA)


def build(store: Store, calls: int, files: int) -> None:
    """``calls`` imported calls appended in ``files`` appends (one Parquet file each, or two
    where an append spans midnight)."""
    per = -(-calls // files)
    for first in range(0, calls, per):
        store.append("calls", _part(first, min(per, calls - first)), fsync=False)


def before(store: Store) -> tuple[dict[str, tuple[int, int]], int, int]:
    """The checks as ``store info`` ran them: a query each (the fork patterns per call)."""
    params: dict[str, str] = {"source": "import"}
    cases = fork_cases(params)
    forks = store.query(
        "SELECT quirk, count(*) AS streams, sum(calls) AS calls FROM ("
        f" SELECT CASE {' '.join(cases)} END AS quirk, session_id, agent_id, count(*) AS calls"
        " FROM calls WHERE source = $source AND client_quirk IS NULL"
        " AND agent_id IS NOT NULL GROUP BY ALL"
        ") WHERE quirk IS NOT NULL GROUP BY quirk ORDER BY quirk",
        params,
    )
    counts = store.query(
        "SELECT count(*) FILTER (WHERE error_type = $type) AS lost,"
        " count(*) FILTER (WHERE NOT failed AND output_bytes IS NULL) AS pending"
        " FROM calls WHERE source = $source",
        {"source": "import", "type": ERROR_TYPE_NO_RESULT},
    ).to_pylist()[0]
    found = {r["quirk"]: (int(r["streams"]), int(r["calls"])) for r in forks.to_pylist()}
    return found, int(counts["lost"]), int(counts["pending"])


def best(rounds: int, run: Callable[[], object]) -> float:
    """The fastest of ``rounds`` wall-clock runs (the machine is shared)."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--calls", type=positive_int, default=1_000_000, help="calls in the store")
    parser.add_argument("--files", type=positive_int, default=1_000, help="appends (Parquet files)")
    parser.add_argument("--repeat", type=positive_int, default=3, help="rounds; the best is kept")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolwatch-bench-store-info-") as tmp:
        store = Store(Path(tmp) / "store")
        t0 = time.perf_counter()
        build(store, args.calls, args.files)
        (info,) = store.info()
        print(
            f"built {counted(info['rows'], 'call')} in {counted(info['files'], 'file')} "
            f"({time.perf_counter() - t0:.1f} s)"
        )
        after = imported_checks(store)
        if before(store) != (after.forks, after.lost, after.pending):
            print("before and after disagree", file=sys.stderr)
            return 1
        print(f"found: forks {after.forks}, no_result {after.lost:,}, pending {after.pending:,}")
        count = "SELECT count(*) FROM calls WHERE source = 'import'"
        t_base = best(args.repeat, lambda: store.query(count))
        t_before = best(args.repeat, lambda: before(store))
        t_after = best(args.repeat, lambda: imported_checks(store))
        print(f"baseline count(*): {t_base:.3f} s")
        print(f"before (a query each): {t_before:.3f} s")
        print(f"after (imported_checks): {t_after:.3f} s")
        print(f"before/after: {t_before / t_after:.2f}x   after/baseline: {t_after / t_base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
