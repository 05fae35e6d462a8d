"""Claude Code importer on transcripts it has not seen: structural fuzzing.

Hypothesis writes realistic sessions (calls of the three block kinds, results as text, lists and
images, thinking and text blocks, summaries, compaction, progress lines relaying a subagent,
inline sidechains and a subagent file), then breaks them the way other users' files and other
client versions might: fields dropped or of another type, unknown blocks, repeated ids, results
before calls, other timestamp forms, retyped lines, huge lines, a BOM, CRLF, invalid UTF-8, a
cut last line. The whole import (both passes, the store, the summary) runs on each, and holds:
it never raises; every line is counted (``report.lines``); every call block is a record, a
duplicate or on a line named in the skipped list (the invariant the report supports: lines
without calls, such as summaries, text-only turns or progress lines, are passed over by
design, so lines read are not lines used plus lines skipped); a line that is not a JSON
object is named there too; the records are what the store takes; and the canary put in every
argument, result, text and thinking field reaches no record, skipped reason, summary or stored
byte.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from support.canary import assert_absent, assert_store_clean
from toolwatch.cli import main
from toolwatch.collector.commands.import_transcripts import (
    ImportOutcome,
    format_summary,
    summary_dict,
)
from toolwatch.collector.sources.claude_code import ImportReport, import_transcripts
from toolwatch.collector.sources.delivery import records_table
from toolwatch.collector.store import Store
from toolwatch.record import CallRecord

CANARY = "CANARY/5f0c2d9e8b7a4c1d9e0f1a2b3c4d5e6f:0a1b2c3d4e5f6a7b8c9d"
SID = "9e2f6b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
AGENT = "a1b2c3d4"
_WRONG: tuple[Any, ...] = (None, [], [["x"]], 7, 1.5, True, {"k": "v"}, "", "x")


def _stamp(i: int) -> str:
    return f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def _call_block(kind: str, call_id: str) -> dict[str, Any]:
    block: dict[str, Any] = {"type": kind, "id": call_id, "name": "Read"}
    block["input"] = {"file_path": f"/{CANARY}", "n": [1, 2.5, {"q": CANARY}]}
    if kind == "mcp_tool_use":
        block["server_name"] = "docs"
    return block


def _result_block(call_id: str, form: int, kind: str = "tool_result") -> dict[str, Any]:
    body: Any = CANARY
    if form == 1:
        body = [{"type": "text", "text": CANARY}]
    elif form == 2:
        source = {"type": "base64", "media_type": "image/png", "data": CANARY}
        body = [{"type": "image", "source": source}, {"type": "text", "text": CANARY}]
    elif form == 3:
        body = f"<persisted-output>{CANARY}</persisted-output>"
    return {"type": kind, "tool_use_id": call_id, "content": body, "is_error": form == 4}


def _line(kind: str, i: int, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{i}"
    return {
        "type": kind,
        "uuid": f"u{i}",
        "parentUuid": f"u{i - 1}",
        "sessionId": SID,
        "timestamp": _stamp(i),
        "message": message,
        **extra,
    }


@st.composite
def _session(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A main thread of a few turns, with the entries around them real files hold."""
    lines: list[dict[str, Any]] = [
        {"type": "summary", "summary": CANARY, "leafUuid": "u0"},
        _line("user", 0, CANARY),
    ]
    for turn in range(draw(st.integers(1, 4))):
        i = len(lines)
        kind = draw(st.sampled_from(["tool_use", "tool_use", "server_tool_use", "mcp_tool_use"]))
        call_id = f"toolu_{turn}"
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra = {"isSidechain": True}
        content = [
            {"type": "thinking", "thinking": CANARY, "signature": CANARY},
            {"type": "text", "text": CANARY},
            _call_block(kind, call_id),
        ]
        lines.append(_line("assistant", i, content, **extra))
        form = draw(st.integers(0, 4))
        if kind == "tool_use":
            lines.append(_line("user", i + 1, [_result_block(call_id, form)], **extra))
        else:
            result_kind = kind.replace("_use", "_result").replace("server_tool", "web_search_tool")
            lines.append(_line("assistant", i + 1, [_result_block(call_id, form, result_kind)]))
        if draw(st.booleans()):
            relayed = _line("assistant", i, [_call_block("tool_use", f"toolu_sub{turn}")])
            data = {"type": "agent_progress", "agentId": AGENT, "prompt": CANARY}
            data["message"] = relayed
            lines.append({"type": "progress", "timestamp": _stamp(i), "data": data})
    if draw(st.booleans()):
        lines.append({"type": "system", "subtype": "compact_boundary", "content": CANARY})
    return lines


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key/index path inside a JSON value (the places a mutation can hit)."""
    out = [at]
    if type(obj) is dict:
        for k, v in obj.items():
            out.extend(_paths(v, (*at, k)))
    elif type(obj) is list:
        for k, v in enumerate(obj):
            out.extend(_paths(v, (*at, k)))
    return out


def _mutate(draw: st.DrawFn, lines: list[dict[str, Any]]) -> None:
    """One structural change to one line (in place)."""
    index = draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    what = draw(st.integers(0, 9))
    if what == 9:  # a content block's type of another JSON type (where a string was expected)
        message = line.get("message")
        blocks = message.get("content") if type(message) is dict else None
        if type(blocks) is list and blocks and type(block := draw(st.sampled_from(blocks))) is dict:
            block["type"] = copy.deepcopy(draw(st.sampled_from(_WRONG)))
        return
    if what == 5:  # a line moved (a result before its call, stamps out of order)
        lines.insert(draw(st.integers(0, len(lines) - 1)), lines.pop(index))
        return
    if what == 6:  # a line repeated (duplicated ids)
        lines.insert(index, json.loads(json.dumps(line)))
        return
    if what == 7:  # another line type, or a type of a later version
        line["type"] = draw(st.sampled_from(["user", "assistant", "attachment", ["assistant"]]))
        if type(line.get("message")) is dict and draw(st.booleans()):  # its role too
            line["message"]["role"] = line["type"]
        return
    paths = [p for p in _paths(line) if p]
    if not paths:
        return
    path = draw(st.sampled_from(paths))
    parent: Any = line
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if what == 0 and type(parent) is dict:
        del parent[last]
    elif what == 8:  # a timestamp in another form
        parent[last] = draw(
            st.sampled_from(
                ["2026-03-01 10:00:00", "1772359200", "2026-03-01T10:00:00+05:30", "yesterday"]
            )
        )
    elif what == 4:  # an unknown block, or a block of a later version beside the others
        block = {"type": draw(st.sampled_from(["fancy_tool_use", "redacted_thinking", "x"]))}
        block["data"] = CANARY
        parent[last] = [parent[last], block] if draw(st.booleans()) else block
    else:
        parent[last] = copy.deepcopy(draw(st.sampled_from(_WRONG)))  # no shared state


@st.composite
def _transcript(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """The session file's bytes and a subagent file's, both mutated."""
    lines = draw(_session())
    agent = [
        _line("user", 100, "look around", agentId=AGENT, isSidechain=True),
        _line("assistant", 101, [_call_block("tool_use", "toolu_sub0")], agentId=AGENT),
        _line("user", 102, [_result_block("toolu_sub0", 1)], agentId=AGENT),
    ]
    for _ in range(draw(st.integers(0, 4))):
        _mutate(draw, draw(st.sampled_from([lines, agent])))
    texts = []
    for body in (lines, agent):
        data = b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in body)
        texts.append(data)
    main = texts[0]
    for change in draw(st.lists(st.integers(0, 5), max_size=3)):
        if change == 0:
            main = b"\xef\xbb\xbf" + main
        elif change == 1:
            main = main.replace(b"\n", b"\r\n")
        elif change == 2:  # the last line cut
            main = main.rstrip(b"\n")[: -draw(st.integers(1, 40))]
        elif change == 3:  # invalid UTF-8 in a line
            at = draw(st.integers(0, len(main)))
            main = main[:at] + b"\xff\xc3" + main[at:]
        elif change == 4:  # a huge line (a long argument)
            huge = _line("assistant", 500, [_call_block("tool_use", "toolu_huge")])
            huge["message"]["content"][0]["input"]["blob"] = CANARY * 20_000
            main += json.dumps(huge).encode() + b"\n"
        else:  # nested arrays where objects were expected
            main += b'[[{"type":"assistant"}]]\n{"type":"assistant","message":[[]]}\n'
    return main, texts[1]


def _call_ids(raw: bytes) -> set[str]:
    """The string ids of the call blocks of one line, read independently of the importer."""
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except ValueError:
        return set()
    message = obj.get("message") if type(obj) is dict else None
    content = message.get("content") if type(message) is dict else None
    blocks = content if type(content) is list else [content]
    return {
        b["id"]
        for b in blocks
        if type(b) is dict
        and type(b.get("type")) is str
        and b["type"].endswith("tool_use")
        and type(b.get("id")) is str
        and b["id"]
    }


def _is_object(raw: bytes) -> bool:
    try:
        return type(json.loads(raw.decode("utf-8-sig"))) is dict
    except ValueError:
        return False


def _write(root: Path, files: tuple[bytes, bytes]) -> Path:
    """The session file and its subagent's, laid out as 2.1.x does; the folder holding them."""
    sub = root / "t" / SID / "subagents"
    sub.mkdir(parents=True)
    (root / "t" / f"{SID}.jsonl").write_bytes(files[0])
    (sub / f"agent-{AGENT}.jsonl").write_bytes(files[1])
    return root / "t"


def _check(folder: Path, report: ImportReport, records: list[CallRecord]) -> None:
    """Lines all counted, calls not lost without a word, records the store's, no content."""
    files = sorted(folder.rglob("*.jsonl"))
    lines = {str(f): re.findall(rb"[^\n]*\n|[^\n]+$", f.read_bytes()) for f in files}
    assert report.lines == sum(len(v) for v in lines.values())
    skipped = {(s.path, s.line) for s in report.skipped}
    recorded = {r.call_id for r in records}
    for path, raws in lines.items():
        if path in report.not_json_lines:
            continue
        for n, raw in enumerate(raws, 1):
            if raw.strip() and not _is_object(raw):
                assert (path, n) in skipped, f"{path}:{n} not an object, not named"
            lost = _call_ids(raw) - recorded
            if lost and (path, n) not in skipped:
                assert report.duplicates, f"{path}:{n}: calls {lost} dropped without a word"
    assert records_table(records).num_rows == len(records)  # the calls schema takes them
    for record in records:
        assert_absent(repr(record.as_dict()), CANARY, f"record {record.call_id}")
    outcome = ImportOutcome(report=report, records=records)
    assert_absent(format_summary(outcome), CANARY, "summary")
    assert_absent(json.dumps(summary_dict(outcome)), CANARY, "--json summary")


@settings(max_examples=80, deadline=None, derandomize=True)
@given(files=_transcript())
def test_mutated_transcripts_import_without_loss_error_or_content(
    files: tuple[bytes, bytes],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = _write(Path(tmp), files)
        records, report = import_transcripts([folder])
        _check(folder, report, records)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(files=_transcript())
def test_the_command_imports_mutated_transcripts_into_a_clean_store(
    files: tuple[bytes, bytes],
) -> None:
    """The whole command, store included: exit 0, no traceback, no content in any stored
    byte, table or view."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = _write(Path(tmp), files)
        store = Path(tmp) / "store"
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
            code = main(["import", "claude-code", str(folder), "--store", str(store), "--quiet"])
        assert code == 0, err.getvalue()
        assert "Traceback" not in err.getvalue()
        assert_absent(out.getvalue() + err.getvalue(), CANARY, "output")
        if (store / "calls").exists():
            assert_store_clean(Store(store), CANARY)
