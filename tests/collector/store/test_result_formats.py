"""Query results as text (``toolwatch sql``, ``toolwatch store info``): table, CSV, JSON."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa

from toolwatch.collector.store.result_formats import MAX_CELL, format_table, write_csv, write_json


def _table() -> pa.Table:
    return pa.table(
        {
            "tool": ["Read", "mcp__x__" + "y" * 100, None],
            "n": pa.array([3, 12345, None], pa.int64()),
            "share": [0.5, float("nan"), 1 / 3],
            "ok": [True, False, None],
        }
    )


def test_table_aligns_numbers_right_and_text_left_with_a_row_footer() -> None:
    lines = format_table(_table()).splitlines()
    assert lines[0] == "tool" + " " * (MAX_CELL - 4) + " |     n |    share | ok"
    assert lines[1] == "-" * MAX_CELL + "-+-------+----------+------"
    assert lines[2].startswith("Read ") and lines[2].endswith("|     3 |      0.5 | true")
    assert lines[3].split(" | ")[0] == "mcp__x__" + "y" * (MAX_CELL - 9) + "…"
    assert lines[3].endswith("| 12345 |      nan | false")
    assert lines[4].startswith("NULL ") and lines[4].endswith("|  NULL | 0.333333 | NULL")
    assert lines[-1] == "(3 rows)"


def test_table_shows_the_first_rows_and_says_so() -> None:
    text = format_table(_table(), max_rows=1)
    assert len(text.splitlines()) == 4
    assert text.endswith("(3 rows, first 1 shown; --max-rows 0 shows all)\n")
    assert format_table(_table().slice(0, 1)).endswith("(1 row)\n")


def test_csv_leaves_nulls_empty() -> None:
    out = io.StringIO()
    write_csv(pa.table({"a": [1, None], "b": ["x", None]}), out)
    assert out.getvalue() == "a,b\n1,x\n,\n"


def test_json_writes_times_decimals_and_bytes_plainly() -> None:
    when = datetime(2026, 8, 4, 9, 30, tzinfo=UTC)
    table = pa.table(
        {
            "t": pa.array([when], pa.timestamp("us", tz="UTC")),
            "d": pa.array([Decimal("1.50")], pa.decimal128(5, 2)),
            "b": pa.array([b"\x01\xff"], pa.binary()),
        }
    )
    out = io.StringIO()
    write_json(table, out)
    assert json.loads(out.getvalue()) == [
        {"t": "2026-08-04T09:30:00+00:00", "d": "1.50", "b": "01ff"}
    ]
