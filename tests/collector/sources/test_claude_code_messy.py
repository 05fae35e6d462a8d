"""Claude Code importer on the folders a user really has: directories it may not list,
transcripts still being written, damaged and otherwise-packed backups, and odd files. Inputs
are small hand-made transcripts (the helpers of ``test_claude_code_perturbed``); the rule each
test holds: every call counted once, and whatever is not read is named with its reason."""

from __future__ import annotations

import gzip
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.disk import unprivileged, world_readable_dir
from support.transcripts import SESSION, SID, call_line, jsonl, result_line
from toolwatch.collector.sources.claude_code import (
    build_records,
    import_transcripts,
    parse_file,
    scan_transcripts,
)
from toolwatch.collector.sources.claude_code.parsing import INCOMPLETE_LINE

#: 400 calls, one per line (a member big enough that damage found at its end leaves lines read)
MANY = [
    call_line(f"toolu_m{i}", f"2026-03-02T10:{i // 60:02d}:{i % 60:02d}Z", f"msg_m{i}")
    for i in range(400)
]


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory a normal user can enter, removed after (permissions restored first)."""
    with world_readable_dir() as path:
        yield path


def test_a_directory_that_cannot_be_listed_is_named_not_passed_over(open_dir: Path) -> None:
    """``Path.rglob`` skipped a directory it could not list without a word, and the
    transcripts inside with it. It is now named with its reason, beside the files read."""
    root = open_dir / "projects"
    locked = root / "-home-u-secret"
    locked.mkdir(parents=True)
    (locked / "s.jsonl").write_text(jsonl(SESSION))
    (root / "-home-u-open").mkdir()
    (root / "-home-u-open" / "t.jsonl").write_text(
        jsonl([call_line("toolu_z", "2026-03-02T10:00:00.000Z")])
    )
    locked.chmod(0)
    with unprivileged():
        scan = scan_transcripts([root])
        records, report = import_transcripts([root])
    assert [t.shown for t in scan.files] == [str(root / "-home-u-open" / "t.jsonl")]
    assert scan.unlisted_dirs == [(str(locked), "permission denied")]
    assert [r.call_id for r in records] == ["toolu_z"]
    assert report.unlisted_dirs == [(str(locked), "permission denied")]
    assert report.unreadable_files == []


def test_a_result_in_a_cut_last_line_leaves_its_call_without_result_and_counted(
    tmp_path: Path,
) -> None:
    """A session being written whose last line, a result, is cut: its call was counted only
    among the calls without result, like one whose result was never written, and stored with
    ``failed`` false: a success. A result written but lost is no success: the call is now
    failed with ``error_type = "no_result"`` (no size, no duration; the store is append-only,
    so a later re-import does not add the result), counted in ``failed`` and apart as
    ``result_cut``; a call of its stream's last response whose result is not written yet stays
    unfailed (``pending``). A cut line that quotes a result id inside its text does not count
    that call."""
    quoting = result_line("toolu_1", "2026-03-01T10:00:01.500Z", 'x "tool_use_id":"toolu_2" y')
    lines = [call_line("toolu_1", "2026-03-01T10:00:00.000Z", "msg_1")]
    lines += [call_line("toolu_2", "2026-03-01T10:00:01.000Z", "msg_2")]
    lines += [call_line("toolu_3", "2026-03-01T10:00:02.000Z", "msg_2")]
    cut = json.dumps(result_line("toolu_3", "2026-03-01T10:00:05.000Z", "a long result " * 30))
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(jsonl(lines) + json.dumps(quoting)[:-20])
    records, report = import_transcripts([path])
    assert [
        (r.call_id, r.output_bytes, r.duration_us, r.failed, r.error_type) for r in records
    ] == [
        ("toolu_1", None, None, True, "no_result"),
        ("toolu_2", None, None, False, None),
        ("toolu_3", None, None, False, None),
    ]
    assert (report.without_result, report.result_cut, report.failed) == (3, 1, 1)  # not toolu_2
    assert (report.pending, report.abandoned) == (2, 0)
    assert [str(s) for s in report.skipped] == [f"{path}:4: {INCOMPLETE_LINE}"]
    path.write_text(jsonl(lines) + json.dumps(quoting) + "\n" + cut[: len(cut) // 2])
    records, report = import_transcripts([path])
    assert [(r.call_id, r.output_bytes, r.duration_us) for r in records] == [
        ("toolu_1", 27, 1_500_000),
        ("toolu_2", None, None),
        ("toolu_3", None, None),
    ]
    assert (report.without_result, report.result_cut, report.failed) == (2, 1, 1)
    assert [r.error_type for r in records] == [None, None, "no_result"]
    path.write_text(jsonl(lines) + json.dumps(quoting) + "\n" + cut + "\n")  # written since
    records, report = import_transcripts([path])
    assert (report.without_result, report.result_cut, report.failed) == (1, 0, 0)


def _text_turn(stamp: str, msg: str, **extra: Any) -> dict[str, Any]:
    """An assistant line of a response with no call (the model answered in words)."""
    text = {"type": "text", "text": "done"}
    message = {"id": msg, "content": [text]}
    return {"type": "assistant", "sessionId": SID, "timestamp": stamp, "message": message, **extra}


def _outcomes(*files: tuple[str, list[dict[str, Any]]], root: Path) -> list[tuple[str, bool]]:
    for name, lines in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(jsonl(lines))
    records, _ = import_transcripts([root])
    assert all(r.error_type in (None, "no_result") for r in records)
    return [(r.call_id or "", r.failed) for r in records]


def test_a_call_whose_stream_went_on_without_its_result_is_failed_no_result(
    tmp_path: Path,
) -> None:
    """A call with no result line at all was stored ``failed`` false, a success, even when the
    session went on after it: the model is called again only once every result of its last
    response is in, so that result will never come. Such a call is now failed with
    ``error_type = "no_result"`` (``abandoned``): when its stream (session, agent) holds a later
    model response, with calls or words only, in its file or a later call of another response
    in any file of the run. The calls of a stream's last response stay unfailed (``pending``),
    as do those followed only by a sibling's result, another stream's lines (a subagent at
    work, a ≤ 1.0.x inline sidechain) or a line of the same response."""
    a = call_line("toolu_a", "2026-03-01T10:00:00Z", "msg_1")
    b = call_line("toolu_b", "2026-03-01T10:00:00Z", "msg_1")  # parallel: same response
    b_done = result_line("toolu_b", "2026-03-01T10:00:01Z")
    later = call_line("toolu_c", "2026-03-01T10:00:09Z", "msg_2")
    c_done = result_line("toolu_c", "2026-03-01T10:00:10Z")
    cases = {
        "later call": ([a, later, c_done], [("toolu_a", True), ("toolu_c", False)]),
        "words only": ([a, _text_turn("2026-03-01T10:00:09Z", "msg_2")], [("toolu_a", True)]),
        "sibling answered": ([a, b, b_done], [("toolu_a", False), ("toolu_b", False)]),
        "same response": ([a, _text_turn("2026-03-01T10:00:01Z", "msg_1")], [("toolu_a", False)]),
        "inline sidechain": (
            [a, call_line("toolu_s", "2026-03-01T10:00:05Z", "msg_9", isSidechain=True)],
            [("toolu_a", False), ("toolu_s", False)],
        ),
    }
    for name, (lines, expected) in cases.items():
        assert _outcomes((f"{SID}.jsonl", lines), root=tmp_path / name) == expected, name
    subagent = [call_line("toolu_t", "2026-03-01T10:00:01Z", "msg_7")]
    subagent += [_text_turn("2026-03-01T10:00:08Z", "msg_8")]
    assert _outcomes(  # the main thread waits for its subagent: pending
        (f"{SID}.jsonl", [a]), (f"{SID}/subagents/agent-a1.jsonl", subagent), root=tmp_path / "sub"
    ) == [("toolu_a", False), ("toolu_t", True)]
    assert _outcomes(  # the session resumed in another file: a later call of another response
        ("one.jsonl", [a]), ("two.jsonl", [later, c_done]), root=tmp_path / "resumed"
    ) == [("toolu_a", True), ("toolu_c", False)]
    (tmp_path / "all").mkdir()
    for name in ("later call", "sibling answered"):
        (tmp_path / "all" / f"{len(name)}.jsonl").write_text(
            (tmp_path / name / f"{SID}.jsonl")
            .read_text()
            .replace(SID, name)
            .replace("toolu_", name[:5])
        )
    _, report = import_transcripts([tmp_path / "all"])
    assert (report.without_result, report.abandoned, report.pending) == (2, 1, 1)
    assert (report.failed, report.result_cut) == (1, 0)


def test_zstd_transcripts_are_read_and_a_broken_one_says_why(tmp_path: Path) -> None:
    """``*.jsonl.zst`` was named "unzstd it first" and its calls left out. With the optional
    ``zstandard`` (``toolwatch[zstd]``) it reads as the plain file, whatever its name, frames
    one after another; a cut one ends at its cut (``zstandard``'s own reader ends such a file
    without a word) and is counted damaged, a corrupt one says so."""
    zstandard = pytest.importorskip("zstandard")
    session = jsonl(SESSION).encode()
    plain = tmp_path / "plain" / f"{SID}.jsonl"
    plain.parent.mkdir()
    plain.write_bytes(session)
    expected, _ = import_transcripts([plain])
    half = len(session) // 2
    frames = zstandard.compress(session[:half]) + zstandard.compress(session[half:])
    packed = tmp_path / "packed" / f"{SID}.jsonl.zst"
    packed.parent.mkdir()
    packed.write_bytes(frames)
    (tmp_path / "packed" / "named-plain.jsonl").write_bytes(zstandard.compress(session))
    records, report = import_transcripts([tmp_path / "packed"])
    assert [r.as_dict() for r in records] == [r.as_dict() for r in expected]
    assert (report.files, report.duplicates, report.unreadable_files) == (2, 2, [])
    lines = [
        call_line(f"toolu_{i}", f"2026-03-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")
        for i in range(6000)
    ]
    whole = zstandard.compress(jsonl(lines).encode())
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(whole[: len(whole) // 2])
    records, report = import_transcripts([cut])
    assert 0 < len(records) < 6000 and report.damaged_files == [str(cut)]
    assert report.unreadable_files == [
        (
            str(cut),
            f"zstd stream cut short after line {report.lines:,} (the lines before it were read)",
        )
    ]
    garbage = tmp_path / "garbage.jsonl.zst"
    garbage.write_bytes(whole + b"tail")
    records, report = import_transcripts([garbage])
    assert len(records) == 6000 and report.unreadable_files == [
        (
            str(garbage),
            "corrupt zstd stream after line 6,000 (the lines before it were read; the damage may "
            "have garbled some of them)",
        )
    ]


def test_zstd_without_its_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as when it is not installed
    path = tmp_path / "s.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + jsonl(SESSION).encode())
    records, report = import_transcripts([path])
    assert records == [] and report.damaged_files == []
    assert report.unreadable_files == [
        (
            str(path),
            "zstd-compressed; reading it needs the zstandard package: "
            "pip install 'toolwatch[zstd]'",
        )
    ]


class _CountingResults(dict[str, Any]):
    """A file's results that count the look-ups made in them."""

    gets = 0

    def get(self, key: str, default: Any = None) -> Any:
        type(self).gets += 1
        return super().get(key, default)


def test_calls_without_result_do_not_search_every_file(tmp_path: Path) -> None:
    """A call without a result of its own was looked for in every file of the run, one file
    after another: 10,000 small sessions without results (a folder of tiny transcripts) took
    a minute in that search alone. Each file's results are now indexed once: one look-up per
    call in its own file, none per other file."""
    paths = []
    for i in range(300):
        path = tmp_path / f"{i:03d}.jsonl"
        path.write_text(jsonl([call_line(f"toolu_{i}", "2026-03-01T10:00:00Z", session=f"s{i}")]))
        paths.append(path)
    parses = [parse_file(path, index) for index, path in enumerate(paths)]
    for parse in parses:
        parse.results = _CountingResults(parse.results)
    records, report = build_records(parses)
    assert (len(records), report.without_result) == (300, 300)
    assert _CountingResults.gets <= 300  # was 300 + 300 × 300


def _zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path.read_bytes()


def test_zip_members_are_read_as_transcripts_named_archive_bang_member(tmp_path: Path) -> None:
    """A ``.zip`` backup was named "a zip archive ... (unzip it first)" (or, named ``*.zip``,
    not looked at) and its calls left out. Its ``*.jsonl`` members (plain or compressed, a
    subagent's under ``<sid>/subagents/``) now read as the files would, in both passes, named
    ``archive.zip!member``; a zip without a transcript member is named, not passed over."""
    plain = tmp_path / "plain"
    (plain / SID / "subagents").mkdir(parents=True)
    (plain / f"{SID}.jsonl").write_text(jsonl(SESSION))
    side = jsonl([call_line("toolu_s", "2026-03-01T10:00:07Z", "msg_s", session=None)])
    (plain / SID / "subagents" / "agent-a1f.jsonl").write_text(side)
    expected, expected_report = import_transcripts([plain])
    backups = tmp_path / "backups"
    backups.mkdir()
    archive = backups / "projects.zip"
    _zip(
        archive,
        {
            f"-home-u/{SID}.jsonl": jsonl(SESSION).encode(),
            f"-home-u/{SID}/subagents/agent-a1f.jsonl.gz": gzip.compress(side.encode()),
            "-home-u/notes.txt": b"not a transcript",
        },
    )
    _zip(backups / "photos.zip", {"a.txt": b"x"}, zipfile.ZIP_STORED)
    scan = scan_transcripts([backups])
    assert [t.shown for t in scan.files] == [
        f"{archive}!-home-u/{SID}.jsonl",
        f"{archive}!-home-u/{SID}/subagents/agent-a1f.jsonl.gz",
    ]
    records, report = import_transcripts([backups])
    assert [r.as_dict() for r in records] == [r.as_dict() for r in expected]
    assert [(r.agent_id, r.session_id) for r in records] == [(None, SID)] * 2 + [("a1f", SID)]
    assert report.provenance is not None and expected_report.provenance is not None
    assert report.provenance.files_read == 2 and report.provenance.missing_inputs == 0
    assert report.unreadable_files == [
        (
            str(backups / "photos.zip"),
            "zip archive holding no transcript member "
            "(*.jsonl, *.jsonl.gz, *.jsonl.bz2, *.jsonl.xz, *.jsonl.zst)",
        )
    ]
    assert report.damaged_files == []
    assert import_transcripts([archive])[0] == records  # given by name: the same


def test_a_damaged_zip_keeps_what_was_read_and_is_counted_damaged(tmp_path: Path) -> None:
    """A zip whose member fails its CRC, or which is cut short (a download stopped: no member
    list at the end, members found by their local headers), keeps the lines read before the
    damage and is counted in ``damaged_files`` like a cut gzip, named by what happened."""
    many = jsonl(MANY).encode()
    stored = tmp_path / "crc.zip"
    data = bytearray(_zip(stored, {"a.jsonl": many}, zipfile.ZIP_STORED))
    data[len(many) // 2] ^= 0x20  # a byte of the middle line: read, but the CRC fails at the end
    stored.write_bytes(data)
    records, report = import_transcripts([stored])
    member = f"{stored}!a.jsonl"
    assert report.damaged_files == [member]
    assert report.unreadable_files == [
        (
            member,
            f"corrupt zip member after line {report.lines:,} (the lines before it were read but "
            "for up to the last 4 KiB of text, lost with the damage; the damage may have "
            "garbled some of them)",
        )
    ]
    assert 0 < len(many) - report.bytes <= 4096  # the lines of the last read at most are lost
    assert report.lines - 1 <= len(records) < 400
    cut = tmp_path / "cut.zip"
    whole = _zip(cut, {"a.jsonl": jsonl(SESSION).encode(), "b.jsonl": many}, zipfile.ZIP_STORED)
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    records, report = import_transcripts([tmp_path / "cut.zip"])
    assert report.damaged_files == [f"{cut}!b.jsonl"]  # one cut download: one damaged file
    assert sorted(report.unreadable_files) == [
        (
            str(cut),
            "zip archive cut short or damaged: its member list (at the end) is unreadable; "
            "2 transcript members found by their local headers before the damage were read",
        ),
        (
            f"{cut}!b.jsonl",
            f"zip member cut short after line {report.lines - 4:,} (the lines before it were read)",
        ),
    ]
    assert 200 < len(records) < 300 and records[0].output_bytes == 5  # a.jsonl whole
    between = tmp_path / "between.zip"
    whole = _zip(between, {"a.jsonl": jsonl(SESSION).encode()}, zipfile.ZIP_STORED)
    between.write_bytes(whole[:-10])  # only the member list is cut: every call read
    records, report = import_transcripts([between])
    assert (len(records), report.damaged_files) == (2, [str(between)])
