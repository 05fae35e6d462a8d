"""``toolwatch sql "SELECT …"``: run SQL over the store's views and print the result.

Views: ``calls``, ``sessions``, ``streams``, ``tool_lists`` and one per other table in the store
(alerts, experiment results, ...). Output as an aligned table (default), CSV or JSON
(:mod:`toolwatch.collector.store.result_formats`). Read-only: only SELECT and EXPLAIN statements
run, on a connection that cannot write a file (:mod:`toolwatch.collector.store.read_only`).
Several statements separated by ``;`` print
one table each, in order (CSV and JSON take one statement). A view that does not exist is
answered with the store's own views, not DuckDB's catalogue guesses.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.usage import UsageError, UserError, non_negative_int, one_line

if TYPE_CHECKING:  # imported when the command runs: `sql --help` needs neither
    import pyarrow as pa

    from toolwatch.collector.store.parquet_store import Store

HELP = "run SQL over the store and print a table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sql", help='SQL, e.g. "SELECT * FROM sessions LIMIT 5" (statements: one table each)'
    )
    add_store_argument(parser)
    parser.add_argument(
        "--format",
        choices=("table", "csv", "json"),
        default="table",
        help="output format (default table; json writes NaN and ±Infinity as null; csv writes "
        "them nan, inf, -inf, NULL as an empty field, booleans true/false and times with a "
        "space, as DuckDB's COPY TO csv does, and a list, struct or map as the JSON json "
        "writes)",
    )
    parser.add_argument(
        "--max-rows",
        type=non_negative_int,
        default=200,
        help="rows shown in table format (default 200; 0 = all; csv and json print all)",
    )


def run(args: argparse.Namespace) -> int:
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.collector.store.result_formats import format_table, write_csv, write_json

    store = Store(args.store)
    store.require_existing()
    statements = split_statements(args.sql)
    if args.format != "table" and len(statements) > 1:
        raise UsageError(
            f"--format {args.format} prints one result: give one statement, not {len(statements)}"
        )
    for i, statement in enumerate(statements):
        table = _query(store, statement)
        if args.format == "csv":
            write_csv(table, sys.stdout)
        elif args.format == "json":
            write_json(table, sys.stdout)
        else:
            if len(statements) > 1:
                sys.stdout.write(("\n" if i else "") + f"-- {i + 1}/{len(statements)}\n")
            sys.stdout.write(format_table(table, args.max_rows))
    return 0


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql`` (DuckDB's parser); a usage error when there is none, or when
    one would write (``COPY``, ``INSERT``, ``ATTACH``, ...: the store is read-only here)."""
    import duckdb

    from toolwatch.collector.store.read_only import NotReadOnly, check_statement

    try:
        parsed = [s for s in duckdb.extract_statements(sql) if s.query.strip()]
    except duckdb.Error as exc:
        raise UserError(duckdb_message(exc)) from exc
    if not parsed:
        raise UsageError('no SQL statement given (e.g. "SELECT * FROM sessions LIMIT 5")')
    statements = []
    for i, statement in enumerate(parsed, 1):
        try:
            statements.append(check_statement(statement))
        except NotReadOnly as exc:
            where = f" (statement {i} of {len(parsed)})" if len(parsed) > 1 else ""
            raise UsageError(f"{exc}{where}") from None
    return statements


_MISSING_VIEW = re.compile(r"Table with name (\S+) does not exist")


def _query(store: Store, sql: str) -> pa.Table:
    import duckdb

    try:
        return store.query(sql, read_only=True)
    except StoreError as exc:
        if not isinstance(exc.__cause__, duckdb.Error):
            raise
        text = duckdb_message(exc)
        missing = _MISSING_VIEW.search(text)
        if missing:
            text = f"no view named {missing.group(1)} in the store {store.root}"
        if isinstance(exc.__cause__, duckdb.CatalogException):
            text += f"; {views_note(store)}"
        raise UserError(text) from exc


def duckdb_message(exc: Exception) -> str:
    """DuckDB's message on one line (:func:`toolwatch.usage.one_line`)."""
    return one_line(exc)


def views_note(store: Store) -> str:
    """``the store's views: calls, sessions, …`` (what a query can read)."""
    con = store.connect()
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'main' ORDER BY table_name"
            ).fetchall()
        ]
    finally:
        con.close()
    return "the store's views: " + ", ".join(names)
