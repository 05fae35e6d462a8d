"""The simulator's rows are built from the calls schema, not from a column list of its own."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.sources.simulator.table import RECORD_DEFAULTS, schema_table
from toolwatch.collector.store import CALLS_SCHEMA
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS
from toolwatch.record import CALL_FIELD_NAMES


def _values(n: int) -> dict[str, object]:
    return {
        "trace_id": ["a" * 32] * n,
        "span_id": [f"{i:016x}" for i in range(n)],
        "session_id": "s",
        "agent_id": None,
        "seq": np.arange(n, dtype=np.int64),
        "tool": "Read",
        "server": None,
        "start_time": np.arange(n, dtype=np.int64) * 1_000_000,
        "duration_us": None,
        "input_bytes": np.full(n, 7, dtype=np.int64),
        "output_bytes": None,
        "failed": np.zeros(n, dtype=bool),
        "error_type": None,
        "response_id": None,
        "call_id": [f"toolu_{i}" for i in range(n)],
        "source": "simulated",
    }


def test_columns_follow_the_schema_and_unset_fields_take_the_record_defaults() -> None:
    table = schema_table(_values(3), 3)
    assert table.schema.equals(CALLS_SCHEMA)
    assert table.column_names == list(CALL_FIELD_NAMES)
    # the fields left out are exactly those with a default in CallRecord
    assert set(RECORD_DEFAULTS) == {
        "service",
        "restamped",
        "output_truncated",
        "label",
        "client_quirk",
        *EXPORTED_FIELDS,
        "fields_present",
        "received_time",
    }
    row = table.to_pylist()[2]
    assert (row["service"], row["restamped"], row["output_truncated"], row["label"]) == (
        None,
        False,
        False,
        None,
    )
    assert (row["session_id"], row["tool"], row["seq"], row["input_bytes"]) == ("s", "Read", 2, 7)
    assert table.column("seq").type == pa.int32()
    assert table.column("start_time").type == pa.timestamp("us", tz="UTC")


def test_a_value_that_is_no_record_field_is_refused() -> None:
    with pytest.raises(ValueError, match="not fields of the call record: colour"):
        schema_table({**_values(2), "colour": "red"}, 2)


@pytest.mark.parametrize("name", sorted(_values(1)))
def test_a_field_without_default_must_be_given(name: str) -> None:
    values = _values(2)
    del values[name]
    with pytest.raises(ValueError, match=f"no value for the call record field '{name}'"):
        schema_table(values, 2)


def test_a_simulated_corpus_has_the_calls_schema_exactly() -> None:
    table = simulate(seed=4, sessions=12)
    assert table.schema.equals(CALLS_SCHEMA, check_metadata=True)
    assert table.column("label").null_count == table.num_rows
    assert not any(table.column("restamped").to_pylist())
