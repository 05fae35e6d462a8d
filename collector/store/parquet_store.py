"""The store: an append-only Parquet tree with DuckDB views over it.

Layout: ``<root>/<table>/date=YYYY-MM-DD/part-<time>-<uuid>.parquet`` (zstd, page checksums).
Files are written as ``*.parquet.tmp``, fsynced, then renamed with :func:`os.replace`, so a
reader's glob (``*.parquet``) never sees a half-written file and a crash never leaves a torn one
behind. Compaction is journalled (:mod:`toolwatch.collector.store.compaction`) and recovered
before every read, so a crash mid-compaction never shows a row twice.

Every component writes through :meth:`Store.append` and reads through :meth:`Store.connect`;
the SQL of the shared views lives only here. Every registered table's view has every
registered column (null where older files lack it), so a store written before a column was
added (dev-real's 21-column ``calls``) still reads.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.collector.store.compaction import (
    COMMIT_LOCK,
    COMPACT_LOCK,
    compact_table,
    flocked,
    new_file_name,
    not_a_file,
    recover,
    write_parquet,
)
from toolwatch.collector.store.durable import fsync_path
from toolwatch.collector.store.footers import footers
from toolwatch.collector.store.location import (
    TABLE_NAME,
    StoreError,
    check_table_name,
    resolve_store,
)
from toolwatch.collector.store.read_only import lock_down
from toolwatch.words import noun_for

log = logging.getLogger(__name__)

CALLS = tables.CALLS.name
TOOL_LISTS = tables.TOOL_LISTS.name
INGEST = tables.INGEST.name
PARTITION_COLUMN = "date"
#: A table's files, as every read and compaction finds them: ``date=YYYY-MM-DD/*.parquet`` (a
#: pattern both pathlib and DuckDB read). Anything else in a table's folder is no read's:
#: :meth:`Store.foreign_entries` names it.
PARTITIONS = f"{PARTITION_COLUMN}=[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
PARTITION_FILES = f"{PARTITIONS}/*.parquet"
_PARTITION_DIR = re.compile(rf"{PARTITION_COLUMN}=\d{{4}}-\d{{2}}-\d{{2}}")

#: Column used to pick a row's date partition, per registered table; a table outside the
#: registry (an extension's) brings its own Arrow schema and partition column.
TIME_COLUMNS: dict[str, str] = {t.name: t.time_column for t in tables.TABLES.values()}
#: Columns holding a value unique to (almost) every row: not dictionary-encoded in Parquet.
_UNIQUE_COLUMNS = ("trace_id", "span_id", "call_id")
#: Characters DuckDB's file globbing would expand in a store path (it has no escape for them).
_GLOB_CHARACTERS = frozenset("*?[]{}")
#: The SQL function (one per connection) every table's view reads through, asked on each bind:
#: the SELECT of the table's files as they are then (:meth:`Store._scan`).
TABLE_SCAN = "toolwatch_table_scan"


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
        check_table_name(table_name)
        schema = SCHEMAS.get(table_name, schema)
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
        base = self.table_dir(table_name)
        return sorted(base.glob(PARTITION_FILES)) if base.is_dir() else []

    def foreign_entries(self) -> list[Path]:
        """What sits in a table's folder that no read sees: anything but its date partitions
        and the compaction lock (a copied-in folder broke every query with DuckDB's 'Hive
        partition mismatch'; now it is ignored by reads and named by ``store verify``)."""
        if not self.root.is_dir():
            return []
        found = []
        for table in sorted(self.root.iterdir()):
            if not (table.is_dir() and (table.name in SCHEMAS or self.files(table.name))):
                continue
            for entry in sorted(table.iterdir()):
                partition = entry.is_dir() and _PARTITION_DIR.fullmatch(entry.name)
                if not partition and entry.name != COMPACT_LOCK:
                    found.append(entry)
        return found

    def table_dir(self, table_name: str) -> Path:
        """``<root>/<table>``; :class:`StoreError` for a name that is no table name (so a
        ``--table ../elsewhere`` never reaches outside the store)."""
        check_table_name(table_name)
        return self.root / table_name

    def tables(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and TABLE_NAME.match(p.name) and self.files(p.name)
        )

    def recover(self) -> int:
        """Finish (or undo) every compaction a crash interrupted; returns how many."""
        if not self.root.is_dir():
            return 0
        done = 0
        for p in self.root.iterdir():
            if p.is_dir() and TABLE_NAME.match(p.name):
                try:
                    done += recover(p, self.root / COMMIT_LOCK)
                except OSError as exc:
                    raise StoreError(
                        f"cannot recover an interrupted compaction in {p}: {exc}"
                    ) from exc
        return done

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the store's commit lock shared: no compaction swaps files meanwhile, so the
        reads inside see every row exactly once (queries through :meth:`query` do this)."""
        if not self.root.is_dir() or (
            not (self.root / COMMIT_LOCK).exists() and not self.tables()
        ):  # nothing to swap yet: a read leaves no lock file in a directory that is no store
            yield
            return
        with flocked(self.root / COMMIT_LOCK, shared=True, block=True):
            yield

    def check_path(self) -> None:
        """:class:`StoreError` when the path cannot be a store: a file, or a name DuckDB would
        read as a file pattern."""
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"store path {self.root} is not a directory")
        bad = sorted(_GLOB_CHARACTERS.intersection(str(self.root)))
        if bad:
            raise StoreError(
                f"store path {self.root} contains {' '.join(bad)}, which DuckDB would expand as "
                "a file pattern (reading other directories); rename it or use a link without them"
            )

    def require_existing(self) -> None:
        """:class:`StoreError` unless this is a store directory (commands that only read or
        tidy a store: a mistyped path would otherwise answer with empty views or zeros)."""
        self.check_path()
        if not self.root.is_dir():
            raise StoreError(f"no store at {self.root}")

    def connect(self, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with one view per table plus the shared views.

        Views re-read the file list on every query (:data:`TABLE_SCAN`), so files appended
        after connecting are seen, in a table that had none too (run queries inside
        :meth:`reading` to keep a compaction's commit out of them). The registered tables always
        exist with all their columns (empty when no file is there). A compaction a crash
        interrupted is recovered first.
        """
        self.check_path()
        self.recover()
        con = duckdb.connect(":memory:")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        names = set(self.tables()) | set(SCHEMAS)
        try:
            con.create_function(TABLE_SCAN, self._scan, ["VARCHAR"], "VARCHAR", side_effects=True)
            with self.reading():  # making a view reads file footers: no compaction swap meanwhile
                for name in sorted(names):
                    self._create_table_view(con, name)
                for view_sql in SHARED_VIEWS:
                    con.execute(view_sql)
        except duckdb.Error as exc:
            con.close()
            raise StoreError(_explain_duckdb_error(exc, self.root, self)) from exc
        return con

    def explain(self, exc: Exception) -> str:
        """One line for a DuckDB error met reading this store (naming damaged files)."""
        return _explain_duckdb_error(exc, self.root, self)

    @contextlib.contextmanager
    def session(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for several queries that read together (under :meth:`reading`), closed
        after; a DuckDB error met meanwhile becomes a :class:`StoreError` naming the damaged
        file, if that is what it was."""
        con = self.connect()
        try:
            with self.reading():
                yield con
        except duckdb.Error as exc:
            raise StoreError(_explain_duckdb_error(exc, self.root, self)) from exc
        finally:
            con.close()

    def query(
        self,
        sql: str,
        params: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        read_only: bool = False,
    ) -> pa.Table:
        """Run one SQL query against a fresh connection and return an Arrow table.

        ``read_only``: a user's SQL — the connection is locked down first
        (:func:`~toolwatch.collector.store.read_only.lock_down`), so it cannot write a file.
        A file that vanishes between DuckDB's glob and its read (merged away by a concurrent
        compaction, whose merged file is already in place) is retried once with a fresh list.
        """
        for attempt in (1, 2):
            con = self.connect()
            try:
                if read_only:
                    lock_down(con, self.root)
                with self.reading():
                    given = dict(params) if isinstance(params, Mapping) else list(params or [])
                    result = con.sql(sql, params=given or None)
                    return result.to_arrow_table() if result is not None else pa.table({})
            except duckdb.IOException as exc:
                if attempt == 1 and _vanished(exc):
                    log.debug("a store file vanished during a query (compaction); retrying")
                    continue
                raise StoreError(_explain_duckdb_error(exc, self.root, self)) from exc
            except duckdb.Error as exc:
                raise StoreError(_explain_duckdb_error(exc, self.root, self)) from exc
            finally:
                con.close()
        raise AssertionError("unreachable")

    def _create_table_view(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        scan = f"query({TABLE_SCAN}('{name}'))"
        con.execute(f"CREATE OR REPLACE VIEW {quote_ident(name)} AS SELECT * FROM {scan}")

    def _scan(self, name: str) -> str:
        """The SELECT of ``name``'s files now; its view asks on every bind, so a connection kept
        open (the app's) reads the files there at query time: none (the typed empty side alone:
        a view made before the first file came stayed empty), some, and with ``union_by_name``
        only when they mix schemas (a walk of the folder and a stat per file, footers kept)."""
        schema = SCHEMAS.get(name)
        empty = _empty_select(name) if schema is not None else ""
        try:
            files = self.files(name)
            mixed = not _one_schema(files, schema)
        except (OSError, StoreError):
            files, mixed = [self.root], True  # union_by_name reads every file right, only slower
        if not files and empty:
            return empty
        glob = str(self.root / name / PARTITION_FILES).replace("'", "''")
        scan = f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true"
        scan += f", union_by_name = {mixed})"
        return f"{scan} UNION ALL BY NAME ({empty})" if empty else scan

    # ---------------------------------------------------------------- maintenance

    def verify(
        self, table_name: str | None = None, *, deep: bool = False
    ) -> list[tuple[Path, str]]:
        """Files that cannot be read as Parquet, with the reason (empty list = healthy).

        By default only each file's footer is read. ``deep`` reads every page of every file
        with its checksum verified, so a damaged data page behind an intact footer is found
        (files written before page checksums were added are still decoded in full).
        """
        bad: list[tuple[Path, str]] = []
        self.recover()
        for name in [table_name] if table_name else self.tables():
            for path in self.files(name):
                problem = not_a_file(path)
                if problem is not None:
                    bad.append((path, problem))
                    continue
                try:
                    if deep:
                        handle = pq.ParquetFile(path, page_checksum_verification=True)
                        for group in range(handle.num_row_groups):
                            handle.read_row_group(group)
                    else:
                        pq.read_metadata(path)
                except Exception as exc:  # pyarrow raises several types for corrupt files
                    bad.append((path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
        return bad

    def compact(
        self,
        table_name: str = CALLS,
        *,
        min_files: int = 8,
        max_rows: int = 1_000_000,
        skipped: list[str] | None = None,
    ) -> int:
        """Merge each partition's small files; returns how many files were removed.

        A file is small when it holds fewer than ``max_rows // 2`` rows; a partition is
        compacted once it has ``min_files`` small files, into files of at most ``max_rows``
        rows (large files are left alone, so a live partition is not rewritten over and over).
        Rows of one span stored twice keep one (tables with a key: calls, tool_lists). Each
        merge is journalled, so a crash at any point neither loses nor duplicates a row
        (:mod:`toolwatch.collector.store.compaction`); a partition with an unreadable or
        damaged file is left alone, reported in the log and appended to ``skipped`` (``"<partition>:
        <why>"``) when it is given. Only one process compacts a table
        at a time (a lock file), and temp files left by a crashed writer (over an hour old) are
        removed.
        """
        registered = tables.TABLES.get(table_name)
        return compact_table(
            self.table_dir(table_name),
            self.root / COMMIT_LOCK,
            min_files=min_files,
            max_rows=max_rows,
            key=registered.key if registered is not None else (),
            unique=_UNIQUE_COLUMNS,
            partitions=PARTITIONS,
            skipped=skipped,
        )

    def temp_files(self) -> list[Path]:
        """Unfinished writes (``*.parquet.tmp``): never visible to readers, never acknowledged."""
        return sorted(self.root.glob("*/*/*.parquet.tmp")) if self.root.is_dir() else []

    def info(self) -> list[dict[str, Any]]:
        """Per table: files, rows, bytes, partitions, first/last partition (from metadata)."""
        self.recover()
        out = []
        for name in self.tables():
            files = self.files(name)
            read = footers(files)
            rows = sum(f.rows for f in read if f is not None)
            unreadable = read.count(None)
            partitions = sorted({p.parent.name for p in files})
            out.append(
                {
                    "table": name,
                    "files": len(files),
                    "rows": rows,
                    "bytes": sum(p.stat().st_size for p in files),
                    "partitions": len(partitions),
                    "first": partitions[0].partition("=")[2] if partitions else None,
                    "last": partitions[-1].partition("=")[2] if partitions else None,
                    "unreadable_files": unreadable,
                }
            )
        return out


# -------------------------------------------------------------------- shared views

#: What the sessions and streams views report per group (one list, two groupings).
_SUMMARY = """any_value(source) AS source,
           count(*) AS calls,
           min(start_time) AS first_time,
           max(start_time) AS last_time,
           count(DISTINCT tool) AS tools,
           count(*) FILTER (WHERE failed) AS failures,
           count(DISTINCT response_id) AS responses,
           count(*) FILTER (WHERE label IS NOT NULL) AS labelled_calls"""

SHARED_VIEWS: tuple[str, ...] = (
    f"""
    CREATE OR REPLACE VIEW sessions AS
    SELECT session_id, {_SUMMARY}, count(DISTINCT agent_id) AS subagents
    FROM calls GROUP BY session_id
    """,
    # the unit of analysis: one row per stream (session, agent); agent_id NULL = main agent
    f"""
    CREATE OR REPLACE VIEW streams AS
    SELECT session_id, agent_id, {_SUMMARY}
    FROM calls GROUP BY session_id, agent_id
    """,
)


# -------------------------------------------------------------------- helpers


def _one_schema(files: Sequence[Path], schema: pa.Schema | None) -> bool:
    """Whether every file holds exactly the registered columns, as every file
    :meth:`Store.append` writes does (so do the files appended after the view is made): then
    DuckDB reads them without ``union_by_name``, which reads every footer on every bind. Else
    (an older store's fewer columns, another writer's columns, an unreadable file) it must: without
    it, DuckDB takes the first file's columns: it drops the others' extra ones, and a first
    file with fewer columns loses the others' values or fails the query."""
    if schema is None:
        return False
    schemas = [f.schema if f else None for f in footers(files)]
    distinct = {id(s): s for s in schemas}.values()  # one object per stored schema
    want = schema.remove_metadata()
    return all(s is not None and s.equals(want) for s in distinct)


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
    if table.schema.equals(schema):
        return table  # the collector's mapped rows already are (no cast per column per commit)
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
    if col.null_count == len(col) and len(col):
        raise StoreError(f"partition column {column!r} has no values")
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
    bounds = pc.min_max(days).as_py()
    if bounds["min"] == bounds["max"] and days.null_count == 0:  # the usual case: one day
        yield bounds["min"], table
        return
    for day in pc.unique(days).to_pylist():
        mask = pc.equal(days, pa.scalar(day, pa.date32()))
        yield day, table.filter(mask)


def _write_atomic(table: pa.Table, directory: Path, *, fsync: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = new_file_name()
    final = directory / name
    tmp = directory / (name + ".tmp")
    # dictionary-encode strings except the per-row unique ids (it only costs time there)
    write_parquet(table, tmp, fsync=fsync, unique=_UNIQUE_COLUMNS)  # data before the name
    os.replace(tmp, final)
    if fsync:
        fsync_path(directory)  # the rename itself
    return final


def quote_ident(name: str) -> str:
    """A SQL identifier, quoted (a table folder may be named like a keyword: ``order``)."""
    return '"' + name.replace('"', '""') + '"'


@functools.cache
def _empty_select(name: str) -> str:
    """No row, every registered column of ``name`` typed (so a view has them all even when no
    file, or not every file, holds them)."""
    cols = ", ".join(
        f"CAST(NULL AS {_duck_type(f.type)}) AS {quote_ident(f.name)}" for f in SCHEMAS[name]
    )
    return f"SELECT {cols}, CAST(NULL AS DATE) AS {PARTITION_COLUMN} WHERE false"


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


#: DuckDB errors that are about the query itself (never a damaged file)
_QUERY_ERRORS: tuple[type[Exception], ...] = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
)


def _explain_duckdb_error(exc: Exception, root: Path, store: Store | None = None) -> str:
    """DuckDB's message, naming the damaged file(s) when the error comes from reading one.

    A query error (syntax, unknown column, bad cast) is returned as DuckDB words it. Anything
    else may come from a damaged file, whose name DuckDB's message often lacks: the store is
    verified (footers, then every page) and the bad files named.
    """
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if store is None or isinstance(exc, _QUERY_ERRORS):
        return text
    bad, how = store.verify(), "verify --quarantine"
    if not bad:
        bad, how = store.verify(deep=True), "verify --deep --quarantine"
    if bad:
        names = ", ".join(str(p) for p, _ in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        return (
            f"damaged Parquet {noun_for(len(bad), 'file')} in the store {root}: {names}{more} "
            f"({bad[0][1]}); "
            f"run `toolwatch store {how}` to move them aside"
        )
    lower = text.lower()
    if "magic" in lower or "corrupt" in lower:
        return f"a Parquet file in the store {root} is corrupt: {text}"
    return text


def _vanished(exc: Exception) -> bool:
    text = str(exc).lower()
    return "no such file" in text or "no files found" in text or "cannot open file" in text
