"""The files of one run → call records: duplicates removed, each call matched with its result
(in its own file first, then in any other), durations, ``seq`` per session and stable ids; and
the counts of the run (:class:`ImportReport`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Final

from toolwatch.collector.sources.claude_code.parsing import (
    INVALID_JSON,
    REPEATED_RESULT,
    UNMATCHED_RESULT,
    FileParse,
    ProgressCallback,
    SkippedLine,
    TranscriptCall,
    TranscriptResult,
    parse_file,
    parse_time,
)
from toolwatch.collector.sources.claude_code.provenance import (
    Measured,
    ProvenanceReport,
    measure_provenance,
)
from toolwatch.collector.sources.claude_code.transcripts import scan_transcripts
from toolwatch.conventions import ERROR_TYPE_NO_RESULT, ERROR_TYPE_TOOL_ERROR
from toolwatch.instrumentation.provenance import DEFAULT_CONFIG, ProvenanceConfig
from toolwatch.record import CallRecord, fit_string, split_mcp_name

SOURCE: Final = "import"
#: ``service`` of imported records (the resource ``service.name`` they would have carried).
SERVICE: Final = "claude-code"
_US: Final = 1_000_000


@dataclass(slots=True)
class ImportReport:
    """Counts of one import run, for the summary (no content, only numbers and positions)."""

    files: int = 0
    #: (path as the user gave or reached it, reason): files that failed to read and ``*.jsonl``
    #: entries not read (a FIFO, a dangling symlink, ...), sorted by path
    unreadable_files: list[tuple[str, str]] = field(default_factory=list)
    #: (path, reason): directories under the paths given that could not be listed (permission
    #: denied), so whatever transcripts they hold were not read
    unlisted_dirs: list[tuple[str, str]] = field(default_factory=list)
    #: of ``unreadable_files``, those read in part: their stream broke after some lines (kept)
    damaged_files: list[str] = field(default_factory=list)
    #: (archive!member, kind): zip members not read, kind a key of
    #: :data:`.transcripts.SKIPPED_MEMBER_WHY` (a nested archive, macOS metadata)
    skipped_members: list[tuple[str, str]] = field(default_factory=list)
    #: files read without error that hold no line but blank ones (nothing to import), by path
    empty_files: list[str] = field(default_factory=list)
    #: files none of whose lines is JSON, the first a complete line: not JSON Lines at all,
    #: named once here rather than as one "invalid JSON" skipped line per line
    not_json_lines: list[str] = field(default_factory=list)
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
    #: of ``without_result``: calls whose result was in a file's cut last line (a session
    #: being written, a truncated copy): no size or duration is known; not a success either,
    #: so they are ``failed`` with ``error_type = "no_result"`` (and counted in ``failed``)
    result_cut: int = 0
    #: of ``without_result``: calls with no result line anywhere although their stream went on
    #: to another model response (the model is called again only once every result is in, so
    #: it will never come): ``failed`` with ``error_type = "no_result"`` as well
    abandoned: int = 0
    #: of ``without_result``: calls of their stream's last response with no result yet (a
    #: session being written, or one that stopped while they ran): ``failed`` false
    pending: int = 0
    subagent_calls: int = 0
    mcp_calls: int = 0
    #: subagent calls seen only in the 2.1.x ``progress`` lines that relay a subagent's
    #: messages into its session's file, in no file read (the agent's own file not copied,
    #: deleted, or cut before them): not imported (:data:`RELAYED_ONLY_WHY`), counted
    relayed_only_calls: int = 0
    #: the subagents (agent ids) those calls are of
    relayed_only_subagents: int = 0
    #: client quirk -> [streams, calls] flagged (``client_quirk``; kept, not dropped)
    quirks: dict[str, list[int]] = field(default_factory=dict)
    skipped: list[SkippedLine] = field(default_factory=list)
    #: the provenance pass (None when it was not run)
    provenance: ProvenanceReport | None = None

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped).most_common())


def trace_id_for(session_id: str) -> str:
    """Synthetic trace id of an imported session (32 hex digits, stable)."""
    return hashlib.sha256(f"toolwatch-import/session/{session_id}".encode()).hexdigest()[:32]


def span_id_for(call_id: str) -> str:
    """Synthetic span id of an imported call (16 hex digits, stable)."""
    return hashlib.sha256(f"toolwatch-import/call/{call_id}".encode()).hexdigest()[:16]


def build_records(
    parses: Sequence[FileParse],
    *,
    provenance: ProvenanceConfig | None = None,
    on_bytes: ProgressCallback | None = None,
    on_total: ProgressCallback | None = None,
    not_read: Sequence[tuple[str, str]] = (),
    unlisted_dirs: Sequence[tuple[str, str]] = (),
    damaged_archives: Sequence[str] = (),
    skipped_members: Sequence[tuple[str, str]] = (),
) -> tuple[list[CallRecord], ImportReport]:
    """Deduplicate, match results, number calls per session; records sorted by session, seq.

    With ``provenance`` (a config), the files are read a second time to fill the records'
    provenance fields (:mod:`.provenance`; ``on_total``/``on_bytes`` report that pass).
    ``not_read``: the scan's entries not read (:class:`.transcripts.TranscriptScan`), reported
    with the files that failed to read; ``unlisted_dirs``: its directories not listed;
    ``damaged_archives``: its zip archives read in part (counted damaged unless one of their
    members is: one cut download is one damaged file); ``skipped_members``: its zip members
    not read (nested archives, macOS metadata), reported as such."""
    report = ImportReport(
        files=len(parses),
        unreadable_files=list(not_read),
        unlisted_dirs=list(unlisted_dirs),
        skipped_members=list(skipped_members),
    )
    by_index = {p.file_index: p for p in parses}
    kept: dict[str, TranscriptCall] = {}
    total = 0
    foreign: set[int] = set()  # file indexes of the files that are not JSON Lines
    for parse in parses:
        report.bytes += parse.bytes
        report.lines += parse.lines
        kind = _without_json(parse)
        if kind == EMPTY:
            report.empty_files.append(parse.shown or str(parse.path))
        elif kind == NOT_JSON_LINES:
            report.not_json_lines.append(parse.shown or str(parse.path))
            foreign.add(parse.file_index)
        if parse.error is not None:
            report.unreadable_files.append((parse.shown or str(parse.path), parse.error))
            if parse.damaged:
                report.damaged_files.append(parse.shown or str(parse.path))
        for call in parse.calls:
            total += 1
            best = kept.get(call.call_id)
            if best is None or _order_key(call) < _order_key(best):
                kept[call.call_id] = call
    report.duplicates = total - len(kept)
    _count_relayed_only(parses, kept, report)
    report.damaged_files.extend(
        a for a in damaged_archives if not any(d.startswith(f"{a}!") for d in report.damaged_files)
    )
    report.unreadable_files.sort()
    report.damaged_files.sort()

    sessions: dict[str, list[TranscriptCall]] = {}
    for call in kept.values():
        assert call.session_id is not None
        sessions.setdefault(call.session_id, []).append(call)

    elsewhere = _results_by_id(parses)
    cut = set().union(*(p.cut_results for p in parses))
    records: list[CallRecord] = []
    measured: list[Measured] = []
    used: set[tuple[int | None, str]] = set()  # (file index, call id) of each result taken
    for session_id in sorted(sessions):
        calls = sorted(sessions[session_id], key=_order_key)
        trace_id = trace_id_for(session_id)
        last: dict[str | None, list[tuple[datetime, str | None]]] | None = None
        for seq, call in enumerate(calls):
            result_file: int | None = call.file_index
            result = by_index[call.file_index].results.get(call.call_id)
            if result is None:
                result, result_file = elsewhere.get(call.call_id, (None, None))
            used.add((result_file, call.call_id))
            lost = result is None and call.call_id in cut
            report.result_cut += lost
            if result is None and not lost:
                last = _last_responses(calls) if last is None else last
                lost = _went_on(call, by_index[call.file_index], last)
                report.abandoned += lost
                report.pending += not lost
            record = _record(call, result, seq, trace_id, lost)
            records.append(record)
            when = None if result is None else parse_time(result.stamp)
            measured.append(Measured(record, call, result_file, when))
    for parse in parses:
        if parse.file_index in foreign:
            continue  # named once as not JSON Lines, not line by line
        unused = _unused_results(parse, kept, used)
        report.skipped.extend(sorted(parse.skipped + unused, key=lambda s: s.line))
    if provenance is not None:
        report.provenance = measure_provenance(measured, parses, provenance, on_bytes, on_total)
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
    streams: dict[str, set[tuple[str, str | None]]] = {}
    for r in records:
        if r.client_quirk is not None:
            streams.setdefault(r.client_quirk, set()).add((r.session_id, r.agent_id))
            report.quirks.setdefault(r.client_quirk, [0, 0])[1] += 1
    for quirk, keys in streams.items():
        report.quirks[quirk][0] = len(keys)
    return records, report


#: Why a subagent call seen only in a ``progress`` line is counted, not imported.
RELAYED_ONLY_WHY: Final = (
    "seen only in the session file's progress lines, which relay a subagent's messages; its "
    "own agent-<id>.jsonl was not among the files read (import the session's subagents/ "
    "folder with it): not imported"
)


def _count_relayed_only(
    parses: Sequence[FileParse], kept: dict[str, TranscriptCall], report: ImportReport
) -> None:
    """Count the relayed subagent calls (:attr:`.parsing.FileParse.relayed`) no file read holds,
    and their agents."""
    relayed: dict[str, set[str]] = {}
    for parse in parses:
        for agent, ids in parse.relayed.items():
            relayed.setdefault(agent, set()).update(ids)
    for ids in relayed.values():
        missing = sum(call_id not in kept for call_id in ids)
        report.relayed_only_calls += missing
        report.relayed_only_subagents += missing > 0


#: What a file read without error that gave no JSON is (:func:`_without_json`).
EMPTY: Final = "empty"
NOT_JSON_LINES: Final = "not JSON Lines"


def _without_json(parse: FileParse) -> str | None:
    """:data:`EMPTY` for a file read whole with no line but blank ones, :data:`NOT_JSON_LINES`
    for one none of whose lines parses, its first one a complete line (a cut single line is a
    session being written, reported as such); None otherwise."""
    if parse.error is not None or parse.parsed:
        return None
    if not parse.skipped:
        return EMPTY
    return NOT_JSON_LINES if parse.skipped[0].reason == INVALID_JSON else None


def _order_key(call: TranscriptCall) -> tuple[datetime, int, int, int]:
    return (call.time, call.file_index, call.line_no, call.block)


def _last_responses(
    calls: Sequence[TranscriptCall],
) -> dict[str | None, list[tuple[datetime, str | None]]]:
    """Per agent of one session, its two latest responses (latest call time, response id),
    latest last: whether a later call of another response exists is then one comparison."""
    latest: dict[str | None, dict[str | None, datetime]] = {}
    for call in calls:
        times = latest.setdefault(call.agent_id, {})
        if call.response_id not in times or times[call.response_id] < call.time:
            times[call.response_id] = call.time
    return {
        agent: sorted(((t, r) for r, t in times.items()), key=lambda tr: tr[0])[-2:]
        for agent, times in latest.items()
    }


def _went_on(
    call: TranscriptCall,
    parse: FileParse,
    last: dict[str | None, list[tuple[datetime, str | None]]],
) -> bool:
    """Whether the stream of a call without result went on to another model response: one
    written after the call's line in its file (with or without calls), or a call of another
    response started later in any file of the run. Then the result will never come."""
    turns = None if call.inline_side else parse.turns.get(call.agent_id)
    if turns is not None and turns.after(call.line_no, call.response_id):
        return True
    return any(t > call.time and r != call.response_id for t, r in last.get(call.agent_id, []))


def _unused_results(
    parse: FileParse, kept: dict[str, TranscriptCall], used: set[tuple[int | None, str]]
) -> list[SkippedLine]:
    """The file's results no call took: an id matching no call of the run, or a repeat of a
    result another file gives the call. A copy beside a copy of its call (a resumed session's
    history) goes with that duplicate call, already counted as such."""
    own = {c.call_id for c in parse.calls}
    shown = parse.shown or str(parse.path)
    unused = []
    for call_id, result in parse.results.items():
        if call_id not in kept:
            unused.append(SkippedLine(shown, result.line_no, UNMATCHED_RESULT))
        elif (parse.file_index, call_id) not in used and call_id not in own:
            unused.append(SkippedLine(shown, result.line_no, REPEATED_RESULT))
    return unused


def _results_by_id(parses: Sequence[FileParse]) -> dict[str, tuple[TranscriptResult, int]]:
    """Each result id's result in the first file holding it, and that file's index: built once
    (looking through every file for each call without a result of its own took minutes on a
    folder of 10,000 small sessions)."""
    found: dict[str, tuple[TranscriptResult, int]] = {}
    for parse in parses:
        for call_id, result in parse.results.items():
            found.setdefault(call_id, (result, parse.file_index))
    return found


def _record(
    call: TranscriptCall,
    result: TranscriptResult | None,
    seq: int,
    trace_id: str,
    lost: bool = False,
) -> CallRecord:
    """``lost``: the call's result was written but cut off (a truncated last line), or never
    written though its stream went on: it did not succeed as far as anyone can tell, so it is
    failed with ``no_result``, not a success."""
    server, _ = split_mcp_name(call.tool)
    duration: int | None = None
    failed = lost
    error_type = ERROR_TYPE_NO_RESULT if lost else None
    output_bytes: int | None = None
    truncated = False
    if result is not None:
        failed = result.failed
        error_type = ERROR_TYPE_TOOL_ERROR if failed else None
        output_bytes = result.output_bytes
        truncated = result.truncated
        if not call.restamped and not result.restamped:
            ended = parse_time(result.stamp)
            if ended is not None:
                delta = ended - call.time
                micros = (delta.days * 86_400 + delta.seconds) * _US + delta.microseconds
                duration = micros if micros >= 0 else None
    assert call.session_id is not None
    # names and ids as the instrumentation sends them (at most MAX_STRING_BYTES, a cut one
    # marked): the collector refuses a longer one, so store and --otlp would disagree
    return CallRecord(
        trace_id=trace_id,
        span_id=span_id_for(call.call_id),
        session_id=fit_string(call.session_id),
        agent_id=_fit(call.agent_id),
        seq=seq,
        tool=fit_string(call.tool),
        server=_fit(server),
        start_time=call.time,
        duration_us=duration,
        input_bytes=call.input_bytes,
        output_bytes=output_bytes,
        failed=failed,
        error_type=error_type,
        response_id=_fit(call.response_id),
        call_id=fit_string(call.call_id),
        source=SOURCE,
        service=SERVICE,
        restamped=call.restamped,
        output_truncated=truncated,
        client_quirk=call.quirk,
    )


def _fit(value: str | None) -> str | None:
    return None if value is None else fit_string(value)


def import_transcripts(
    paths: Iterable[str | Path],
    on_bytes: ProgressCallback | None = None,
    *,
    provenance: ProvenanceConfig | None = DEFAULT_CONFIG,
) -> tuple[list[CallRecord], ImportReport]:
    """Find, parse and turn transcripts into records (no store involved); ``provenance=None``
    leaves the provenance fields null (one pass over the files instead of two).

    One process on purpose: measured on 2 cores, a process pool lost more to pickling the
    parsed calls back (~1 s per 120 MB) and to spawning than it gained.
    """
    scan = scan_transcripts(paths)
    parses = [
        parse_file(t.path, index, on_bytes, t.shown, t.member) for index, t in enumerate(scan.files)
    ]
    return build_records(
        parses,
        provenance=provenance,
        on_bytes=on_bytes,
        not_read=scan.not_read,
        unlisted_dirs=scan.unlisted_dirs,
        damaged_archives=scan.damaged_archives,
        skipped_members=scan.skipped_members,
    )
