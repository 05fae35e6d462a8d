"""Delivery, shared by every source: append only the calls not stored yet; re-send as OTLP.

Real Parquet store and DuckDB; real OTLP/HTTP on loopback (``support.otlp_sink``).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from support.collector import record
from toolwatch.collector.sources.delivery import (
    ExportFailed,
    ExportUnavailable,
    append_new_calls,
    not_stored,
    records_table,
    send_otlp,
    stored_call_ids,
)
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.conventions import ATTR_TOOL_CALL_ID


def _call_ids(store: Store) -> list[str]:
    rows = store.query("SELECT call_id FROM calls ORDER BY call_id").to_pylist()
    return [r["call_id"] for r in rows]


def test_records_become_a_calls_table() -> None:
    records = [record(i) for i in range(3)]
    table = records_table(records)
    assert table.schema.equals(CALLS_SCHEMA)
    assert table.to_pylist() == [r.as_dict() for r in records]
    assert records_table(table) is table


def test_a_second_append_adds_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    first = append_new_calls(store, [record(i) for i in range(4)])
    assert (first.calls.num_rows, first.already_stored, len(first.files)) == (4, 0, 1)
    again = append_new_calls(store, [record(i) for i in range(6)])
    assert again.calls.column("call_id").to_pylist() == ["toolu_4", "toolu_5"]
    assert again.already_stored == 4
    assert append_new_calls(store, [record(i) for i in range(6)]).files == []
    assert _call_ids(store) == [f"toolu_{i}" for i in range(6)]


def test_a_call_is_known_by_its_id_whatever_its_source(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    append_new_calls(store, [record(0, source="otlp")])
    assert stored_call_ids(store, ["toolu_0", "toolu_1", None]) == {"toolu_0"}
    fresh = not_stored(store, [record(0, source="simulated"), record(1, source="simulated")])
    assert fresh.column("call_id").to_pylist() == ["toolu_1"]


def test_nothing_to_deliver_touches_no_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "never")
    appended = append_new_calls(store, [])
    assert (appended.calls.num_rows, appended.already_stored, appended.files) == (0, 0, [])
    assert not store.root.exists()


def test_simulated_tables_and_records_are_delivered_alike(tmp_path: Path) -> None:
    table = simulate(seed=1, sessions=8)
    store = Store(tmp_path / "s")
    half = table.slice(0, table.num_rows // 2)
    assert append_new_calls(store, half).calls.num_rows == half.num_rows
    rest = append_new_calls(store, table)
    assert (rest.calls.num_rows, rest.already_stored) == (
        table.num_rows - half.num_rows,
        half.num_rows,
    )
    assert _call_ids(store) == sorted(table.column("call_id").to_pylist())


def test_send_otlp_sends_records_and_tables_with_their_ids() -> None:
    pytest.importorskip("toolwatch.instrumentation.export.replay")
    from support.otlp_sink import OTLPSink

    records = [record(i) for i in range(3)]
    with OTLPSink() as sink:
        assert send_otlp(records, sink.url) == 3
        assert (
            send_otlp(
                records_table([replace(r, call_id=f"x{i}") for i, r in enumerate(records)]),
                sink.url,
            )
            == 3
        )
        spans = sink.wait_for(6)
        assert send_otlp([], sink.url) == 0
    ids = sorted(s["attributes"][ATTR_TOOL_CALL_ID] for s in spans)
    assert ids == ["toolu_0", "toolu_1", "toolu_2", "x0", "x1", "x2"]


def test_send_otlp_says_how_far_it_got_when_refused() -> None:
    pytest.importorskip("toolwatch.instrumentation.export.replay")
    from support.otlp_sink import OTLPSink

    records = [record(i) for i in range(2500)]  # three batches of at most 1,000
    with OTLPSink(refuse_after=1) as sink, pytest.raises(ExportFailed) as info:
        send_otlp(records, sink.url)
    assert info.value.sent == 1000
    assert info.value.endpoint == sink.url
    assert str(info.value).startswith(f"OTLP export to {sink.url} failed: ")


def test_send_otlp_without_the_replay_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "toolwatch.instrumentation.export.replay", None)
    with pytest.raises(ExportUnavailable, match="OTLP export is unavailable"):
        send_otlp([record(0)], "http://127.0.0.1:9/v1/traces")
