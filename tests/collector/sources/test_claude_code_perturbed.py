"""Claude Code importer on transcripts as other CLI versions, platforms and layouts write them.

Each input is a small hand-made transcript, perturbed the way real files differ from the
fixtures: CRLF endings and a BOM (Windows copies), a cut last line (a live session), calls of one
response over several lines, a result before its call, new entry types and fields, unexpected
directory depths, a session split over two files, a subagent without its main file, an empty
file, compressed and UTF-16 copies. The rule every test holds: each call counted exactly once,
and whatever is not read is named with its reason.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
from pathlib import Path
from typing import Any

from support.transcripts import SESSION, SID
from support.transcripts import call_line as _call
from support.transcripts import jsonl as _text
from support.transcripts import relayed_line as _relayed
from support.transcripts import result_line as _result
from toolwatch.collector.sources.claude_code import ImportReport, import_transcripts, parse_file
from toolwatch.collector.sources.claude_code.decoding import utf16_encoding
from toolwatch.collector.sources.claude_code.parsing import (
    INCOMPLETE_LINE,
    OTHER_TYPE_CALL,
    UNMATCHED_RESULT,
)
from toolwatch.record import CallRecord

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


def test_a_call_in_a_user_line_is_named_not_lost(tmp_path: Path) -> None:
    """A ``tool_use`` block in a line of type user (a retyped line, a later client) was passed
    over without a word, user lines being read for results only; it is a skipped line with
    its reason, as a call in a line of any other type is, and the line's result is read."""
    retyped = _call("toolu_9", "2026-03-01T10:00:05.250Z", "msg_9", type="user")
    retyped["message"]["content"].append(SESSION[3]["message"]["content"][0])
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(_text([*SESSION[:3], retyped]))
    records, report = import_transcripts([path])
    assert _shape(records) == EXPECTED
    assert [str(s) for s in report.skipped] == [f"{path}:4: {OTHER_TYPE_CALL}"]


def test_a_block_type_that_is_a_list_or_an_object_is_no_kind_not_a_crash(tmp_path: Path) -> None:
    """A block whose ``type`` was a list or an object stopped the whole import with
    ``TypeError: unhashable type`` (a set lookup), in an assistant line, a line of another type
    and a progress line alike; such a block is now of no kind: not a call, nothing skipped."""
    odd = [{"type": ["tool_use"], "id": "toolu_x", "name": "Read"}, {"type": {"k": 1}}]
    first = _call("toolu_1", "2026-03-01T10:00:00.000Z", "msg_1")
    first["message"]["content"][:0] = odd
    relay = _call("toolu_r", "2026-03-01T10:00:01.000Z", "msg_r")
    relay["message"]["content"] = odd
    lines = [
        first,
        *SESSION[1:],
        {"type": "attachment", "message": {"content": odd}},
        _relayed("2026-03-01T10:00:09.000Z", "a1", relay),
    ]
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(_text(lines))
    records, report = import_transcripts([path])
    assert _shape(records) == EXPECTED
    assert report.skipped == [] and report.relayed_only_calls == 0


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


def test_gzipped_transcripts_are_read_by_their_first_bytes_whatever_their_name(
    tmp_path: Path,
) -> None:
    """A gzip'd transcript (a backup's ``*.jsonl.gz``) was named "gzip-compressed ... gunzip it
    first" and its calls left out. It is now decompressed as it streams when its first bytes
    are gzip, whatever its name: a ``.jsonl.gz`` holding plain text is read as plain, a gzip'd
    ``agent-<id>.jsonl.gz`` is a subagent like ``agent-<id>.jsonl``, a plain copy of a gzip'd
    session is a duplicate."""
    session = _text(SESSION).encode()
    other = _text([_call("toolu_z", "2026-03-02T10:00:00.000Z", session="other")]).encode()
    side = _text([_call("toolu_s", "2026-03-01T11:00:00.000Z", "msg_s", session=None)]).encode()
    plain = _text([_call("toolu_p", "2026-03-03T10:00:00Z")]).encode()
    (tmp_path / f"{SID}.jsonl.gz").write_bytes(gzip.compress(session))
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / f"{SID}.jsonl").write_bytes(session)  # the same calls again
    (tmp_path / "c.jsonl").write_bytes(gzip.compress(other))
    (tmp_path / "plain.jsonl.gz").write_bytes(plain)
    lone = tmp_path / "parent-sid" / "subagents" / "agent-a1b2c3.jsonl.gz"
    lone.parent.mkdir(parents=True)
    lone.write_bytes(gzip.compress(side))
    records, report = import_transcripts([tmp_path])
    assert [(r.session_id, r.agent_id, r.call_id, r.seq) for r in records] == [
        (SID, None, "toolu_1", 0),
        (SID, None, "toolu_2", 1),
        (SID, None, "toolu_p", 2),
        ("other", None, "toolu_z", 0),
        ("parent-sid", "a1b2c3", "toolu_s", 0),
    ]
    assert _shape(records[:2]) == EXPECTED  # sizes, results and durations as from plain text
    assert report.duplicates == 2 and report.skipped == [] and report.files == 5
    assert (report.lines, report.bytes) == (11, 2 * len(session) + len(other + plain + side))
    assert report.unreadable_files == []


def test_utf16_with_or_without_a_bom_reads_as_its_utf8_twin(tmp_path: Path) -> None:
    """A UTF-16 copy without a BOM was read as one "invalid JSON" line per line and its calls
    lost; with a BOM it was named "convert it to UTF-8 first". Both are decoded now, little or
    big endian, CRLF or gzip'd, into the very records and byte counts of the UTF-8 file; a lone
    surrogate counts as U+FFFD there as its escape does in UTF-8, an odd last byte is a cut
    last line."""
    lines = [*SESSION[:3], _result("toolu_2", "2026-03-01T10:00:05.250Z", "héllo 世界 \ud800!")]
    twin = tmp_path / "utf8" / f"{SID}.jsonl"
    twin.parent.mkdir()
    twin.write_text(_text(lines))  # every non-ASCII character as a JSON escape
    expected, _ = import_transcripts([twin])
    assert expected[1].output_bytes == len("héllo 世界 \ufffd!".encode())  # 19, the escape's
    raw = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)

    def utf16(text: str, order: str) -> bytes:
        return text.encode(f"utf-16-{order}", "surrogatepass")

    def utf8(text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    variants = {
        "le": utf16(raw, "le"),
        "be": utf16(raw, "be"),
        "bom-le": b"\xff\xfe" + utf16(raw, "le"),  # as PowerShell writes
        "bom-be": b"\xfe\xff" + utf16(raw, "be"),
        "crlf-le": utf16(raw.replace("\n", "\r\n"), "le"),
        "gzip-le": gzip.compress(utf16(raw, "le")),
        "odd-byte-le": utf16(raw, "le") + b"{",
    }
    for name, data in variants.items():
        path = tmp_path / name / f"{SID}.jsonl"
        path.parent.mkdir()
        path.write_bytes(data)
        records, report = import_transcripts([path])
        assert [r.as_dict() for r in records] == [r.as_dict() for r in expected], name
        cut = [f"{path}:5: {INCOMPLETE_LINE}"] if name == "odd-byte-le" else []
        assert [str(x) for x in report.skipped] == cut and not report.unreadable_files, name
        text = raw.replace("\n", "\r\n") if "crlf" in name else raw
        if not cut:  # the text's own bytes as UTF-8 (U+FFFD is 3 bytes, as the surrogate)
            assert (report.lines, report.bytes) == (4, len(utf8(text))), name
    # not UTF-16: UTF-8 with non-ASCII text, a zero-filled file (what a crash can leave)
    assert utf16_encoding(utf8(raw)[:1024]) is None and utf16_encoding(b"\0" * 1024) is None


def test_the_progress_of_a_gzipped_file_counts_its_bytes_on_disk(tmp_path: Path) -> None:
    """The bar is sized by the files' sizes on disk: a gzip'd file reports its compressed
    bytes as it goes (every 4 MiB of text), so the bar ends full, not past it."""
    noise = random.Random(0).randbytes(1 << 19).hex()  # 1 MiB of text, half of it on disk
    big = [_result("toolu_1", "2026-03-01T10:00:01.500Z", noise) for _ in range(6)]
    path = tmp_path / f"{SID}.jsonl.gz"
    path.write_bytes(gzip.compress(_text([SESSION[0], *big]).encode()))
    told: list[int] = []
    parse = parse_file(path, on_bytes=told.append)
    assert len(told) == 2 and sum(told) == path.stat().st_size < parse.bytes * 0.6
    assert [c.call_id for c in parse.calls] == ["toolu_1"] and parse.error is None


def test_a_cut_or_corrupt_gzip_keeps_the_lines_before_it_and_says_why(tmp_path: Path) -> None:
    """A gzip stream that breaks ends its file there, never in a traceback: the calls of the
    lines before it are imported, the file is listed as unreadable from that line with what
    happened (the decompressor's own words can quote the file's bytes or checksum: not shown),
    and the line cut in two is not reported as a line."""
    lines = []
    for i in range(300):
        stamp = f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.000Z"
        lines += [_call(f"toolu_{i}", stamp, f"msg_{i}"), _result(f"toolu_{i}", stamp, f"r{i}")]
    packed = gzip.compress(_text(lines).encode())
    crc = bytearray(packed)
    crc[-8] ^= 0xFF
    kept = "(the lines before it were read)"
    garbled = "(the lines before it were read; the damage may have garbled some of them)"
    cases = {  # data, lines read, error
        "cut": (packed[: len(packed) // 2], None, f"gzip stream cut short after line {{}} {kept}"),
        "no-trailer": (packed[:-4], 600, f"gzip stream cut short after line 600 {kept}"),
        "crc": (bytes(crc), 600, f"corrupt gzip stream after line 600 {garbled}"),
        "garbage": (packed + b"tail", 600, f"corrupt gzip stream after line 600 {garbled}"),
        "header": (packed[:2] + b"\x07" + packed[3:], 0, "corrupt gzip stream"),
    }
    for name, (data, n, error) in cases.items():
        path = tmp_path / f"{name}.jsonl.gz"
        path.write_bytes(data)
        records, report = import_transcripts([path])
        if n is None:  # cut mid-line: the partial line is part of the cut, not a line
            n = report.lines
            assert 0 < n < 599, n
        assert [r.call_id for r in records] == [f"toolu_{i}" for i in range((n + 1) // 2)], name
        assert (report.lines, report.skipped) == (n, []), name
        assert report.unreadable_files == [(str(path), error.format(f"{n:,}"))], name


def _numbered_session(n: int) -> list[dict[str, Any]]:
    """``n`` calls, each followed by its result: 2 ``n`` lines, line 2i + 1 holds toolu_i."""
    lines = []
    for i in range(n):
        stamp = f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.000Z"
        lines += [_call(f"toolu_{i}", stamp, f"msg_{i}"), _result(f"toolu_{i}", stamp, f"r{i}")]
    return lines


def test_bzip2_and_xz_transcripts_are_read_like_gzipped_ones(tmp_path: Path) -> None:
    """``*.jsonl.bz2`` and ``*.jsonl.xz`` were named "bunzip2 it first" / "unxz it first" and
    their calls left out, though the stdlib reads both. They are now decompressed by their
    first bytes whatever their name, into the very records and byte counts of the plain files:
    ``agent-<id>.jsonl.xz`` is a subagent, concatenated streams (``cat a.bz2 b.bz2``, xz's NUL
    padding) read as one file, a plain copy of a compressed session is a duplicate."""
    session = _text(SESSION).encode()
    other = _text([_call("toolu_z", "2026-03-02T10:00:00.000Z", session="other")]).encode()
    side = _text([_call("toolu_s", "2026-03-01T11:00:00.000Z", "msg_s", session=None)]).encode()
    plain = tmp_path / "plain"
    (plain / "parent-sid" / "subagents").mkdir(parents=True)
    (plain / f"{SID}.jsonl").write_bytes(session)
    (plain / "c.jsonl").write_bytes(other)
    (plain / "parent-sid" / "subagents" / "agent-a1b2c3.jsonl").write_bytes(side)
    expected, plain_report = import_transcripts([plain])
    packed = tmp_path / "packed"
    (packed / "parent-sid" / "subagents").mkdir(parents=True)
    half = len(session) // 2
    (packed / f"{SID}.jsonl.bz2").write_bytes(
        bz2.compress(session[:half]) + bz2.compress(session[half:])
    )
    (packed / "c.jsonl").write_bytes(lzma.compress(other) + b"\0" * 8)
    (packed / "parent-sid" / "subagents" / "agent-a1b2c3.jsonl.xz").write_bytes(
        lzma.compress(side, lzma.FORMAT_XZ)
    )
    records, report = import_transcripts([packed])
    assert [r.as_dict() for r in records] == [r.as_dict() for r in expected]
    assert [r.agent_id for r in records] == [None, None, None, "a1b2c3"]
    assert (report.files, report.lines, report.bytes) == (3, 6, plain_report.bytes)
    assert report.skipped == [] and report.duplicates == 0
    assert report.unreadable_files == []
    (packed / "backup").mkdir()
    (packed / "backup" / f"{SID}.jsonl").write_bytes(session)  # the same calls again
    again, report = import_transcripts([packed])
    assert [r.call_id for r in again] == [r.call_id for r in records] and report.duplicates == 2


def test_a_cut_or_corrupt_bzip2_or_xz_keeps_the_lines_before_it_and_says_why(
    tmp_path: Path,
) -> None:
    """A bzip2 or xz stream that breaks is handled as a gzip one: the calls of the lines before
    it are imported and the file is named with what happened and where, never the
    decompressor's words. Bytes after the last stream that start no other one were dropped
    without a word by the stdlib's readers: they are damage here, as for gzip. A bad check at
    the end costs at most the last 4 KiB of text before it (the decompressor raises instead of
    giving the text of that step), and the file's message says so; a file read in part is
    counted among the damaged files, not only listed as unreadable. Two streams (600 lines,
    300 each), so that bzip2, which gives a block only once it is whole, has lines before a
    break in the second."""
    lines = _numbered_session(300)
    first, second = _text(lines[:300]).encode(), _text(lines[300:]).encode()
    kept = "(the lines before it were read)"
    garbled = "(the lines before it were read; the damage may have garbled some of them)"
    lost = (  # said since it was lost without a word
        "(the lines before it were read but for up to the last 4 KiB of text, lost with the "
        "damage; the damage may have garbled some of them)"
    )
    for kind, compress in (("bzip2", bz2.compress), ("xz", lzma.compress)):
        one, two = compress(first), compress(second)
        packed = one + two
        check = bytearray(packed)
        check[-2] ^= 0xFF  # the end of the second stream: its check or index
        header = bytearray(packed)
        header[3 if kind == "bzip2" else 7] ^= 0xFF  # block size / stream flags
        cases = {  # data, lines read (None: somewhere in the second stream), error
            "cut": (
                one + two[: len(two) // 2],
                None,
                f"{kind} stream cut short after line {{}} {kept}",
            ),
            "garbage": (packed + b"tail", 600, f"corrupt {kind} stream after line 600 {garbled}"),
            "check": (bytes(check), None, f"corrupt {kind} stream after line {{}} {lost}"),
            "header": (bytes(header), 0, f"corrupt {kind} stream"),
        }
        for name, (data, n, error) in cases.items():
            path = tmp_path / f"{kind}-{name}.jsonl"
            path.write_bytes(data)
            records, report = import_transcripts([path])
            if n is None:  # a partial line is part of the break, not a line
                n = report.lines
                tail = len(_text(lines[n:]).encode())
                assert 300 <= n < 599 and (name == "cut" or tail <= 4096), (kind, name, n)
            calls = [f"toolu_{i}" for i in range((n + 1) // 2)]
            assert [r.call_id for r in records] == calls, (kind, name)
            assert (report.lines, report.skipped) == (n, []), (kind, name)
            assert report.unreadable_files == [(str(path), error.format(f"{n:,}"))], (kind, name)
            # read in part: counted as damaged (a header refused at once is not)
            assert report.damaged_files == ([str(path)] if n else []), (kind, name)
