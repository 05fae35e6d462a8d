"""``toolwatch import claude-code`` on a user's messy folders: what the summary and ``--json``
say about what could not be read, and the exit code."""

from __future__ import annotations

import bz2
import json
import lzma
import math
import zipfile
from pathlib import Path

import pytest

from support.disk import unprivileged, world_readable_dir
from support.transcripts import SESSION, call_line, jsonl, relayed_line, result_line
from toolwatch.cli import main
from toolwatch.collector.store import Store
from toolwatch.detection.calls.frame import prepare
from toolwatch.detection.cues.failure import FailureCue


def _import(store: Path, *paths: Path, extra: tuple[str, ...] = ()) -> int:
    return main(["import", "claude-code", *map(str, paths), "--store", str(store), *extra])


def test_a_directory_that_cannot_be_listed_is_in_both_summaries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Counted and named, exit 0 as for a file not read; nothing else found: exit 2 naming it."""
    with world_readable_dir() as root:
        locked = root / "projects" / "-home-u-secret"
        locked.mkdir(parents=True)
        (locked / "s.jsonl").write_text(jsonl(SESSION))
        other = root / "projects" / "-home-u-open"
        other.mkdir()
        (other / "t.jsonl").write_text(jsonl([call_line("toolu_z", "2026-03-02T10:00:00Z")]))
        # as root first: the modules the command imports lazily are loaded (a normal user
        # cannot read root's Python install)
        assert _import(root / "warm", root / "projects", extra=("--quiet",)) == 0
        capsys.readouterr()
        store = root / "store"
        store.mkdir()
        store.chmod(0o777)
        locked.chmod(0)
        with unprivileged():
            code = _import(store, root / "projects", extra=("--quiet",))
            out = capsys.readouterr().out
            json_code = _import(store, root / "projects", extra=("--quiet", "--json"))
            doc = json.loads(capsys.readouterr().out)
            alone = _import(store, locked)
        assert (code, json_code) == (0, 0)
        assert "  1 directory not searched (cannot be listed; any transcripts inside " in out
        assert f"    {locked}: permission denied" in out
        assert doc["unlisted_directories"] == [{"path": str(locked), "error": "permission denied"}]
        assert (doc["calls"], doc["written"]) == (1, 0)
        assert alone == 1
        err = capsys.readouterr().err
        assert "(1 directory could not be listed, e.g." in err and str(locked) in err


def test_a_result_cut_off_is_a_failure_in_summaries_store_info_and_detection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call whose result line was cut off was stored ``failed`` false, a success, while the
    summary said it had no result. It is stored failed, ``error_type = "no_result"``; the
    summary, ``--json``, ``store info`` say so alike, and the failure cue scores it as the
    failure it is stored as (no crash on its unknown size and duration)."""
    cut = json.dumps(result_line("toolu_1", "2026-03-01T10:00:01Z", "r" * 200))[:250]
    path = tmp_path / "s.jsonl"
    lines = [call_line("toolu_0", "2026-03-01T09:59:00Z", "msg_0")]
    lines += [result_line("toolu_0", "2026-03-01T09:59:01Z", "fine")]
    path.write_text(jsonl([*lines, call_line("toolu_1", "2026-03-01T10:00:00Z")]) + cut)
    assert _import(tmp_path / "s", path) == 0
    out = capsys.readouterr().out
    assert "  failed: 1   without result: 1   " in out
    assert (
        "  1 call without result because it is in a cut last line (still being written?): no "
        "size or duration; stored as failed, error_type no_result (in the failed count above), "
        "as no success was seen\n"
    ) in out
    assert _import(tmp_path / "s", path, extra=("--json",)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["without_result"], doc["result_cut_off"], doc["failed"]) == (1, 1, 1)
    assert main(["store", "info", "--store", str(tmp_path / "s")]) == 0
    assert (
        "imported calls without result stored as failed: 1, error_type no_result (the result "
        "cut off in a transcript's last line, or never written though the stream went on): no "
        "size, no duration\n"
    ) in capsys.readouterr().out
    calls = Store(tmp_path / "s").query("SELECT * FROM calls ORDER BY seq")
    assert calls.select(["call_id", "failed", "error_type", "output_bytes"]).to_pylist() == [
        {"call_id": "toolu_0", "failed": False, "error_type": None, "output_bytes": 4},
        {"call_id": "toolu_1", "failed": True, "error_type": "no_result", "output_bytes": None},
    ]
    frame = prepare(calls)
    cue = FailureCue().fit(frame)  # 1 failure in 2 calls: p = (1 + 2·0.5) / 4
    assert frame.failed.tolist() == [False, True]
    assert cue.score_many(frame).tolist() == pytest.approx([-math.log(0.5), -math.log(0.5)])
    path.write_text(jsonl(lines))
    assert _import(tmp_path / "clean", path, extra=("--quiet",)) == 0
    assert main(["store", "info", "--store", str(tmp_path / "clean")]) == 0
    assert "imported calls without result" not in capsys.readouterr().out


def test_calls_the_stream_left_behind_and_pending_ones_agree_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call with no result line whose stream went on to another response was stored
    unfailed, a success, and counted only among the calls without result. It is now failed,
    ``no_result``, and the last response's call without result is counted as pending: the
    summary, ``--json`` and ``store info`` give the same numbers."""
    path = tmp_path / "s.jsonl"
    lines = [call_line("toolu_0", "2026-03-01T09:59:00Z", "msg_0")]
    lines += [call_line("toolu_1", "2026-03-01T10:00:00Z", "msg_1")]
    lines += [result_line("toolu_1", "2026-03-01T10:00:01Z", "fine")]
    lines += [call_line("toolu_2", "2026-03-01T10:01:00Z", "msg_2")]
    path.write_text(jsonl(lines))
    store = tmp_path / "store"
    assert _import(store, path) == 0
    out = capsys.readouterr().out
    assert "  failed: 1   without result: 2   " in out
    assert (
        "  1 call without result though its stream went on to another model response (the "
        "result will never come): stored as failed, error_type no_result (in the failed count "
        "above)\n"
        "  pending: 1 call of its stream's last response with no result yet (still running, or "
        "the session stopped there): no size or duration, stored unfailed; a re-import does not "
        "add a result later\n"
    ) in out
    assert _import(tmp_path / "other", path, extra=("--json",)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [doc[k] for k in ("without_result", "result_abandoned", "pending", "failed")] == [
        2,
        1,
        1,
        1,
    ]
    assert doc["result_cut_off"] == 0
    assert main(["store", "info", "--store", str(store)]) == 0
    info = capsys.readouterr().out
    assert "imported calls without result stored as failed: 1, error_type no_result (" in info
    assert (
        "imported calls pending when imported: 1 (no result yet in their stream's last "
        "response), stored unfailed: no size, no duration\n"
    ) in info
    calls = Store(store).query("SELECT call_id, failed, error_type FROM calls ORDER BY seq")
    assert calls.to_pylist() == [
        {"call_id": "toolu_0", "failed": True, "error_type": "no_result"},
        {"call_id": "toolu_1", "failed": False, "error_type": None},
        {"call_id": "toolu_2", "failed": False, "error_type": None},
    ]


def test_a_damaged_backup_is_counted_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated .xz beside a whole .bz2: the calls before the cut are kept, and the file is
    counted as damaged (read in part), not only listed among the files not read."""
    lines = [
        call_line(f"toolu_{i}", f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}Z") for i in range(400)
    ]
    packed = lzma.compress(jsonl(lines).encode())
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cut.jsonl.xz").write_bytes(packed[: len(packed) * 3 // 4])
    (tmp_path / "in" / "whole.jsonl.bz2").write_bytes(bz2.compress(jsonl(SESSION).encode()))
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet",)) == 0
    out = capsys.readouterr().out
    assert "  damaged files: 1 (read up to the damage, the rest lost; below with " in out
    assert f"  unreadable file {tmp_path / 'in' / 'cut.jsonl.xz'}: xz stream cut short after" in out
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["damaged_files"] == [str(tmp_path / "in" / "cut.jsonl.xz")]
    assert 2 < doc["calls"] < 402


def test_a_zip_backup_is_imported_and_a_cut_one_counted_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole zip's transcript members import; a cut copy of a second one is counted damaged
    and named with its member, in the summary and in --json; the exit is 0 (calls were read)."""
    (tmp_path / "in").mkdir()
    with zipfile.ZipFile(tmp_path / "in" / "whole.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("p/s.jsonl", jsonl(SESSION))
    lines = [
        call_line(f"toolu_{i}", f"2026-03-01T11:{i // 60:02d}:{i % 60:02d}Z") for i in range(400)
    ]
    cut = tmp_path / "in" / "cut.zip"
    with zipfile.ZipFile(cut, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("p/t.jsonl", jsonl(lines))
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet",)) == 0
    out = capsys.readouterr().out
    assert "  damaged files: 1 (read up to the damage, the rest lost; below with " in out
    assert f"  unreadable file {cut}!p/t.jsonl: zip member cut short after line " in out
    assert f"  unreadable file {cut}: zip archive cut short or damaged: its member" in out
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == 2 and doc["damaged_files"] == [f"{cut}!p/t.jsonl"]
    assert 2 < doc["calls"] < 200 and doc["written"] == 0  # all stored by the first run


def test_zip_members_not_read_are_counted_and_named_in_both_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zip inside the zip and Finder's metadata were passed over without a word: the summary
    now says how many of each, why, and names them; --json lists them by kind."""
    inner = tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("c.jsonl", jsonl(SESSION))
    outer = tmp_path / "in" / "a.zip"
    outer.parent.mkdir()
    with zipfile.ZipFile(outer, "w") as archive:
        archive.writestr("p/s.jsonl", jsonl(SESSION))
        archive.write(inner, "inner.zip")
        archive.writestr("__MACOSX/p/._s.jsonl", b"\x00\x05\x16\x07")
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet",)) == 0
    out = capsys.readouterr().out
    assert (
        f"  skipped 1 nested archive (a zip inside a zip is not opened; unzip the outer one and "
        f"import the folder): {outer}!inner.zip\n"
        f"  skipped 1 macOS metadata member (__MACOSX/ and ._* entries are Finder's resource "
        f"forks, not transcripts): {outer}!__MACOSX/p/._s.jsonl\n"
    ) in out
    assert _import(tmp_path / "s", tmp_path / "in", extra=("--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["skipped_members"] == [
        {"path": f"{outer}!inner.zip", "kind": "nested archive"},
        {"path": f"{outer}!__MACOSX/p/._s.jsonl", "kind": "macOS metadata member"},
    ]
    assert (doc["calls"], doc["skipped_lines"]) == (2, 0)


def test_empty_files_and_a_file_that_is_not_json_lines_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty transcript was only counted among the files read, and a `.jsonl` holding
    another format was a run of "invalid JSON" lines: each is now one line of the summary
    (and of --json) saying which, without a byte of the file; a transcript with one bad line
    among good ones still reports that line."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text(jsonl(SESSION))
    (folder / "b.jsonl").write_bytes(b"")
    (folder / "c.jsonl").write_text("\n\n")
    notes = folder / "d.jsonl"
    notes.write_text("# our own notes\nsecond line of them\nthird\n")
    mixed = folder / "e.jsonl"
    mixed.write_text("not json\n" + jsonl([call_line("toolu_e", "2026-03-02T10:00:00Z")]))
    assert _import(tmp_path / "s", folder, extra=("--quiet",)) == 0
    out = capsys.readouterr().out
    assert f"  2 empty files (no line, nothing to import): {folder / 'b.jsonl'}, " in out
    assert f"  a file that is not JSON Lines: {notes} (first line not JSON)\n" in out
    assert "our own notes" not in out and f"{notes}:1" not in out
    assert "  skipped 1 line:\n    invalid JSON: 1\n" in out and f"    {mixed}:1: invalid" in out
    assert _import(tmp_path / "s", folder, extra=("--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["empty_files"] == [str(folder / "b.jsonl"), str(folder / "c.jsonl")]
    assert doc["not_json_lines_files"] == [{"path": str(notes), "reason": "first line not JSON"}]
    assert (doc["files"], doc["calls"], doc["skipped_lines"]) == (5, 3, 1)


def test_subagent_calls_seen_only_in_progress_lines_are_in_both_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 2.1.x session whose subagent file was not copied: the calls its progress lines relay
    are counted and said, with why, in the summary and in --json."""
    relayed = [
        relayed_line("2026-03-01T10:00:02Z", "a9", call_line("toolu_s1", "2026-03-01T10:00:02Z")),
        relayed_line("2026-03-01T10:00:03Z", "a9", call_line("toolu_s2", "2026-03-01T10:00:03Z")),
    ]
    (tmp_path / "s.jsonl").write_text(jsonl(SESSION + relayed))
    assert _import(tmp_path / "st", tmp_path / "s.jsonl", extra=("--quiet",)) == 0
    out = capsys.readouterr().out
    assert "  2 subagent calls of 1 subagent seen only in the session file's progress " in out
    assert _import(tmp_path / "st", tmp_path / "s.jsonl", extra=("--quiet", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["calls"], doc["relayed_only"]["calls"], doc["relayed_only"]["subagents"]) == (
        2,
        2,
        1,
    )
    assert doc["relayed_only"]["reason"].endswith("not imported")
