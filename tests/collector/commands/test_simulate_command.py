"""``toolwatch simulate``: real Parquet store, real DuckDB, real OTLP/HTTP on loopback."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from toolwatch.cli import main
from toolwatch.collector.sources.simulator import SOURCE, simulate
from toolwatch.collector.store import Store
from toolwatch.conventions import ATTR_SOURCE, ATTR_TOOL_NAME
from toolwatch.record import EPOCH


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_the_store_labelled_and_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_dir = tmp_path / "store"
    code, out, _ = _run(capsys, "--store", str(store_dir), "--sessions", "40", "--seed", "4")
    assert code == 0
    expected = simulate(seed=4, sessions=40)
    assert "SIMULATED workload" in out
    assert f"{expected.num_rows:,} calls" in out
    assert "40 sessions" in out
    assert "2026-08-04 → 2026-09-14" in out
    assert str(store_dir) in out

    store = Store(store_dir)
    got = store.query(
        "SELECT count(*) AS n, count(DISTINCT (session_id, agent_id)) AS s, "
        "count(*) FILTER (WHERE source = 'simulated') AS sim FROM calls"
    ).to_pylist()[0]
    assert got == {"n": expected.num_rows, "s": 40, "sim": expected.num_rows}
    # the stored rows are the generated ones (same ids, same sizes)
    stored = store.query("SELECT call_id, input_bytes FROM calls ORDER BY call_id").to_pylist()
    generated = sorted(
        zip(
            expected.column("call_id").to_pylist(),
            expected.column("input_bytes").to_pylist(),
            strict=True,
        )
    )
    assert [(r["call_id"], r["input_bytes"]) for r in stored] == generated
    # the configuration is saved beside the rows
    configs = store.query("SELECT seed, sessions, calls_written, config FROM simulations")
    (row,) = configs.to_pylist()
    assert (row["seed"], row["sessions"], row["calls_written"]) == (4, 40, expected.num_rows)
    assert json.loads(row["config"])["runaway_retries"] == 32

    # running it again adds nothing
    code, out, _ = _run(capsys, "--store", str(store_dir), "--sessions", "40", "--seed", "4")
    assert code == 0
    assert "nothing written" in out
    assert store.query("SELECT count(*) AS n FROM calls").to_pylist() == [{"n": expected.num_rows}]
    assert store.query("SELECT count(*) AS n FROM simulations").to_pylist() == [{"n": 1}]


def test_otlp_sends_spans_with_original_times_and_leaves_the_store_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("toolwatch.instrumentation.export.replay")
    from support.otlp_sink import OTLPSink

    store_dir = tmp_path / "store"
    expected = simulate(seed=7, sessions=12)
    with OTLPSink() as sink:
        code, out, err = _run(
            capsys, "--store", str(store_dir), "--sessions", "12", "--seed", "7", "--otlp", sink.url
        )
        spans = sink.wait_for(expected.num_rows)
    assert code == 0, err
    assert "SIMULATED workload sent to" in out
    assert len(spans) == expected.num_rows
    by_id = {s["span_id"]: s for s in spans}
    for row in expected.select(["span_id", "start_time", "tool"]).to_pylist():
        span = by_id[row["span_id"]]
        start = row["start_time"].astimezone(UTC)
        assert span["start_ns"] == (start - EPOCH) // _US * 1000
        assert span["attributes"][ATTR_TOOL_NAME] == row["tool"]
        assert span["attributes"][ATTR_SOURCE] == SOURCE
    assert not store_dir.exists()


def test_bad_input_is_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--store", str(tmp_path / "s"), "--sessions", "2")
    assert code == 2
    assert "sessions must be at least 4" in err
    code, _, err = _run(capsys, "--store", str(tmp_path / "s"), "--start", "yesterday")
    assert code == 2
    assert "ISO date" in err
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    code, out, err = _run(capsys, "--store", str(not_a_dir), "--sessions", "8")
    assert code == 1  # could not do the job (as every command says a store it cannot use)
    assert f"store path {not_a_dir} is not a directory" in err
    assert out == ""  # said before generating, not after a summary of data it cannot keep
    code, out, err = _run(capsys, "--otlp", "notaurl", "--sessions", "8")
    assert code == 2 and "--otlp notaurl: give an http(s)://host:port URL" in err and out == ""
    assert "Traceback" not in err


def test_refused_spans_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("toolwatch.instrumentation.export.replay")
    from support.otlp_sink import OTLPSink

    with OTLPSink(refuse_after=0) as sink:
        code, _, err = _run(capsys, "--sessions", "4", "--otlp", sink.url)
    assert code == 1
    assert f"sending to {sink.url} failed after 0 spans" in err
    assert "Traceback" not in err


def test_spans_the_collector_rejects_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    """emitted != stored: the collector's partial_success is read, and said, and exit 1."""
    pytest.importorskip("toolwatch.instrumentation.export.replay")
    from support.otlp_sink import OTLPSink

    with OTLPSink(reject_each=2) as sink:
        code, _, err = _run(capsys, "--sessions", "4", "--otlp", sink.url)
        batches = len(sink.received)
    assert code == 1 and batches >= 1
    assert f"{2 * batches} rejected: rejected by the test sink" in err
    assert "only " in err and "spans were accepted by the collector" in err
    assert "Traceback" not in err


_US = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - EPOCH


def test_otlp_export_not_installed_is_exit_1_naming_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part of the install that is missing is not a wrong command line: exit 1 (it was 2),
    one line naming what to install, said before the workload is generated (no summary)."""
    monkeypatch.setitem(sys.modules, "toolwatch.instrumentation.export.replay", None)
    code, out, err = _run(capsys, "--otlp", "http://127.0.0.1:9/v1/traces", "--sessions", "8")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "toolwatch simulate: OTLP export is unavailable: toolwatch.instrumentation.export.replay "
        "cannot be imported (import of toolwatch.instrumentation.export.replay halted; None in "
        "sys.modules); it needs 'opentelemetry-exporter-otlp-proto-http' of the base install "
        "(pip install toolwatch)"
    ]
