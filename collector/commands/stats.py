"""``toolwatch stats``: the corpus facts of a store beside the study's published figures.

The numbers come from :func:`toolwatch.collector.stats.corpus.corpus_stats` (SQL over the
``calls`` view), their text from :mod:`toolwatch.collector.stats.report`; the study's from
:data:`toolwatch.study.CORPUS`. The sources present are printed too, so a simulated corpus is
never mistaken for a real one.
"""

from __future__ import annotations

import argparse
import json
import sys

from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.conventions import SOURCES
from toolwatch.words import counted

HELP = "show the corpus's facts beside the study's"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument(
        "--source",
        action="append",
        choices=SOURCES,
        help="only calls of this source (repeatable; default: all)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    # imported here: `stats --help` needs neither DuckDB nor Arrow
    from toolwatch.collector.stats import corpus_stats, injected_sessions, source_counts
    from toolwatch.collector.stats.report import format_report, stats_document
    from toolwatch.collector.store.parquet_store import Store

    store = Store(args.store)
    store.require_existing()
    try:
        with store.session() as con:  # a damaged data page is named, not a traceback
            stats = corpus_stats(con, args.source)
            sources = source_counts(con)
            injected = injected_sessions(con)
    except StoreError as exc:
        print(f"toolwatch stats: {exc}", file=sys.stderr)
        return 1
    if args.json:
        document = stats_document(str(store.root), args.source, sources, stats)
        print(json.dumps({**document, "injected_sessions_left_out": injected}, indent=2))
    else:
        print(format_report(str(store.root), args.source, sources, stats))
        if injected:
            print(
                f"note: {counted(injected, 'session')} holding injected (labelled) calls are left "
                "out "
                "(experiment --write-injected, the fault proxy)"
            )
    return 0
