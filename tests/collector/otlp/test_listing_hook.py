"""The writer hands stored tools/list rows to ``on_listings`` (the listing watcher's hook): after
the durable write, on the callback thread, and a failing consumer loses nothing."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from support.collector import PB, SpanSpec, call, pb_request, post, wait_until
from toolwatch.cli import main
from toolwatch.collector.otlp import Collector
from toolwatch.collector.otlp.decode import decode_success
from toolwatch.collector.store import Store
from toolwatch.collector.store.arrow_schema import TOOL_LISTS_SCHEMA
from toolwatch.conventions import (
    ATTR_CONVERSATION_ID,
    ATTR_MCP_SERVER,
    ATTR_TOOL_DIGEST,
    ATTR_TOOL_NAME,
    EVENT_TOOL_LISTED,
    SPAN_NAME_TOOLS_LIST,
)

T0 = 1_786_000_000_000_000_000


def listing(n: int) -> SpanSpec:
    return SpanSpec(
        {ATTR_CONVERSATION_ID: "s1", ATTR_MCP_SERVER: "docs"},
        name=SPAN_NAME_TOOLS_LIST,
        events=[
            (EVENT_TOOL_LISTED, T0 + i, {ATTR_TOOL_NAME: f"t{i}", ATTR_TOOL_DIGEST: "ab" * 32})
            for i in range(n)
        ],
    )


def test_stored_listings_reach_on_listings_and_calls_on_batch(tmp_path: Path) -> None:
    store = Store(tmp_path)
    listed: list[tuple[int, int]] = []
    batches: list[int] = []
    done = threading.Event()

    def on_listings(table: pa.Table) -> None:
        assert table.schema == TOOL_LISTS_SCHEMA
        on_disk = store.query("SELECT count(*) AS n FROM tool_lists").to_pylist()[0]["n"]
        listed.append((table.num_rows, on_disk))  # already durable when called
        if len(listed) == 1:
            raise RuntimeError("watcher crashed")
        done.set()

    with Collector(
        store, on_batch=lambda t: batches.append(t.num_rows), on_listings=on_listings
    ) as c:
        for n in (3, 2):
            body = pb_request([listing(n), SpanSpec(call(seq=n))])
            assert decode_success(PB, post(c.url, body).body) == (0, "")
        wait_until(done.is_set, timeout=10.0)
        assert c.stats.callback_errors == 1
    assert [rows for rows, _ in listed] == [3, 2]
    assert listed[0][1] >= 3 and listed[1][1] >= 5
    assert batches == [1, 1]
    assert store.query("SELECT count(*) AS n FROM tool_lists").to_pylist() == [{"n": 5}]


def test_store_info_and_the_stop_line_count_one_listing_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Both said "1 tool listings" (and "1 requests", "1 calls"): counts beside a plural noun."""
    caplog.set_level(logging.INFO, logger="toolwatch.collector.otlp")
    store = Store(tmp_path / "store")
    with Collector(store, compact_interval=None) as collector:
        assert post(collector.url, pb_request([listing(1), SpanSpec(call(seq=0))])).status == 200
    stopped = next(r.getMessage() for r in caplog.records if "collector stopped" in r.getMessage())
    assert stopped.startswith("collector stopped: 1 request, 2 spans received, 1 call and 1 tool ")
    assert "1 tool listing stored in " in stopped
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "  2 spans received in 1 request: 2 stored (1 call, 1 tool listing), 0 rejected" in out
