"""Argument provenance of imported calls: the instrumentation's measure, replayed on transcripts.

The first pass (:mod:`.parsing`) keeps no content. Once the run's calls are known (duplicates
removed, results matched), this second pass reads the files again, a few at a time, takes each
kept call's ``input`` and the text of its result, and replays every stream (session, agent) in
the importer's call order through a :class:`~toolwatch.instrumentation.provenance.measure.
StreamProvenance` — the same code the agent-side instrumentation runs. Only the numbers and
enums of :meth:`~toolwatch.instrumentation.provenance.Provenance.exported` reach the records;
the content is dropped as soon as its files' streams are measured.

**Replay rule.** A result becomes visible once its time has passed (its line's timestamp, or
the call's when it has none or is earlier), and only to calls of *another* model response: the
parallel calls of one response were written before any of them ran.

**Memory.** Files are read in groups that share a stream (a stream's calls and results may lie
in several files: a result found in another file, a session continued elsewhere); a group's
inputs and results are held while its streams are replayed. On dev-real the largest group is
3 files, 6.8 MB. One window (1.5 MiB of bytes, 4 MiB of offset tables) serves every stream in
turn, cleared (its bytes overwritten) after each.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from toolwatch.collector.sources.claude_code.decoding import TranscriptLines, TranscriptReadError
from toolwatch.collector.sources.claude_code.measure import load_line, text_field
from toolwatch.collector.sources.claude_code.parsing import (
    FileParse,
    TranscriptCall,
    is_result_block,
)
from toolwatch.instrumentation.provenance import (
    DEFAULT_CONFIG,
    ProvenanceConfig,
    StreamProvenance,
    result_text,
)
from toolwatch.instrumentation.provenance.window import FingerprintWindow
from toolwatch.record import CallRecord

ProgressCallback = Callable[[int], None]
#: A call or result block the API ran (``"server_tool_use",``, ``"web_search_tool_result"}``):
#: as a value, not the ``"server_tool_use":`` key every 2.x line's ``usage`` holds (matching that
#: key parsed 16 % more lines of a real source for nothing).
_API_BLOCK: Final = re.compile(rb'_tool_(?:use|result)"\s*[,}]')


@dataclass(slots=True)
class Measured:
    """One kept call to measure: its record, where its input and result are, and when."""

    record: CallRecord
    call: TranscriptCall
    result_file: int | None  # file index holding the call's result (None: no result)
    result_time: datetime | None


@dataclass(slots=True)
class ProvenanceReport:
    """What the provenance pass did (numbers only)."""

    calls: int = 0
    egress_calls: int = 0
    result_bytes: int = 0
    truncated_result_bytes: int = 0
    unchecked_argument_bytes: int = 0
    files_read: int = 0
    #: calls whose input line could not be read again (the file changed since the first pass)
    missing_inputs: int = 0
    #: results nested too deep to render as the text the model reads: not searched
    unreadable_results: int = 0


def measure_provenance(
    items: Sequence[Measured],
    parses: Sequence[FileParse],
    config: ProvenanceConfig = DEFAULT_CONFIG,
    on_bytes: ProgressCallback | None = None,
    on_total: ProgressCallback | None = None,
) -> ProvenanceReport:
    """Fill the provenance fields of every item's record (see the module docs).

    ``on_total(bytes)`` is told once how many bytes the pass will read, ``on_bytes(n)`` as it
    reads them (a progress bar)."""
    report = ProvenanceReport()
    by_index = {p.file_index: p for p in parses}
    streams: dict[tuple[str, str | None], list[Measured]] = {}
    for item in items:
        streams.setdefault((item.record.session_id, item.record.agent_id), []).append(item)
    groups = [
        (group, sorted({f for key in group for f in _files_of(streams[key])}))
        for group in _file_groups(streams, by_index)
    ]
    if on_total is not None:
        on_total(sum(by_index[f].bytes for _, files in groups for f in files))
    window = FingerprintWindow(config)  # one for all streams: cleared after each
    for group, files in groups:
        inputs, results = _read(files, group, streams, by_index, report, on_bytes)
        for key in sorted(group, key=lambda k: (k[0], k[1] or "")):
            _replay(streams[key], inputs, results, StreamProvenance(config, window), report)
    return report


def _files_of(stream: list[Measured]) -> set[int]:
    files = {m.call.file_index for m in stream}
    files.update(m.result_file for m in stream if m.result_file is not None)
    return files


def _file_groups(
    streams: dict[tuple[str, str | None], list[Measured]], by_index: dict[int, FileParse]
) -> list[list[tuple[str, str | None]]]:
    """Streams grouped so that each file is read in exactly one group (union-find on files)."""
    parent = {i: i for i in by_index}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[tuple[str, str | None], int] = {}
    for key, stream in streams.items():
        files = sorted(_files_of(stream))
        first[key] = files[0]
        for f in files[1:]:
            parent[find(f)] = find(files[0])
    groups: dict[int, list[tuple[str, str | None]]] = {}
    for key, f in first.items():
        groups.setdefault(find(f), []).append(key)
    return [groups[root] for root in sorted(groups)]


def _read(
    files: list[int],
    group: list[tuple[str, str | None]],
    streams: dict[tuple[str, str | None], list[Measured]],
    by_index: dict[int, FileParse],
    report: ProvenanceReport,
    on_bytes: ProgressCallback | None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The inputs (by call id) and result texts (by call id) the group's streams need."""
    want_input: dict[int, dict[tuple[int, int], str]] = {}
    want_result: dict[int, set[str]] = {}
    for key in group:
        for m in streams[key]:
            call = m.call
            want_input.setdefault(call.file_index, {})[(call.line_no, call.block)] = call.call_id
            if m.result_file is not None:
                want_result.setdefault(m.result_file, set()).add(call.call_id)
    inputs: dict[str, Any] = {}
    results: dict[str, bytes] = {}
    for index in files:
        parse = by_index[index]
        report.files_read += 1
        blocks = want_input.get(index, {})
        ids = want_result.get(index, set())
        try:
            with TranscriptLines(parse.path, parse.member) as lines:
                for line_no, raw in enumerate(lines, 1):
                    if on_bytes is not None:
                        on_bytes(len(raw))
                    report.unreadable_results += _take(raw, line_no, blocks, ids, inputs, results)
        except (OSError, TranscriptReadError):
            continue  # unreadable now (or where the first pass stopped): missing inputs
    return inputs, results


def _take(
    raw: bytes,
    line_no: int,
    blocks: dict[tuple[int, int], str],
    ids: set[str],
    inputs: dict[str, Any],
    results: dict[str, bytes],
) -> int:
    """Keep what one line holds of the wanted inputs and results (first result per id); the
    number of wanted results nested too deep to read as text (kept as empty: not searched)."""
    if b'"tool_' not in raw and _API_BLOCK.search(raw) is None:  # no call or result: no parse
        return 0
    try:
        obj, _ = load_line(raw)
    except (ValueError, RecursionError):
        return 0
    if type(obj) is not dict:
        return 0
    message = obj.get("message")
    content = message.get("content") if type(message) is dict else None
    if type(content) is not list:
        return 0
    unreadable = 0
    kind = obj.get("type")
    if kind == "assistant" and blocks:
        for b, block in enumerate(content):
            call_id = blocks.get((line_no, b))
            if call_id is not None and type(block) is dict:
                inputs[call_id] = block.get("input")
    if ids:  # a server tool's result is in an assistant line, as its call is
        for block in content:
            if not is_result_block(kind, block):
                continue
            call_id = text_field(block.get("tool_use_id"))
            if call_id in ids and call_id not in results:
                try:
                    results[call_id] = result_text(block.get("content"))
                except RecursionError:  # deeper than the stdlib encoder goes (a hostile line)
                    results[call_id] = b""
                    unreadable += 1
    return unreadable


def _replay(
    stream: list[Measured],
    inputs: dict[str, Any],
    results: dict[str, bytes],
    window: StreamProvenance,
    report: ProvenanceReport,
) -> None:
    """Measure one stream's calls in order (the replay rule of the module docs) in ``window``,
    a new stream's (cleared at the end)."""
    pending: list[tuple[datetime, int, Measured]] = []
    serial = 0
    for m in stream:
        call = m.call
        record = m.record
        held = []
        while pending and pending[0][0] <= call.time:
            due = heapq.heappop(pending)
            if call.response_id is not None and due[2].call.response_id == call.response_id:
                held.append(due)  # a result of this call's own response: not seen yet
            else:
                window.add_text(
                    due[2].record.tool, due[2].record.server, results[due[2].call.call_id]
                )
        for due in held:
            heapq.heappush(pending, due)
        if call.call_id not in inputs:
            report.missing_inputs += 1
        found = window.check_call(record.tool, record.server, inputs.get(call.call_id))
        for name, value in found.exported().items():
            setattr(record, name, value)
        report.calls += 1
        report.egress_calls += found.egress != "none"
        report.unchecked_argument_bytes += found.unchecked_bytes
        data = results.get(call.call_id)
        if data is not None:
            report.result_bytes += len(data)
            when = (
                m.result_time
                if m.result_time is not None and m.result_time >= call.time
                else call.time
            )
            heapq.heappush(pending, (when, serial, m))
            serial += 1
    report.truncated_result_bytes += window.truncated_bytes
    window.clear()
