"""A corpus as the collector stores it (every call with its arrival mark), one stream's
client clock ahead: what the future-clock guards of the replay and the split are tested on."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def received(corpus: pa.Table, fast: str = "", hours: float = 0.0) -> pa.Table:
    """``corpus`` with each call received 2 s after its stamp (``received_time``), and the
    calls of stream ``fast`` (``session`` or ``session/agent``) stamped ``hours`` later than
    that: a client clock that fast."""
    t = corpus.column("start_time").cast(pa.int64()).to_numpy().copy()
    marks = pa.array(t + 2_000_000, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    corpus = corpus.set_column(
        corpus.schema.get_field_index("received_time"), "received_time", marks
    )
    if not fast:
        return corpus
    session, _, agent = fast.partition("/")
    mine = np.array(
        [
            s == session and a == (agent or None)
            for s, a in zip(
                corpus.column("session_id").to_pylist(),
                corpus.column("agent_id").to_pylist(),
                strict=True,
            )
        ]
    )
    t[mine] += int(hours * 3600e6)
    column = pa.array(t, pa.int64()).cast(corpus.schema.field("start_time").type)
    return corpus.set_column(corpus.schema.get_field_index("start_time"), "start_time", column)
