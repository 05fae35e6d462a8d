"""``toolwatch pins``: the tool listings you approved, and the ones that changed since.

    toolwatch pins list [--store S] [--json]
    toolwatch pins approve (--server S | --tool T | --all | --from FILE) [--store S]
    toolwatch pins export [-o FILE] [--store S]

``list`` shows every (server, tool) the store has seen in ``tools/list`` and every pin, with
its status: ``approved`` (the latest listing is the pin), ``changed`` (listed with another
digest since: a rug pull or an upgrade to review), ``new`` (not pinned, on a server with pins),
``unpinned`` (its server has no pin), ``not listed``. ``approve`` pins the latest listed digest
of the tools it names (or those of an exported file); the collector's listing watcher reads the
new pins at its next listing, and the digest no longer alerts. ``export`` writes the pins as
JSON (stdout by default) for another store's ``approve --from``. Digests only, never text.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import add_store_argument
from toolwatch.detection.alerting.pins import (
    NOTHING_NAMED,
    ORIGIN_FILE,
    ORIGIN_LISTING,
    PinsError,
    approve,
    export_pins,
    latest_listings,
    load_pins,
    read_export,
    select,
    status,
)
from toolwatch.usage import UsageError, UserError
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `pins --help` needs no DuckDB or Arrow
    from toolwatch.collector.store.parquet_store import Store

HELP = "list, approve and export pinned tool digests"
SHORT = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("list", help="listed tools and pins, with their status")
    add_store_argument(show)
    show.add_argument("--json", action="store_true", help="print JSON (full digests)")
    ok = sub.add_parser("approve", help="pin the latest listed digest of the named tools")
    add_store_argument(ok)
    ok.add_argument("--server", action="append", default=[], help="a server (repeatable)")
    ok.add_argument("--tool", action="append", default=[], help="a tool (repeatable)")
    ok.add_argument("--all", action="store_true", help="every listed tool")
    ok.add_argument("--from", dest="source", type=Path, help="pins exported by `pins export`")
    out = sub.add_parser("export", help="write the pins as JSON")
    add_store_argument(out)
    out.add_argument("-o", "--output", type=Path, help="file to write (default stdout)")


FROM_ALONE = "give --from FILE alone, or --server/--tool/--all"


def run(args: argparse.Namespace) -> int:
    named = args.action != "approve" or args.source or args.server or args.tool or args.all
    if not named:  # bad usage, whatever the store holds
        raise UsageError(NOTHING_NAMED)
    if args.action == "approve" and args.source and (args.server or args.tool or args.all):
        raise UsageError(FROM_ALONE)
    from toolwatch.collector.store.parquet_store import Store

    store = Store(args.store)
    if getattr(args, "source", None) is None:  # only `approve --from` may start one
        store.require_existing()
    try:
        if args.action == "list":
            return _list(store, args.json)
        if args.action == "approve":
            return _approve(store, args)
        return _export(store, args.output)
    except PinsError as exc:
        raise UserError(str(exc)) from None


def _rows(store: Store) -> list[dict[str, Any]]:
    pins, listed = load_pins(store), latest_listings(store)
    approved = {server for server, _ in pins}
    rows = []
    for key in sorted(set(pins) | set(listed)):
        pin, seen = pins.get(key), listed.get(key)
        rows.append(
            {
                "server": key[0],
                "tool": key[1],
                "status": status(pin, seen, approved),
                "pinned_digest": pin.digest if pin else None,
                "listed_digest": seen.digest if seen else None,
                "last_listed": seen.listed_time.isoformat() if seen else None,
                "sessions": seen.sessions if seen else 0,
            }
        )
    return rows


def _list(store: Store, as_json: bool) -> int:
    from toolwatch.collector.store.result_formats import render, text_table

    rows = _rows(store)
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no tools/list seen in this store and no pins")
        return 0
    columns = [
        ("server", False),
        ("tool", False),
        ("status", False),
        ("pinned", False),
        ("listed", False),
        ("last listed", False),
        ("sessions", True),
    ]
    cells = [
        [
            r["server"] or "(unnamed)",
            r["tool"],
            r["status"],
            (r["pinned_digest"] or "-")[:SHORT],
            (r["listed_digest"] or "-")[:SHORT],
            (r["last_listed"] or "-")[:19],
            str(r["sessions"]),
        ]
        for r in rows
    ]
    print(render(text_table(columns, cells)).rstrip("\n"))
    review = sum(r["status"] in ("changed", "new") for r in rows)
    if review:
        print(
            f"{counted(review, 'tool')} to review: "
            "`toolwatch pins approve --tool NAME` once checked"
        )
    return 0


def _approve(store: Store, args: argparse.Namespace) -> int:
    if args.source is not None:
        items = read_export(args.source)
        origin = ORIGIN_FILE
    else:
        chosen = select(latest_listings(store), args.server, args.tool, args.all)
        items = [(c.server, c.tool, c.digest) for c in chosen]
        origin = ORIGIN_LISTING
    pins = load_pins(store)
    fresh = [i for i in items if (p := pins.get((i[0], i[1]))) is None or p.digest != i[2]]
    approve(store, fresh, origin)
    for server, tool, digest in fresh:
        print(f"approved {server or '(unnamed)'}/{tool} at {digest[:SHORT]}")
    print(f"{counted(len(fresh), 'pin')} written, {len(items) - len(fresh)} already approved")
    return 0


def _export(store: Store, output: Path | None) -> int:
    text = json.dumps(export_pins(load_pins(store)), indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
        print(f"wrote {output}", file=sys.stderr)
    return 0
