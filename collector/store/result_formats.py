"""Query results as text: an aligned table (numbers right-aligned, long cells cut), CSV or
JSON. ``toolwatch sql`` prints its results with them, ``toolwatch store info`` its table."""

from __future__ import annotations

import csv
import json
import math
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

import pyarrow as pa

MAX_CELL = 80  # wide enough for a whole sha256 digest (64 hex digits) and any id


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    text = str(value)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def format_table(table: pa.Table, max_rows: int = 0) -> str:
    """An aligned text table (numbers right-aligned) with a ``(N rows)`` footer."""
    names = table.column_names
    shown = table if not max_rows or table.num_rows <= max_rows else table.slice(0, max_rows)
    rows = [[_cell(v) for v in row.values()] for row in shown.to_pylist()]
    numeric = [
        pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
        for f in table.schema
    ]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ]
        return " | ".join(parts).rstrip() + "\n"

    out = [line(list(names)), "-+-".join("-" * w for w in widths) + "\n"]
    out += [line(r) for r in rows]
    footer = f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}"
    if shown.num_rows < table.num_rows:
        footer += f", first {shown.num_rows} shown; --max-rows 0 shows all"
    out.append(footer + ")\n")
    return "".join(out)


def write_csv(table: pa.Table, out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in table.to_pylist():
        writer.writerow(["" if v is None else _plain(v) for v in row.values()])


def write_json(table: pa.Table, out: TextIO) -> None:
    json.dump(table.to_pylist(), out, default=_plain, ensure_ascii=False, indent=1)
    out.write("\n")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return value
