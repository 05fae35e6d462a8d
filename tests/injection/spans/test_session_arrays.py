"""Sessions as column arrays: the round trip to Arrow keeps what it can hold."""

from __future__ import annotations

import pyarrow as pa

from support.detection import call, table
from toolwatch.injection.spans.session_arrays import split_sessions, to_table


def test_sizes_past_float_precision_round_trip_instead_of_failing() -> None:
    # the collector stores any int64 size; one such call made `experiment` and `replay`
    # refuse the whole store ("Integer value ... not in range", a column never named)
    rows = [
        call("a", 0, input_bytes=2**62 + 1, output_bytes=2**63 - 1, n=0),
        call("b", 1, input_bytes=None, output_bytes=123, n=1),
    ]
    sessions = split_sessions(table(rows))
    back = to_table(sessions)
    assert back.column("input_bytes").to_pylist() == [2**62, None]  # the nearest float
    assert back.column("output_bytes").to_pylist() == [2**63 - 1024, 123]  # largest in range
    assert back.schema.field("output_bytes").type == pa.int64()
