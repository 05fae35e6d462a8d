"""A table whose files all hold the registered columns is read without ``union_by_name`` (which
read every footer on every bind: seconds on a store of ~1,000 files), with the same rows as the
plain path, and the footers kept per process never hide a file appended or rewritten since."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from support.collector import record
from toolwatch.collector.sources.delivery import records_table
from toolwatch.collector.store import Store, parquet_store
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


def _everything(store: Store) -> dict[str, list[tuple[object, ...]]]:
    views = ("calls", "tool_lists", "ingest", "sessions", "streams")
    return {v: store.query(f"SELECT * FROM {v} ORDER BY ALL").to_pylist() for v in views}


def test_files_of_one_schema_are_read_without_union_by_name(tmp_path: Path) -> None:
    store = Store(tmp_path / "new")
    _new(store, 0)
    _new(store, 5)
    assert "union_by_name" not in _view_sql(store, "calls")
    assert "union_by_name" in _view_sql(_mixed(tmp_path / "mixed"), "calls")


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
    assert "union_by_name" in _view_sql(store, "calls")
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
