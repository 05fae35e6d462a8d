"""``toolwatch store verify|compact|info``: check, tidy and describe the Parquet store."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import StoreError, add_store_argument, check_table_name
from toolwatch.usage import positive_int
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `store --help` needs neither
    from toolwatch.collector.store.parquet_store import Store

HELP = "verify, compact or describe (info) the store"
QUARANTINE_SUFFIX = ".corrupt"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    verify = actions.add_parser("verify", help="find unreadable Parquet files")
    verify.add_argument(
        "--deep",
        action="store_true",
        help="read every data page with its checksum (finds damage behind an intact footer)",
    )
    verify.add_argument(
        "--quarantine",
        action="store_true",
        help=f"rename unreadable files to *{QUARANTINE_SUFFIX} so queries work again (kept)",
    )
    compact = actions.add_parser("compact", help="merge small files (safe while collecting)")
    compact.add_argument("--table", type=_table_name, help="only this table (default: all)")
    compact.add_argument(
        "--min-files",
        type=positive_int,
        default=2,
        help="compact a partition with at least N small files (default 2)",
    )
    info = actions.add_parser(
        "info",
        help="tables, files, rows and date range; what the collector received; imported "
        "streams a newer import would flag",
    )
    info.add_argument("--json", action="store_true", help="print the same facts as JSON")
    for sub in (verify, compact, info):
        add_store_argument(sub)


def run(args: argparse.Namespace) -> int:
    from toolwatch.collector.store.parquet_store import Store

    store = Store(args.store)
    store.require_existing()
    try:
        if args.action == "verify":
            return _verify(store, args.quarantine, args.deep)
        if args.action == "compact":
            return _compact(store, args.table, args.min_files)
        return _info(store, as_json=args.json)
    except StoreError as exc:
        print(f"toolwatch store {args.action}: {exc}", file=sys.stderr)
        return 1


def _verify(store: Store, quarantine: bool, deep: bool) -> int:
    from tqdm import tqdm

    tables = store.tables()
    bad = []
    for name in tqdm(tables, desc="verify", unit="table", file=sys.stderr, disable=None):
        bad += store.verify(name, deep=deep)
    files = sum(len(store.files(t)) for t in tables)
    for path, reason in bad:
        print(f"UNREADABLE {path}: {reason}")
        if quarantine:
            target = path.with_name(path.name + QUARANTINE_SUFFIX)
            path.rename(target)
            print(f"  moved aside to {target}")
    for tmp in store.temp_files():
        print(f"unfinished write (never acknowledged, removed by compaction after 1 h): {tmp}")
    foreign = store.foreign_entries()
    for path in foreign:
        print(f"NOT READ {path}: not a date=YYYY-MM-DD partition, so no query sees it")
    how = "every page read" if deep else "footers read; --deep reads every page"
    print(
        f"{counted(files, 'file')} checked in {store.root} ({how}): {len(bad)} unreadable"
        + (
            f", {counted(len(foreign), 'foreign entry', 'foreign entries')} in table folders"
            if foreign
            else ""
        )
    )
    return 1 if (bad and not quarantine) or foreign else 0


def _table_name(text: str) -> str:
    """``--table``: a name that can be no table (``../elsewhere``) is bad usage, refused when
    the command line is parsed (exit 2); one this store lacks is found out later (exit 1)."""
    try:
        check_table_name(text)
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def _compact(store: Store, table: str | None, min_files: int) -> int:
    from tqdm import tqdm

    if table is not None:
        store.table_dir(table)  # a table name, not a path: nothing outside the store is touched
        if table not in store.tables():
            known = ", ".join(store.tables()) or "none"
            raise StoreError(f"no table {table!r} in {store.root} (tables: {known})")
    tables = [table] if table else store.tables()
    skipped: list[str] = []
    for name in tqdm(tables, desc="compact", unit="table", file=sys.stderr, disable=None):
        before = len(store.files(name))
        left: list[str] = []
        try:
            removed = store.compact(name, min_files=min_files, skipped=left)
        except OSError as exc:  # a full or read-only disk: say where (the files are intact)
            raise StoreError(f"cannot compact {name} in {store.root} (data intact): {exc}") from exc
        print(
            f"{name}: {counted(before, 'file')} -> {len(store.files(name))} ({removed} merged away)"
        )
        skipped += [f"{name}/{why}" for why in left]
    for why in skipped:  # the run did not do all it was asked: said, and exit 1
        print(f"toolwatch store compact: left alone {why} (run `toolwatch store verify --deep`)")
    return 1 if skipped else 0


def info_facts(store: Store) -> dict[str, Any]:
    """What ``store info`` says, as ``--json`` prints it (keys in docs/ARCHITECTURE.md, *Store*):
    the text is written from the same facts, so the two never disagree."""
    from toolwatch.collector.otlp.ingest import ingest_summary
    from toolwatch.collector.sources.stale_flags import imported_checks

    checks = imported_checks(store)
    return {
        "store": str(store.root),
        "tables": store.info(),
        "unfinished_writes": len(store.temp_files()),
        "ingest": ingest_summary(store),
        "imported": {
            "unflagged_forks": {
                quirk: {"streams": streams, "calls": calls}
                for quirk, (streams, calls) in checks.forks.items()
            },
            "without_result": checks.lost,
            "pending": checks.pending,
        },
    }


def _info(store: Store, *, as_json: bool = False) -> int:
    import pyarrow as pa

    from toolwatch.collector.otlp.ingest import format_ingest
    from toolwatch.collector.sources.stale_flags import format_unanswered, format_unflagged_forks
    from toolwatch.collector.store.result_formats import format_table

    facts = info_facts(store)
    ingest = facts["ingest"]
    if as_json:
        if ingest is not None:
            facts["ingest"] = {**ingest, "last": ingest["last"].isoformat()}
        print(json.dumps(facts, indent=2))
        return 0
    print(f"store {store.root}")
    if not facts["tables"]:
        print("(empty)")
        return 0
    sys.stdout.write(format_table(pa.Table.from_pylist(facts["tables"])))
    if facts["unfinished_writes"]:
        print(
            f"{counted(facts['unfinished_writes'], 'unfinished write')} (*.parquet.tmp), "
            "invisible to readers"
        )
    if ingest is not None:
        print("\n".join(format_ingest(ingest)))
    imported = facts["imported"]
    forks = {q: (f["streams"], f["calls"]) for q, f in imported["unflagged_forks"].items()}
    for line in format_unflagged_forks(forks) + format_unanswered(
        imported["without_result"], imported["pending"]
    ):
        print(line)
    return 0
