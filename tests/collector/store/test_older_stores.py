"""A store written before a column existed still reads: the view has every registered column, and
a missing one is null (dev-real's 21-column calls.parquet, for instance)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from support.collector import record
from toolwatch.collector.sources.delivery import records_table
from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS


def test_files_without_the_provenance_columns_read_them_as_null(tmp_path: Path) -> None:
    old = records_table([record(i) for i in range(3)]).drop_columns(list(EXPORTED_FIELDS))
    assert len(old.schema) == len(CALLS_SCHEMA) - len(EXPORTED_FIELDS)
    assert not set(old.schema.names) & set(EXPORTED_FIELDS)
    part = tmp_path / "calls" / "date=2026-08-01"
    part.mkdir(parents=True)
    pq.write_table(old, part / "part-old.parquet")
    store = Store(tmp_path)
    new = records_table([record(9)]).set_column(
        CALLS_SCHEMA.get_field_index("egress"), "egress", pa.array(["web"])
    )
    store.append("calls", new)
    rows = store.query(
        "SELECT egress, reused_longest, payload_total, source_tool FROM calls ORDER BY seq"
    ).to_pylist()
    assert (
        rows[:3]
        == [dict.fromkeys(["egress", "reused_longest", "payload_total", "source_tool"])] * 3
    )
    assert rows[3]["egress"] == "web"
    table = store.query("SELECT * FROM calls")
    assert set(CALLS_SCHEMA.names) <= set(table.column_names)


def test_an_empty_store_has_every_column(tmp_path: Path) -> None:
    table = Store(tmp_path).query("SELECT * FROM calls")
    assert table.num_rows == 0 and set(CALLS_SCHEMA.names) <= set(table.column_names)
