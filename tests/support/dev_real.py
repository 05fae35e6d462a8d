"""The committed slice of dev-real (``tests/fixtures/dev_real``): real calls for the tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from support.paths import FIXTURES
from toolwatch.collector.store.parquet_store import Store

DEV_REAL = FIXTURES / "dev_real" / "calls.parquet"


def dev_real_calls() -> pa.Table:
    return pq.read_table(DEV_REAL)


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
