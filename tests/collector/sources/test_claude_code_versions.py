"""Claude Code importer on what other client versions write: every entry and block type seen
across 1.0.x – 2.1.x (summaries, system lines, snapshots, queue operations, thinking, images,
string content, calls split one block a line) and the calls the API runs itself (server tools,
API-side MCP). The transcripts are hand-made, in our own words; the rule each test holds: every
call is one record with its tool, sizes, failure and response, and nothing is dropped silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.transcripts import SID, jsonl, relayed_line
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.sources.claude_code.parsing import UNKNOWN_CALL_BLOCK
from toolwatch.conventions import ERROR_TYPE_TOOL_ERROR
from toolwatch.instrumentation.provenance import result_text
from toolwatch.record import arguments_size, result_size


def said(stamp: str, msg: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One assistant line (Claude Code writes each block of a response on a line of its own)."""
    message = {"id": msg, "role": "assistant", "content": list(blocks)}
    return {"type": "assistant", "sessionId": SID, "timestamp": stamp, "message": message, **extra}


def answered(stamp: str, content: Any, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content": content}
    return {"type": "user", "sessionId": SID, "timestamp": stamp, "message": message, **extra}


def use(kind: str, call_id: str, name: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": kind, "id": call_id, "name": name, "input": args, **extra}


def write(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{SID}.jsonl"
    path.write_text(jsonl(lines))
    return path


def run_by_api(
    seconds: tuple[int, int], call: dict[str, Any], result_type: str, content: Any, **extra: Any
) -> list[dict[str, Any]]:
    """A call the API ran and its result block, both lines of the model's own message."""
    result = {"type": result_type, "tool_use_id": call["id"], "content": content, **extra}
    called, done = (f"2026-03-01T10:00:{s:02d}Z" for s in seconds)
    return [said(called, "msg_2", call), said(done, "msg_2", result)]


IMAGE = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}]


def test_entry_types_of_every_version_are_passed_over_and_calls_read(tmp_path: Path) -> None:
    """Lines holding no call (summary, system subtypes, snapshots, queue operations, a string
    prompt, thinking) are passed over without a skip; two calls of one response on two lines
    are two records with its id; an image result is measured in the MCP shape."""
    lines = [
        {"type": "summary", "summary": "a title", "leafUuid": "u0"},
        {
            "type": "file-history-snapshot",
            "messageId": "u1",
            "snapshot": {"trackedFileBackups": {}},
        },
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-03-01T09:59:00Z"},
        {"type": "system", "subtype": "compact_boundary", "timestamp": "2026-03-01T09:59:01Z"},
        {"type": "system", "subtype": "api_error", "level": "error", "retryAttempt": 1},
        {"type": "system", "subtype": "informational", "content": "words"},
        answered("2026-03-01T09:59:03Z", "a prompt given as a string", version="2.0.74"),
        said(
            "2026-03-01T10:00:00Z", "msg_1", {"type": "thinking", "thinking": "t", "signature": "s"}
        ),
        said("2026-03-01T10:00:00Z", "msg_1", {"type": "redacted_thinking", "data": "d"}),
        said("2026-03-01T10:00:01Z", "msg_1", use("tool_use", "toolu_a", "Read", {"p": "x"})),
        said("2026-03-01T10:00:01Z", "msg_1", use("tool_use", "toolu_b", "Bash", {"c": "yy"})),
        answered(
            "2026-03-01T10:00:02Z",
            [{"type": "tool_result", "tool_use_id": "toolu_a", "content": IMAGE}],
            toolUseResult={"type": "image"},
        ),
        answered(
            "2026-03-01T10:00:04Z",
            [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "no", "is_error": True}],
            toolUseResult="Error: no",
        ),
    ]
    records, report = import_transcripts([write(tmp_path, lines)])
    got = {r.call_id: r for r in records}
    assert sorted(got) == ["toolu_a", "toolu_b"]
    assert report.skipped == []
    read, bash = got["toolu_a"], got["toolu_b"]
    assert (read.tool, read.response_id, bash.response_id) == ("Read", "msg_1", "msg_1")
    assert read.input_bytes == arguments_size({"p": "x"})
    assert read.output_bytes == result_size([{"type": "image", "data": "QUJD"}])
    assert (read.failed, read.duration_us) == (False, 1_000_000)
    assert (bash.failed, bash.error_type, bash.output_bytes) == (True, ERROR_TYPE_TOOL_ERROR, 2)


def test_server_tools_are_calls_under_their_own_name(tmp_path: Path) -> None:
    """A web search or fetch the API ran (``server_tool_use``, its result a
    ``…_tool_result`` block in the model's own message) was dropped without a word: the model
    made that call as much as any other. It is now a record named as the API names the tool,
    built-in (no server), of its response, failed when the result is an ``…_error`` object,
    and classed ``web`` egress like Claude Code's own WebSearch / WebFetch."""
    hits = [{"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e"}]
    refused = {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"}
    lines = [
        *run_by_api(
            (5, 7),
            use("server_tool_use", "srvtoolu_1", "web_search", {"query": "q"}),
            "web_search_tool_result",
            hits,
        ),
        *run_by_api(
            (8, 9),
            use("server_tool_use", "srvtoolu_2", "web_fetch", {"url": "u"}),
            "web_fetch_tool_result",
            refused,
        ),
        said("2026-03-01T10:00:10Z", "msg_2", {"type": "container_upload", "file_id": "f"}),
    ]
    records, report = import_transcripts([write(tmp_path, lines)])
    got = {r.call_id: r for r in records}
    assert sorted(got) == ["srvtoolu_1", "srvtoolu_2"]
    assert report.skipped == []
    search, fetch = got["srvtoolu_1"], got["srvtoolu_2"]
    assert (search.tool, search.server, search.response_id) == ("web_search", None, "msg_2")
    assert (search.input_bytes, search.output_bytes) == (
        arguments_size({"query": "q"}),
        result_size(hits),
    )
    assert (search.failed, search.duration_us, search.egress) == (False, 2_000_000, "web")
    assert (fetch.tool, fetch.failed, fetch.error_type) == (
        "web_fetch",
        True,
        ERROR_TYPE_TOOL_ERROR,
    )
    assert fetch.output_bytes == result_size([refused])
    # the provenance pass reads their inputs and results too (the results in assistant lines)
    assert report.provenance is not None
    assert report.provenance.missing_inputs == 0
    assert report.provenance.result_bytes == len(result_text(hits)) + len(result_text(refused))


def test_an_api_side_mcp_call_names_its_server(tmp_path: Path) -> None:
    """An MCP tool the API called (``mcp_tool_use`` with ``server_name``) is recorded as Claude
    Code names MCP tools, ``mcp__<server>__<tool>``, so its server is set like any MCP call's."""
    text = [{"type": "text", "text": "ok"}]
    call = use("mcp_tool_use", "mcptoolu_1", "lookup", {"k": "v"}, server_name="docs")
    lines = run_by_api((8, 9), call, "mcp_tool_result", text, is_error=True)
    (record,), report = import_transcripts([write(tmp_path, lines)])
    assert report.skipped == []
    assert (record.tool, record.server) == ("mcp__docs__lookup", "docs")
    assert record.response_id == "msg_2"
    assert (record.failed, record.output_bytes) == (True, result_size(text))


def test_a_call_block_of_an_unknown_kind_is_counted(tmp_path: Path) -> None:
    """A ``…tool_use`` block of a kind a later version may add is not guessed at, but counted
    with its reason instead of vanishing."""
    lines = [said("2026-03-01T10:00:00Z", "msg_4", use("future_tool_use", "x_1", "t", {}))]
    records, report = import_transcripts([write(tmp_path, lines)])
    assert records == []
    assert report.skipped_by_reason() == {UNKNOWN_CALL_BLOCK: 1}


def test_a_windows_copy_with_bom_and_crlf_reads_like_any(tmp_path: Path) -> None:
    """A Windows user's transcript (a UTF-8 BOM, CRLF endings, backslash paths in its fields
    and arguments) gives its call and result as a Linux one does."""
    args = {"command": "dir C:\\Users\\someone"}
    lines = [
        said(
            "2026-03-01T10:00:00Z", "m", use("tool_use", "toolu_w", "PowerShell", args), cwd="C:\\p"
        ),
        answered(
            "2026-03-01T10:00:01Z",
            [{"type": "tool_result", "tool_use_id": "toolu_w", "content": "ok"}],
        ),
    ]
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(x) + "\r\n" for x in lines).encode())
    (record,), report = import_transcripts([path])
    assert report.skipped == []
    assert (record.input_bytes, record.output_bytes) == (arguments_size(args), result_size("ok"))


def test_a_server_tool_answered_by_a_plain_tool_result_in_the_models_message(
    tmp_path: Path,
) -> None:
    """Another vendor's Anthropic-compatible endpoint behind Claude Code (GLM's, for its page
    reader) writes the result of a call it ran itself as a plain ``tool_result`` block in the
    model's own message, not a ``<kind>_tool_result`` one. Such a result was not taken: the call
    had no size nor duration and, its stream going on, was stored failed ``no_result``."""
    page = "a page of text"
    call = use("server_tool_use", "call_r1", "readPage", {"url": "u"})
    lines = [
        *run_by_api((3, 5), call, "tool_result", page),
        said("2026-03-01T10:00:09Z", "msg_3", {"type": "text", "text": "done"}),
    ]
    (record,), report = import_transcripts([write(tmp_path, lines)])
    assert report.skipped == []
    assert (record.tool, record.server, record.response_id) == ("readPage", None, "msg_2")
    assert (record.failed, record.error_type) == (False, None)
    assert (record.output_bytes, record.duration_us) == (result_size(page), 2_000_000)
    assert report.provenance is not None
    assert report.provenance.result_bytes == len(result_text(page))


def test_subagent_calls_seen_only_in_progress_lines_are_counted(tmp_path: Path) -> None:
    """2.1.x relays a subagent's messages into its session's file as progress lines; they were
    passed over without a word, so with the agent's own file missing its calls were lost
    silently. They are counted now (not imported: its file holds the calls), and not when
    the agent's file is read too."""
    task = use("tool_use", "toolu_task", "Task", {"prompt": "look around"})
    agent_call = said("2026-03-01T10:00:02Z", "msg_s1", use("tool_use", "toolu_s1", "Grep", {}))
    agent_call_2 = said("2026-03-01T10:00:04Z", "msg_s2", use("tool_use", "toolu_s2", "Read", {}))
    agent_result = answered(
        "2026-03-01T10:00:03Z", [{"type": "tool_result", "tool_use_id": "toolu_s1", "content": "r"}]
    )
    main = write(
        tmp_path,
        [
            said("2026-03-01T10:00:00Z", "msg_1", task),
            relayed_line("2026-03-01T10:00:02Z", "a1b2", agent_call),
            relayed_line("2026-03-01T10:00:03Z", "a1b2", agent_result),
            relayed_line("2026-03-01T10:00:04Z", "a1b2", agent_call_2),
            relayed_line("2026-03-01T10:00:04Z", "a1b2", agent_call_2),  # a resumed copy
            answered(
                "2026-03-01T10:00:05Z",
                [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "done"}],
            ),
        ],
    )
    records, report = import_transcripts([main], provenance=None)
    assert [r.tool for r in records] == ["Task"]
    assert (report.relayed_only_calls, report.relayed_only_subagents) == (2, 1)
    assert report.skipped == []

    agent_file = tmp_path / SID / "subagents" / "agent-a1b2.jsonl"
    agent_file.parent.mkdir(parents=True)
    agent_file.write_text(jsonl([agent_call, agent_result, agent_call_2]))
    records, report = import_transcripts([tmp_path], provenance=None)
    assert [(r.tool, r.agent_id) for r in records] == [
        ("Task", None),
        ("Grep", "a1b2"),
        ("Read", "a1b2"),
    ]
    assert (report.relayed_only_calls, report.relayed_only_subagents) == (0, 0)
    assert (report.duplicates, report.skipped) == (0, [])

    agent_file.write_text(jsonl([agent_call, agent_result]))  # a copy cut before its 2nd call
    _, report = import_transcripts([tmp_path], provenance=None)
    assert (report.relayed_only_calls, report.relayed_only_subagents) == (1, 1)
