"""Benchmark: what ``Store.info()`` and a query cost on a store of many Parquet files, before
and after the footers were kept per process and a table of one schema read without
``union_by_name``.

Builds stores of ``--calls`` imported calls in each of ``--files`` appends (1,000 appends make
1,019 files, 100 make 123, 10 make 33, or 12 of 100,000 calls: some appends span midnight)
with ``bench_store_info.build``, then
measures in the same run, the best of ``--repeat`` rounds each, footers forgotten before every
round (a command's first read in a fresh process):

* baseline: ``count(*)`` over DuckDB's ``read_parquet`` of the files, on a connection made
  once (no views, no footer read of ours);
* info before / after: every footer read in turn with pyarrow (the old ``Store.info``) /
  :meth:`Store.info`, beside it in four threads whatever the file count (as first kept);
* query before / after: :meth:`Store.query` of the same count with every view made with
  ``union_by_name`` (the old path) / as it is now;
* a kept connection (the app's), footers kept: the count with its view re-listing its files
  and re-deciding on every query how to read them (``parquet_store.TABLE_SCAN``: now) / with
  the first answer kept (before), and that check alone.

Both give the same answers (checked). Printed: seconds, before/after and after/baseline ratios.
No target: the figures are for comparing runs (``docs/ARCHITECTURE.md``, *Store*).

Run: ``.venv/bin/python benchmarks/bench_store_views.py [--calls 1000000] [--files 1000 100 10]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from toolwatch.collector.store import Store, footers, parquet_store
from toolwatch.collector.store.footers import forget
from toolwatch.usage import positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from bench_store_info import build
from targets import command_line

COUNT = "SELECT count(*) AS n FROM calls"


def info_before(store: Store) -> int:
    """Rows of ``calls`` as ``Store.info`` counted them: each footer read in turn."""
    return sum(pq.read_metadata(p).num_rows for p in store.files("calls"))


@contextmanager
def plain_views() -> Iterator[None]:
    """Views made as before: ``union_by_name`` whatever the files' schemas."""
    fast = parquet_store._one_schema
    parquet_store._one_schema = lambda files, schema: False
    try:
        yield
    finally:
        parquet_store._one_schema = fast


@contextmanager
def threads_always() -> Iterator[None]:
    """Footers read in four threads whatever their number (as they were first kept)."""
    rule = footers.THREADED_FROM
    footers.THREADED_FROM = 0
    try:
        yield
    finally:
        footers.THREADED_FROM = rule


def decided_once(con: duckdb.DuckDBPyConnection, store: Store) -> None:
    """The views of ``con`` read the files as they first found them (no walk per query)."""
    first: dict[str, str] = {}
    con.remove_function(parquet_store.TABLE_SCAN)
    con.create_function(
        parquet_store.TABLE_SCAN,
        lambda name: first.setdefault(name, store._scan(name)),
        ["VARCHAR"],
        "VARCHAR",
        side_effects=True,
    )


def best(rounds: int, *runs: Callable[[], object], cold: bool = True) -> list[float]:
    """The fastest of ``rounds`` wall-clock runs of each (the machine is shared: the runs take
    turns within each round, so a busy spell weighs on all alike), each from cold (no footer
    kept) unless told."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for run, kept in zip(runs, times, strict=True):
            if cold:
                forget()
            t0 = time.perf_counter()
            run()
            kept.append(time.perf_counter() - t0)
    return [min(t) for t in times]


def threaded_info(store: Store) -> None:
    """:meth:`Store.info` with the footers read in four threads however few they are."""
    with threads_always():
        store.info()


def plain_query(store: Store) -> None:
    """The count through views made as before."""
    with plain_views():
        store.query(COUNT)


def measure(store: Store, rounds: int) -> bool:
    """Print one store's figures; False when before and after disagree."""
    glob = str(store.root / "calls" / parquet_store.PARTITION_FILES)
    con = duckdb.connect()
    base = f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)"
    (rows,) = con.execute(base).fetchone() or (0,)
    with plain_views():
        plain = store.query(COUNT).to_pylist()
    if (
        not (info_before(store) == store.info()[0]["rows"] == rows)
        or plain != store.query(COUNT).to_pylist()
    ):
        return False
    (t_base,) = best(rounds, lambda: con.execute(base).fetchall())
    t_info_before, t_info_after, t_info_threads = best(
        rounds, lambda: info_before(store), store.info, lambda: threaded_info(store)
    )
    t_query_before, t_query_after = best(
        rounds, lambda: plain_query(store), lambda: store.query(COUNT)
    )
    con.close()
    kept = store.connect()
    check = f"SELECT {parquet_store.TABLE_SCAN}('calls')"
    once = store.connect()
    decided_once(once, store)
    t_check, t_kept_now, t_kept_before = best(
        rounds * 5,
        lambda: kept.execute(check).fetchall(),
        lambda: kept.execute(COUNT).fetchall(),
        lambda: once.execute(COUNT).fetchall(),
        cold=False,
    )
    once.close()
    kept.close()
    print(f"{counted(len(store.files('calls')), 'file')}, {counted(rows, 'call')}")
    print(f"  baseline read_parquet count(*): {t_base:.3f} s")
    print(
        f"  info: {t_info_before:.3f} s -> {t_info_after:.3f} s, "
        f"before/after {t_info_before / t_info_after:.1f}x, "
        f"after/baseline {t_info_after / t_base:.2f}x; "
        f"in four threads always {t_info_threads:.3f} s, "
        f"that/after {t_info_threads / t_info_after:.2f}x"
    )
    print(
        f"  query count(*): {t_query_before:.3f} s -> {t_query_after:.3f} s, "
        f"before/after {t_query_before / t_query_after:.1f}x, "
        f"after/baseline {t_query_after / t_base:.2f}x"
    )
    print(
        f"  kept connection count(*): decided once {t_kept_before * 1e3:.1f} ms -> re-checked per "
        f"query {t_kept_now * 1e3:.1f} ms (+{(t_kept_now - t_kept_before) * 1e3:.1f} ms); "
        f"the check alone {t_check * 1e3:.1f} ms"
    )
    return True


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--calls", type=positive_int, default=1_000_000, help="calls in each store")
    parser.add_argument(
        "--files",
        type=positive_int,
        nargs="+",
        default=[1_000, 100, 10],
        help="appends, one store each",
    )
    parser.add_argument("--repeat", type=positive_int, default=3, help="rounds; the best is kept")
    args = parser.parse_args(argv)
    for files in args.files:
        with tempfile.TemporaryDirectory(prefix="toolwatch-bench-store-views-") as tmp:
            store = Store(Path(tmp) / "store")
            build(store, args.calls, files)
            if not measure(store, args.repeat):
                print("before and after disagree", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
