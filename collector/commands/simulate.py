"""``toolwatch simulate``: write the SIMULATED workload to the store, or send it as OTLP spans.

The corpus comes from :func:`toolwatch.collector.sources.simulator.generate` and says what it is
in every row (``source="simulated"``) and in every line printed here
(:mod:`toolwatch.collector.sources.simulator.report`). Writing is idempotent: calls whose id is
already in the store are skipped (:func:`toolwatch.collector.sources.delivery.append_new_calls`),
so running the same command twice adds nothing, and the configuration of every corpus written
goes to the store's ``simulations`` table so it can be rebuilt. ``--otlp URL`` sends the calls
to any OTLP/HTTP collector instead, with their original times
(:func:`toolwatch.collector.sources.delivery.send_otlp`).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from toolwatch import study
from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.usage import UsageError, UserError, non_negative_int, positive_int
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `simulate --help` needs none of them
    import pyarrow as pa

    from toolwatch.collector.sources.simulator import SimulationConfig
    from toolwatch.collector.store.parquet_store import Store

HELP = "write a simulated workload (labelled simulated)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--sessions",
        type=positive_int,
        default=int(study.CORPUS["sessions"]),
        help="sessions; the shape and split proportions stay the study's (default 422)",
    )
    parser.add_argument(
        "--start", default=study.CORPUS_START, help=f"first day (default {study.CORPUS_START})"
    )
    parser.add_argument(
        "--days",
        type=positive_int,
        default=int(study.CORPUS["days"]),
        help="days covered (default 42)",
    )
    parser.add_argument(
        "--runaway-retries",
        type=non_negative_int,
        default=32,
        help="retries of the refused call in the retry-loop subagent; 0 = none (default 32)",
    )
    parser.add_argument(
        "--otlp",
        metavar="URL",
        help="send the calls as OTLP/HTTP spans to this collector instead of writing the store",
    )


def run(args: argparse.Namespace) -> int:
    from toolwatch.collector.sources.simulator import SimulationConfig, generate
    from toolwatch.collector.sources.simulator.report import summary_lines
    from toolwatch.collector.store.parquet_store import Store

    try:
        config = SimulationConfig(
            seed=args.seed,
            sessions=args.sessions,
            start=args.start,
            days=args.days,
            runaway_retries=args.runaway_retries,
        )
    except ValueError as exc:
        print(f"toolwatch simulate: {exc}", file=sys.stderr)
        return 2
    if args.otlp:  # the destination first: a mistake there is said before any work
        _check_endpoint(args.otlp)
        _check_export()
    else:
        Store(args.store).check_path()
    began = time.perf_counter()
    table = generate(config)
    elapsed = time.perf_counter() - began
    for line in summary_lines(config, table, elapsed):
        print(line)
    if args.otlp:
        return _send(table, args.otlp)
    return _write(config, table, Store(args.store))


def _check_endpoint(url: str) -> None:
    """A usage error unless ``url`` is an OTLP endpoint the export can use (its own check)."""
    from toolwatch.instrumentation.export.otlp import traces_url

    try:
        traces_url(url)
    except ValueError:
        raise UsageError(f"--otlp {url}: give an http(s)://host:port URL") from None


def _check_export() -> None:
    """A one-line error (exit 1) when the OTLP export is not installed: said before the
    workload is generated, not after it."""
    from toolwatch.collector.sources.delivery import ExportUnavailable, require_export

    try:
        require_export()
    except ExportUnavailable as exc:
        raise UserError(str(exc)) from None


def _write(config: SimulationConfig, table: pa.Table, store: Store) -> int:
    import duckdb

    from toolwatch.collector.sources.delivery import append_new_calls
    from toolwatch.collector.sources.simulator.report import BANNER, record_simulation

    try:
        appended = append_new_calls(store, table)
        if appended.calls.num_rows:
            record_simulation(store, config, table.num_rows, appended.calls.num_rows)
    except (StoreError, duckdb.Error) as exc:
        print(f"toolwatch simulate: cannot use the store {store.root}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"toolwatch simulate: cannot write the store {store.root}: {exc}", file=sys.stderr)
        return 1
    written, skipped = appended.calls.num_rows, appended.already_stored
    if skipped == table.num_rows:
        print(f"{BANNER} already in {store.root}: nothing written (same seed and settings)")
    else:
        print(
            f"{BANNER} written to {store.root}: {counted(written, 'call')} in "
            f"{counted(len(appended.files), 'file')}"
            + (f" ({skipped:,} already there, skipped)" if skipped else "")
        )
    return 0


def _send(table: pa.Table, endpoint: str) -> int:
    from toolwatch.collector.sources.delivery import ExportFailed, send_otlp_report
    from toolwatch.collector.sources.simulator.report import BANNER

    try:
        sent = send_otlp_report(table, endpoint, progress=True)
    except ExportFailed as exc:  # refused batch, network error: say how far it got
        print(
            f"toolwatch simulate: sending to {endpoint} failed after {counted(exc.sent, 'span')}: "
            f"{exc.cause}",
            file=sys.stderr,
        )
        return 1
    print(f"{BANNER} sent to {endpoint}: {counted(sent.sent, 'span')} with their original times")
    problem = sent.check()
    if problem is not None:
        print(f"toolwatch simulate: {problem}", file=sys.stderr)
        return 1
    return 0
