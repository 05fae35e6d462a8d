"""Claude Code session transcripts → content-free call records.

Claude Code writes one JSON Lines file per session (and, from 2.0, one per subagent). This package
reads them and keeps only the *shape* of each tool call: tool name, time, byte sizes on the shared
basis of :mod:`toolwatch.record`, failure flag and the model response (``message.id``) that issued
it. Argument and result content is measured and dropped on the spot; nothing of it is kept.

How each fact of ``shared/claude-code-transcripts.md`` is handled:

* **Response boundary**: ``message.id`` of the assistant line, across lines (one block per line).
* **Results** are matched by ``tool_use_id``, first in the call's own file, then in any other
  file of the run. ``is_error`` absent means success; failed calls get ``error_type =
  "tool_error"``. The result text is never inspected for failure words.
* **Calls the API runs** (``server_tool_use``: web search, web fetch, code execution; and
  ``mcp_tool_use``, named ``mcp__<server_name>__<name>``) are calls too, their results the
  ``…_tool_result`` blocks of the model's own message (plain ``tool_result`` there from other
  vendors' Anthropic-compatible endpoints); an ``…_error`` object there is a failure.
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
* **Relayed subagent calls** (2.1.x ``progress`` lines echoing a subagent's messages into its
  session's file): not imported (the agent's own file is their record); those no file of the
  run holds are counted (``relayed_only_calls``), never lost without a word.
* **Re-stamped history**: when ≥ :data:`RESTAMP_MIN_RESPONSES` different responses in one file
  share one timestamp string, every call (and result) of that file with that stamp is flagged
  ``restamped``; timing statistics skip gaps touching them.
* **Duplicates** (same ``tool_use`` id in several files or twice in one): the copy with the
  earliest stamp is kept (ties: first file by path, then first line).
* **Capped outputs** (2.1.x ``<persisted-output>`` stubs): ``output_truncated`` is set, the size is
  the stub's (a lower bound).
* **Unreadable lines** (invalid JSON, an incomplete last line of a session being written, not an
  object, tool_use line without a valid timestamp, blocks without id/name, call or result blocks in
  a line of an unknown type, call blocks in a user line, a ``…tool_use`` block of an unknown kind)
  and results no call takes (an id matching no call of the run, a repeated result) are skipped and
  reported by file and line, never fatal. An empty file is counted as such, and a file none of whose
  lines is JSON is named once as not JSON Lines, not line by line. A gzip'd, bzip2'd, xz'd or zstd'd
  file (by its first bytes; zstd with the optional ``toolwatch[zstd]``, else named as needing it) is
  decompressed, a UTF-16 one (with a BOM or without) decoded, as it streams; the transcript members
  of a ``*.zip`` archive are read the same way (:mod:`.archives`), named
  ``archive.zip!member.jsonl``.

``seq`` is the 0-based position of a call in its session (main agent and subagents together) by
start time, then file (by path), line and block. It counts the calls of the files read in one
run, so the files of one session should be imported together (re-importing a grown session file
keeps earlier positions unchanged). ``trace_id`` / ``span_id`` are hashes of the session id and
the call id, so a re-import yields identical ids.

The modules, in the order a run uses them: :mod:`.transcripts` (finding the files, and with
:mod:`.archives` the members of zip archives),
:mod:`.decoding` (a file's bytes as UTF-8 lines), :mod:`.parsing` (one file, line by line),
:mod:`.measure` (sizes and clean text of the JSON values) and :mod:`.records` (the run's records
and report). Parsing only: writing the store and
exporting are :mod:`toolwatch.collector.sources.delivery`'s. The names below load on first use
(:mod:`toolwatch.lazy`): ``toolwatch import --help`` reads :data:`TRANSCRIPT_NAMES` without the
parser, the provenance measures or the OTLP exporter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.collector.sources.claude_code.parsing import FileParse, SkippedLine, parse_file
    from toolwatch.collector.sources.claude_code.records import (
        RELAYED_ONLY_WHY,
        SERVICE,
        SOURCE,
        ImportReport,
        build_records,
        import_transcripts,
    )
    from toolwatch.collector.sources.claude_code.transcripts import (
        SKIPPED_MEMBER_WHY,
        TRANSCRIPT_NAMES,
        TranscriptPathError,
        find_transcripts,
        scan_transcripts,
    )

__all__ = [
    "RELAYED_ONLY_WHY",
    "SERVICE",
    "SKIPPED_MEMBER_WHY",
    "SOURCE",
    "TRANSCRIPT_NAMES",
    "FileParse",
    "ImportReport",
    "SkippedLine",
    "TranscriptPathError",
    "build_records",
    "find_transcripts",
    "import_transcripts",
    "parse_file",
    "scan_transcripts",
]

__getattr__ = lazy_names(
    __name__,
    {
        "FileParse": "toolwatch.collector.sources.claude_code.parsing",
        "ImportReport": "toolwatch.collector.sources.claude_code.records",
        "RELAYED_ONLY_WHY": "toolwatch.collector.sources.claude_code.records",
        "SERVICE": "toolwatch.collector.sources.claude_code.records",
        "SKIPPED_MEMBER_WHY": "toolwatch.collector.sources.claude_code.transcripts",
        "SOURCE": "toolwatch.collector.sources.claude_code.records",
        "SkippedLine": "toolwatch.collector.sources.claude_code.parsing",
        "TRANSCRIPT_NAMES": "toolwatch.collector.sources.claude_code.transcripts",
        "TranscriptPathError": "toolwatch.collector.sources.claude_code.transcripts",
        "build_records": "toolwatch.collector.sources.claude_code.records",
        "find_transcripts": "toolwatch.collector.sources.claude_code.transcripts",
        "import_transcripts": "toolwatch.collector.sources.claude_code.records",
        "parse_file": "toolwatch.collector.sources.claude_code.parsing",
        "scan_transcripts": "toolwatch.collector.sources.claude_code.transcripts",
    },
)
