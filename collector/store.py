"""The store: an append-only Parquet tree with DuckDB views over it.

Layout: ``<root>/<table>/date=YYYY-MM-DD/part-<time>-<uuid>.parquet`` (zstd). Files are written
as ``*.parquet.tmp``, fsynced, then renamed with :func:`os.replace`, so a reader's glob
(``*.parquet``) never sees a half-written file and a crash never leaves a torn one behind.

Every component writes through :meth:`Store.append` and reads through :meth:`Store.connect`;
the SQL of the shared views lives only here.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from toolwatch.collector.schema import CALLS_SCHEMA, TOOL_LISTS_SCHEMA

log = logging.getLogger(__name__)

ENV_STORE = "TOOLWATCH_STORE"
CALLS = "calls"
TOOL_LISTS = "tool_lists"
PARTITION_COLUMN = "date"
_TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

#: Tables whose schema is fixed by :mod:`toolwatch.record`; others (alerts, experiment
#: results, workbench runs) bring their own Arrow schema with their first append.
FIXED_SCHEMAS: dict[str, pa.Schema] = {CALLS: CALLS_SCHEMA, TOOL_LISTS: TOOL_LISTS_SCHEMA}
#: Column used to pick a row's date partition, per fixed table.
TIME_COLUMNS: dict[str, str] = {CALLS: "start_time", TOOL_LISTS: "listed_time"}


class StoreError(RuntimeError):
    """The store is missing, unreadable or holds a corrupt file; the message names it."""


def default_store_path() -> Path:
    """``$TOOLWATCH_STORE`` if set, else ``~/.toolwatch/store``."""
    env = os.environ.get(ENV_STORE)
    return Path(env).expanduser() if env else Path.home() / ".toolwatch" / "store"


def resolve_store(path: str | os.PathLike[str] | None) -> Path:
    return Path(path).expanduser() if path else default_store_path()


class Store:
    """A toolwatch store rooted at a directory (created on first write)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = resolve_store(root)

    # ---------------------------------------------------------------- writing

    def append(
        self,
        table_name: str,
        rows: pa.Table | Sequence[Mapping[str, Any]],
        *,
        schema: pa.Schema | None = None,
        partition_by: str | None = None,
        fsync: bool = True,
    ) -> list[Path]:
        """Durably append rows to ``table_name``; returns the files written.

        Rows are split into one file per date partition. For the fixed tables the partition
        comes from the record time; for other tables from ``partition_by`` (a timestamp or
        date column) or today's date when not given.
        """
        if not _TABLE_NAME.match(table_name):
            raise StoreError(f"invalid table name {table_name!r}")
        schema = FIXED_SCHEMAS.get(table_name, schema)
        table = _to_table(rows, schema)
        if table.num_rows == 0:
            return []
        column = TIME_COLUMNS.get(table_name, partition_by)
        written: list[Path] = []
        for day, part in _split_by_date(table, column):
            directory = self.root / table_name / f"{PARTITION_COLUMN}={day.isoformat()}"
            written.append(_write_atomic(part, directory, fsync=fsync))
        return written

    # ---------------------------------------------------------------- reading

    def files(self, table_name: str) -> list[Path]:
        base = self.root / table_name
        return sorted(base.glob("*/*.parquet")) if base.is_dir() else []

    def tables(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and self.files(p.name))

    def connect(self, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with one view per table plus the shared views.

        Views re-read the file list on every query, so files appended after connecting are
        seen. The fixed tables always exist (empty when no file is there yet).
        """
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"store path {self.root} is not a directory")
        con = duckdb.connect(":memory:")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        names = set(self.tables()) | set(FIXED_SCHEMAS)
        for name in sorted(names):
            try:
                self._create_table_view(con, name)
            except duckdb.Error as exc:
                con.close()
                raise StoreError(_explain_duckdb_error(exc, self.root)) from exc
        for view_sql in SHARED_VIEWS:
            con.execute(view_sql)
        return con

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pa.Table:
        """Run one SQL query against a fresh connection and return an Arrow table."""
        con = self.connect()
        try:
            return con.execute(sql, params or []).to_arrow_table()
        except duckdb.Error as exc:
            raise StoreError(_explain_duckdb_error(exc, self.root)) from exc
        finally:
            con.close()

    def _create_table_view(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        files = self.files(name)
        if files:
            glob = str(self.root / name / "*" / "*.parquet").replace("'", "''")
            con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{glob}', "
                "hive_partitioning = true, union_by_name = true)"
            )
        else:
            schema = FIXED_SCHEMAS[name]
            cols = ", ".join(f"CAST(NULL AS {_duck_type(f.type)}) AS {f.name}" for f in schema)
            con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT {cols}, "
                f"CAST(NULL AS DATE) AS {PARTITION_COLUMN} WHERE false"
            )

    # ---------------------------------------------------------------- maintenance

    def verify(self, table_name: str | None = None) -> list[tuple[Path, str]]:
        """Files that cannot be read as Parquet, with the reason (empty list = healthy)."""
        bad: list[tuple[Path, str]] = []
        for name in [table_name] if table_name else self.tables():
            for path in self.files(name):
                try:
                    pq.read_metadata(path)
                except Exception as exc:  # pyarrow raises several types for corrupt files
                    bad.append((path, str(exc)))
        return bad

    def compact(
        self, table_name: str = CALLS, *, min_files: int = 8, max_rows: int = 1_000_000
    ) -> int:
        """Merge each partition's small files into one; returns how many files were removed.

        The merged file is written (atomically) before the small ones are unlinked, so a crash
        in between can only leave duplicates, never lose rows; a partition whose files cannot
        all be read is left alone and reported in the log.
        """
        removed = 0
        base = self.root / table_name
        if not base.is_dir():
            return 0
        for directory in sorted(p for p in base.iterdir() if p.is_dir()):
            parts = sorted(directory.glob("*.parquet"))
            if len(parts) < min_files:
                continue
            try:
                tables = [pq.read_table(p) for p in parts]
            except Exception as exc:
                log.error("compact: skipping %s, unreadable file: %s", directory, exc)
                continue
            merged = pa.concat_tables(tables, promote_options="default")
            if merged.num_rows > max_rows * 4:
                continue
            _write_atomic(merged, directory, fsync=True)
            for p in parts:
                p.unlink()
            removed += len(parts) - 1
        return removed


# -------------------------------------------------------------------- shared views

SHARED_VIEWS: tuple[str, ...] = (
    """
    CREATE OR REPLACE VIEW sessions AS
    SELECT session_id,
           any_value(source) AS source,
           count(*) AS calls,
           min(start_time) AS first_time,
           max(start_time) AS last_time,
           count(DISTINCT tool) AS tools,
           count(*) FILTER (WHERE failed) AS failures,
           count(DISTINCT response_id) AS responses,
           count(DISTINCT agent_id) AS subagents,
           count(*) FILTER (WHERE label IS NOT NULL) AS labelled_calls
    FROM calls
    GROUP BY session_id
    """,
)


# -------------------------------------------------------------------- helpers


def _to_table(rows: pa.Table | Sequence[Mapping[str, Any]], schema: pa.Schema | None) -> pa.Table:
    if isinstance(rows, pa.Table):
        table = rows
        if schema is not None:
            table = _conform(table, schema)
        return table
    rows = list(rows)
    if schema is None:
        return pa.Table.from_pylist(rows)
    return pa.Table.from_pylist(rows, schema=schema)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Reorder/cast a table to ``schema``; missing nullable columns become nulls."""
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        elif f.nullable:
            columns.append(pa.nulls(table.num_rows, f.type))
        else:
            raise StoreError(f"rows lack the required column {f.name!r}")
    return pa.Table.from_arrays(columns, schema=schema)


def _split_by_date(table: pa.Table, column: str | None) -> Iterable[tuple[date, pa.Table]]:
    if column is None or column not in table.column_names:
        yield datetime.now().date(), table
        return
    import pyarrow.compute as pc

    col = table.column(column)
    if pa.types.is_timestamp(col.type):
        days = (
            pc.cast(col, pa.date32())
            if col.type.tz is None
            else pc.cast(pc.cast(col, pa.timestamp(col.type.unit)), pa.date32())
        )
    elif pa.types.is_date(col.type):
        days = col
    else:
        raise StoreError(f"partition column {column!r} is not a timestamp or date")
    for day in pc.unique(days).to_pylist():
        mask = pc.equal(days, pa.scalar(day, pa.date32()))
        yield day, table.filter(mask)


def _write_atomic(table: pa.Table, directory: Path, *, fsync: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
    final = directory / name
    tmp = directory / (name + ".tmp")
    pq.write_table(table, tmp, compression="zstd")
    if fsync:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    os.replace(tmp, final)
    if fsync:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return final


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_floating(t):
        return "DOUBLE"
    raise StoreError(f"no DuckDB type for {t}")


def _explain_duckdb_error(exc: Exception, root: Path) -> str:
    text = str(exc)
    if "parquet" in text.lower() and ("magic" in text.lower() or "corrupt" in text.lower()):
        return (
            f"a Parquet file in the store {root} is corrupt: {text} (run `toolwatch store verify`)"
        )
    return text
