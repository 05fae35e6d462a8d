"""``toolwatch sql`` and ``toolwatch store`` on a real store; ``toolwatch collector`` errors."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from toolwatch.cli import main
from toolwatch.collector.store import Store
from toolwatch.record import CallRecord


def _record(i: int, tool: str = "Read", session: str = "s1") -> dict:
    return CallRecord(
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        session_id=session,
        agent_id=None,
        seq=i,
        tool=tool,
        server=None,
        start_time=datetime(2026, 8, 4, 9, tzinfo=UTC) + timedelta(seconds=i),
        duration_us=1500,
        input_bytes=100 + i,
        output_bytes=None if i == 1 else 2000,
        failed=i == 1,
        error_type="tool_error" if i == 1 else None,
        response_id=f"msg_{i}",
        call_id=None,
        source="simulated",
    ).as_dict()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "store")
    s.append("calls", [_record(0), _record(1, "Bash"), _record(2, "Grep", "s2")])
    return s


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_sql_prints_an_aligned_table(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    sql = "SELECT seq, tool, input_bytes, output_bytes, failed FROM calls ORDER BY seq"
    assert main(["sql", sql, "--store", str(store.root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert _cells(out[0]) == ["seq", "tool", "input_bytes", "output_bytes", "failed"]
    assert set(out[1]) == {"─"}
    assert _cells(out[2]) == ["0", "Read", "100", "2000", "false"]
    assert _cells(out[3]) == ["1", "Bash", "101", "NULL", "true"]
    assert out[3].index("NULL") + 4 == out[0].index("output_bytes") + 12  # numbers right-aligned
    assert out[-1] == "(3 rows)"


def test_sql_views_sessions_and_max_rows(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    sql = "SELECT session_id, calls, failures FROM sessions ORDER BY session_id"
    assert main(["sql", sql, "--store", str(store.root), "--max-rows", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert _cells(out[2]) == ["s1", "2", "1"]
    assert out[-1] == "(2 rows, first 1 shown; --max-rows 0 shows all)"


def test_sql_csv_and_json(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    sql = "SELECT seq, start_time, output_bytes FROM calls ORDER BY seq"
    assert main(["sql", sql, "--store", str(store.root), "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["seq"] for r in table] == ["0", "1", "2"]
    assert table[1]["output_bytes"] == ""
    assert table[0]["start_time"] == "2026-08-04 09:00:00+00:00"  # as the table writes it
    assert main(["sql", sql, "--store", str(store.root), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc[1] == {"seq": 1, "start_time": "2026-08-04T09:00:01+00:00", "output_bytes": None}
    sql = "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b, '-inf'::DOUBLE AS c, 0.5::DOUBLE AS d"
    assert main(["sql", sql, "--store", str(store.root), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out  # not JSON: a strict parser refuses them
    assert json.loads(out) == [{"a": None, "b": None, "c": None, "d": 0.5}]


def test_sql_has_a_view_for_every_table(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    extra = pa.table({"session_id": ["s1"], "score": [4.5], "at": [datetime(2026, 8, 4)]})
    store.append("extension_rows", extra, partition_by="at")  # a table outside the registry
    sql = "SELECT session_id, score FROM extension_rows"
    assert main(["sql", sql, "--store", str(store.root)]) == 0
    assert "4.5" in capsys.readouterr().out
    for registered in ("tool_lists", "alerts", "workbench_runs"):  # empty: no file yet
        sql = f"SELECT count(*) AS n FROM {registered}"
        assert main(["sql", sql, "--store", str(store.root)]) == 0
        assert capsys.readouterr().out.splitlines()[2].strip() == "0"


def test_sql_errors_are_one_clear_line(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELEC 1", "--store", str(store.root)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolwatch sql: Parser Error") and "Traceback" not in err
    assert main(["sql", "SELECT nope FROM calls", "--store", str(store.root)]) == 1
    assert '"nope" not found' in capsys.readouterr().err


def test_sql_is_read_only(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A COPY into the store's own table folder used to add a row to ``calls``; a COPY to any
    path wrote the file. Now writes are refused before anything runs, and the connection
    itself cannot reach files outside the store."""
    into_store = store.root / "calls" / "date=2020-01-01" / "part-x.parquet"
    outside = tmp_path / "out.csv"
    for sql in (
        f"COPY (SELECT 'x' AS junk) TO '{into_store}' (FORMAT parquet)",
        f"SELECT 1; COPY (SELECT 1) TO '{outside}'",
        "CREATE TABLE t AS SELECT 1",
        "SET lock_configuration = false",
    ):
        assert main(["sql", sql, "--store", str(store.root)]) == 2, sql
        err = capsys.readouterr().err
        assert err.startswith("toolwatch sql: read-only: only SELECT and EXPLAIN") and (
            err.count("\n") == 1
        )
    assert not into_store.exists() and not outside.exists()
    assert main(["sql", "INSTALL httpfs", "--store", str(store.root)]) == 2
    assert capsys.readouterr().err.endswith("queries run here, not INSTALL\n")  # was: not LOAD
    assert (
        main(
            ["sql", f"SELECT * FROM read_csv('{outside.parent}/*.csv')", "--store", str(store.root)]
        )
        == 1
    )
    assert "disabled by configuration" in capsys.readouterr().err
    assert (
        main(
            [
                "sql",
                "SELECT count(*) AS n FROM calls",
                "--store",
                str(store.root),
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.split() == ["n", "3"]  # reads still work


def test_corrupt_parquet_is_named_then_quarantined(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    good = store.files("calls")[0]
    bad = good.with_name("part-99999999999999999999-torn.parquet")
    bad.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])  # a torn copy
    assert main(["sql", "SELECT count(*) FROM calls", "--store", str(store.root)]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err and "verify --quarantine" in err and "Traceback" not in err

    assert main(["store", "verify", "--store", str(store.root)]) == 1
    assert f"UNREADABLE {bad}" in capsys.readouterr().out
    assert main(["store", "verify", "--quarantine", "--store", str(store.root)]) == 0
    assert not bad.exists() and bad.with_name(bad.name + ".corrupt").exists()
    capsys.readouterr()
    assert main(["sql", "SELECT count(*) AS n FROM calls", "--store", str(store.root)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "3"


def test_a_folder_copied_into_a_table_is_named_not_read(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stray folder in calls/ broke every query with DuckDB's 'Hive partition mismatch'
    while ``store verify`` said 0 unreadable. Reads and compaction now take only the
    date=YYYY-MM-DD partitions, and verify names what else is there (exit 1)."""
    junk = store.root / "calls" / "junk"
    junk.mkdir()
    copied = junk / store.files("calls")[0].name
    copied.write_bytes(store.files("calls")[0].read_bytes())
    (junk / "second.parquet").write_bytes(copied.read_bytes())
    assert main(["sql", "SELECT count(*) AS n FROM calls", "--store", str(store.root)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "3"
    assert store.foreign_entries() == [junk]
    assert main(["store", "verify", "--store", str(store.root)]) == 1
    out = capsys.readouterr().out
    assert f"NOT READ {junk}: not a date=YYYY-MM-DD partition" in out
    assert "1 foreign entry in table folders" in out
    assert main(["store", "compact", "--store", str(store.root)]) == 0
    assert sorted(p.name for p in junk.iterdir()) == sorted([copied.name, "second.parquet"])


def test_store_compact_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(tmp_path)
    for i in range(6):
        store.append("calls", [_record(i)])
    assert main(["store", "compact", "--store", str(tmp_path)]) == 0
    assert "calls: 6 files -> 1 (5 merged away)" in capsys.readouterr().out
    assert main(["store", "info", "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    header, values = (_cells(out[i]) for i in (1, 3))
    row = dict(zip(header, values, strict=True))
    assert (row["table"], row["files"], row["rows"], row["first"]) == (
        "calls",
        "1",
        "6",
        "2026-08-04",
    )


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_store_command_without_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], json_flag: list[str]
) -> None:
    assert main(["store", "info", *json_flag, "--store", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err == f"toolwatch store: no store at {tmp_path / 'missing'}\n"


def test_store_info_json_on_a_damaged_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file DuckDB cannot read: one line naming it, exit 1, and no half a JSON document."""
    store = Store(tmp_path)
    store.append("calls", [_record(0)])
    (damaged,) = store.files("calls")
    damaged.write_bytes(b"not parquet at all")
    assert main(["store", "info", "--json", "--store", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("toolwatch store info: damaged Parquet file")
    assert str(damaged) in err


def test_store_info_json_of_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "info", "--json", "--store", str(tmp_path)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts == {
        "store": str(tmp_path),
        "tables": [],
        "unfinished_writes": 0,
        "ingest": None,
        "imported": {"unflagged_forks": {}, "without_result": 0, "pending": 0},
    }


def test_collector_command_option_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["collector", "--store", str(tmp_path), "--model", str(tmp_path / "x")]) == 1
    assert re.fullmatch(r"toolwatch collector: model file .* not found\n", capsys.readouterr().err)
    # listing alerts are on by default and use the webhook too; without them nothing would
    no_alerts = ["--webhook", "http://127.0.0.1:9/x", "--no-listing-alerts"]
    assert main(["collector", "--store", str(tmp_path), *no_alerts]) == 2
    assert "--webhook needs --model, --rules or listing alerts" in capsys.readouterr().err


def test_collector_command_reports_a_busy_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["collector", "--store", str(tmp_path), "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_collector_command_reports_an_unreadable_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("toolwatch.detection.alerting.live")
    model = tmp_path / "model.json"
    model.write_text("{not a model")
    assert main(["collector", "--store", str(tmp_path / "s"), "--model", str(model)]) == 1
    err = capsys.readouterr().err
    assert re.match(r"toolwatch collector: cannot load model .*model\.json", err)


def test_reading_an_empty_directory_leaves_it_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``stats`` on a directory that holds no store yet used to leave a ``.commit.lock`` in it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["stats", "--store", str(empty)]) == 0
    assert main(["sql", "SELECT count(*) FROM calls", "--store", str(empty)]) == 0
    assert "(empty)" in capsys.readouterr().out
    assert list(empty.iterdir()) == []


def test_sql_refuses_a_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELECT 1", "--store", str(tmp_path / "typo")]) == 1
    err = capsys.readouterr().err
    assert err == f"toolwatch sql: no store at {tmp_path / 'typo'}\n"


def test_sql_shows_a_whole_digest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digest = "ab" * 32
    store = Store(tmp_path)
    store.append("notes", pa.table({"digest": [digest]}))
    assert main(["sql", "SELECT digest FROM notes", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[2] == digest


@pytest.mark.parametrize("command", ["collector", "sql", "store"])
def test_one_line_help_is_the_modules_own(command: str) -> None:
    """`toolwatch --help` shows COMMANDS' one-liner; it must say what the module says."""
    import importlib

    from toolwatch.cli import COMMANDS

    module, _, one_line = COMMANDS[command]
    assert one_line == importlib.import_module(module).HELP


@pytest.mark.parametrize("action", ["verify", "compact", "info"])
def test_store_actions_have_help(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["store", action, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: toolwatch store {action}") and "--store" in out
