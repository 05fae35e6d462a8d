"""``toolwatch sql "SELECT …"``: run SQL over the store's views and print the result.

Views: ``calls``, ``sessions``, ``tool_lists`` and one per other table in the store (alerts,
experiment results, ...). Output as an aligned table (default), CSV or JSON
(:mod:`toolwatch.collector.store.result_formats`).
"""

from __future__ import annotations

import argparse
import sys

from toolwatch.collector.store import Store, StoreError, add_store_argument
from toolwatch.collector.store.result_formats import format_table, write_csv, write_json

HELP = "run SQL over the store and print a table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sql", help='one SQL statement, e.g. "SELECT * FROM sessions LIMIT 5"')
    add_store_argument(parser)
    parser.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="output format"
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=200,
        help="rows shown in table format (0 = all; csv and json always print all)",
    )


def run(args: argparse.Namespace) -> int:
    store = Store(args.store)
    if not store.root.is_dir():  # a mistyped --store would otherwise answer with empty views
        print(f"toolwatch sql: no store at {store.root}", file=sys.stderr)
        return 1
    try:
        table = store.query(args.sql)
    except StoreError as exc:
        print(f"toolwatch sql: {exc}", file=sys.stderr)
        return 1
    if args.format == "csv":
        write_csv(table, sys.stdout)
    elif args.format == "json":
        write_json(table, sys.stdout)
    else:
        sys.stdout.write(format_table(table, args.max_rows))
    return 0
