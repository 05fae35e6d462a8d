"""Arrow schemas derived from the table registry (:mod:`toolwatch.tables`), never spelled out
a second time."""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from toolwatch import tables
from toolwatch.record import Field

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "float64": pa.float64(),
}


def arrow_schema(fields: tuple[Field, ...] | tables.Table) -> pa.Schema:
    """The Arrow schema of a registered table (or of a tuple of fields)."""
    if isinstance(fields, tables.Table):
        fields = fields.fields
    return pa.schema([pa.field(f.name, _ARROW_TYPES[f.arrow], nullable=f.nullable) for f in fields])


#: Arrow schema of every registered table, by table name.
SCHEMAS: Final[dict[str, pa.Schema]] = {name: arrow_schema(t) for name, t in tables.TABLES.items()}
CALLS_SCHEMA: Final[pa.Schema] = SCHEMAS[tables.CALLS.name]
TOOL_LISTS_SCHEMA: Final[pa.Schema] = SCHEMAS[tables.TOOL_LISTS.name]
