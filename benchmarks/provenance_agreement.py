"""Does the importer's provenance agree with a reference CSV of the same transcripts?

Run: ``.venv/bin/python benchmarks/provenance_agreement.py --csv REF.csv PATH...``

Imports the transcripts under ``PATH...`` (content read locally, nothing stored), joins every
call to the reference on ``(session_id, agent_id or "", call_id)`` and counts, per field, the
calls whose value differs (a few examples are shown by call id and tool, never content). The
reference is issue 13's research CSV (``provenance_dev_real.csv``: its columns ``egress``,
``reused_longest``, ``reused_total``, ``payload_longest``, ``payload_total``, ``dest_seen``,
``source_tool``, ``encoding``). ``--fixture OUT.csv`` also writes the egress calls' numbers as
the content-free test fixture (``tests/fixtures/provenance``). Also prints the import's CPU time.
"""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.sources.claude_code.transcripts import TranscriptPathError
from toolwatch.instrumentation.provenance import EXPORTED_FIELDS
from toolwatch.record import CallRecord
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import command_line

#: reference column -> record field
FIELDS = {
    "egress": "egress",
    "reused_longest": "reused_longest",
    "reused_total": "reused_total",
    "payload_longest": "payload_longest",
    "payload_total": "payload_total",
    "dest_seen": "dest_seen",
    "source_tool": "source_tool",
    "encoding": "reused_encoding",
}
#: the fixture's key, then every exported field but the per-call cap count (0 on dev-real)
FIXTURE_COLUMNS = (
    "session_id",
    "agent_id",
    "call_id",
    "tool",
    *(f for f in EXPORTED_FIELDS if f != "unchecked_bytes"),
)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def compare(records: Sequence[CallRecord], reference: Path) -> tuple[int, Counter[str], list[str]]:
    with reference.open(newline="") as fh:
        ref = {(r["session_id"], r["agent_id"], r["call_id"]): r for r in csv.DictReader(fh)}
    joined = 0
    differ: Counter[str] = Counter()
    examples: list[str] = []
    for r in records:
        row = ref.get((r.session_id, r.agent_id or "", r.call_id or ""))
        if row is None:
            differ["not in the reference"] += 1
            continue
        joined += 1
        for column, field in FIELDS.items():
            if row[column] != _text(getattr(r, field)):
                differ[column] += 1
                if len(examples) < 10:
                    examples.append(
                        f"{r.call_id} ({r.tool}) {column}: ref {row[column]!r}, "
                        f"import {_text(getattr(r, field))!r}"
                    )
    differ["reference rows not imported"] = len(ref) - joined
    return joined, differ, examples


def write_fixture(records: Sequence[CallRecord], path: Path) -> int:
    rows = [r for r in records if r.egress not in (None, "none")]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(FIXTURE_COLUMNS)
        for r in sorted(rows, key=lambda r: (r.session_id, r.agent_id or "", r.call_id or "")):
            writer.writerow([_text(getattr(r, c)) for c in FIXTURE_COLUMNS])
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("paths", nargs="+", type=Path, help="transcript files or directories")
    parser.add_argument("--csv", type=Path, required=True, help="the reference CSV")
    parser.add_argument("--fixture", type=Path, help="also write the egress calls' fixture")
    args = parser.parse_args(argv)
    if not args.csv.is_file():
        print(f"provenance_agreement: no reference CSV at {args.csv}", file=sys.stderr)
        return 1
    started = time.process_time()
    try:
        records, report = import_transcripts(args.paths)
    except (TranscriptPathError, OSError) as exc:  # one line, as the importer's own command
        print(f"provenance_agreement: {exc}", file=sys.stderr)
        return 1
    spent = time.process_time() - started
    print(f"imported {counted(len(records), 'call')} in {spent:.1f} s CPU; {report.provenance}")
    joined, differ, examples = compare(records, args.csv)
    print(f"joined {joined:,} of {counted(len(records), 'call')} to {args.csv.name}")
    for column in FIELDS:
        print(f"  {column:<16} differs on {counted(differ[column], 'call')}")
    for what in ("not in the reference", "reference rows not imported"):
        print(f"  {what}: {differ[what]:,}")
    for line in examples:
        print("   e.g.", line)
    if args.fixture is not None:
        print(f"wrote {write_fixture(records, args.fixture):,} egress calls to {args.fixture}")
    return 0 if joined == len(records) and not sum(differ.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
