"""``toolwatch import claude-code``: store writes, idempotency, privacy, summary, OTLP export."""

from __future__ import annotations

import bz2
import functools
import gzip
import json
import lzma
import os
import re
import shutil
import sys
from datetime import datetime
from pathlib import Path

import pytest
import tqdm

from support.paths import FIXTURES
from support.transcripts import call_line, jsonl
from toolwatch.cli import main
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.store import Store
from toolwatch.record import CALL_FIELD_NAMES, CallRecord

FIXTURES = FIXTURES / "claude_code"
CANARY = b"tw-canary"
ALL_CASES = ["v1_inline", "v2_agents", "v21_subagents", "traps"]


def _import(store: Path, *paths: Path, extra: tuple[str, ...] = ()) -> int:
    return main(["import", "claude-code", *map(str, paths), "--store", str(store), *extra])


def _rows(store: Path) -> list[dict[str, object]]:
    cols = ", ".join(CALL_FIELD_NAMES)
    return Store(store).query(f"SELECT {cols} FROM calls ORDER BY session_id, seq").to_pylist()


def test_import_writes_the_records_it_builds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert _import(store, *(FIXTURES / c for c in ALL_CASES)) == 0
    expected: list[dict[str, object]] = []
    for case in ALL_CASES:
        records, _ = import_transcripts([FIXTURES / case])
        expected.extend(r.as_dict() for r in records)
    expected.sort(key=lambda r: (r["session_id"], r["seq"]))
    assert _rows(store) == expected
    out = capsys.readouterr().out
    assert "41.4 kB, 92 lines: 5 sessions with 4 subagents, 29 calls" in out
    assert "duplicates removed: 5" in out
    assert "re-stamped (kept out of timing): 1" in out
    assert "capped outputs: 2" in out
    assert "29 new calls written, 0 already there" in out
    assert "skipped 8 lines:" in out
    assert "    invalid JSON: 3" in out
    assert f"{S4_ORIG}:10: tool_use line without timestamp" in out


S4_ORIG = (FIXTURES / "traps" / "orig" / "e1a2b3c4-4444-4d4d-8e8e-000000000004.jsonl").resolve()


def test_import_twice_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    assert _import(store, FIXTURES) == 0
    files = Store(store).files("calls")
    before = _rows(store)
    capsys.readouterr()
    assert _import(store, FIXTURES, FIXTURES / "traps") == 0
    assert "0 new calls written, 29 already there" in capsys.readouterr().out
    assert Store(store).files("calls") == files
    assert _rows(store) == before


def test_reimport_of_a_grown_session_adds_only_new_calls(tmp_path: Path) -> None:
    """A live session imported early, then again once it has grown (and spawned a subagent)."""
    src = FIXTURES / "v21_subagents" / "-home-u-proj"
    work = tmp_path / "proj"
    shutil.copytree(src, work)
    sid = "c4d2e6f8-3333-4c4c-8d8d-000000000003"
    main_file = work / f"{sid}.jsonl"
    full = main_file.read_text().splitlines(keepends=True)
    main_file.write_text("".join(full[:9]))  # so far: D1-D3 and their results
    subagents = work / sid / "subagents"
    shutil.move(subagents, tmp_path / "later")  # the subagent does not exist yet
    store = tmp_path / "store"
    assert _import(store, work, extra=("--quiet",)) == 0
    assert [r["call_id"] for r in _rows(store)] == ["toolu_D1", "toolu_D2", "toolu_D3"]
    main_file.write_text("".join(full))
    shutil.move(tmp_path / "later", subagents)
    assert _import(store, work, extra=("--quiet",)) == 0
    fresh = tmp_path / "fresh"
    assert _import(fresh, work, extra=("--quiet",)) == 0
    assert len(_rows(fresh)) == 8
    assert _rows(store) == _rows(fresh)  # same seq, durations and ids as a one-shot import


def test_session_split_across_runs_is_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A session's subagent file imported in a later run cannot align seq: say so."""
    proj = FIXTURES / "v21_subagents" / "-home-u-proj"
    sid = "c4d2e6f8-3333-4c4c-8d8d-000000000003"
    store = tmp_path / "store"
    assert _import(store, proj / f"{sid}.jsonl") == 0
    assert "already hold imported calls" not in caplog.text
    assert _import(store, proj / sid / "subagents") == 0
    assert "1 session already hold imported calls from files not read in this run" in caplog.text
    assert len(_rows(store)) == 8


def test_no_content_is_stored_or_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Canary strings sit in every input, result, prompt, thinking and cwd of the fixtures."""
    assert all(CANARY in p.read_bytes() for p in FIXTURES.rglob("*.jsonl"))
    store = tmp_path / "store"
    assert _import(store, FIXTURES) == 0
    assert _import(store, FIXTURES, extra=("--json",)) == 0
    captured = capsys.readouterr()
    assert CANARY.decode() not in captured.out + captured.err
    assert _canary_hits(store) == []


def test_canary_scan_can_find_a_leak(tmp_path: Path) -> None:
    """Positive control: the same scan finds a canary once one is stored."""
    records, _ = import_transcripts([FIXTURES / "v2_agents"])
    leak = records[0]
    leak.tool = "tw-canary-leak"
    Store(tmp_path).append("calls", [leak.as_dict()])
    hits = _canary_hits(tmp_path)
    assert any(h.startswith("bytes:") for h in hits)
    assert any(h.startswith("sql:calls") for h in hits)


def _canary_hits(root: Path) -> list[str]:
    hits = [f"bytes:{p}" for p in root.rglob("*") if p.is_file() and CANARY in p.read_bytes()]
    store = Store(root)
    con = store.connect()
    try:
        views = [
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        ]
        for view in views:
            for row in con.execute(f"SELECT * FROM {view}").fetchall():
                if any(CANARY.decode() in str(v) for v in row):
                    hits.append(f"sql:{view}")
    finally:
        con.close()
    return hits


def test_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(tmp_path / "s", FIXTURES / "traps", extra=("--json",)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == 3
    assert (doc["sessions"], doc["subagents"]) == (2, 0)
    assert doc["calls"] == 7
    assert doc["written"] == 7
    assert doc["duplicates_removed"] == 5
    assert doc["skipped_by_reason"] == {
        "invalid JSON": 3,
        "not a JSON object": 1,
        "tool_use line without timestamp": 1,
        "tool_use line with invalid timestamp": 1,
        "tool_use without id": 1,
        "tool_result without tool_use_id": 1,
    }
    assert {"path": str(S4_ORIG), "line": 8, "reason": "not a JSON object"} in doc["skipped"]


def test_results_no_call_takes_are_in_both_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They were dropped without a count: now skipped lines with their reason."""
    path = tmp_path / "t.jsonl"
    lines = [
        {"type": "assistant", "sessionId": "s", "timestamp": "2025-01-01T00:00:01Z",
         "message": {"id": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]}},
        *[{"type": "user", "sessionId": "s", "timestamp": "2025-01-01T00:00:02Z",
           "message": {"content": [{"type": "tool_result", "tool_use_id": i, "content": "x"}]}}
          for i in ("t1", "t1", "nowhere")],
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines))
    assert _import(tmp_path / "s", path) == 0
    out = capsys.readouterr().out
    assert "  skipped 2 lines:" in out
    assert f"{path}:3: repeated tool_result" in out
    assert f"{path}:4: tool_result without matching tool_use" in out
    assert _import(tmp_path / "s", path, extra=("--json",)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["calls"], doc["skipped_lines"]) == (1, 2)
    assert doc["skipped_by_reason"] == {
        "repeated tool_result": 1,
        "tool_result without matching tool_use": 1,
    }


def test_several_skips_on_one_line_are_counted_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line with a call lacking its id and one lacking its name gave two skipped entries,
    and the summary said "skipped 2 lines" of one line: it now says how many on how many."""
    path = tmp_path / "t.jsonl"
    blocks = [{"type": "tool_use", "name": "Bash"}, {"type": "tool_use", "id": "t2"}]
    line = {"type": "assistant", "sessionId": "s", "timestamp": "2025-01-01T00:00:01Z",
            "message": {"id": "m", "content": blocks}}  # fmt: skip
    path.write_text(json.dumps(line) + "\n{garbled\n")
    assert _import(tmp_path / "s", path) == 0
    out = capsys.readouterr().out
    assert "  skipped 3 items on 2 lines (each a whole line or one block of it):" in out
    assert f"{path}:1: tool_use without id" in out and f"{path}:1: tool_use without name" in out


def test_escaped_lone_surrogates_in_names_and_ids_are_stored_replaced(tmp_path: Path) -> None:
    """Ids and names are stored as UTF-8: a lone surrogate escape becomes U+FFFD, the import
    goes through (it used to stop at the store with a traceback)."""
    line = {
        "type": "assistant",
        "sessionId": "s\udc00",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {
            "id": "msg_\ud83d",
            "content": [{"type": "tool_use", "id": "toolu_\ud800", "name": "B\ud800", "input": {}}],
        },
    }
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(line) + "\n")  # ensure_ascii: the surrogates are escapes
    store = tmp_path / "store"
    assert _import(store, src, extra=("--quiet",)) == 0
    (row,) = _rows(store)
    assert (row["session_id"], row["response_id"], row["call_id"], row["tool"]) == (
        "s\ufffd",
        "msg_\ufffd",
        "toolu_\ufffd",
        "B\ufffd",
    )
    assert _import(store, src, extra=("--quiet",)) == 0  # and idempotent
    assert len(_rows(store)) == 1


def test_progress_bar_on_directories_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _import(tmp_path / "a", FIXTURES / "v2_agents") == 0
    assert "import:" in capsys.readouterr().err
    one = next((FIXTURES / "v1_inline").rglob("*.jsonl"))
    assert _import(tmp_path / "b", one) == 0
    assert "import:" not in capsys.readouterr().err


def test_the_progress_bar_names_the_file_being_read_beside_the_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a folder of many tiny transcripts the bar counted bytes alone: it moved once a file
    and nothing said how many files were left. Each render now shows the file being read, n of
    N, beside the bytes (which still make the ETA)."""
    monkeypatch.setattr("tqdm.tqdm", functools.partial(tqdm.tqdm, mininterval=0, miniters=1))
    src = tmp_path / "projects"
    src.mkdir()
    for i in range(300):
        line = call_line(f"toolu_{i}", "2026-03-01T10:00:00Z", session=f"s{i}")
        (src / f"{i:03d}.jsonl").write_text(jsonl([line]))
    assert _import(tmp_path / "store", src, extra=("--no-provenance",)) == 0
    renders = [r for r in capsys.readouterr().err.split("\r") if r.startswith("import:")]
    files = [int(m.group(1)) for r in renders if (m := re.search(r", file (\d+)/300\]", r))]
    assert files[0] == 1 and files[-1] == 300 and files == sorted(files)
    assert len(set(files)) == 300  # every file shown as it is read
    assert re.search(r"import: 100%\|.*, file 300/300\]", renders[-1]), renders[-1]


def test_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(tmp_path / "s", tmp_path / "nowhere") == 1
    err = capsys.readouterr().err
    assert "no such file or directory" in err and "nowhere" in err
    assert "Traceback" not in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _import(tmp_path / "s", empty) == 1
    assert capsys.readouterr().err == (  # every name looked for, not only *.jsonl
        "toolwatch import: no transcript (*.jsonl, *.jsonl.gz, *.jsonl.bz2, *.jsonl.xz, "
        f"*.jsonl.zst, *.zip) found under {empty}\n"
    )
    assert not (tmp_path / "s").exists()


@pytest.mark.timeout(20)
def test_a_path_that_is_not_a_regular_file_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        assert _import(tmp_path / "s", path) == 1
        assert capsys.readouterr().err == f"toolwatch import: not a regular file: {path}\n"
    only = tmp_path / "only"
    only.mkdir()
    os.mkfifo(only / "y.jsonl")
    assert _import(tmp_path / "s", only) == 1
    assert f"1 file not read, e.g. {only / 'y.jsonl'}: not a regular file" in (
        capsys.readouterr().err
    )
    shutil.copytree(FIXTURES / "v2_agents", only / "v2")
    assert _import(tmp_path / "s", only, extra=("--json", "--quiet")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["unreadable_files"] == [
        {"path": str(only / "y.jsonl"), "error": "not a regular file"}
    ]
    assert summary["written"] == 7


def test_a_directory_of_compressed_transcripts_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup of zstd'd transcripts was "no *.jsonl transcript found", as if empty (bzip2'd
    and xz'd ones are read now, as gzip'd ones, and zstd'd ones with toolwatch[zstd]): without
    the zstandard package each is named with the extra to install, exit 1 as nothing read."""
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as when it is not installed
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / "s.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd{}\n")
    for given in (backup, backup / "s.jsonl.zst"):
        assert _import(tmp_path / "s", given, extra=("--quiet",)) == 1
        out, err = capsys.readouterr()
        assert "skipped lines: 0" in out
        assert (
            f"unreadable file {backup / 's.jsonl.zst'}: zstd-compressed; reading it needs the "
            "zstandard package: pip install 'toolwatch[zstd]'"
        ) in out
    # bzip2'd and xz'd copies of a session and its subagent beside it: all 7 calls imported
    for i, path in enumerate(sorted((FIXTURES / "v2_agents").rglob("*.jsonl"))):
        packed = bz2.compress(path.read_bytes()) if i else lzma.compress(path.read_bytes())
        (backup / (path.name + (".bz2" if i else ".xz"))).write_bytes(packed)
    assert _import(tmp_path / "s2", backup, extra=("--json", "--quiet")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["written"], summary["files"], summary["subagents"]) == (7, 3, 1)
    assert err == (
        "toolwatch import: none of the 1 transcript file found could be read (reasons above)\n"
    )


def test_a_backup_of_gzipped_transcripts_is_imported_and_a_cut_one_up_to_its_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``*.jsonl.gz`` was named "gunzip it first" and left out. A gzip'd backup now imports as
    the plain files do (the same rows), and one cut short imports the calls before the cut,
    names the file and where it was cut, and exits 0: something was imported."""
    backup = tmp_path / "backup"
    for case in ("v2_agents", "v21_subagents"):
        for src in (FIXTURES / case).rglob("*.jsonl"):
            dst = backup / src.relative_to(FIXTURES).with_suffix(".jsonl.gz")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(gzip.compress(src.read_bytes()))
    assert _import(tmp_path / "plain", FIXTURES / "v2_agents", FIXTURES / "v21_subagents") == 0
    assert _import(tmp_path / "gz", backup, extra=("--quiet", "--json")) == 0
    capsys.readouterr()
    assert _rows(tmp_path / "gz") == _rows(tmp_path / "plain") != []
    one = next(backup.rglob("*.jsonl.gz"))
    data = gzip.decompress(one.read_bytes())
    cut = backup / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(data)[:-8])  # its trailer lost: every line is there
    assert _import(tmp_path / "cut", cut, extra=("--quiet",)) == 0
    out, err = capsys.readouterr()
    lines = data.count(b"\n")
    assert f"unreadable file {cut}: gzip stream cut short after line {lines:,} (" in out
    assert err == "" and "Traceback" not in out
    assert len(_rows(tmp_path / "cut")) == len(import_transcripts([one])[0]) > 0


def test_no_store_needs_otlp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "claude-code", str(FIXTURES), "--no-store"]) == 2
    assert "--no-store needs --otlp" in capsys.readouterr().err


def test_export_unavailable_keeps_the_store_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "toolwatch.instrumentation.export.replay", None)
    store = tmp_path / "store"
    code = _import(store, FIXTURES / "v2_agents", extra=("--otlp", "http://127.0.0.1:9/v1/traces"))
    assert code == 1
    assert "OTLP export is unavailable" in capsys.readouterr().err
    assert len(_rows(store)) == 7


def test_otlp_export_sends_every_new_call_without_content(tmp_path: Path) -> None:
    pytest.importorskip(
        "toolwatch.instrumentation.export.replay",
        reason="toolwatch.instrumentation.export.replay.send_records is not there yet",
    )
    from support.otlp_sink import OTLPSink
    from toolwatch.conventions import ATTR_ARGUMENTS_SIZE, ATTR_RESPONSE_ID, ATTR_TOOL_NAME

    store = tmp_path / "s"
    with OTLPSink() as sink:
        assert _import(store, FIXTURES / "v21_subagents", extra=("--otlp", sink.url)) == 0
        spans = sink.wait_for(8)
        assert CANARY not in sink.raw()
    rows = _rows(store)
    assert len(spans) == len(rows) == 8
    by_id = {s["span_id"]: s for s in spans}
    for row in rows:
        span = by_id[str(row["span_id"])]
        assert span["trace_id"] == row["trace_id"]
        assert span["name"] == f"tools/call {row['tool']}"
        assert span["attributes"][ATTR_TOOL_NAME] == row["tool"]
        assert span["attributes"][ATTR_ARGUMENTS_SIZE] == row["input_bytes"]
        assert span["attributes"][ATTR_RESPONSE_ID] == row["response_id"]
        start = row["start_time"]
        assert isinstance(start, datetime)
        assert span["start_ns"] == int(start.timestamp() * 1_000_000) * 1000
    # a re-import sends nothing new; --no-store sends everything read
    with OTLPSink() as sink:
        assert _import(store, FIXTURES / "v21_subagents", extra=("--otlp", sink.url)) == 0
        assert sink.spans() == []
        argv = ["import", "claude-code", str(FIXTURES / "v2_agents"), "--no-store"]
        assert main([*argv, "--otlp", sink.url]) == 0
        assert len(sink.wait_for(7)) == 7


def test_records_are_call_records() -> None:
    records, _ = import_transcripts([FIXTURES / "v2_agents"])
    assert all(isinstance(r, CallRecord) for r in records)


def test_a_bad_otlp_url_or_store_path_is_said_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed --otlp URL was found only after the store was written (exit 1), so the
    re-run with the URL corrected exported nothing: every call was already stored. Now it is a
    usage error before anything is read or written; a store path that cannot be one is said
    before the transcripts are read."""
    store = tmp_path / "store"
    assert _import(store, FIXTURES / "v2_agents", extra=("--otlp", "localhost:4318")) == 2
    err = capsys.readouterr().err.strip()
    assert err == "toolwatch import: --otlp localhost:4318: give an http(s)://host:port URL"
    assert not store.exists()
    afile = tmp_path / "afile"
    afile.write_text("")
    missing = tmp_path / "missing.jsonl"  # reading it would be a usage error (exit 2)
    assert _import(afile, missing) == 1
    assert capsys.readouterr().err.strip() == (
        f"toolwatch import: cannot write the store: store path {afile} is not a directory"
    )


@pytest.mark.timeout(120)
def test_names_and_ids_past_the_span_limit_are_fitted_as_the_instrumentation_does(
    tmp_path: Path,
) -> None:
    """A tool name (or id) over MAX_STRING_BYTES was stored whole, and the collector refused
    its span: `--otlp` ended with exit 1 and store and collector disagreed. Now every name and
    id is cut as the instrumentation cuts it (``record.fit_string``), so both hold the same."""
    from support.collector_process import Server
    from toolwatch.record import MAX_STRING_BYTES, TRUNCATION_MARK

    long = "x" * (MAX_STRING_BYTES + 10)
    lines = []
    for i, (tool, call_id) in enumerate(
        [("Bash", "toolu_1"), (f"mcp__{long}__t", "toolu_2"), ("Read", f"toolu_{long}")]
    ):
        block = {"type": "tool_use", "id": call_id, "name": tool, "input": {}}
        line = {
            "type": "assistant",
            "sessionId": "s" + (long if i == 2 else ""),
            "timestamp": f"2025-01-01T00:00:0{i}.000Z",
            "message": {"id": f"msg_{i}" + (long if i == 1 else ""), "content": [block]},
        }
        lines.append(json.dumps(line))
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    server = Server(tmp_path / "collector")
    try:
        store = tmp_path / "store"
        assert _import(store, path, extra=("--otlp", server.url, "--quiet")) == 0
    finally:
        server.stop()
    cols = "tool, server, session_id, response_id, call_id"
    stored = Store(store).query(f"SELECT {cols} FROM calls ORDER BY tool").to_pylist()
    received = Store(server.store).query(f"SELECT {cols} FROM calls ORDER BY tool").to_pylist()
    assert stored == received and len(stored) == 3
    cut = [v for row in stored for v in row.values() if v is not None and len(v) > 100]
    assert len(cut) == 5  # tool, server, response id; session id, call id
    assert all(len(v.encode()) <= MAX_STRING_BYTES and v.endswith(TRUNCATION_MARK) for v in cut)
