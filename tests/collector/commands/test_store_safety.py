"""The store against paths and files a user (or an attacker) can hand it: glob characters in
``--store``, a ``--table`` reaching outside the store, a table folder named like a SQL keyword,
damaged data pages behind an intact footer; and the collector's token handling.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.collector import bare_call
from toolwatch.cli import main
from toolwatch.collector.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def calls(n: int, session: str) -> list[dict]:
    return [
        bare_call(
            session,
            T0 + timedelta(seconds=i),
            tool=f"tool{i % 7}",
            duration_us=i,
            input_bytes=i,
            output_bytes=2 * i,
        )
        for i in range(n)
    ]


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return captured.err


# --------------------------------------------------------------------------- paths


def test_glob_characters_in_the_store_path_are_refused_not_expanded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("storeA", "storeB", "store*", "store[AB]"):
        Store(tmp_path / name).append("calls", calls(2, name))
    for name in ("store*", "store[AB]"):
        code = main(
            ["sql", "SELECT DISTINCT session_id FROM calls", "--store", str(tmp_path / name)]
        )
        err = _err(capsys)
        assert code == 1 and "would expand as a file pattern" in err, err
    assert (
        main(["sql", "SELECT DISTINCT session_id FROM calls", "--store", str(tmp_path / "storeA")])
        == 0
    )
    assert "storeA" in capsys.readouterr().out


def test_compact_never_touches_files_outside_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "store")
    store.append("calls", calls(3, "s"))
    outside = tmp_path / "outside" / "date=2026-01-01"
    outside.mkdir(parents=True)
    mine = []
    for i in range(4):
        mine.append(outside / f"mine-{i}.parquet")
        pq.write_table(pa.table({"x": [i]}), mine[-1])
    for table, expected in (("../outside", 2), (str(tmp_path / "outside"), 2), ("nosuch", 1)):
        argv = ["store", "compact", "--store", str(store.root), "--table", table]
        try:
            code = main([*argv, "--min-files", "2"])
        except SystemExit as usage:  # argparse, in process
            code = usage.code
        err = _err(capsys)
        # a name that can be no table is bad usage (exit 2); a table this store lacks, exit 1
        assert code == expected, (table, code, err)
        assert ("invalid table name" if expected == 2 else "no table") in err, err
    assert all(p.exists() for p in mine) and len(list(outside.iterdir())) == 4


def test_a_table_folder_named_like_a_keyword_does_not_break_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "store")
    store.append("calls", calls(3, "s"))
    store.append("order", pa.table({"n": [1, 2], "at": [T0, T0]}), partition_by="at")
    assert main(["sql", "SELECT count(*) AS n FROM calls", "--store", str(store.root)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "3"
    assert main(["sql", 'SELECT sum(n) AS s FROM "order"', "--store", str(store.root)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "3"
    assert main(["stats", "--store", str(store.root)]) == 0


# --------------------------------------------------------------------------- damaged pages


def _damage_data_pages(path: Path) -> None:
    """Flip 8 bytes inside a data page of every column chunk; the footer stays intact."""
    md = pq.read_metadata(path)
    data = bytearray(path.read_bytes())
    group = md.row_group(0)
    for c in range(group.num_columns):
        col = group.column(c)
        start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
        end = start + col.total_compressed_size
        mid = col.data_page_offset + (end - col.data_page_offset) // 2
        for k in range(mid, min(mid + 8, end)):
            data[k] ^= 0xFF
    path.write_bytes(bytes(data))
    pq.read_metadata(path)  # the footer still reads


def test_damaged_pages_are_found_named_and_quarantined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "store")
    store.append("calls", calls(1000, "good"))
    bad = store.append("calls", calls(5000, "bad"))[0]
    _damage_data_pages(bad)
    root = str(store.root)
    assert main(["store", "verify", "--store", root]) == 0  # footers only: looks fine
    assert "0 unreadable" in capsys.readouterr().out
    assert main(["store", "verify", "--deep", "--store", root]) == 1
    out = capsys.readouterr().out
    assert f"UNREADABLE {bad}" in out and "1 unreadable" in out
    assert main(["sql", "SELECT * FROM calls", "--store", root]) == 1
    err = _err(capsys)
    assert str(bad) in err and "verify --deep --quarantine" in err
    if main(["stats", "--store", root]) == 1:  # (a damaged page may still decode to numbers)
        assert str(bad) in _err(capsys)
    _err(capsys)
    # its partition is left alone, and that is said (exit 1), not only logged
    assert main(["store", "compact", "--store", root, "--min-files", "2"]) == 1
    out = capsys.readouterr().out
    assert f"left alone calls/{bad.parent.name}: damaged file {bad.name} (run `toolwatch" in out
    assert bad.exists()  # its partition was left alone, not merged with bad data
    assert main(["store", "verify", "--deep", "--quarantine", "--store", root]) == 0
    capsys.readouterr()
    assert main(["sql", "SELECT count(*) AS n FROM calls", "--store", root]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "1000"


# --------------------------------------------------------------------------- tokens


def _collector(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolwatch",
            "collector",
            "--store",
            str(tmp_path / "store"),
            "--port",
            "0",
            "--compact-interval",
            "0",
            *args,
        ],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_lines(proc: subprocess.Popen[str], until: str, timeout: float = 30) -> str:
    assert proc.stderr is not None
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if until in line:
            break
    proc.terminate()
    proc.wait(30)
    return "".join(lines)


def test_token_from_a_file_stays_out_of_the_process_list(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-value\n")
    proc = _collector(tmp_path, "--token-file", str(token_file))
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert b"s3cret-value" not in cmdline
    finally:
        text = _first_lines(proc, "listening on")
    assert "bearer token required" in text


def test_an_empty_token_variable_is_refused(tmp_path: Path) -> None:
    proc = _collector(tmp_path, env={"TOOLWATCH_TOKEN": ""})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "TOOLWATCH_TOKEN is set but empty" in err
    assert "Traceback" not in err


def test_token_on_the_command_line_warns_and_a_public_host_without_one_warns(
    tmp_path: Path,
) -> None:
    text = _first_lines(_collector(tmp_path, "--token", "abc"), "listening on")
    assert "visible to every user" in text and "bearer token required" in text
    text = _first_lines(_collector(tmp_path, "--host", "0.0.0.0"), "listening on")
    assert "WARNING" in text and "WITHOUT a token" in text


def test_loopback_without_a_token_starts_quietly(caplog: pytest.LogCaptureFixture) -> None:
    from toolwatch.detection.commands.collector import _is_loopback

    caplog.set_level(logging.WARNING)
    assert _is_loopback("127.0.0.1") and _is_loopback("::1") and _is_loopback("localhost")
    assert not _is_loopback("0.0.0.0") and not _is_loopback("192.0.2.1")
