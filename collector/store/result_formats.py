"""Query results as text: an aligned table (numbers right-aligned, long cells cut), CSV or
JSON. ``toolwatch sql`` prints its results with them, ``toolwatch store info`` its table.

JSON writes NaN and ±Infinity as ``null`` (strict JSON, as every JSON output of the project);
CSV writes them as DuckDB's ``COPY … TO`` does, ``nan``, ``inf``, ``-inf`` (NULL is empty), and
times as the table does, ``2026-08-04 09:00:00+00:00``, and a list, struct or map cell as the
JSON output writes it, ``[0.1, null]`` (every CSV the product writes: ``toolwatch score --out
x.csv`` and the app's Explore download too). A single-precision value (``FLOAT``),
a column or nested in a list, struct or map, is written as the value stored, ``0.1``, in both
(not the same float widened to a double, ``0.10000000149011612``).

Tables are drawn by ``rich`` (:func:`text_table`, :func:`render`), shared by every command that
prints one (``scan``, ``stats``, ...): never wrapped or cut to the terminal's width, so an id
is always whole and can be pasted into SQL or the app; plain text without colour codes, so
output piped to a file reads the same.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rich import box
from rich.console import Console
from rich.table import Table

from toolwatch.words import counted

MAX_CELL = 80  # wide enough for a whole sha256 digest (64 hex digits) and any id


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float_cell(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return cut_cell(str(value))


def cut_cell(text: str) -> str:
    """``text`` in at most :data:`MAX_CELL` characters, a longer one ending with "…" (a table
    that prints a name whole would push every column after it that far right)."""
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _float_cell(value: float) -> str:
    """Six significant digits, but a large number whole: a sum of bytes read 1.36114e+07,
    now 13611354 (one decimal kept below 10^15, where a double still holds it)."""
    if not math.isfinite(value):
        return str(value)
    if 1e5 <= abs(value) < 1e15:
        return f"{value:.1f}".removesuffix(".0")
    return f"{value:.6g}"


def format_table(table: pa.Table, max_rows: int = 0) -> str:
    """An aligned text table (numbers right-aligned) with a ``(N rows)`` footer."""
    shown = table if not max_rows or table.num_rows <= max_rows else table.slice(0, max_rows)
    numeric = [
        pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
        for f in table.schema
    ]
    drawn = text_table(
        list(zip(table.column_names, numeric, strict=True)),
        [[_cell(v) for v in row.values()] for row in shown.to_pylist()],
    )
    footer = f"({counted(table.num_rows, 'row')}"
    if shown.num_rows < table.num_rows:
        footer += f", first {shown.num_rows:,} shown; --max-rows 0 shows all"
    return render(drawn) + footer + ")\n"


def text_table(
    columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]], title: str | None = None
) -> Table:
    """A rich table of ``(name, right-aligned)`` columns and rows of cell text."""
    drawn = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title=title)
    for name, right in columns:
        drawn.add_column(name, justify="right" if right else "left", no_wrap=True)
    for row in rows:
        drawn.add_row(*row)
    return drawn


def render(drawn: Table) -> str:
    """The table as plain text at its natural width (nothing wrapped or cut), lines stripped."""
    out = io.StringIO()
    Console(
        file=out, width=1_000_000, color_system=None, highlight=False, emoji=False, markup=False
    ).print(drawn)
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


def write_csv(table: pa.Table, out: TextIO) -> None:
    """The rows as CSV with a header, cells as DuckDB's own ``COPY … TO 'x.csv'`` writes them
    (:func:`_csv_cell`), so a reader treats ``toolwatch sql --format csv`` and a COPY alike."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in _rows(table):
        writer.writerow([_csv_cell(v) for v in row.values()])


def _csv_cell(value: Any) -> Any:
    """NULL empty; NaN and ±Infinity ``nan``, ``inf``, ``-inf`` (not empty: that would read
    as NULL, and DuckDB, pandas and Python's ``float`` read these back as the same numbers);
    booleans ``true``/``false``; times ISO 8601 with a space, as the table and DuckDB's COPY
    write them; a list, struct or map as ``--format json`` writes it (:func:`_json_cell`)."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return _json_cell(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return _copy_time(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return _plain(value)


def _json_cell(value: list[Any] | dict[str, Any]) -> str:
    """A nested value as JSON on one line, as :func:`write_json` writes it (``[0.1, null]``,
    ``{"x": "2026-08-04T09:30:00+00:00"}``, a map as its ``[key, value]`` pairs, NaN as
    ``null``): Python's own text (``[0.1, None]``, ``{'x': datetime.datetime(…)}``) was no
    format a reader parses."""
    return json.dumps(_finite(value), default=_plain, ensure_ascii=False, allow_nan=False)


def _copy_time(value: datetime) -> str:
    """ISO 8601 with a space and the fraction's trailing zeros cut, as COPY writes it
    (``09:30:00.25``); the offset as Python spells it (``+00:00``; COPY writes ``+00``)."""
    text = value.isoformat(sep=" ")
    if value.microsecond:
        head, dot, tail = text.partition(".")
        digits = tail[:6].rstrip("0")
        text = head + dot + digits + tail[6:]
    return text


def write_json(table: pa.Table, out: TextIO) -> None:
    """The rows as a JSON array of objects. NaN and ±Infinity are written as ``null`` (JSON has
    no such numbers; the experiment results do the same), nested ones too."""
    rows = _finite(_rows(table))
    json.dump(rows, out, default=_plain, ensure_ascii=False, indent=1, allow_nan=False)
    out.write("\n")


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as Python values, every single- or half-precision float (a column's or one
    nested in a list, struct or map) as the double its shortest decimal reads as: Python has
    only doubles, and FLOAT 0.1 widened is 0.10000000149011612, a number nobody stored."""
    rows = _stored_floats(table).to_pylist()
    walked = [  # half precision: Arrow's text of a float16 is its exact value, 0.0999755859375
        f
        for f in table.schema
        if pa.types.is_float16(f.type) or (pa.types.is_nested(f.type) and _has_narrow(f.type))
    ]
    for row in rows:
        for f in walked:
            row[f.name] = _narrowed(row[f.name], f.type)
    return rows


def _stored_floats(table: pa.Table) -> pa.Table:
    """Single-precision columns as the doubles their shortest decimal reads as (Arrow's cast
    to text gives the shortest decimal that reads back as the float32), in one pass each."""
    for i, field in enumerate(table.schema):
        if pa.types.is_float32(field.type):
            decimal = pc.cast(table.column(i), pa.string())
            table = table.set_column(
                i, field.with_type(pa.float64()), pc.cast(decimal, pa.float64())
            )
    return table


def _is_narrow(kind: pa.DataType) -> bool:
    return bool(pa.types.is_float32(kind) or pa.types.is_float16(kind))


def _has_narrow(kind: pa.DataType) -> bool:
    """Whether a single- or half-precision float is anywhere in ``kind``."""
    return _is_narrow(kind) or any(_has_narrow(kind.field(i).type) for i in range(kind.num_fields))


def _narrowed(value: Any, kind: pa.DataType) -> Any:
    """``value`` (of Arrow type ``kind``, as ``to_pylist`` gives it) with each narrow float as
    the shortest decimal that reads back as it (numpy's repr of the float32 or float16)."""
    if value is None:
        return None
    if _is_narrow(kind):
        narrow = np.float16 if pa.types.is_float16(kind) else np.float32
        return float(str(narrow(value)))
    if not _has_narrow(kind):
        return value
    if pa.types.is_map(kind):
        return [(_narrowed(k, kind.key_type), _narrowed(v, kind.item_type)) for k, v in value]
    if pa.types.is_struct(kind):
        return {f.name: _narrowed(value.get(f.name), f.type) for f in kind}
    if isinstance(kind, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return [_narrowed(v, kind.value_type) for v in value]
    return value


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float, however deep in lists and objects, as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return value
