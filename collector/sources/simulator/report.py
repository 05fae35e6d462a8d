"""What a simulated corpus says about itself: the lines ``toolwatch simulate`` (and the demo)
print, every one of them plainly SIMULATED, and the row that saves its configuration in the
store's ``simulations`` table so the corpus can be rebuilt."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch import study, tables
from toolwatch.collector.sources.simulator.config import SOURCE, SimulationConfig, split_dates
from toolwatch.collector.sources.simulator.splits import assign_splits, stream_calls
from toolwatch.collector.store import Store
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.words import counted

BANNER: Final = "SIMULATED workload"
#: Table of the configurations written (one row per ``toolwatch simulate`` that wrote rows).
SIMULATIONS_TABLE: Final = tables.SIMULATIONS.name
SIMULATIONS_SCHEMA: Final = SCHEMAS[SIMULATIONS_TABLE]


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
        f"{BANNER} (source={SOURCE}, seed {config.seed}): {counted(len(per_stream), 'session')} "
        f"({subagents:,} of them subagents), {counted(table.num_rows, 'call')}, "
        f"{counted(len(pc.unique(table.column('tool'))), 'tool')}, "
        f"{first.isoformat()} → {last.isoformat()} (generated in {elapsed:.2f} s)",
    ]
    for name in ("train", "calibration", "test"):
        keys = splits[name]
        a, b = dates[name]
        calls = sum(per_stream[k] for k in keys)
        note = f" with >= {study.TEST_MIN_CALLS} calls" if name == "test" else ""
        lines.append(
            f"  {name:<12} {a.isoformat()} → {b.isoformat()}: "
            f"{counted(len(keys), 'session')}{note}, "
            f"{counted(calls, 'call')}"
        )
    short = splits["test_short"]
    lines.append(
        f"  {'':<12} + {counted(len(short), 'shorter test-window session')}, "
        f"{counted(sum(per_stream[k] for k in short), 'call')} (outside the study's test split)"
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
