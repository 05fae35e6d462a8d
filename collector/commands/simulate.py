"""``toolwatch simulate``: write the SIMULATED workload to the store, or send it as OTLP spans.

The corpus comes from :func:`toolwatch.collector.sources.simulator.workload.generate` and says what
it is in every
row (``source="simulated"``) and in every line printed here. Writing is idempotent: calls whose
id is already in the store are skipped, so running the same command twice adds nothing, and
the configuration of every corpus written goes to the store's ``simulations`` table so it can
be rebuilt. ``--otlp URL`` sends the calls to any OTLP/HTTP collector instead, with their
original times (through :func:`toolwatch.instrumentation.export.replay.send_records`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch import study, tables
from toolwatch.collector.sources.simulator import (
    SOURCE,
    SimulationConfig,
    assign_splits,
    generate,
    split_dates,
    stream_calls,
)
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.collector.store.parquet_store import Store, StoreError, add_store_argument

log = logging.getLogger(__name__)

HELP = "write a simulated workload (labelled simulated)"
BANNER: Final = "SIMULATED workload"
#: Table of the configurations written (one row per ``toolwatch simulate`` that wrote rows).
SIMULATIONS_TABLE: Final = tables.SIMULATIONS.name
SIMULATIONS_SCHEMA: Final = SCHEMAS[SIMULATIONS_TABLE]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--sessions",
        type=int,
        default=int(study.CORPUS["sessions"]),
        help="sessions; the shape and split proportions stay the study's (default 422)",
    )
    parser.add_argument(
        "--start", default=study.CORPUS_START, help=f"first day (default {study.CORPUS_START})"
    )
    parser.add_argument(
        "--days", type=int, default=int(study.CORPUS["days"]), help="days covered (default 42)"
    )
    parser.add_argument(
        "--runaway-retries",
        type=int,
        default=32,
        help="retries of the refused call in the retry-loop subagent; 0 = none (default 32)",
    )
    parser.add_argument(
        "--otlp",
        metavar="URL",
        help="send the calls as OTLP/HTTP spans to this collector instead of writing the store",
    )


def run(args: argparse.Namespace) -> int:
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
    began = time.perf_counter()
    table = generate(config)
    elapsed = time.perf_counter() - began
    for line in summary_lines(config, table, elapsed):
        print(line)
    if args.otlp:
        return _send(table, args.otlp)
    return _write(config, table, Store(args.store))


def summary_lines(config: SimulationConfig, table: pa.Table, elapsed: float) -> list[str]:
    """What was generated: counts, window, split sizes by time (all plainly simulated).

    "Sessions" are streams ``(session_id, agent_id)``, as the study counted them (each
    subagent one session), so the split sizes read like the study's.
    """
    dates = split_dates(config.start, config.days)
    splits = assign_splits(
        table, {k: (a.isoformat(), b.isoformat()) for k, (a, b) in dates.items()}
    )
    per_stream = stream_calls(table)
    subagents = sum(1 for _, agent in per_stream if agent is not None)
    first, last = dates["train"][0], dates["test"][1]
    lines = [
        f"{BANNER} (source={SOURCE}, seed {config.seed}): {len(per_stream):,} sessions "
        f"({subagents:,} of them subagents), {table.num_rows:,} calls, "
        f"{len(pc.unique(table.column('tool'))):,} tools, "
        f"{first.isoformat()} → {last.isoformat()} (generated in {elapsed:.2f} s)",
    ]
    for name in ("train", "calibration", "test"):
        keys = splits[name]
        a, b = dates[name]
        calls = sum(per_stream[k] for k in keys)
        note = f" with >= {study.TEST_MIN_CALLS} calls" if name == "test" else ""
        lines.append(
            f"  {name:<12} {a.isoformat()} → {b.isoformat()}: {len(keys):,} sessions{note}, "
            f"{calls:,} calls"
        )
    short = splits["test_short"]
    lines.append(
        f"  {'':<12} + {len(short):,} shorter test-window sessions, "
        f"{sum(per_stream[k] for k in short):,} calls (outside the study's test split)"
    )
    return lines


def record_simulation(
    store: Store, config: SimulationConfig, calls: int, written: int
) -> list[Path]:
    """Save the configuration of a corpus written to ``store`` (so it can be rebuilt)."""
    row = {
        "generated_time": datetime.now(UTC),
        "seed": config.seed,
        "sessions": config.sessions,
        "start": config.start,
        "days": config.days,
        "runaway_retries": config.runaway_retries,
        "calls": calls,
        "calls_written": written,
        "config": config.to_json(),
    }
    return store.append(
        SIMULATIONS_TABLE, [row], schema=SIMULATIONS_SCHEMA, partition_by="generated_time"
    )


def _write(config: SimulationConfig, table: pa.Table, store: Store) -> int:
    try:
        fresh = _not_stored(store, table)
        if fresh.num_rows:
            files = store.append("calls", fresh)
            record_simulation(store, config, table.num_rows, fresh.num_rows)
        else:
            files = []
    except (StoreError, duckdb.Error) as exc:
        print(f"toolwatch simulate: cannot use the store {store.root}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"toolwatch simulate: cannot write the store {store.root}: {exc}", file=sys.stderr)
        return 2
    skipped = table.num_rows - fresh.num_rows
    if skipped == table.num_rows:
        print(f"{BANNER} already in {store.root}: nothing written (same seed and settings)")
    else:
        print(
            f"{BANNER} written to {store.root}: {fresh.num_rows:,} calls in {len(files)} files"
            + (f" ({skipped:,} already there, skipped)" if skipped else "")
        )
    return 0


def _send(table: pa.Table, endpoint: str) -> int:
    try:
        from toolwatch.instrumentation.export.replay import send_records
    except ImportError as exc:
        print(f"toolwatch simulate: OTLP export is unavailable ({exc})", file=sys.stderr)
        return 2
    from tqdm import tqdm

    records = table.to_pylist()
    with tqdm(total=len(records), unit="span", desc="OTLP", file=sys.stderr) as bar:

        def progress(sent: int) -> None:
            bar.update(sent - bar.n)

        try:
            sent = send_records(records, endpoint, on_progress=progress)
        except Exception as exc:  # refused batch, network error: say how far it got
            print(
                f"toolwatch simulate: sending to {endpoint} failed after {bar.n:,} spans: {exc}",
                file=sys.stderr,
            )
            return 1
    print(f"{BANNER} sent to {endpoint}: {sent:,} spans with their original times")
    return 0


def _not_stored(store: Store, table: pa.Table) -> pa.Table:
    """The rows whose call id the store does not hold yet."""
    con = store.connect()
    try:
        con.register("incoming", table.select(["call_id"]))
        stored = con.execute(
            "SELECT DISTINCT c.call_id FROM calls c JOIN incoming i ON c.call_id = i.call_id "
            "WHERE c.source = ?",
            [SOURCE],
        ).fetchall()
    finally:
        con.close()
    if not stored:
        return table
    known = pa.array([row[0] for row in stored], pa.string())
    return table.filter(pc.invert(pc.is_in(table.column("call_id"), known)))
