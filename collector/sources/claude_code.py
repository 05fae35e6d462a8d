"""Claude Code session transcripts → content-free call records.

Claude Code writes one JSON Lines file per session (and, from 2.0, one per subagent). This module
reads them and keeps only the *shape* of each tool call: tool name, time, byte sizes on the shared
basis of :mod:`toolwatch.record`, failure flag and the model response (``message.id``) that issued
it. Argument and result content is measured and dropped on the spot; nothing of it is kept.

How each fact of ``shared/claude-code-transcripts.md`` is handled:

* **Response boundary**: ``message.id`` of the assistant line, across lines (one block per line).
* **Results** are matched by ``tool_use_id``, first in the call's own file, then in any other
  file of the run. ``is_error`` absent means success; failed calls get ``error_type =
  "tool_error"``. The result text is never inspected for failure words.
* **Duration** = result line time − call line time; unknown (``None``) when no result, when
  either stamp is re-stamped, or when the result is stamped before its call.
* **Subagents**: a line is a subagent's when ``isSidechain`` is true or its file is named
  ``agent-<id>.jsonl`` (2.0.x beside the session, 2.1.x under ``<sessionId>/subagents/``). Its
  agent id is the line's ``agentId``, else the id in the file name, else (≤ 1.0.x inline
  sidechains, which interleave and carry no id) a derived id: ``"sidechain-"`` + the first 16 hex
  digits of sha256(``<sessionId>/<uuid of the sidechain's root line>``), the root being reached
  by following ``parentUuid`` through the file's sidechain lines. Root uuids are random and never
  rewritten, so the id is stable across re-imports. Session id = the line's ``sessionId`` (the
  parent session for subagents), else the file's, else one derived from the path.
* **Re-stamped history**: when ≥ :data:`RESTAMP_MIN_RESPONSES` different responses in one file
  share one timestamp string, every call (and result) of that file with that stamp is flagged
  ``restamped``; timing statistics skip gaps touching them.
* **Duplicates** (same ``tool_use`` id in several files or twice in one): the copy with the
  earliest stamp is kept (ties: first file by path, then first line).
* **Capped outputs** (2.1.x ``<persisted-output>`` stubs): ``output_truncated`` is set, the size is
  the stub's (a lower bound).
* **Unreadable lines** (invalid JSON, not an object, tool_use line without a valid timestamp,
  blocks without id/name) are skipped and reported by file and line, never fatal.

``seq`` is the 0-based position of a call in its session (main agent and subagents together) by
start time, then file (by path), line and block. It counts the calls of the files read in one
run, so the files of one session should be imported together (re-importing a grown session file
keeps earlier positions unchanged). ``trace_id`` / ``span_id`` are hashes of the session id and
the call id, so a re-import yields identical ids.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

try:  # 3x faster than the stdlib parser on transcript lines (benchmarks/bench_import.py)
    import orjson
except ImportError:  # pragma: no cover - orjson ships with the collector extra
    orjson = None  # type: ignore[assignment]

from toolwatch.conventions import ERROR_TYPE_TOOL_ERROR
from toolwatch.record import CallRecord, arguments_size, result_size, split_mcp_name

log = logging.getLogger(__name__)

SOURCE: Final = "import"
#: ``service`` of imported records (the resource ``service.name`` they would have carried).
SERVICE: Final = "claude-code"
TRANSCRIPT_SUFFIX: Final = ".jsonl"
#: This many different responses sharing one timestamp in one file mark a re-stamped run.
RESTAMP_MIN_RESPONSES: Final = 3
PERSISTED_OUTPUT_TAG: Final = "<persisted-output>"
INLINE_AGENT_PREFIX: Final = "sidechain-"
_AGENT_FILE: Final = re.compile(r"^agent-(.+)\.jsonl$")
_US: Final = 1_000_000

ProgressCallback = Callable[[int], None]


class TranscriptPathError(FileNotFoundError):
    """A path given to the importer does not exist or holds no transcript."""


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line (or part of one) that could not be used, and why; never its content."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class _Call:
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


@dataclass(slots=True)
class _Result:
    stamp: str | None
    output_bytes: int
    failed: bool
    truncated: bool
    restamped: bool = False


@dataclass(slots=True)
class FileParse:
    """What one transcript file contributes: its calls, its results, its problems."""

    path: Path
    file_index: int
    calls: list[_Call] = field(default_factory=list)
    results: dict[str, _Result] = field(default_factory=dict)
    lines: int = 0
    bytes: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    error: str | None = None  # the file itself could not be read


@dataclass(slots=True)
class ImportReport:
    """Counts of one import run, for the summary (no content, only numbers and positions)."""

    files: int = 0
    unreadable_files: list[tuple[str, str]] = field(default_factory=list)
    bytes: int = 0
    lines: int = 0
    sessions: int = 0
    subagents: int = 0  # distinct (session, agent) with an agent: a stream each
    calls: int = 0
    duplicates: int = 0
    restamped: int = 0
    capped: int = 0
    failed: int = 0
    without_result: int = 0
    subagent_calls: int = 0
    mcp_calls: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped).most_common())


# ------------------------------------------------------------------------------------ files


def find_transcripts(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``*.jsonl`` under the given files/directories (recursive), sorted, deduplicated.

    Sorting by path makes the tie-breaks of deduplication and ``seq`` independent of the order
    in which paths were given. Raises :class:`TranscriptPathError` naming a missing path.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found.update(p.resolve() for p in path.rglob(f"*{TRANSCRIPT_SUFFIX}") if p.is_file())
        elif path.is_file():
            found.add(path.resolve())
        else:
            raise TranscriptPathError(f"no such file or directory: {path}")
    return sorted(found, key=str)


# ------------------------------------------------------------------------------------ parsing


def parse_file(
    path: Path, file_index: int = 0, on_bytes: ProgressCallback | None = None
) -> FileParse:
    """Read one transcript file; content is measured and dropped line by line."""
    parser = _FileParser(path, file_index)
    out = parser.out
    pending = 0
    try:
        fh = path.open("rb", buffering=1 << 20)
    except OSError as exc:
        out.error = exc.strerror or str(exc)
        return out
    with fh:
        line_no = 0
        try:
            for raw in fh:
                line_no += 1
                size = len(raw)
                out.bytes += size
                if on_bytes is not None:
                    pending += size
                    if pending >= 1 << 22:
                        on_bytes(pending)
                        pending = 0
                parser.line(raw, line_no)
        except OSError as exc:
            out.error = f"read error after line {line_no}: {exc.strerror or exc}"
        out.lines = line_no
    if on_bytes is not None and pending:
        on_bytes(pending)
    parser.finish()
    return out


class _FileParser:
    """State of one file's pass: what only the whole file can decide is resolved in finish()."""

    __slots__ = ("file_agent", "file_session", "name", "out", "side_parent", "stamp_responses")

    def __init__(self, path: Path, file_index: int) -> None:
        self.out = FileParse(path=path, file_index=file_index)
        self.name = str(path)
        match = _AGENT_FILE.match(path.name)
        self.file_agent = match.group(1) if match else None
        self.file_session: str | None = None
        self.stamp_responses: dict[str, set[str]] = {}  # timestamp -> response ids
        self.side_parent: dict[str, str | None] = {}  # inline sidechain tree: uuid -> parent

    def skip(self, line_no: int, reason: str) -> None:
        self.out.skipped.append(SkippedLine(self.name, line_no, reason))

    def line(self, raw: bytes, line_no: int) -> None:
        try:
            obj, strict = _loads(raw)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, too deep
            if raw.strip():
                self.skip(line_no, "invalid JSON")
            return
        if type(obj) is not dict:
            self.skip(line_no, "not a JSON object")
            return
        kind = obj.get("type")
        if kind != "assistant" and kind != "user":
            return  # summary, progress, system, snapshots...: no tool call in them
        side = obj.get("isSidechain") is True or self.file_agent is not None
        agent_id: str | None = None
        if side:
            agent_id = _text(obj.get("agentId")) or self.file_agent
            if agent_id is None:
                uuid = _text(obj.get("uuid"))
                if uuid is not None:
                    self.side_parent[uuid] = _text(obj.get("parentUuid"))
        message = obj.get("message")
        if type(message) is not dict:
            self.skip(line_no, f"{kind} line without message")
            return
        content = message.get("content")
        stamp = _text(obj.get("timestamp"))
        if kind == "user":
            if type(content) is list:
                self.results(content, stamp, line_no)
            return
        response_id = _text(message.get("id"))
        if stamp is not None and response_id is not None:
            self.stamp_responses.setdefault(stamp, set()).add(response_id)
        if type(content) is list:
            self.calls(obj, content, stamp, response_id, side, agent_id, line_no, strict, raw)

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
            if type(block) is not dict or block.get("type") != "tool_use":
                continue
            if when is None:
                when = _parse_time(stamp)
                if when is None:
                    what = "without" if stamp is None else "with invalid"
                    self.skip(line_no, f"tool_use line {what} timestamp")
                    return
                session = _text(obj.get("sessionId"))
                if self.file_session is None:
                    self.file_session = session
            call_id = _text(block.get("id"))
            tool = _text(block.get("name"))
            if call_id is None:
                self.skip(line_no, "tool_use without id")
                continue
            if tool is None:
                self.skip(line_no, "tool_use without name")
                continue
            assert stamp is not None
            inline = side and agent_id is None
            args = block.get("input")
            fast = strict and not _has_float(args)
            if strict and not fast:  # orjson read integers beyond 64 bits as floats: re-read
                exact = exact or json.loads(raw)["message"]["content"]
                args = exact[block_index].get("input")
            self.out.calls.append(
                _Call(
                    call_id=call_id,
                    tool=tool,
                    input_bytes=_input_size(args, fast),
                    stamp=stamp,
                    time=when,
                    response_id=response_id,
                    session_id=session,
                    agent_id=agent_id,
                    inline_side=inline,
                    uuid=_text(obj.get("uuid")) if inline else None,
                    parent=_text(obj.get("parentUuid")) if inline else None,
                    file_index=self.out.file_index,
                    line_no=line_no,
                    block=block_index,
                )
            )

    def results(self, content: list[Any], stamp: str | None, line_no: int) -> None:
        results = self.out.results
        for block in content:
            if type(block) is not dict or block.get("type") != "tool_result":
                continue
            call_id = _text(block.get("tool_use_id"))
            if call_id is None:
                self.skip(line_no, "tool_result without tool_use_id")
                continue
            if call_id in results:
                continue  # a repeated result: the first one is the call's
            body = block.get("content")
            results[call_id] = _Result(
                stamp=stamp,
                output_bytes=_content_size(body),
                failed=block.get("is_error") is True,
                truncated=_is_capped(body),
            )

    def finish(self) -> None:
        """Resolve what needs the whole file: session fallback, inline agent ids, re-stamps."""
        out = self.out
        restamped = {
            s for s, ids in self.stamp_responses.items() if len(ids) >= RESTAMP_MIN_RESPONSES
        }
        default_session = self.file_session or _session_from_path(out.path)
        for call in out.calls:
            if call.session_id is None:
                call.session_id = default_session
            if call.inline_side:
                root = _sidechain_root(call.uuid, call.parent, self.side_parent)
                if root is None:
                    root = f"{out.path.name}:{call.line_no}"
                call.agent_id = inline_agent_id(call.session_id, root)
            if call.stamp in restamped:
                call.restamped = True
        if restamped:
            for result in out.results.values():
                if result.stamp in restamped:
                    result.restamped = True


def _text(value: Any) -> str | None:
    """A non-empty string field, else None (absent, null, empty or of another type). A lone
    surrogate (an escape cut from its pair) becomes U+FFFD: ids and names are stored as UTF-8."""
    if type(value) is not str or not value:
        return None
    if value.isascii():  # O(1): the usual case
        return value
    return _LONE_SURROGATE.sub("\ufffd", value)


def _loads(raw: bytes) -> tuple[Any, bool]:
    """The parsed line, and whether orjson parsed it (then it holds no NaN/Infinity and no lone
    surrogate, but integers beyond 64 bits have become floats). The stdlib parses what orjson
    refuses; bytes that are not UTF-8 raise (an invalid line) — ``json.loads`` on bytes would
    let encoded surrogates through."""
    if orjson is not None:
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw.decode("utf-8-sig")), False


def _input_size(value: Any, fast: bool) -> int:
    """:func:`arguments_size` of a parsed ``input``; ``fast`` (the value holds no float and was
    parsed by orjson) lets orjson measure it 5-15x faster, byte-identical then: compact
    separators, UTF-8 kept, the same escapes (floats are where the two differ: ``1e-05`` is
    ``0.00001`` there). Lone surrogates count as U+FFFD (3 bytes), as a UTF-8 writer emits."""
    if value is None:
        return 0
    if fast and orjson is not None:
        return len(orjson.dumps(value))
    try:
        return arguments_size(value)
    except UnicodeEncodeError:  # a lone surrogate (a \ud83d escape cut from its pair)
        return arguments_size(_without_lone_surrogates(value))


def _has_float(value: Any) -> bool:
    """Whether a parsed JSON value holds a float anywhere (iterative: no recursion limit)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is float:
            return True
        if kind is dict:
            extend(item.values())
        elif kind is list:
            extend(item)
    return False


def _without_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate replaced by U+FFFD, as a UTF-8 writer emits it."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


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


def _session_from_path(path: Path) -> str:
    """Fallback session id: ``<sid>`` of ``<sid>/subagents/...``, else the file stem."""
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "subagents":
            return parts[i - 1]
    return path.stem


def _parse_time(stamp: str | None) -> datetime | None:
    if stamp is None:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _content_size(content: Any) -> int:
    """Result bytes on the shared basis; Anthropic image blocks mapped to the MCP shape first.
    Lone surrogates count as U+FFFD (3 bytes), as for inputs."""
    try:
        return _shaped_size(content)
    except UnicodeEncodeError:
        return _shaped_size(_without_lone_surrogates(content))


def _shaped_size(content: Any) -> int:
    if content is None or isinstance(content, str):
        return result_size(content)
    if isinstance(content, list):
        return result_size([_mcp_shape(b) for b in content])
    return result_size([content] if isinstance(content, dict) else str(content))


def _mcp_shape(block: Any) -> Any:
    """An Anthropic ``{"type":"image","source":{"data":…}}`` block as MCP ``{"data":…}``."""
    if type(block) is dict and block.get("type") == "image" and "data" not in block:
        source = block.get("source")
        if isinstance(source, dict) and "data" in source:
            return {"type": "image", "data": source["data"]}
    return block


def _is_capped(content: Any) -> bool:
    if isinstance(content, str):
        return content[:256].lstrip().startswith(PERSISTED_OUTPUT_TAG)
    if isinstance(content, list):
        return any(
            type(b) is dict
            and b.get("type") == "text"
            and str(b.get("text", ""))[:256].lstrip().startswith(PERSISTED_OUTPUT_TAG)
            for b in content
        )
    return False


# ------------------------------------------------------------------------------------ records


def trace_id_for(session_id: str) -> str:
    """Synthetic trace id of an imported session (32 hex digits, stable)."""
    return hashlib.sha256(f"toolwatch-import/session/{session_id}".encode()).hexdigest()[:32]


def span_id_for(call_id: str) -> str:
    """Synthetic span id of an imported call (16 hex digits, stable)."""
    return hashlib.sha256(f"toolwatch-import/call/{call_id}".encode()).hexdigest()[:16]


def build_records(parses: Sequence[FileParse]) -> tuple[list[CallRecord], ImportReport]:
    """Deduplicate, match results, number calls per session; records sorted by session, seq."""
    report = ImportReport(files=len(parses))
    by_index = {p.file_index: p for p in parses}
    kept: dict[str, _Call] = {}
    total = 0
    for parse in parses:
        report.bytes += parse.bytes
        report.lines += parse.lines
        report.skipped.extend(parse.skipped)
        if parse.error is not None:
            report.unreadable_files.append((str(parse.path), parse.error))
        for call in parse.calls:
            total += 1
            best = kept.get(call.call_id)
            if best is None or _order_key(call) < _order_key(best):
                kept[call.call_id] = call
    report.duplicates = total - len(kept)

    sessions: dict[str, list[_Call]] = {}
    for call in kept.values():
        assert call.session_id is not None
        sessions.setdefault(call.session_id, []).append(call)

    records: list[CallRecord] = []
    for session_id in sorted(sessions):
        calls = sorted(sessions[session_id], key=_order_key)
        trace_id = trace_id_for(session_id)
        for seq, call in enumerate(calls):
            result = by_index[call.file_index].results.get(call.call_id)
            if result is None:
                result = _find_result(call.call_id, parses)
            records.append(_record(call, result, seq, trace_id))
    report.calls = len(records)
    report.sessions = len(sessions)
    report.subagents = len({(r.session_id, r.agent_id) for r in records if r.agent_id is not None})
    for r in records:
        report.restamped += r.restamped
        report.capped += r.output_truncated
        report.failed += r.failed
        report.without_result += r.output_bytes is None
        report.subagent_calls += r.agent_id is not None
        report.mcp_calls += r.server is not None
    return records, report


def _order_key(call: _Call) -> tuple[datetime, int, int, int]:
    return (call.time, call.file_index, call.line_no, call.block)


def _find_result(call_id: str, parses: Sequence[FileParse]) -> _Result | None:
    for parse in parses:
        result = parse.results.get(call_id)
        if result is not None:
            return result
    return None


def _record(
    call: _Call,
    result: _Result | None,
    seq: int,
    trace_id: str,
) -> CallRecord:
    server, _ = split_mcp_name(call.tool)
    duration: int | None = None
    failed = False
    output_bytes: int | None = None
    truncated = False
    if result is not None:
        failed = result.failed
        output_bytes = result.output_bytes
        truncated = result.truncated
        if not call.restamped and not result.restamped:
            ended = _parse_time(result.stamp)
            if ended is not None:
                delta = ended - call.time
                micros = (delta.days * 86_400 + delta.seconds) * _US + delta.microseconds
                duration = micros if micros >= 0 else None
    assert call.session_id is not None
    return CallRecord(
        trace_id=trace_id,
        span_id=span_id_for(call.call_id),
        session_id=call.session_id,
        agent_id=call.agent_id,
        seq=seq,
        tool=call.tool,
        server=server,
        start_time=call.time,
        duration_us=duration,
        input_bytes=call.input_bytes,
        output_bytes=output_bytes,
        failed=failed,
        error_type=ERROR_TYPE_TOOL_ERROR if failed else None,
        response_id=call.response_id,
        call_id=call.call_id,
        source=SOURCE,
        service=SERVICE,
        restamped=call.restamped,
        output_truncated=truncated,
    )


def import_transcripts(
    paths: Iterable[str | Path], on_bytes: ProgressCallback | None = None
) -> tuple[list[CallRecord], ImportReport]:
    """Find, parse and turn transcripts into records (no store involved).

    One process on purpose: measured on 2 cores, a process pool lost more to pickling the
    parsed calls back (~1 s per 120 MB) and to spawning than it gained.
    """
    files = find_transcripts(paths)
    return build_records([parse_file(path, index, on_bytes) for index, path in enumerate(files)])
