"""A table whose files all hold the registered columns is read without ``union_by_name`` (which
read every footer on every bind: seconds on a store of ~1,000 files), with the same rows as the
plain path, and the footers kept per process never hide a file appended or rewritten since."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.collector import record
from toolwatch.collector.sources.delivery import records_table
from toolwatch.collector.store import Store, footers, parquet_store
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.collector.store.read_only import lock_down
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS


def _new(store: Store, first: int, n: int = 3) -> None:
    store.append("calls", records_table([record(i) for i in range(first, first + n)]))


def _mixed(root: Path) -> Store:
    """An older file without the provenance columns beside files of today's schema."""
    old = records_table([record(i) for i in range(3)]).drop_columns(list(EXPORTED_FIELDS))
    part = root / "calls" / "date=2026-08-01"
    part.mkdir(parents=True)
    pq.write_table(old, part / "part-old.parquet")
    store = Store(root)
    _new(store, 10)
    return store


def _view_sql(store: Store, name: str) -> str:
    con = store.connect()
    try:
        ((sql,),) = con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = ?", [name]
        ).fetchall()
        return str(sql)
    finally:
        con.close()


def _mixes(store: Store) -> bool:
    """What the calls view decides, as it does on every query: read with ``union_by_name``?"""
    con = store.connect()
    try:
        ((scan,),) = con.execute(f"SELECT {parquet_store.TABLE_SCAN}('calls')").fetchall()
        assert "union_by_name = True" in scan or "union_by_name = False" in scan
        return "union_by_name = True" in scan
    finally:
        con.close()


def _everything(store: Store) -> dict[str, list[tuple[object, ...]]]:
    views = ("calls", "tool_lists", "ingest", "sessions", "streams")
    return {v: store.query(f"SELECT * FROM {v} ORDER BY ALL").to_pylist() for v in views}


def test_files_of_one_schema_are_read_without_union_by_name(tmp_path: Path) -> None:
    store = Store(tmp_path / "new")
    _new(store, 0)
    _new(store, 5)
    assert f"query({parquet_store.TABLE_SCAN}('calls'))" in _view_sql(store, "calls")
    assert not _mixes(store)
    assert _mixes(_mixed(tmp_path / "mixed"))


@pytest.mark.parametrize("kind", ["one schema", "old and new schemas"])
def test_the_fast_path_reads_what_the_plain_one_does(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "one schema":
        store = Store(tmp_path)
        _new(store, 0)
        _new(store, 10)
    else:
        store = _mixed(tmp_path)
    fast = _everything(store)
    assert len(fast["calls"]) == 6 and len(fast["sessions"]) >= 1
    monkeypatch.setattr(parquet_store, "_one_schema", lambda files, schema: False)
    assert _mixes(store)
    assert _everything(store) == fast


def test_a_file_appended_between_two_queries_is_seen(tmp_path: Path) -> None:
    store = Store(tmp_path)
    _new(store, 0)
    count = "SELECT count(*) AS n FROM calls"
    assert store.query(count).to_pylist() == [{"n": 3}]
    assert store.info()[0]["rows"] == 3
    con = store.connect()  # a long-lived connection (the app's, `sql`'s) as well
    try:
        assert con.execute(count).fetchall() == [(3,)]
        _new(store, 3, 4)
        assert store.query(count).to_pylist() == [{"n": 7}]
        assert con.execute(count).fetchall() == [(7,)]
        assert store.info()[0]["rows"] == 7
        assert store.compact(min_files=2) == 1  # two files swapped for one merged file
        assert store.info()[0]["rows"] == 7 and store.info()[0]["files"] == 1
        assert con.execute(count).fetchall() == [(7,)]
    finally:
        con.close()


def test_a_file_rewritten_in_place_is_read_afresh(tmp_path: Path) -> None:
    store = Store(tmp_path)
    _new(store, 0)
    (path,) = store.files("calls")
    assert store.info()[0]["rows"] == 3
    path.write_bytes(b"not parquet")
    assert store.info()[0]["unreadable_files"] == 1 and store.info()[0]["rows"] == 0


def test_a_connection_kept_open_reads_files_of_other_schemas_dropped_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app keeps its connection: a file of an older toolwatch (fewer columns) or another
    writer (an extra column) dropped in later was misread on it (values lost, columns dropped,
    or a schema mismatch) until the next connection, as the view decided when it was made."""
    store = Store(tmp_path)
    for first in (0, 5):  # today's files, with a value where the older file has no column
        new = records_table([record(i) for i in range(first, first + 3)])
        store.append(
            "calls",
            new.set_column(new.schema.get_field_index("egress"), "egress", pa.array(["web"] * 3)),
        )
    everything = "SELECT * FROM calls ORDER BY ALL"
    con = store.connect()
    try:
        assert len(con.execute(everything).fetchall()) == 6
        old = records_table([record(i) for i in range(20, 22)]).drop_columns(list(EXPORTED_FIELDS))
        extra = records_table([record(i) for i in range(30, 32)])
        extra = extra.append_column("extra", pa.array([1, 2]))
        for day, table in (("2000-01-01", old), ("2099-01-01", extra)):  # the first file, the last
            (tmp_path / "calls" / f"date={day}").mkdir()
            pq.write_table(table, tmp_path / "calls" / f"date={day}" / "part-dropped.parquet")
            with monkeypatch.context() as plain:  # every file read by name, on a new connection
                plain.setattr(parquet_store, "_one_schema", lambda files, schema: False)
                want = store.query(everything)
            got = con.sql(everything).to_arrow_table()
            assert got.column_names == want.column_names
            assert got.to_pylist() == want.to_pylist()
        assert got.column("extra").drop_null().to_pylist() == [1, 2]
        assert got.num_rows == 10 and got.column("egress").to_pylist().count("web") == 6
        for day in ("2000-01-01", "2099-01-01"):
            (tmp_path / "calls" / f"date={day}" / "part-dropped.parquet").unlink()
        assert not _mixes(store)
        assert (
            con.sql(everything).to_arrow_table().to_pylist() == store.query(everything).to_pylist()
        )
    finally:
        con.close()


def test_few_footers_are_read_in_turn_many_in_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads cost a small store's first ``info()`` more than they saved (~10 and 123 files):
    they start only from ``THREADED_FROM`` unread files."""
    store = Store(tmp_path)
    for first in range(0, 9, 3):
        _new(store, first)
    readers: set[str] = set()
    read = footers._read

    def noted(path: Path) -> footers.Footer | None:
        readers.add(threading.current_thread().name)
        return read(path)

    monkeypatch.setattr(footers, "_read", noted)
    footers.forget()
    assert store.info()[0]["rows"] == 9
    assert readers == {threading.current_thread().name}
    monkeypatch.setattr(footers, "THREADED_FROM", 3)
    footers.forget()
    readers.clear()
    assert store.info()[0]["rows"] == 9
    assert threading.current_thread().name not in readers


def test_a_connection_made_before_a_table_had_files_reads_them_when_they_come(
    tmp_path: Path,
) -> None:
    """A fresh collector's store has no file yet: a connection made then (the app's, kept open;
    a locked-down one, as `sql` and alert rules make; a cursor of it) kept an empty view of the
    table for good. Every query reads the files there at that time: none, some, none again."""
    store = Store(tmp_path)
    con = store.connect()
    locked = store.connect()
    lock_down(locked, store.root)
    cursor = con.cursor()
    count = "SELECT (SELECT count(*) FROM calls), (SELECT count(*) FROM tool_lists)"
    listing = pa.Table.from_pylist(
        [
            {
                "trace_id": "a" * 32,
                "span_id": "0" * 16,
                "session_id": "s1",
                "server": "docs",
                "tool": "search",
                "digest": "d" * 64,
                "listed_time": datetime(2026, 3, 1, tzinfo=UTC),
                "service": "agent",
            }
        ],
        schema=TOOL_LISTS_SCHEMA,
    )
    try:
        for each in (con, locked, cursor):
            assert each.execute(count).fetchall() == [(0, 0)]
        _new(store, 0)
        store.append("tool_lists", listing)
        for each in (con, locked, cursor):
            assert each.execute(count).fetchall() == [(3, 1)]
            assert each.execute("SELECT count(*) FROM sessions").fetchall() == [(1,)]
        for path in store.files("calls") + store.files("tool_lists"):
            path.rename(path.with_name(path.name + ".corrupt"))  # as `verify --quarantine`
        for each in (con, locked, cursor):
            assert each.execute(count).fetchall() == [(0, 0)]
    finally:
        cursor.close()
        locked.close()
        con.close()
