"""Arrow schemas derived from :mod:`toolwatch.record` (never spelled out a second time)."""

from __future__ import annotations

import pyarrow as pa

from toolwatch.record import CALL_FIELDS, TOOL_LIST_FIELDS, Field

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "float64": pa.float64(),
}


def arrow_schema(record_fields: tuple[Field, ...]) -> pa.Schema:
    return pa.schema(
        [pa.field(f.name, _ARROW_TYPES[f.arrow], nullable=f.nullable) for f in record_fields]
    )


CALLS_SCHEMA: pa.Schema = arrow_schema(CALL_FIELDS)
TOOL_LISTS_SCHEMA: pa.Schema = arrow_schema(TOOL_LIST_FIELDS)
