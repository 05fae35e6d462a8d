"""One transcript file, line by line: its tool calls (time, tool, argument bytes, response,
session and agent) and its results (bytes, failure, cap), and the lines it had to skip and why.
What only the whole file can decide (session fallback, inline subagent ids, re-stamped history)
is resolved when the file ends.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any, Final

from toolwatch.collector.sources.claude_code.decoding import TranscriptLines, TranscriptReadError
from toolwatch.collector.sources.claude_code.measure import (
    has_float,
    input_size,
    is_capped,
    load_line,
    result_content_size,
    text_field,
)
from toolwatch.collector.sources.claude_code.transcripts import member_path, transcript_stem
from toolwatch.conventions import (
    QUIRK_ASIDE_QUESTION_FORK,
    QUIRK_COMPACTION_FORK,
    QUIRK_PROMPT_SUGGESTION_FORK,
    QUIRK_SESSION_MEMORY_FORK,
    QUIRK_WARMUP_AGENT,
)

#: This many different responses sharing one timestamp in one file mark a re-stamped run.
RESTAMP_MIN_RESPONSES: Final = 3
#: The prompt Claude Code (2.0.x – 2.1.1) sends each subagent at start-up; the subagent's
#: tool calls are then answered with errors. Compared, never kept.
WARMUP_PROMPT: Final = "Warmup"
#: Agent ids of forks that replay the main thread under another agent id with the original
#: call ids and times (copies of calls the run also read are removed as duplicates), then do a
#: task of their own. In 2.1.x transcripts a subagent the model asked for is ``agent-a<hex>``
#: (not a fork); these forks are ``agent-a<label>-<hex>``: compaction (``acompact``), aside
#: questions (``aside_question``), prompt suggestions (``aprompt_suggestion``, written by
#: 2.1.x before it stopped keeping them) and session memory (``asession_memory``,
#: ``_manual``). Any other label stays unflagged (an ordinary subagent), since what its file
#: holds is not established.
FORK_AGENTS: Final = (
    (re.compile(r"^acompact-[0-9a-f]+$"), QUIRK_COMPACTION_FORK),
    (re.compile(r"^aside_question-[0-9a-f]+$"), QUIRK_ASIDE_QUESTION_FORK),
    (re.compile(r"^aprompt_suggestion-[0-9a-f]+$"), QUIRK_PROMPT_SUGGESTION_FORK),
    (re.compile(r"^asession_memory(?:_manual)?-[0-9a-f]+$"), QUIRK_SESSION_MEMORY_FORK),
)
INLINE_AGENT_PREFIX: Final = "sidechain-"
_AGENT_FILE: Final = re.compile(r"^agent-(.+)$")

ProgressCallback = Callable[[int], None]

#: Skip reasons for results no call takes: a second one for an id (the first is kept), and one
#: whose id matches no call of the run (decided once every file is read).
REPEATED_RESULT: Final = "repeated tool_result"
UNMATCHED_RESULT: Final = "tool_result without matching tool_use"
#: A complete line that does not parse as JSON. A file none of whose lines parses, the first
#: being such a line, is not JSON Lines at all: it is reported once (:mod:`.records`), not
#: line by line.
INVALID_JSON: Final = "invalid JSON"
#: An unparsable last line without its newline: cut off, mostly a live session being written
#: (a re-import once it is complete adds the call it held).
INCOMPLETE_LINE: Final = "incomplete last line (still being written?)"
#: The ids a cut line's result blocks answer, read structurally: inside a JSON string a quote
#: is always escaped, so a match is the line's own ``tool_use_id`` key, never result text.
_CUT_RESULT_ID: Final = re.compile(rb'"tool_use_id"\s*:\s*"([^"\\]+)"')
#: Calls in a line of another type than assistant (a user line, a future entry type) and
#: results in one of another type than user/assistant: not read, as what the type means is
#: unknown, but never dropped without a word.
OTHER_TYPE_CALL: Final = "tool_use in a line not of type assistant"
OTHER_TYPE_RESULT: Final = "tool_result in a line not of type user"
#: The blocks that are a call the model made: Claude Code's own tools (``tool_use``), tools the
#: API runs itself (``server_tool_use``: web search, web fetch, code execution) and tools of an
#: MCP server the API calls (``mcp_tool_use``, named ``mcp__<server_name>__<name>`` here). The
#: results of the last two come in the model's own message, as ``<kind>_tool_result`` blocks
#: (or plain ``tool_result`` ones, as other vendors' compatible endpoints write them).
CALL_BLOCKS: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: A block typed ``…tool_use`` that is none of those (a kind of call a later version adds): not
#: read, as what its fields mean is unknown, but counted.
UNKNOWN_CALL_BLOCK: Final = "tool call block of an unknown type"


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line (or part of one) that could not be used, and why; never its content."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class TranscriptCall:
    call_id: str
    tool: str
    input_bytes: int
    stamp: str
    time: datetime
    response_id: str | None
    session_id: str | None
    agent_id: str | None
    inline_side: bool
    uuid: str | None
    parent: str | None
    file_index: int
    line_no: int
    block: int
    restamped: bool = False
    quirk: str | None = None  # a client artefact the call's stream is (conventions.CLIENT_QUIRKS)


@dataclass(slots=True)
class TranscriptResult:
    stamp: str | None
    output_bytes: int
    failed: bool
    truncated: bool
    line_no: int = 0  # where it is (a result matching no call is reported by file:line)
    restamped: bool = False


@dataclass(slots=True)
class Turns:
    """One stream's model responses in a file, reduced to what tells whether another response
    came after a given line: the last response, its last line, and the last line of any other
    (the model is called again only once every result of its previous response is in, so a
    call without result before another response will never get one)."""

    response: str
    line: int
    other_line: int = 0

    def add(self, response: str, line: int) -> None:
        if response != self.response:
            self.response, self.other_line = response, self.line
        self.line = line

    def after(self, line: int, response: str | None) -> bool:
        """Whether a response other than ``response`` was written after ``line``."""
        return (self.line if response != self.response else self.other_line) > line


@dataclass(slots=True)
class FileParse:
    """What one transcript file contributes: its calls, its results, its problems."""

    path: Path
    file_index: int
    calls: list[TranscriptCall] = field(default_factory=list)
    results: dict[str, TranscriptResult] = field(default_factory=dict)
    lines: int = 0
    #: lines that parsed as JSON (of any type): none in a file of lines means it is empty
    #: (blank lines only) or not JSON Lines at all
    parsed: int = 0
    bytes: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    error: str | None = None  # the file itself could not be read
    #: the file broke after lines were read (a cut or corrupt stream, a read error): those
    #: lines are kept, what followed (and for bzip2/xz up to 4 KiB before) is lost
    damaged: bool = False
    #: call ids whose result was in the cut last line (:data:`INCOMPLETE_LINE`): such a call
    #: is imported without result, as one whose result is not written yet, and counted apart
    cut_results: set[str] = field(default_factory=set)
    #: per stream of the file (agent id; None: the main thread; not the ≤ 1.0.x inline
    #: sidechains, whose ids are known only at the end), its model responses (:class:`Turns`)
    turns: dict[str | None, Turns] = field(default_factory=dict)
    #: per agent id, the ids of the calls of that subagent relayed in the file's 2.1.x
    #: ``progress`` lines (``data.agentId``, ``data.message``): copies of its own file's calls,
    #: read only to count those no file of the run holds (ids, never content)
    relayed: dict[str, set[str]] = field(default_factory=dict)
    #: the path the user gave or reached the file by (messages name it); ``path`` when empty
    shown: str = ""
    #: the member of the zip archive at ``path`` that is the transcript (None: the file is)
    member: zipfile.ZipInfo | None = None

    @property
    def name_path(self) -> PurePath:
        """The transcript's own path, its name and folders naming agent and session: the
        member's path inside its archive, else the file's."""
        return self.path if self.member is None else member_path(self.member.filename)


def parse_file(
    path: Path,
    file_index: int = 0,
    on_bytes: ProgressCallback | None = None,
    shown: str | None = None,
    member: zipfile.ZipInfo | None = None,
) -> FileParse:
    """Read one transcript file (plain or compressed, :mod:`.decoding`); content is measured and
    dropped line by line. ``member``: read that member of the zip archive at ``path`` instead.
    ``shown``: the path to name in skipped lines and errors (default ``path``, or
    ``path!member``). ``on_bytes`` is told the bytes of the file on disk read (compressed ones for a
    compressed file: a progress bar sized by file sizes ends full); ``FileParse.bytes`` counts the
    transcript's own (decompressed) bytes."""
    if shown is None:
        shown = str(path) if member is None else f"{path}!{member.filename}"
    parser = _FileParser(path, file_index, shown, member)
    out = parser.out
    line_no = 0
    try:
        reader = TranscriptLines(path, member)
    except OSError as exc:
        out.error = exc.strerror or str(exc)
        return out
    with reader:
        pending = reported = 0
        try:
            out.error = reader.start()  # compressed otherwise, a zip...: not read, said once
            for raw in reader:
                line_no += 1
                size = len(raw)
                out.bytes += size
                if on_bytes is not None:
                    pending += size
                    if pending >= 1 << 22:
                        pending, done = 0, reader.disk_bytes()
                        on_bytes(done - reported)
                        reported = done
                parser.line(raw, line_no)
            if on_bytes is not None and reader.disk_bytes() > reported:
                on_bytes(reader.disk_bytes() - reported)
        except OSError as exc:
            out.error = f"read error after line {line_no}: {exc.strerror or exc}"
            out.damaged = line_no > 0
        except TranscriptReadError as exc:  # the lines before it are kept
            out.error = f"{exc} after line {line_no:,} {exc.kept}" if line_no else str(exc)
            out.damaged = line_no > 0
        out.lines = line_no
    parser.finish()
    return out


class _FileParser:
    """State of one file's pass: what only the whole file can decide is resolved in finish()."""

    __slots__ = (
        "file_agent",
        "file_session",
        "first_prompt",
        "name",
        "out",
        "side_parent",
        "stamp_responses",
        "warmup_answer",
    )

    def __init__(
        self, path: Path, file_index: int, shown: str, member: zipfile.ZipInfo | None
    ) -> None:
        self.out = FileParse(path=path, file_index=file_index, shown=shown, member=member)
        self.name = shown
        match = _AGENT_FILE.match(transcript_stem(self.out.name_path.name) or "")
        self.file_agent = match.group(1) if match else None
        self.file_session: str | None = None
        self.first_prompt: bool | None = None  # the file's first user line is the warm-up
        self.warmup_answer = False  # a subagent's call was answered by the warm-up error
        self.stamp_responses: dict[str, set[str]] = {}  # timestamp -> response ids
        self.side_parent: dict[str, str | None] = {}  # inline sidechain tree: uuid -> parent

    def skip(self, line_no: int, reason: str) -> None:
        self.out.skipped.append(SkippedLine(self.name, line_no, reason))

    def line(self, raw: bytes, line_no: int) -> None:
        try:
            obj, strict = load_line(raw)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, too deep
            if not raw.strip():
                return
            if raw.endswith(b"\n"):
                self.skip(line_no, INVALID_JSON)
                return
            self.skip(line_no, INCOMPLETE_LINE)
            self.out.cut_results.update(
                m.decode("utf-8", "replace") for m in _CUT_RESULT_ID.findall(raw)
            )
            return
        self.out.parsed += 1
        if type(obj) is not dict:
            self.skip(line_no, "not a JSON object")
            return
        kind = obj.get("type")
        if kind != "assistant" and kind != "user":
            self.other(obj, line_no)  # summary, progress, system, snapshots...: no calls
            return
        side = obj.get("isSidechain") is True or self.file_agent is not None
        agent_id: str | None = None
        if side:
            agent_id = text_field(obj.get("agentId")) or self.file_agent
            if agent_id is None:
                uuid = text_field(obj.get("uuid"))
                if uuid is not None:
                    self.side_parent[uuid] = text_field(obj.get("parentUuid"))
        message = obj.get("message")
        if type(message) is not dict:
            self.skip(line_no, f"{kind} line without message")
            return
        content = message.get("content")
        stamp = text_field(obj.get("timestamp"))
        if kind == "user":
            if self.first_prompt is None:
                self.first_prompt = side and _is_warmup(content)
            if type(content) is list:
                if any(_is_call_kind(block) for block in content):
                    self.skip(line_no, OTHER_TYPE_CALL)  # never read as calls: said, not lost
                self.results(content, stamp, line_no, side, kind)
            return
        response_id = text_field(message.get("id"))
        if response_id is not None:
            if stamp is not None:
                self.stamp_responses.setdefault(stamp, set()).add(response_id)
            if agent_id is not None or not side:
                self.turn(agent_id, response_id, line_no)
        if type(content) is list:
            self.calls(obj, content, stamp, response_id, side, agent_id, line_no, strict, raw)
            self.results(content, stamp, line_no, side, kind)

    def turn(self, agent_id: str | None, response_id: str, line_no: int) -> None:
        turns = self.out.turns.get(agent_id)
        if turns is None:
            self.out.turns[agent_id] = Turns(response_id, line_no)
        else:
            turns.add(response_id, line_no)

    def other(self, obj: dict[str, Any], line_no: int) -> None:
        """A line of another type holds no call today; one that does (a new entry type) is
        reported, once per kind of block, instead of losing its calls without a word. A
        ``progress`` line's relayed subagent calls are noted (:meth:`relayed`)."""
        if obj.get("type") == "progress":
            self.relayed(obj.get("data"))
        message = obj.get("message")
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            return
        kinds = {block_kind(b) for b in content}
        if not kinds.isdisjoint(CALL_BLOCKS):
            self.skip(line_no, OTHER_TYPE_CALL)
        if any(is_result_block("user", b) or is_result_block("assistant", b) for b in content):
            self.skip(line_no, OTHER_TYPE_RESULT)

    def relayed(self, data: Any) -> None:
        """Note the call ids of a subagent message a 2.1.x ``progress`` line relays
        (``data.agentId``, ``data.message``: an assistant line as the agent's file holds it)."""
        if type(data) is not dict:
            return
        agent = text_field(data.get("agentId"))
        inner = data.get("message")
        if agent is None or type(inner) is not dict or inner.get("type") != "assistant":
            return
        message = inner.get("message")
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            return
        for block in content:
            if block_kind(block) in CALL_BLOCKS:
                call_id = text_field(block.get("id"))
                if call_id is not None:
                    self.out.relayed.setdefault(agent, set()).add(call_id)

    def calls(
        self,
        obj: dict[str, Any],
        content: list[Any],
        stamp: str | None,
        response_id: str | None,
        side: bool,
        agent_id: str | None,
        line_no: int,
        strict: bool,
        raw: bytes,
    ) -> None:
        when: datetime | None = None
        exact: list[Any] | None = None  # the content as the stdlib reads it, when needed
        session: str | None = None
        for block_index, block in enumerate(content):
            kind = block_kind(block)
            if kind not in CALL_BLOCKS:
                if kind is not None and kind.endswith("tool_use"):
                    self.skip(line_no, UNKNOWN_CALL_BLOCK)
                continue
            if when is None:
                when = parse_time(stamp)
                if when is None:
                    what = "without" if obj.get("timestamp") is None else "with invalid"
                    self.skip(line_no, f"tool_use line {what} timestamp")
                    return
                session = text_field(obj.get("sessionId"))
                if self.file_session is None:
                    self.file_session = session
            call_id = text_field(block.get("id"))
            tool = call_name(block)
            if call_id is None:
                self.skip(line_no, "tool_use without id")
                continue
            if tool is None:
                self.skip(line_no, "tool_use without name")
                continue
            assert stamp is not None
            inline = side and agent_id is None
            args = block.get("input")
            fast = strict and not has_float(args)
            if strict and not fast:  # orjson read integers beyond 64 bits as floats: re-read
                exact = exact or json.loads(raw)["message"]["content"]
                args = exact[block_index].get("input")
            self.out.calls.append(
                TranscriptCall(
                    call_id=call_id,
                    tool=tool,
                    input_bytes=input_size(args, fast),
                    stamp=stamp,
                    time=when,
                    response_id=response_id,
                    session_id=session,
                    agent_id=agent_id,
                    inline_side=inline,
                    uuid=text_field(obj.get("uuid")) if inline else None,
                    parent=text_field(obj.get("parentUuid")) if inline else None,
                    file_index=self.out.file_index,
                    line_no=line_no,
                    block=block_index,
                )
            )

    def results(
        self, content: list[Any], stamp: str | None, line_no: int, side: bool, kind: str
    ) -> None:
        results = self.out.results
        for block in content:
            if not is_result_block(kind, block):
                continue
            call_id = text_field(block.get("tool_use_id"))
            if call_id is None:
                self.skip(line_no, "tool_result without tool_use_id")
                continue
            if call_id in results:  # the first one is the call's
                self.skip(line_no, REPEATED_RESULT)
                continue
            body = block.get("content")
            failed = result_failed(block)
            if failed and side and not self.warmup_answer:
                self.warmup_answer = _is_warmup(body)
            results[call_id] = TranscriptResult(
                stamp=stamp,
                output_bytes=result_content_size(body),
                failed=failed,
                truncated=is_capped(body),
                line_no=line_no,
            )

    def finish(self) -> None:
        """Resolve what needs the whole file: session fallback, inline agent ids, re-stamps."""
        out = self.out
        restamped = {
            s for s, ids in self.stamp_responses.items() if len(ids) >= RESTAMP_MIN_RESPONSES
        }
        default_session = self.file_session or _session_from_path(out.name_path)
        for call in out.calls:
            if call.session_id is None:
                call.session_id = default_session
            if call.inline_side:
                root = _sidechain_root(call.uuid, call.parent, self.side_parent)
                if root is None:
                    root = f"{out.name_path.name}:{call.line_no}"
                call.agent_id = inline_agent_id(call.session_id, root)
            if call.stamp in restamped:
                call.restamped = True
            if call.agent_id is not None:
                if self.first_prompt or self.warmup_answer:
                    call.quirk = QUIRK_WARMUP_AGENT
                else:
                    call.quirk = _fork_quirk(call.agent_id)
        if restamped:
            for result in out.results.values():
                if result.stamp in restamped:
                    result.restamped = True


def block_kind(block: Any) -> str | None:
    """A content block's ``type`` when it is a string, else None: a list or an object there
    (a hostile or garbled line) is no kind, and must not reach a set lookup (unhashable)."""
    kind = block.get("type") if type(block) is dict else None
    return kind if type(kind) is str else None


def _is_call_kind(block: Any) -> bool:
    """Whether a content block is typed as a call of any kind (``…tool_use``, known or not)."""
    kind = block_kind(block)
    return kind is not None and kind.endswith("tool_use")


def call_name(block: dict[str, Any]) -> str | None:
    """A call block's tool name; an API-side MCP call's as Claude Code names MCP tools
    (``mcp__<server>__<tool>``), so its server is recorded as for any MCP call."""
    name = text_field(block.get("name"))
    if name is not None and block.get("type") == "mcp_tool_use":
        server = text_field(block.get("server_name"))
        if server is not None:
            return f"mcp__{server}__{name}"
    return name


def is_result_block(kind: Any, block: Any) -> bool:
    """Whether a content block of a line of type ``kind`` is a call's result: a user line's
    ``tool_result``, or one in the model's own message (a server tool's or an API-side MCP
    call's: the API ran it within the response), typed ``<kind>_tool_result`` or, as other
    vendors' Anthropic-compatible endpoints write it (GLM's page reader), plain ``tool_result``."""
    if type(block) is not dict:
        return False
    what = block.get("type")
    if kind == "user":
        return what == "tool_result"
    return kind == "assistant" and type(what) is str and what.endswith("tool_result")


def result_failed(block: dict[str, Any]) -> bool:
    """``is_error``, or a server tool's error answer: content that is one
    ``{"type": "<kind>_tool_result_error", "error_code": …}`` object (its code is not read)."""
    if block.get("is_error") is True:
        return True
    body = block.get("content")
    return type(body) is dict and type(what := body.get("type")) is str and what.endswith("_error")


def _fork_quirk(agent_id: str) -> str | None:
    """The quirk of a fork's agent id (compaction, aside question...), else None."""
    for pattern, quirk in FORK_AGENTS:
        if pattern.match(agent_id):
            return quirk
    return None


def _is_warmup(content: Any) -> bool:
    """Whether a subagent's first prompt, or an error answering its call, is Claude Code's
    start-up warm-up (the text is compared, never kept). A file can hold the answers without
    the prompt (a warm-up agent continued across two sessions)."""
    if type(content) is str:
        return content.strip() == WARMUP_PROMPT
    if type(content) is list and len(content) == 1 and type(content[0]) is dict:
        block = content[0]
        text = block.get("text")
        return block.get("type") == "text" and type(text) is str and text.strip() == WARMUP_PROMPT
    return False


def inline_agent_id(session_id: str, root_uuid: str) -> str:
    """Stable id of a ≤ 1.0.x inline subagent (no ``agentId`` in the data), from its root line."""
    digest = hashlib.sha256(f"{session_id}/{root_uuid}".encode()).hexdigest()
    return INLINE_AGENT_PREFIX + digest[:16]


def _sidechain_root(
    uuid: str | None, parent: str | None, side_parent: Mapping[str, str | None]
) -> str | None:
    """Topmost sidechain line reached from a line by ``parentUuid`` (cycle-safe)."""
    root = uuid
    seen: set[str] = set() if uuid is None else {uuid}
    current = parent
    while current is not None and current in side_parent and current not in seen:
        seen.add(current)
        root = current
        current = side_parent[current]
    return root


def _session_from_path(path: PurePath) -> str:
    """Fallback session id: ``<sid>`` of ``<sid>/subagents/...``, else the file's name without
    ``.jsonl`` (or ``.jsonl.gz``)."""
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "subagents":
            return parts[i - 1]
    return transcript_stem(path.name) or path.stem


def parse_time(stamp: str | None) -> datetime | None:
    """The UTC time of an ISO 8601 stamp (no offset: UTC), else None; an offset that moves
    the time outside years 1–9999 (``0001-01-01T00:00:00+01:00``) makes it invalid too."""
    if stamp is None:
        return None
    try:
        when = datetime.fromisoformat(stamp)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
