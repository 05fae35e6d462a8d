"""``toolwatch import claude-code PATH…``: agent transcripts → call records in the store.

Parsing lives in :mod:`toolwatch.collector.sources.claude_code`, delivery in
:mod:`toolwatch.collector.sources.delivery` (idempotent appends: call ids already stored are
never written again; the optional OTLP export); this module adds the progress bar, the warning
about sessions split across runs, and the summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.collector.sources.claude_code import (
    SKIPPED_MEMBER_WHY,
    TRANSCRIPT_NAMES,
    TranscriptPathError,
    scan_transcripts,
)
from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.conventions import ERROR_TYPE_NO_RESULT
from toolwatch.record import CallRecord
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `import --help` needs no DuckDB, Arrow,
    # transcript parser, provenance measures or OTLP exporter (protobuf)
    import pyarrow as pa

    from toolwatch.collector.sources.claude_code import ImportReport, SkippedLine
    from toolwatch.collector.sources.delivery import Calls
    from toolwatch.collector.store.parquet_store import Store

log = logging.getLogger(__name__)

HELP = "import agent transcripts as call records"
FORMATS = ("claude-code",)
#: How many skipped lines the summary names by file:line (all are counted).
SHOWN_SKIPPED = 20
#: Why a file is named as not JSON Lines (none of its lines parses; none is shown).
NOT_JSON_LINES_WHY = "first line not JSON"


@dataclass(slots=True)
class ImportOutcome:
    """Result of one import run: what was read, written and exported."""

    report: ImportReport
    records: list[CallRecord]
    written: int = 0
    already_stored: int = 0
    exported: int = 0
    export_problem: str | None = None  # spans the endpoint did not accept, and why
    store: Path | None = None
    files_written: list[Path] = field(default_factory=list)
    seq_overlap_sessions: int = 0
    #: no transcript found gave a line (compressed, an archive, I/O error): nothing imported
    none_readable: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", choices=FORMATS, help="transcript format")
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="transcript files or directories (searched recursively for "
        + ", ".join(TRANSCRIPT_NAMES)
        + ")",
    )
    add_store_argument(parser)
    parser.add_argument(
        "--otlp",
        metavar="URL",
        help="also export as OTLP spans to this endpoint (the new calls; all with --no-store)",
    )
    parser.add_argument(
        "--no-store", action="store_true", help="do not write the store (use with --otlp)"
    )
    parser.add_argument(
        "--no-provenance",
        action="store_true",
        help="leave the argument-provenance fields null (one pass over the files, not two)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    if args.no_store and not args.otlp:
        print("toolwatch import: --no-store needs --otlp URL (nothing to do)", file=sys.stderr)
        return 2
    # the destinations first: a mistake there is said before any work, and before the store
    # holds calls a corrected re-run would no longer export (it sends only the calls it adds)
    if args.otlp:
        from toolwatch.instrumentation.export.otlp import traces_url

        try:
            traces_url(args.otlp)
        except ValueError:
            print(
                f"toolwatch import: --otlp {args.otlp}: give an http(s)://host:port URL",
                file=sys.stderr,
            )
            return 2
    from toolwatch.collector.sources.delivery import DeliveryError
    from toolwatch.collector.store.parquet_store import Store

    store = None if args.no_store else Store(args.store)
    try:
        if store is not None:
            store.check_path()
        outcome = import_claude_code(
            args.paths,
            store=store,
            otlp=args.otlp,
            progress=not args.quiet,
            provenance=not args.no_provenance,
        )
    except TranscriptPathError as exc:  # what it found: exit 1, as every missing input
        print(f"toolwatch import: {exc}", file=sys.stderr)
        return 1
    except (StoreError, OSError) as exc:
        print(f"toolwatch import: cannot write the store: {exc}", file=sys.stderr)
        return 1
    except DeliveryError as exc:
        print(f"toolwatch import: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary_dict(outcome), indent=2))
    else:
        print(format_summary(outcome))
    if outcome.none_readable:  # the summary names each file and why; the run did nothing
        print(
            f"toolwatch import: none of the {counted(outcome.report.files, 'transcript file')} "
            "found could be read (reasons above)",
            file=sys.stderr,
        )
        return 1
    if outcome.export_problem:  # emitted != stored: say so, and fail
        print(f"toolwatch import: {outcome.export_problem}", file=sys.stderr)
        return 1
    return 0


def import_claude_code(
    paths: Sequence[str | Path],
    *,
    store: Store | None,
    otlp: str | None = None,
    progress: bool = False,
    provenance: bool = True,
) -> ImportOutcome:
    """Import transcripts under ``paths`` into ``store`` (if given) and/or export to ``otlp``.

    ``provenance``: read the files a second time to measure each call's argument provenance
    (content read locally, only the numbers kept)."""
    from toolwatch.collector.sources.claude_code import build_records, parse_file
    from toolwatch.collector.sources.delivery import append_new_calls, send_otlp_report
    from toolwatch.instrumentation.provenance import DEFAULT_CONFIG

    scan = scan_transcripts(paths)
    files = scan.files
    if not files:
        shown = ", ".join(str(p) for p in paths)
        unread = ""
        if scan.not_read:
            path, reason = scan.not_read[0]
            unread = f" ({counted(len(scan.not_read), 'file')} not read, e.g. {path}: {reason})"
        if scan.unlisted_dirs:
            path, reason = scan.unlisted_dirs[0]
            unread += (
                f" ({counted(len(scan.unlisted_dirs), 'directory', 'directories')} could not "
                f"be listed, e.g. {path}: {reason})"
            )
        names = ", ".join(TRANSCRIPT_NAMES)
        raise TranscriptPathError(f"no transcript ({names}) found under {shown}{unread}")
    show_bar = progress and any(Path(p).is_dir() for p in paths)
    parses = []
    from tqdm import tqdm

    total = sum(t.disk_size() for t in files)
    # bytes make the ETA (files differ in size by 1,000×); the file being read is shown
    # beside them, since on thousands of tiny files the bytes alone barely say how far it is
    with tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        desc="import",
        file=sys.stderr,
        disable=not show_bar,
    ) as bar:
        for index, transcript in enumerate(files):
            bar.set_postfix_str(f"file {index + 1:,}/{len(files):,}", refresh=False)
            parses.append(
                parse_file(transcript.path, index, bar.update, transcript.shown, transcript.member)
            )
    with tqdm(
        unit="B",
        unit_scale=True,
        desc="provenance",
        file=sys.stderr,
        disable=not (show_bar and provenance),
    ) as bar:

        def on_total(n: int) -> None:
            bar.total = n
            bar.refresh()

        records, report = build_records(
            parses,
            provenance=DEFAULT_CONFIG if provenance else None,
            on_bytes=bar.update,
            on_total=on_total,
            not_read=scan.not_read,
            unlisted_dirs=scan.unlisted_dirs,
            damaged_archives=scan.damaged_archives,
            skipped_members=scan.skipped_members,
        )
    outcome = ImportOutcome(
        report=report,
        records=records,
        none_readable=all(p.error is not None and not p.lines for p in parses),
    )
    to_send: Calls = records
    if store is not None:
        outcome.store = store.root
        appended = append_new_calls(store, records)
        outcome.already_stored = appended.already_stored
        outcome.files_written = appended.files
        outcome.written = appended.calls.num_rows
        overlap = seq_overlap_sessions(store, appended.calls, records)
        outcome.seq_overlap_sessions = overlap
        if overlap:
            log.warning(
                "%s already hold imported calls from files not read in this run: "
                "seq of the new calls counts only this run's files (import all files of a "
                "session together)",
                counted(overlap, "session"),
            )
        to_send = appended.calls
    if otlp:
        sent = send_otlp_report(to_send, otlp)
        outcome.exported = sent.accepted
        outcome.export_problem = sent.check()
    return outcome


def seq_overlap_sessions(store: Store, written: pa.Table, records: Sequence[CallRecord]) -> int:
    """How many sessions of the calls just ``written`` also hold imported calls that this run
    did not read (their ``seq`` cannot be aligned with this run's)."""
    from toolwatch.collector.sources.claude_code import SOURCE

    if written.num_rows == 0:
        return 0
    found = store.query(
        "SELECT count(DISTINCT session_id) AS n FROM calls "
        "WHERE source = $source "
        "AND session_id IN (SELECT unnest($sessions::VARCHAR[])) "
        "AND call_id NOT IN (SELECT unnest($ids::VARCHAR[]))",
        {
            "source": SOURCE,
            "sessions": sorted(set(written.column("session_id").to_pylist())),
            "ids": [r.call_id for r in records],
        },
    )
    return int(found.column("n")[0].as_py() or 0) if found.num_rows else 0


# ------------------------------------------------------------------------------------ summary


def summary_dict(outcome: ImportOutcome) -> dict[str, Any]:
    from toolwatch.collector.sources.claude_code import RELAYED_ONLY_WHY  # the parser's module

    r = outcome.report
    return {
        "files": r.files,
        "unreadable_files": [{"path": p, "error": e} for p, e in r.unreadable_files],
        "damaged_files": r.damaged_files,
        "empty_files": r.empty_files,
        "not_json_lines_files": [
            {"path": p, "reason": NOT_JSON_LINES_WHY} for p in r.not_json_lines
        ],
        "unlisted_directories": [{"path": p, "error": e} for p, e in r.unlisted_dirs],
        "skipped_members": [{"path": p, "kind": k} for p, k in r.skipped_members],
        "bytes": r.bytes,
        "lines": r.lines,
        "sessions": r.sessions,
        "subagents": r.subagents,
        "calls": r.calls,
        "duplicates_removed": r.duplicates,
        "restamped": r.restamped,
        "capped_outputs": r.capped,
        "failed": r.failed,
        "without_result": r.without_result,
        "result_cut_off": r.result_cut,
        "result_abandoned": r.abandoned,
        "pending": r.pending,
        "subagent_calls": r.subagent_calls,
        "mcp_calls": r.mcp_calls,
        "relayed_only": {
            "calls": r.relayed_only_calls,
            "subagents": r.relayed_only_subagents,
            "reason": RELAYED_ONLY_WHY,
        },
        "client_quirks": {q: {"streams": n[0], "calls": n[1]} for q, n in r.quirks.items()},
        "provenance": None if r.provenance is None else asdict(r.provenance),
        "store": str(outcome.store) if outcome.store else None,
        "written": outcome.written,
        "already_stored": outcome.already_stored,
        "exported": outcome.exported,
        "export_problem": outcome.export_problem,
        "skipped_lines": len(r.skipped),
        "skipped_by_reason": r.skipped_by_reason(),
        "skipped": [{"path": s.path, "line": s.line, "reason": s.reason} for s in r.skipped],
    }


def format_summary(outcome: ImportOutcome) -> str:
    from toolwatch.collector.sources.claude_code import RELAYED_ONLY_WHY  # the parser's module

    r = outcome.report
    lines = [
        f"read {counted(r.files, 'file')}, {_size_text(r.bytes)}, {counted(r.lines, 'line')}: "
        f"{counted(r.sessions, 'session')} with {counted(r.subagents, 'subagent')}, "
        f"{counted(r.calls, 'call')}",
        f"  duplicates removed: {r.duplicates:,}   re-stamped (kept out of timing): "
        f"{r.restamped:,}   capped outputs: {r.capped:,}",
        f"  failed: {r.failed:,}   without result: {r.without_result:,}   "
        f"subagent calls: {r.subagent_calls:,}   MCP calls: {r.mcp_calls:,}",
    ]
    if r.result_cut:
        lines.append(
            f"  {counted(r.result_cut, 'call')} without result because it is in a cut last line "
            "(still being written?): no size or duration; stored as failed, error_type "
            f"{ERROR_TYPE_NO_RESULT} (in the failed count above), as no success was seen"
        )
    if r.abandoned:
        lines.append(
            f"  {counted(r.abandoned, 'call')} without result though its stream went on to "
            "another model response (the result will never come): stored as failed, "
            f"error_type {ERROR_TYPE_NO_RESULT} (in the failed count above)"
        )
    if r.pending:
        lines.append(
            f"  pending: {counted(r.pending, 'call')} of its stream's last response with no "
            "result yet (still running, or the session stopped there): no size or duration, "
            "stored unfailed; a re-import does not add a result later"
        )
    if r.relayed_only_calls:
        lines.append(
            f"  {counted(r.relayed_only_calls, 'subagent call')} of "
            f"{counted(r.relayed_only_subagents, 'subagent')} {RELAYED_ONLY_WHY}"
        )
    if r.quirks:
        flagged = ", ".join(
            f"{q} {counted(n[0], 'stream')} / {counted(n[1], 'call')}" for q, n in r.quirks.items()
        )
        lines.append(f"  client quirks flagged (kept, column client_quirk): {flagged}")
    p = r.provenance
    if p is not None:
        lines.append(
            f"  provenance: {counted(p.calls, 'call')} measured, {p.egress_calls:,} send data off "
            f"the machine; {_size_text(p.result_bytes)} of results read locally, none kept"
        )
        if (
            p.truncated_result_bytes
            or p.unchecked_argument_bytes
            or p.missing_inputs
            or p.unreadable_results
        ):
            lines.append(
                f"    not searched: {_size_text(p.truncated_result_bytes)} of results beyond "
                f"the per-result cap, {_size_text(p.unchecked_argument_bytes)} of arguments "
                f"beyond the per-call cap; {counted(p.missing_inputs, 'call')} whose input "
                f"could not be read again, {counted(p.unreadable_results, 'result')} nested too "
                "deep to read"
            )
    if outcome.store is not None:
        lines.append(
            f"  store {outcome.store}: {counted(outcome.written, 'new call')} written, "
            f"{outcome.already_stored:,} already there"
        )
    if outcome.exported:
        lines.append(f"  exported as OTLP: {counted(outcome.exported, 'call')}")
    if outcome.export_problem:
        lines.append(f"  OTLP export incomplete: {outcome.export_problem}")
    if r.damaged_files:
        lines.append(
            f"  damaged files: {len(r.damaged_files):,} (read up to the damage, the rest "
            "lost; below with what happened and where)"
        )
    for path, error in r.unreadable_files:
        lines.append(f"  unreadable file {path}: {error}")
    if r.empty_files:
        lines.append(
            f"  {counted(len(r.empty_files), 'empty file')} (no line, nothing to import): "
            + _first_names(r.empty_files)
        )
    lines.extend(
        f"  a file that is not JSON Lines: {p} ({NOT_JSON_LINES_WHY})" for p in r.not_json_lines
    )
    lines.extend(_skipped_members_lines(r.skipped_members))
    if r.unlisted_dirs:
        lines.append(
            f"  {counted(len(r.unlisted_dirs), 'directory', 'directories')} not searched "
            "(cannot be listed; any transcripts inside not read):"
        )
        lines.extend(f"    {path}: {error}" for path, error in r.unlisted_dirs)
    if r.skipped:
        lines.append(f"  skipped {_skipped_count(r.skipped)}:")
        lines.extend(f"    {reason}: {n:,}" for reason, n in r.skipped_by_reason().items())
        lines.extend(f"    {s}" for s in r.skipped[:SHOWN_SKIPPED])
        if len(r.skipped) > SHOWN_SKIPPED:
            lines.append(f"    … and {len(r.skipped) - SHOWN_SKIPPED:,} more (--json lists all)")
    else:
        lines.append("  skipped lines: 0")
    return "\n".join(lines)


def _skipped_count(skipped: Sequence[SkippedLine]) -> str:
    """How many were skipped: lines, or, when one line gave several (a call without id and one
    without name side by side), the items and the lines they are on ("8 lines" said of 5 did
    not add up with the line numbers listed)."""
    on = len({(s.path, s.line) for s in skipped})
    if on == len(skipped):
        return counted(on, "line")
    items = counted(len(skipped), "item")
    return f"{items} on {counted(on, 'line')} (each a whole line or one block of it)"


def _skipped_members_lines(members: Sequence[tuple[str, str]]) -> list[str]:
    """Per kind of zip member not read: how many, why, and the first names."""
    lines = []
    for kind, why in SKIPPED_MEMBER_WHY.items():
        names = [path for path, k in members if k == kind]
        if not names:
            continue
        lines.append(f"  skipped {counted(len(names), kind)} ({why}): " + _first_names(names))
    return lines


def _first_names(names: Sequence[str], shown: int = 5) -> str:
    """The first ``shown`` names, and how many more ``--json`` lists."""
    text = ", ".join(names[:shown])
    if len(names) > shown:
        text += f" … and {len(names) - shown:,} more (--json lists all)"
    return text


def _size_text(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"
