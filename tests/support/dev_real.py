"""The committed slice of dev-real (``tests/fixtures/dev_real``): real calls for the tests."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from support.paths import FIXTURES
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS

DEV_REAL = FIXTURES / "dev_real" / "calls.parquet"
#: The slice's egress calls with their provenance as measured on the transcripts (README)
DEV_REAL_PROVENANCE = FIXTURES / "dev_real" / "provenance.csv"


def dev_real_calls(*, provenance: bool = False) -> pa.Table:
    """The slice; with ``provenance`` its measured provenance joined in (every call not in
    ``provenance.csv`` sends nothing: egress ``none``, payload 0)."""
    calls = pq.read_table(DEV_REAL)
    if not provenance:
        return calls
    con = duckdb.connect()
    con.register(
        "calls", calls.drop_columns([c for c in EXPORTED_FIELDS if c in calls.column_names])
    )
    joined = con.sql(
        f"""SELECT c.*, coalesce(p.egress, 'none') AS egress,
            p.reused_longest::BIGINT AS reused_longest, p.reused_total::BIGINT AS reused_total,
            coalesce(p.payload_longest, 0)::BIGINT AS payload_longest,
            coalesce(p.payload_total, 0)::BIGINT AS payload_total,
            p.source_tool, p.reused_encoding, p.dest_seen
        FROM calls c LEFT JOIN read_csv('{DEV_REAL_PROVENANCE}', header=true,
            types={{'agent_id': 'VARCHAR', 'source_tool': 'VARCHAR'}}) p
        ON p.session_id = c.session_id AND coalesce(p.agent_id, '') = coalesce(c.agent_id, '')
            AND p.seq = c.seq AND p.tool = c.tool
        ORDER BY c.span_id"""
    ).to_arrow_table()
    con.close()
    return joined


def dev_real_later_users() -> pa.Table:
    """The slice's streams whose first call is on or after 2026-02-11: the four users after
    aistrad (a Windows user's fast subagents come first in time, slower users after them), so
    a split by time trains on one pace and tests on another."""
    return _streams_by_first_call(pc.greater_equal, datetime(2026, 2, 11, tzinfo=UTC))


def dev_real_first_days() -> pa.Table:
    """The slice's streams whose first call is before 2026-01-09 (46 streams of aistrad): the
    warm-up loop ``aac67f8`` and four more warm-up agents start last, so a split by shares of
    (0.6, 0.2) puts them in the test split beside 3 normal long streams."""
    return _streams_by_first_call(pc.less, datetime(2026, 1, 9, tzinfo=UTC))


def _streams_by_first_call(compare: Any, day: datetime) -> pa.Table:
    """The slice's streams whose first call's time ``compare``s true against ``day``."""
    calls = dev_real_calls()
    first = calls.group_by(["session_id", "agent_id"], use_threads=False).aggregate(
        [("start_time", "min")]
    )
    cut = pa.scalar(day, pa.timestamp("us", tz="UTC"))
    kept = first.filter(compare(first["start_time_min"], cut))
    keys = set(zip(kept["session_id"].to_pylist(), kept["agent_id"].to_pylist(), strict=True))
    pairs = zip(calls["session_id"].to_pylist(), calls["agent_id"].to_pylist(), strict=True)
    return calls.filter(pa.array([pair in keys for pair in pairs]))


@functools.cache
def later_users_experiment() -> ExperimentResult:
    """The study's protocol on :func:`dev_real_later_users`, with the runaway and the two
    controls (one run per test session, shared by the tests that read it)."""
    return run_experiment(
        dev_real_later_users(),
        ExperimentConfig(
            bootstrap=200,
            ablation=False,
            kinds=("runaway_retry", "control_other_normal", "control_same_response_burst"),
        ),
    )


def dev_real_store(root: Path, *, flags: bool = True) -> Store:
    """A store of the slice; ``flags=False`` writes dev-real's own 21 columns (no quirk flag),
    the way its README turns ``calls.parquet`` into a store."""
    store = Store(root)
    calls = dev_real_calls()
    if not flags:
        calls = calls.drop_columns(["client_quirk"])
        import duckdb

        root.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect()
        con.register("fixture", calls)
        con.sql(
            f"COPY (SELECT *, CAST(start_time AS DATE) AS date FROM fixture) TO "
            f"'{root / 'calls'}' (FORMAT parquet, PARTITION_BY (date), COMPRESSION zstd)"
        )
        con.close()
        return store
    store.append("calls", calls)
    return store
