"""Claude Code importer: exact rows per transcript layout and per trap of real data.

The fixtures under ``tests/fixtures/claude_code`` were written by hand from
``shared/claude-code-transcripts.md``: ``v1_inline`` (CLI 1.0.x, interleaved inline sidechains
without agentId), ``v2_agents`` (2.0.x ``agent-<hex>.jsonl``), ``v21_subagents`` (2.1.x
``<sessionId>/subagents/``, capped output, result stamped before a later tool_use of the same
response), ``traps`` (corrupt lines, duplicates across files, re-stamped resumed history, lines
lacking uuid/timestamp). Sizes below were counted by hand from the fixture lines
(UTF-8 bytes of compact JSON inputs; result text bytes; base64 length for images).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.paths import FIXTURES
from toolwatch.collector.sources.claude_code import (
    TranscriptPathError,
    find_transcripts,
    import_transcripts,
    parse_file,
)
from toolwatch.collector.sources.claude_code.parsing import inline_agent_id
from toolwatch.record import CallRecord

FIXTURES = FIXTURES / "claude_code"

S1 = "3f1c0a2e-1111-4a4a-9b9b-000000000001"
S2 = "7b0e9d44-2222-4b4b-8c8c-000000000002"
S3 = "c4d2e6f8-3333-4c4c-8d8d-000000000003"
S4 = "e1a2b3c4-4444-4d4d-8e8e-000000000004"
S5 = "f5e6d7c8-5555-4e4e-8f8f-000000000005"


def _sidechain(session: str, root_uuid: str) -> str:
    """The documented derivation, written out independently of the importer."""
    return "sidechain-" + hashlib.sha256(f"{session}/{root_uuid}".encode()).hexdigest()[:16]


SC1 = _sidechain(S1, "a-s1-0")
SC2 = _sidechain(S1, "a-s2-0")

# (session, agent, seq, tool, server, start, duration_us, in, out, failed, error_type,
#  response_id, call_id, restamped, output_truncated)
Row = tuple[
    str, str | None, int, str, str | None, str, int | None, int, int | None, bool, str | None,
    str | None, str, bool, bool,
]  # fmt: skip

V1_ROWS: list[Row] = [
    (S1, None, 0, "Bash", None, "2025-06-01T10:00:05", 1_250_000, 28, 23, False, None,
     "msg_A1", "toolu_A1", False, False),
    (S1, None, 1, "Task", None, "2025-06-01T10:00:10", 20_000_000, 53, 20, False, None,
     "msg_A2", "toolu_A2", False, False),
    (S1, None, 2, "Task", None, "2025-06-01T10:00:10.500", 19_500_000, 50, 23, False, None,
     "msg_A2", "toolu_A3", False, False),
    (S1, SC1, 3, "Grep", None, "2025-06-01T10:00:13", 1_000_000, 23, 17, False, None,
     "msg_S1a", "toolu_S1a", False, False),
    (S1, SC2, 4, "Edit", None, "2025-06-01T10:00:13.500", 700_000, 55, 96, True, "tool_error",
     "msg_S2a", "toolu_S2a", False, False),
    (S1, SC1, 5, "Read", None, "2025-06-01T10:00:16", 400_000, 31, 23, False, None,
     "msg_S1b", "toolu_S1b", False, False),
    # approval wait: the person took 42 s to refuse, and the refusal is a failure
    (S1, None, 6, "Bash", None, "2025-06-01T10:01:00", 42_000_000, 32, 225, True, "tool_error",
     "msg_A3", "toolu_A4", False, False),
]  # fmt: skip

V2_ROWS: list[Row] = [
    (S2, None, 0, "mcp__plugin_playwright_playwright__browser_click",
     "plugin_playwright_playwright", "2025-09-20T09:00:02", 1_000_000, 44, 31, False, None,
     "msg_B1", "toolu_B1", False, False),
    # is_error: false is a success like an absent is_error
    (S2, None, 1, "mcp__claude_ai_Gmail__authenticate", "claude_ai_Gmail",
     "2025-09-20T09:00:02.600", 1_400_000, 2, 19, False, None, "msg_B1", "toolu_B2", False,
     False),
    (S2, None, 2, "mcp__data-api__query__v2", "data-api", "2025-09-20T09:00:10", 1_500_000, 30,
     18, False, None, "msg_B2", "toolu_B3", False, False),
    (S2, None, 3, "Task", None, "2025-09-20T09:00:20", 40_000_000, 84, 16, False, None,
     "msg_B3", "toolu_B4", False, False),
    (S2, "5e2f9a1c", 4, "Read", None, "2025-09-20T09:00:23", 300_000, 28, 20, False, None,
     "msg_C1", "toolu_C1", False, False),
    (S2, "5e2f9a1c", 5, "Bash", None, "2025-09-20T09:00:25", 1_000_000, 30, 30, True,
     "tool_error", "msg_C2", "toolu_C2", False, False),
    # this line lacks agentId: the id comes from the file name agent-5e2f9a1c.jsonl
    (S2, "5e2f9a1c", 6, "Glob", None, "2025-09-20T09:00:28", 50_000, 18, 0, False, None,
     "msg_C3", "toolu_C3", False, False),
]  # fmt: skip

V21_ROWS: list[Row] = [
    # D1's result (14:00:01.400) is stamped before D2 and D3 of the same response msg_D1
    (S3, None, 0, "Read", None, "2025-11-03T14:00:01", 400_000, 35, 18, False, None,
     "msg_D1", "toolu_D1", False, False),
    (S3, None, 1, "Grep", None, "2025-11-03T14:00:02.100", 900_000, 39, 16, False, None,
     "msg_D1", "toolu_D2", False, False),
    (S3, None, 2, "Bash", None, "2025-11-03T14:00:02.900", 30_100_000, 23, 229, False, None,
     "msg_D1", "toolu_D3", False, True),
    (S3, None, 3, "Agent", None, "2025-11-03T14:00:40", 80_000_000, 84, 18, False, None,
     "msg_D2", "toolu_D4", False, False),
    (S3, "a9f3c2d1e5b7", 4, "WebFetch", None, "2025-11-03T14:00:45", 2_500_000, 62, 24, False,
     None, "msg_E1", "toolu_E1", False, False),
    (S3, "a9f3c2d1e5b7", 5, "Bash", None, "2025-11-03T14:00:50", 200_000, 30, 30, True,
     "tool_error", "msg_E2", "toolu_E2", False, False),
    # a tool_reference block counts as its compact JSON
    (S3, None, 6, "ToolSearch", None, "2025-11-03T14:02:05", 300_000, 31, 72, False, None,
     "msg_D3", "toolu_D5", False, False),
    # no result in the file: size and duration unknown, not a failure
    (S3, None, 7, "mcp__github__create_pull_request", "github", "2025-11-03T14:02:10", None, 35,
     None, False, None, "msg_D4", "toolu_D6", False, False),
]  # fmt: skip

TRAP_ROWS: list[Row] = [
    (S4, None, 0, "Bash", None, "2025-07-01T08:00:00", 1_000_000, 28, 15, False, None,
     "msg_F1", "toolu_F1", False, False),
    (S4, None, 1, "Read", None, "2025-07-01T08:00:10", 100_000, 28, 16, False, None,
     "msg_F2", "toolu_F2", False, False),
    (S4, None, 2, "Edit", None, "2025-07-01T08:00:20", 1_000_000, 62, 14, False, None,
     "msg_F3", "toolu_F3", False, False),
    # the line has no uuid: the call is still whole
    (S4, None, 3, "Glob", None, "2025-07-01T08:00:30", 700_000, 26, 16, False, None,
     "msg_F5", "toolu_F5", False, False),
    # only in the resumed file, on the rewritten stamp shared by 4 responses
    (S5, None, 0, "TodoWrite", None, "2025-07-01T09:30:00", None, 56, 37, False, None,
     "msg_G0", "toolu_G0", True, False),
    (S5, None, 1, "Bash", None, "2025-07-01T09:31:00", 2_000_000, 30, 17, False, None,
     "msg_G1", "toolu_G1", False, False),
    (S5, None, 2, "Bash", None, "2025-07-01T09:31:10", 500_000, 23, 98, False, None,
     "msg_G2", "toolu_G2", False, True),
]  # fmt: skip


def _row(r: CallRecord) -> Row:
    start = r.start_time.astimezone(r.start_time.tzinfo).isoformat(timespec="milliseconds")
    start = start.removesuffix("+00:00").removesuffix(".000")
    return (
        r.session_id, r.agent_id, r.seq or 0, r.tool, r.server, start, r.duration_us,
        r.input_bytes, r.output_bytes, r.failed, r.error_type, r.response_id, r.call_id or "",
        r.restamped, r.output_truncated,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("v1_inline", V1_ROWS),
        ("v2_agents", V2_ROWS),
        ("v21_subagents", V21_ROWS),
        ("traps", TRAP_ROWS),
    ],
)
def test_exact_rows(case: str, expected: list[Row]) -> None:
    records, _ = import_transcripts([FIXTURES / case])
    assert [_row(r) for r in records] == expected
    for r in records:
        assert r.source == "import"
        assert r.service == "claude-code"
        assert r.label is None
        assert r.start_time.utcoffset() == timedelta(0)
        assert (
            r.trace_id
            == hashlib.sha256(f"toolwatch-import/session/{r.session_id}".encode()).hexdigest()[:32]
        )
        assert (
            r.span_id
            == hashlib.sha256(f"toolwatch-import/call/{r.call_id}".encode()).hexdigest()[:16]
        )


def test_inline_sidechains_are_separate_stable_agents() -> None:
    records, report = import_transcripts([FIXTURES / "v1_inline"])
    agents = {r.call_id: r.agent_id for r in records}
    # two interleaved subagents, told apart by their parentUuid trees
    assert agents["toolu_S1a"] == agents["toolu_S1b"] == SC1
    assert agents["toolu_S2a"] == SC2 != SC1
    assert inline_agent_id(S1, "a-s1-0") == SC1
    assert report.subagent_calls == 3
    again, _ = import_transcripts([FIXTURES / "v1_inline"])
    assert [r.as_dict() for r in again] == [r.as_dict() for r in records]


def test_parallel_calls_share_a_response_not_a_timestamp() -> None:
    records, _ = import_transcripts([FIXTURES / "v21_subagents"])
    msg_d1 = [r for r in records if r.response_id == "msg_D1"]
    assert [r.call_id for r in msg_d1] == ["toolu_D1", "toolu_D2", "toolu_D3"]
    assert len({r.start_time for r in msg_d1}) == 3


def test_subagent_session_is_the_parent_session() -> None:
    for case, agent in (("v2_agents", "5e2f9a1c"), ("v21_subagents", "a9f3c2d1e5b7")):
        records, report = import_transcripts([FIXTURES / case])
        assert report.sessions == 1
        assert {r.session_id for r in records if r.agent_id == agent} == {
            r.session_id for r in records if r.agent_id is None
        }


def test_subagent_file_alone_keeps_its_parent_session() -> None:
    """Only the subagent file copied: the session is still the parent's (from sessionId)."""
    path = FIXTURES / "v21_subagents" / "-home-u-proj" / S3 / "subagents"
    records, _ = import_transcripts([path])
    assert {(r.session_id, r.agent_id) for r in records} == {(S3, "a9f3c2d1e5b7")}
    assert [r.seq for r in records] == [0, 1]


def test_traps_report() -> None:
    _, report = import_transcripts([FIXTURES / "traps"])
    assert report.files == 3
    assert report.sessions == 2
    assert report.calls == 7
    assert report.duplicates == 5  # F1, F2 in the backup; F1-F3 in the resumed session
    assert report.restamped == 1
    assert report.capped == 1
    orig = str(FIXTURES.resolve() / "traps" / "orig" / f"{S4}.jsonl")
    assert [(s.path, s.line, s.reason) for s in report.skipped] == [
        (orig, 7, "invalid JSON"),
        (orig, 8, "not a JSON object"),
        (orig, 10, "tool_use line without timestamp"),
        (orig, 13, "tool_use line with invalid timestamp"),
        (orig, 14, "tool_use without id"),
        (orig, 15, "tool_result without tool_use_id"),
        (orig, 17, "invalid JSON"),
        (orig, 18, "invalid JSON"),
    ]
    assert report.skipped_by_reason()["invalid JSON"] == 3
    assert str(report.skipped[0]) == f"{orig}:7: invalid JSON"


def test_resumed_file_alone_is_flagged_restamped() -> None:
    """Without the original file the copies are kept, but none of their times is trusted."""
    records, report = import_transcripts([FIXTURES / "traps" / "resumed"])
    flags = {r.call_id: (r.restamped, r.duration_us) for r in records}
    assert flags == {
        "toolu_F1": (True, None),
        "toolu_F2": (True, None),
        "toolu_F3": (True, None),
        "toolu_G0": (True, None),
        "toolu_G1": (False, 2_000_000),
        "toolu_G2": (False, 500_000),
    }
    assert report.restamped == 4
    assert {r.session_id for r in records} == {S5}


def test_two_responses_on_one_stamp_are_not_restamped(tmp_path: Path) -> None:
    lines = [_assistant(f"msg_{i}", f"toolu_{i}", "2025-01-01T00:00:00.000Z") for i in range(2)]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    records, _ = import_transcripts([path])
    assert [r.restamped for r in records] == [False, False]
    path.write_text(
        "\n".join([*lines, _assistant("msg_2", "toolu_2", "2025-01-01T00:00:00.000Z")]) + "\n"
    )
    records, _ = import_transcripts([path])
    assert [r.restamped for r in records] == [True, True, True]


def test_duplicate_keeps_the_earliest_stamp(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_assistant("msg_1", "toolu_X", "2025-01-01T00:00:09.000Z"))
    (tmp_path / "b.jsonl").write_text(_assistant("msg_1", "toolu_X", "2025-01-01T00:00:01.000Z"))
    records, report = import_transcripts([tmp_path])
    assert [r.start_time.isoformat() for r in records] == ["2025-01-01T00:00:01+00:00"]
    assert report.duplicates == 1


def test_result_in_another_file_is_matched(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(_assistant("msg_1", "toolu_X", "2025-01-01T00:00:01.000Z"))
    (tmp_path / "b.jsonl").write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s",
                "timestamp": "2025-01-01T00:00:03.500Z",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_X", "content": "abc"}
                    ],
                },
            }
        )
    )
    records, _ = import_transcripts([tmp_path])
    assert [(r.output_bytes, r.duration_us) for r in records] == [(3, 2_500_000)]


def test_results_no_call_takes_are_counted_with_their_reason(tmp_path: Path) -> None:
    """A result whose id matches no call of the run, and a second result for an id, were
    dropped without a count. A result copied beside a copy of its call (a resumed session's
    history) goes with that duplicate call, counted there."""
    a, b, c = (tmp_path / f"{n}.jsonl" for n in "abc")
    call = _assistant("msg_1", "toolu_X", "2025-01-01T00:00:01.000Z")
    a.write_text(
        "\n".join(
            [call, _result("toolu_X", "abc"), _result("toolu_X", "abcdef"), _result("gone", "x")]
        )
    )
    b.write_text(_result("toolu_X", "abcd") + "\n" + _result("toolu_Y", "x"))
    c.write_text(call + "\n" + _result("toolu_X", "abc"))
    records, report = import_transcripts([tmp_path])
    assert [(r.call_id, r.output_bytes) for r in records] == [("toolu_X", 3)]
    assert report.duplicates == 1
    assert [str(s) for s in report.skipped] == [
        f"{a}:3: repeated tool_result",
        f"{a}:4: tool_result without matching tool_use",
        f"{b}:1: repeated tool_result",
        f"{b}:2: tool_result without matching tool_use",
    ]
    assert report.skipped_by_reason() == {
        "repeated tool_result": 2,
        "tool_result without matching tool_use": 2,
    }


def _result(call_id: str, text: str, stamp: str = "2025-01-01T00:00:02.000Z") -> str:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    message = {"role": "user", "content": [block]}
    return json.dumps({"type": "user", "sessionId": "s", "timestamp": stamp, "message": message})


def test_result_stamped_before_its_call_has_unknown_duration(tmp_path: Path) -> None:
    result = {
        "type": "user",
        "sessionId": "s",
        "timestamp": "2025-01-01T00:00:00.500Z",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_X", "content": ""}]},
    }
    path = tmp_path / "s.jsonl"
    path.write_text(
        _assistant("msg_1", "toolu_X", "2025-01-01T00:00:01.000Z") + "\n" + json.dumps(result)
    )
    records, _ = import_transcripts([path])
    assert [(r.duration_us, r.output_bytes) for r in records] == [(None, 0)]


def test_failure_is_is_error_only_never_the_text(tmp_path: Path) -> None:
    """A result reading "Exit code 1" without is_error is a success: text is never read."""
    blocks = [
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "Exit code 1"},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x", "is_error": "true"},
    ]
    lines = [_assistant(f"msg_{i}", f"toolu_{i}", f"2025-01-01T00:00:0{i}.000Z") for i in range(3)]
    lines.append(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s",
                "timestamp": "2025-01-01T00:00:05.000Z",
                "message": {"content": blocks},
            }
        )
    )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines))
    records, _ = import_transcripts([path])
    assert [(r.failed, r.error_type) for r in records] == [
        (False, None),
        (True, "tool_error"),
        (False, None),
    ]


def test_sizes_use_the_shared_byte_basis(tmp_path: Path) -> None:
    from toolwatch.record import arguments_size, result_size

    args = {"q": "naïve ☃", "n": [1, 2.5, None], "nested": {"k": True}}
    content = [{"type": "text", "text": "héllo"}, {"type": "text", "text": "wörld"}]
    path = tmp_path / "s.jsonl"
    line = json.loads(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    line["message"]["content"][0]["input"] = args
    result = {
        "type": "user",
        "sessionId": "s",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]
        },
    }
    path.write_text(json.dumps(line) + "\n" + json.dumps(result) + "\n")
    (record,), _ = import_transcripts([path])
    assert record.input_bytes == arguments_size(args) == 55
    assert record.output_bytes == result_size(content) == 12


def test_session_id_falls_back_to_the_file_and_path(tmp_path: Path) -> None:
    main = tmp_path / "abc-session.jsonl"
    main.write_text(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z", session=None))
    sub = tmp_path / "parent-sid" / "subagents" / "agent-77.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(_assistant("msg_2", "toolu_2", "2025-01-01T00:00:02.000Z", session=None))
    records, _ = import_transcripts([tmp_path])
    assert sorted((r.session_id, r.agent_id) for r in records) == [
        ("abc-session", None),
        ("parent-sid", "77"),
    ]


def test_unreadable_file_is_reported_not_fatal(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    bad = tmp_path / "bad.jsonl"
    bad.mkdir()  # a directory named like a transcript: not picked up by the glob as a file
    parse = parse_file(tmp_path / "missing.jsonl")
    assert parse.error is not None and parse.calls == []
    records, report = import_transcripts([tmp_path])
    assert [r.call_id for r in records] == ["toolu_1"]
    assert report.files == 1


def test_missing_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(TranscriptPathError, match="nope"):
        find_transcripts([tmp_path / "nope"])


def test_find_transcripts_is_recursive_sorted_and_deduplicated() -> None:
    root = FIXTURES / "v21_subagents"
    one = root / "-home-u-proj" / f"{S3}.jsonl"
    found = find_transcripts([root, one])
    assert [p.name for p in found] == [f"{S3}.jsonl", "agent-a9f3c2d1e5b7.jsonl"]
    assert all(p.suffix == ".jsonl" for p in found)


@pytest.mark.timeout(20)
def test_entries_not_read_under_a_directory_are_named_with_their_reason(tmp_path: Path) -> None:
    """A dangling symlink and a FIFO named *.jsonl were passed over without a word, and a file
    failing to read was named by its resolved path (/proc/<pid>/mem). Now every *.jsonl entry
    not imported is listed under the path inside the directory given, with its reason; the
    FIFO is never opened (that would wait for a writer)."""
    root = tmp_path / "in"
    root.mkdir()
    (root / "good.jsonl").write_text(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("not json\n")
    (root / "link.jsonl").symlink_to(outside)
    (root / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(root / "fifo.jsonl")
    (root / "dir.jsonl").mkdir()  # a directory is searched, not a file left unread
    (root / "mem.jsonl").symlink_to("/proc/self/mem")  # a regular file that fails to read
    records, report = import_transcripts([root])
    assert [r.call_id for r in records] == ["toolu_1"]
    assert report.files == 3  # good, link, mem
    assert report.unreadable_files == [
        (str(root / "dangling.jsonl"), "broken symbolic link"),
        (str(root / "fifo.jsonl"), "not a regular file"),
        (str(root / "mem.jsonl"), "read error after line 0: Input/output error"),
    ]
    assert report.not_json_lines == [str(root / "link.jsonl")] and report.skipped == []


@pytest.mark.timeout(20)
def test_a_given_path_that_is_not_a_regular_file_is_named_as_such(tmp_path: Path) -> None:
    """A FIFO or /dev/null given by name was "no such file or directory" though it exists."""
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        with pytest.raises(TranscriptPathError) as raised:
            find_transcripts([path])
        assert str(raised.value) == f"not a regular file: {path}"
    (tmp_path / "d.jsonl").symlink_to(tmp_path / "nowhere")
    for name, reason in (("d.jsonl", "broken symbolic link"), ("nowhere", "no such file")):
        with pytest.raises(TranscriptPathError) as raised:
            find_transcripts([tmp_path / name])
        assert str(raised.value).startswith(reason) and str(raised.value).endswith(name)


@pytest.mark.timeout(20)
def test_a_fifo_in_a_transcripts_place_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    parse = parse_file(fifo, shown="given/x.jsonl")
    assert (parse.error, parse.lines, parse.shown) == ("not a regular file", 0, "given/x.jsonl")


def _assistant(msg_id: str, call_id: str, stamp: str, session: str | None = "s") -> str:
    line: dict[str, object] = {
        "type": "assistant",
        "uuid": f"u-{call_id}",
        "timestamp": stamp,
        "message": {
            "id": msg_id,
            "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}],
        },
    }
    if session is not None:
        line["sessionId"] = session
    return json.dumps(line)


def test_lone_surrogates_count_as_replacement_characters(tmp_path: Path) -> None:
    """A \\ud83d escape cut from its pair (a truncated preview) is measured, never fatal."""
    line = json.loads(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    line["message"]["content"][0]["input"] = {"command": "echo \ud83d", "\udc00k": 1}
    result = {
        "type": "user",
        "sessionId": "s",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "cut \ud83d"}]
        },
    }
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(result) + "\n")  # escapes, ASCII
    (record,), report = import_transcripts([path])
    assert record.input_bytes == len('{"command":"echo \ufffd","\ufffdk":1}'.encode()) == 31
    assert record.output_bytes == len("cut \ufffd".encode()) == 7
    assert report.skipped == []


def test_a_line_nested_too_deep_is_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    deep = '{"type":"assistant","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(deep + "\n" + _assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    records, report = import_transcripts([path])
    assert [r.call_id for r in records] == ["toolu_1"]
    assert [(s.line, s.reason) for s in report.skipped] == [(1, "invalid JSON")]


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: only the stdlib parser reads those
    | st.sampled_from([2**64, -(2**63) - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-05, 1.5e-07, 0.00012, 1e16, 2.5e-300, -0.0])  # orjson writes
    | st.text()  # some of these in other forms than the stdlib does
    | st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2),  # lone surrogates
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(value=_JSON_VALUES, nan=st.booleans(), ascii_file=st.booleans())
def test_input_size_equals_the_shared_basis_for_any_json(
    value: object, nan: bool, ascii_file: bool
) -> None:
    """The importer's fast size path gives the shared byte basis exactly: floats of every form,
    escapes, non-ASCII, NaN and huge integers (lines only the stdlib parser accepts), lone
    surrogates (3 bytes each, as U+FFFD)."""
    from toolwatch.record import arguments_size

    args = {"v": value, "n": math.nan} if nan else {"v": value}
    surrogates = re.search("[\ud800-\udfff]", json.dumps(args, ensure_ascii=False)) is not None
    seen = json.loads(json.dumps(args))  # as a reader sees it: escaped pairs join, lone stay
    compact = json.dumps(seen, separators=(",", ":"), ensure_ascii=False)
    expected = len(compact.encode("utf-8", "surrogatepass"))  # 3 bytes per lone surrogate
    if not surrogates:
        assert expected == arguments_size(args)  # the shared function itself
    line = json.loads(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    line["message"]["content"][0]["input"] = args
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        # surrogates can only be written escaped (raw, they are not UTF-8: next test)
        path.write_text(json.dumps(line, ensure_ascii=ascii_file or surrogates) + "\n")
        (record,), report = import_transcripts([path])
    assert record.input_bytes == expected
    assert report.skipped == []


def test_bytes_that_are_not_utf8_make_an_invalid_line(tmp_path: Path) -> None:
    good = _assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z").encode()
    bad = _assistant("msg_2", "toolu_2", "2025-01-01T00:00:02.000Z").encode()
    bad = bad.replace(b'"Bash"', b'"B\xed\xa0\x80"')  # an encoded surrogate: not UTF-8
    path = tmp_path / "s.jsonl"
    path.write_bytes(bad + b"\n" + good + b"\n")
    records, report = import_transcripts([path])
    assert [r.call_id for r in records] == ["toolu_1"]
    assert [(s.line, s.reason) for s in report.skipped] == [(1, "invalid JSON")]


def test_datetime_parsing_handles_offsets(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_assistant("msg_1", "toolu_1", "2025-01-01T02:00:00.250+02:00"))
    (record,), _ = import_transcripts([path])
    assert record.start_time == datetime.fromisoformat("2025-01-01T00:00:00.250+00:00")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [300, 990])
def test_deeply_nested_inputs_and_results_are_measured_not_fatal(
    tmp_path: Path, depth: int
) -> None:
    """A line the parser reads (≤ 1024 levels) may nest deeper than orjson writes (254) or the
    stdlib encoder goes (~1000): the import died with TypeError / RecursionError (exit 70).
    Now every size is the compact JSON bytes, counted without recursion."""
    deep = _nested(depth)
    call = json.loads(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    call["message"]["content"][0]["input"] = {"a": "@"}
    results = {
        "other": '[{"type":"x","d":@}]',
        "dict": '{"d":@}',
        "text": '[{"type":"text","text":@}]',
        "resource": '[{"type":"resource","resource":{"text":@}}]',
    }
    lines = [json.dumps(call).replace('"@"', deep)]
    for i, content in enumerate(results):
        call_id = f"toolu_{content}"
        line = json.loads(_assistant(f"msg_{i + 2}", call_id, f"2025-01-01T00:00:0{i + 2}.000Z"))
        lines.append(json.dumps(line))
        content_json = results[content].replace("@", deep)
        block = f'{{"type":"tool_result","tool_use_id":"{call_id}","content":{content_json}}}'
        lines.append(
            '{"type":"user","sessionId":"s","timestamp":"2025-01-01T00:00:09.000Z",'
            f'"message":{{"content":[{block}]}}}}'
        )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    records, report = import_transcripts([path])
    sizes = {r.call_id: (r.input_bytes, r.output_bytes) for r in records}
    assert sizes == {
        "toolu_1": (len('{"a":}') + 2 * depth, None),
        "toolu_other": (2, len('{"type":"x","d":}') + 2 * depth),
        "toolu_dict": (2, len('{"d":}') + 2 * depth),
        # a text that is not a string counts as str(text) (here 2 * depth bytes); past the
        # recursion limit str() fails too, and the block counts as its compact JSON
        "toolu_text": (2, 2 * depth if depth < 900 else len('{"type":"text","text":}') + 2 * depth),
        "toolu_resource": (
            2,
            2 * depth
            if depth < 900
            else len('{"type":"resource","resource":{"text":}}') + 2 * depth,
        ),
    }
    assert report.skipped == []
    assert report.provenance is not None
    # the dict is searched as its compact JSON and the text block as str(): too deep for both
    assert report.provenance.unreadable_results == (2 if depth == 990 else 0)


@pytest.mark.parametrize(
    ("stamp", "reason"),
    [
        ("0001-01-01T00:00:00+01:00", "tool_use line with invalid timestamp"),
        ("9999-12-31T23:59:59-01:00", "tool_use line with invalid timestamp"),
        (1735689601000, "tool_use line with invalid timestamp"),
        ("", "tool_use line with invalid timestamp"),
        (None, "tool_use line without timestamp"),
    ],
)
def test_a_stamp_out_of_range_or_not_a_string_is_an_invalid_timestamp(
    tmp_path: Path, stamp: object, reason: str
) -> None:
    """An offset moving the time out of years 1-9999 raised OverflowError (exit 70); a number
    was reported as no timestamp at all."""
    line = json.loads(_assistant("msg_1", "toolu_1", "2025-01-01T00:00:01.000Z"))
    line["timestamp"] = stamp
    result = _result("toolu_2", "x", stamp="9999-12-31T23:59:59-01:00")  # no duration, no crash
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps(line)
        + "\n"
        + _assistant("msg_2", "toolu_2", "2025-01-01T00:00:02.000Z")
        + "\n"
        + result
        + "\n"
    )
    records, report = import_transcripts([path])
    assert [(r.call_id, r.duration_us, r.output_bytes) for r in records] == [("toolu_2", None, 1)]
    assert [(s.line, s.reason) for s in report.skipped] == [(1, reason)]


@settings(max_examples=200, deadline=None)
@given(value=_JSON_VALUES)
def test_the_recursion_free_size_equals_the_shared_basis(value: object) -> None:
    """What a too-deep input or result block is measured by (the shared one in record):
    byte-identical to the encoder on values as the importer reads them."""
    from toolwatch.record import json_size

    seen = json.loads(json.dumps({"v": value, "n": [math.nan, math.inf, -math.inf]}))
    compact = json.dumps(seen, separators=(",", ":"), ensure_ascii=False)
    assert json_size(seen) == len(compact.encode("utf-8", "surrogatepass"))
