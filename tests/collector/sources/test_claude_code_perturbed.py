"""Claude Code importer on transcripts as other CLI versions, platforms and layouts write them.

Each input is a small hand-made transcript, perturbed the way real files differ from the
fixtures: CRLF endings and a BOM (Windows copies), a cut last line (a live session), calls of one
response over several lines, a result before its call, new entry types and fields, unexpected
directory depths, a session split over two files, a subagent without its main file, an empty
file, compressed and UTF-16 copies. The rule every test holds: each call counted exactly once,
and whatever is not read is named with its reason.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from toolwatch.collector.sources.claude_code import ImportReport, import_transcripts
from toolwatch.collector.sources.claude_code.parsing import (
    INCOMPLETE_LINE,
    OTHER_TYPE_CALL,
    UNMATCHED_RESULT,
)
from toolwatch.record import CallRecord

SID = "0d9c4f52-aaaa-4bbb-8ccc-000000000001"


def _call(
    call_id: str, stamp: str, msg: str = "msg_1", session: str | None = SID, **extra: Any
) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "/x"}}
    line: dict[str, Any] = {
        "type": "assistant",
        "timestamp": stamp,
        "message": {"id": msg, "content": [block]},
        **extra,
    }
    if session is not None:
        line["sessionId"] = session
    return line


def _result(call_id: str, stamp: str, text: str = "hello") -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    return {"type": "user", "sessionId": SID, "timestamp": stamp, "message": {"content": [block]}}


def _text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


SESSION = [
    _call("toolu_1", "2026-03-01T10:00:00.000Z", "msg_1"),
    _result("toolu_1", "2026-03-01T10:00:01.500Z"),
    _call("toolu_2", "2026-03-01T10:00:05.000Z", "msg_2"),
    _result("toolu_2", "2026-03-01T10:00:05.250Z", "hello world"),
]
# (call id, seq, input bytes {"file_path":"/x"}, output bytes, duration µs, response)
EXPECTED = [
    ("toolu_1", 0, 18, 5, 1_500_000, "msg_1"),
    ("toolu_2", 1, 18, 11, 250_000, "msg_2"),
]


def _shape(records: list[CallRecord]) -> list[tuple[object, ...]]:
    return [
        (r.call_id, r.seq, r.input_bytes, r.output_bytes, r.duration_us, r.response_id)
        for r in records
    ]


def _clean(report: ImportReport) -> bool:
    return not report.skipped and not report.unreadable_files and report.duplicates == 0


def test_crlf_endings_and_a_bom_read_like_plain_lines(tmp_path: Path) -> None:
    plain = _text(SESSION).encode()
    variants = {
        "lf": plain,
        "crlf": plain.replace(b"\n", b"\r\n"),
        "bom": b"\xef\xbb\xbf" + plain,
        "bom_crlf": b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n"),
    }
    for name, data in variants.items():
        path = tmp_path / name / f"{SID}.jsonl"
        path.parent.mkdir()
        path.write_bytes(data)
        records, report = import_transcripts([path])
        assert _shape(records) == EXPECTED, name
        assert _clean(report) and report.lines == 4, name


def test_a_cut_last_line_is_named_incomplete_and_its_call_comes_with_the_next_import(
    tmp_path: Path,
) -> None:
    """A live session's last line, cut mid-write, was reported as "invalid JSON" like a
    corrupt line; it is now named for what it is, and a garbled line mid-file stays invalid."""
    path = tmp_path / f"{SID}.jsonl"
    whole = _text(SESSION)
    cut = whole.rindex("\n", 0, len(whole) - 1) + 1 + 40  # 40 bytes into the last line
    path.write_text("{garbled\n" + whole[:cut])
    records, report = import_transcripts([path])
    assert [(r.call_id, r.output_bytes) for r in records] == [("toolu_1", 5), ("toolu_2", None)]
    assert [str(s) for s in report.skipped] == [
        f"{path}:1: invalid JSON",
        f"{path}:5: {INCOMPLETE_LINE}",
    ]
    path.write_text(whole)  # the session went on: the same import now has every call
    records, report = import_transcripts([path])
    assert _shape(records) == EXPECTED and _clean(report)


def test_calls_of_one_response_over_several_lines_are_one_response(tmp_path: Path) -> None:
    two = _call("toolu_3", "2026-03-01T10:00:00.900Z", "msg_P")
    two["message"]["content"].append(dict(two["message"]["content"][0], id="toolu_4"))
    lines = [
        _call("toolu_1", "2026-03-01T10:00:00.100Z", "msg_P"),
        _call("toolu_2", "2026-03-01T10:00:00.500Z", "msg_P"),
        two,  # older versions: several blocks in one line
    ] + [_result(f"toolu_{i}", "2026-03-01T10:00:02.000Z") for i in range(1, 5)]
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(_text(lines))
    records, report = import_transcripts([path])
    assert [(r.call_id, r.seq, r.response_id) for r in records] == [
        (f"toolu_{i}", i - 1, "msg_P") for i in range(1, 5)
    ]
    assert [r.duration_us for r in records] == [1_900_000, 1_500_000, 1_100_000, 1_100_000]
    assert _clean(report)


def test_a_result_written_before_its_call_is_still_its_result(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(_text([SESSION[1], SESSION[0], SESSION[3], SESSION[2]]))
    records, report = import_transcripts([path])
    assert _shape(records) == EXPECTED and _clean(report)


def test_new_entry_types_and_fields_lose_no_call_without_a_word(tmp_path: Path) -> None:
    """Lines of types other than assistant/user were passed over unread, so calls a new
    version wrote in a new entry type vanished without a count; they are now skipped lines
    with their reason. Unknown fields and types without calls change nothing."""
    newer = _call("toolu_9", "2026-03-01T10:00:07.000Z", "msg_9", type="assistant_turn")
    lines = [
        {"type": "brand-new-entry", "timestamp": "2026-03-01T09:59:00.000Z", "data": {"k": 1}},
        {"type": "system", "message": {"content": [{"type": "text", "text": "x"}]}},
        {"message": {"content": "no type at all"}},
        _call("toolu_1", "2026-03-01T10:00:00.000Z", "msg_1", futureField={"a": [1, 2]}),
        dict(SESSION[1], anotherNewField=True),
        *SESSION[2:],
        newer,
        _result("toolu_9", "2026-03-01T10:00:08.000Z"),
    ]
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(_text(lines))
    records, report = import_transcripts([path])
    assert _shape(records) == EXPECTED
    assert [str(s) for s in report.skipped] == [
        f"{path}:8: {OTHER_TYPE_CALL}",
        f"{path}:9: {UNMATCHED_RESULT}",
    ]


def test_layouts_depths_split_sessions_lone_subagents_and_empty_files(tmp_path: Path) -> None:
    """Every call once: a session split over two files at odd depths (ordered by time across
    them, the result found in the other file), a subagent file without its main session (the
    session from its path), a zero-byte file (counted as read, nothing in it)."""
    first = tmp_path / "deep" / "a" / "b" / "c" / f"{SID}.jsonl"
    second = tmp_path / "elsewhere" / f"{SID}-continued.jsonl"
    lone = tmp_path / "x" / "parent-sid" / "subagents" / "agent-a1b2c3.jsonl"
    empty = tmp_path / "empty.jsonl"
    for path in (first, second, lone):
        path.parent.mkdir(parents=True)
    first.write_text(_text(SESSION[:3]))  # toolu_2's result is in the second file
    second.write_text(_text([*SESSION[3:], _call("toolu_0", "2026-03-01T09:00:00.000Z")]))
    lone.write_text(_text([_call("toolu_s", "2026-03-01T11:00:00.000Z", "msg_s", session=None)]))
    empty.write_bytes(b"")
    records, report = import_transcripts([tmp_path])
    assert [(r.session_id, r.agent_id, r.call_id, r.seq) for r in records] == [
        (SID, None, "toolu_0", 0),
        (SID, None, "toolu_1", 1),
        (SID, None, "toolu_2", 2),
        ("parent-sid", "a1b2c3", "toolu_s", 0),
    ]
    assert records[2].output_bytes == 11 and records[2].duration_us == 250_000
    assert (report.files, report.lines, report.sessions, report.subagents) == (4, 6, 2, 1)
    assert _clean(report)


def test_compressed_and_utf16_copies_are_named_not_read_as_garbage(tmp_path: Path) -> None:
    """A gzip'd transcript given by name gave one "invalid JSON" line per 64 kB block and no
    call, a UTF-16 one (a PowerShell copy) the same, and ``*.jsonl.gz`` under a directory was
    passed over without a word. Each is now an unreadable file saying what it is."""
    good = tmp_path / f"{SID}.jsonl"
    good.write_text(_text(SESSION))
    other = _text([_call("toolu_z", "2026-03-02T10:00:00.000Z", session="other")])
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(other.encode()))
    (tmp_path / "c.jsonl").write_bytes(gzip.compress(other.encode()))
    (tmp_path / "d.jsonl").write_bytes(other.encode("utf-16"))
    (tmp_path / "e.jsonl.bak").write_text(other)  # not a transcript's name: not looked at
    records, report = import_transcripts([tmp_path])
    assert _shape(records) == EXPECTED
    gz = "gzip-compressed, not UTF-8 JSON Lines (gunzip it first)"
    assert report.unreadable_files == [
        (str(tmp_path / "b.jsonl.gz"), gz),
        (str(tmp_path / "c.jsonl"), gz),
        (
            str(tmp_path / "d.jsonl"),
            "UTF-16 text, not UTF-8 JSON Lines (convert it to UTF-8 first)",
        ),
    ]
    assert report.skipped == [] and report.files == 3
    _, alone = import_transcripts([tmp_path / "b.jsonl.gz"])
    assert alone.unreadable_files == [(str(tmp_path / "b.jsonl.gz"), gz)]
