"""Store: atomic appends, date partitions, views over an empty and a filled store."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.collector import record
from toolwatch.collector.store import CALLS_SCHEMA, Store, StoreError
from toolwatch.record import CALL_FIELD_NAMES, CallRecord


def test_record_dataclass_mirrors_field_table() -> None:
    assert tuple(f.name for f in fields(CallRecord)) == CALL_FIELD_NAMES
    assert tuple(CALLS_SCHEMA.names) == CALL_FIELD_NAMES


def test_empty_store_has_typed_empty_views(tmp_path: Path) -> None:
    store = Store(tmp_path / "nothing")
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 0}]
    assert store.query("SELECT count(*) AS n FROM sessions").to_pylist() == [{"n": 0}]


def test_append_partitions_by_day_and_reads_back(tmp_path: Path) -> None:
    store = Store(tmp_path)
    rows = [record(i).as_dict() for i in range(4)] + [record(9, day=2).as_dict()]
    written = store.append("calls", rows)
    assert sorted(p.parent.name for p in written) == ["date=2026-08-01", "date=2026-08-02"]
    assert not list(tmp_path.rglob("*.tmp"))
    got = store.query("SELECT seq, input_bytes, failed FROM calls ORDER BY seq").to_pylist()
    assert [r["seq"] for r in got] == [0, 1, 2, 3, 9]
    assert [r["failed"] for r in got] == [False, False, True, False, False]
    sess = store.query("SELECT calls, failures, responses FROM sessions").to_pylist()
    assert sess == [{"calls": 5, "failures": 1, "responses": 3}]


def test_compact_keeps_every_row(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for i in range(10):
        store.append("calls", [record(i).as_dict()])
    assert len(store.files("calls")) == 10
    assert store.compact("calls", min_files=4) == 9
    assert len(store.files("calls")) == 1
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 10}]


def test_corrupt_file_is_named(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.append("calls", [record(0).as_dict()])
    bad = tmp_path / "calls" / "date=2026-08-01" / "part-bad.parquet"
    bad.write_bytes(b"not parquet at all")
    assert [p for p, _ in store.verify()] == [bad]
    with pytest.raises(StoreError, match=r"part-bad\.parquet"):
        store.query("SELECT count(*) FROM calls")


def test_missing_required_column_is_an_error(tmp_path: Path) -> None:
    import pyarrow as pa

    with pytest.raises(StoreError, match="span_id"):
        Store(tmp_path).append("calls", pa.table({"trace_id": ["a"]}))


# ---------------------------------------------------------------- compaction and housekeeping


def _rows(n: int, start: int = 0) -> list[dict]:
    return [record(start + i).as_dict() for i in range(n)]


def test_compact_leaves_large_files_alone_and_caps_merged_size(tmp_path: Path) -> None:
    store = Store(tmp_path)
    (large,) = store.append("calls", _rows(600))
    for k in range(10):
        store.append("calls", _rows(300, start=1000 + 300 * k))
    removed = store.compact("calls", min_files=2, max_rows=1000)
    files = store.files("calls")
    assert large in files  # 600 rows >= max_rows // 2: not rewritten
    assert removed == 6  # ten 300-row files -> 3 + 3 + 3 merged, the last one alone
    assert len(files) == 1 + 4
    sizes = sorted(pq.read_metadata(p).num_rows for p in files)
    assert sizes == [300, 600, 900, 900, 900]
    assert store.query("SELECT count(DISTINCT span_id) AS n FROM calls").to_pylist() == [
        {"n": 3600}
    ]


def test_compact_waits_for_nobody_when_another_process_compacts(tmp_path: Path) -> None:
    import fcntl

    store = Store(tmp_path)
    for i in range(4):
        store.append("calls", [record(i).as_dict()])
    with open(tmp_path / "calls" / ".compact.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert store.compact("calls", min_files=2) == 0
        assert len(store.files("calls")) == 4
    assert store.compact("calls", min_files=2) == 3


def test_unfinished_writes_are_invisible_and_cleaned_up(tmp_path: Path) -> None:
    import os
    import time

    store = Store(tmp_path)
    store.append("calls", [record(0).as_dict()])
    tmp = tmp_path / "calls" / "date=2026-08-01" / "part-crashed.parquet.tmp"
    tmp.write_bytes(b"half a parquet file")
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 1}]
    assert store.verify() == [] and store.temp_files() == [tmp]
    store.compact("calls")
    assert tmp.exists()  # young: may belong to a writer still at work
    old = time.time() - 7200
    os.utime(tmp, (old, old))
    store.compact("calls")
    assert not tmp.exists()


def test_info_describes_tables_from_metadata(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.append("calls", [*_rows(3), record(7, day=3).as_dict()])
    (info,) = store.info()
    assert {k: info[k] for k in ("table", "files", "rows", "partitions", "first", "last")} == {
        "table": "calls",
        "files": 2,
        "rows": 4,
        "partitions": 2,
        "first": "2026-08-01",
        "last": "2026-08-03",
    }
    assert info["bytes"] > 0 and info["unreadable_files"] == 0


def test_directories_that_are_not_tables_are_ignored(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.append("calls", [record(0).as_dict()])
    odd = tmp_path / "Not A Table" / "x"
    odd.mkdir(parents=True)
    (odd / "part.parquet").write_bytes(
        (tmp_path / "calls")
        .joinpath(store.files("calls")[0].relative_to(tmp_path / "calls"))
        .read_bytes()
    )
    assert store.tables() == ["calls"]
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": 1}]


def test_reads_during_compaction_neither_fail_nor_double_count(tmp_path: Path) -> None:
    """A read racing a compaction: making the views reads file footers, so it holds the commit
    lock like the query itself (a file merged away between the two was 'Cannot open file',
    exit 70, about one read in 45 beside a collector compacting every second)."""
    import threading

    store = Store(tmp_path)
    store.append("calls", _rows(1))
    stop = threading.Event()

    def churn() -> None:  # small files in, merged away, over and over: the rows stay the same
        k = 1
        while not stop.is_set():
            for _ in range(4):
                store.append("calls", _rows(1, start=k))
                k += 1
            store.compact("calls", min_files=2)

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        seen = []
        for _ in range(60):
            con = Store(tmp_path).connect()
            try:
                with store.reading():
                    n, distinct = con.execute(
                        "SELECT count(*), count(DISTINCT span_id) FROM calls"
                    ).fetchone()
                    (sessions,) = con.execute("SELECT count(*) FROM sessions").fetchone()
            finally:
                con.close()
            assert n == distinct and sessions == 1
            seen.append(n)
    finally:
        stop.set()
        worker.join()
    assert seen == sorted(seen) and seen[-1] > seen[0]  # reads went on while files churned
