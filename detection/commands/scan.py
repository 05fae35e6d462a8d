"""``toolwatch scan``: run the operating point over every stored session; rank the flagged.

    toolwatch scan [--model model.json] [--store PATH] [--statistic all_cusum ...] [--top 20]
        [--split-shares A,B | --split-dates D1,D2] [--min-calls N] [--from DAY --to DAY]

Prints one line per flagged session, strongest first: the stream (subagent or main agent), the
first call above the threshold (its index in the stream, the stream's length, its seq in the
session), the tool, the cue that explains the excursion, the peak against the threshold and how
many calls were above it; the header compares the flagged streams with the study's count (the
study counted each subagent as a session of its own). With the split options every command
shares, only the test split is scanned — the streams a model trained with the same options
never saw; ``--min-calls`` scans only streams that long (default: every stream). Ids are
printed whole; a tool name longer than a cell is cut (and counted under the table), since one
4 KiB name would push every row's numbers 4,000 characters right; ``--json`` keeps it whole.
The text and ``--json`` carry the same facts: the data's sources, the model, the window or the
split scanned (and the streams it placed by their arrival), the counts, the flagged streams and
where the scores were saved.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import add_store_argument
from toolwatch.detection.calls.split_options import add_split_arguments, spec_from_args
from toolwatch.detection.cues.names import CUE_SETS
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.model.location import MODEL_IN_STORE, ModelError, model_path_for
from toolwatch.study import CORPUS, SCAN_FLAGGED_SESSIONS
from toolwatch.usage import positive_int
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `scan --help` needs no scorer (scipy,
    # river), numpy, Arrow or DuckDB
    from toolwatch.detection.scoring.scan import ScanResult

HELP = "rank sessions flagged at the operating point"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help=f"model artifact (default: STORE/{MODEL_IN_STORE}, where `toolwatch train` writes)",
    )
    add_store_argument(parser)
    add_split_arguments(parser, min_calls=1)
    parser.add_argument("--from", dest="start", metavar="DATE", help="first day (ISO)")
    parser.add_argument("--to", dest="end", metavar="DATE", help="last day (ISO, inclusive)")
    parser.add_argument(
        "--statistic",
        action="append",
        choices=[stat_column(s, d) for s in CUE_SETS for d in DETECTORS],
        help="statistic to flag on (repeatable; default: the model's alert_on, all_cusum)",
    )
    parser.add_argument(
        "--top", type=positive_int, default=20, help="show this many sessions (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="do not store the per-stream scores (table stream_scores, read by the app)",
    )


def run(args: argparse.Namespace) -> int:
    # the inputs first, so an error (said by cli.main: one line, its exit code) is not glued
    # to a progress bar
    from toolwatch.detection.calls.split import placed_by_arrival_line, rule_given, split_store
    from toolwatch.detection.calls.windows import WindowOptionError, bounded, load_window
    from toolwatch.detection.model.normal_model import NormalModel

    by_split = bool(args.split_dates or args.split_shares)
    if by_split and (args.start or args.end):
        raise WindowOptionError("give --from/--to or a split option, not both")
    spec = spec_from_args(args) if by_split else None
    window = None if by_split else bounded(args.start, args.end)
    from tqdm import tqdm

    from toolwatch.collector.stats.corpus import provenance_note, source_counts_of
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.detection.scoring.batch import score_calls
    from toolwatch.detection.scoring.scan import scan
    from toolwatch.detection.scoring.stream_scores import STREAM_SCORES_TABLE, stream_scores

    path = model_path_for(Store(args.store).root, args.model)
    model = NormalModel.load(path)
    if not model.calibrated:
        raise ModelError(f"model file {path} has no thresholds (never calibrated)")
    with tqdm(total=3, desc="scan", unit="step", file=sys.stderr, leave=False, disable=None) as bar:
        split: dict[str, Any] | None = None
        if window is None:
            assert spec is not None
            cut = split_store(Store(args.store), spec)
            calls = cut.calls("test_all")
            split = {
                "scanned": "test",
                "given": rule_given(cut.split.description),
                "streams_span": cut.split.description["streams_span"],
                "placed_by_arrival": int(cut.split.description.get("placed_by_arrival", 0)),
            }
        else:
            calls = load_window(Store(args.store), window, normal_only=False, need_calls=True)
        bar.update()
        scored = score_calls(model, calls)
        bar.update()
        result = scan(model, calls, args.statistic, scored=scored, min_calls=args.min_calls)
        if not args.no_save:
            Store(args.store).append(
                STREAM_SCORES_TABLE, stream_scores(model, scored, args.statistic)
            )
        bar.update()
    saved = None if args.no_save else STREAM_SCORES_TABLE
    if args.json:
        doc = {
            "model_id": model.model_id,
            "data": {"calls": calls.num_rows, "sources": source_counts_of(calls)},
            "window": None if window is None else window.describe(),
            "split": split,
            "saved_to": saved,
            "sessions": result.sessions,
            "streams": result.streams,
            "calls": result.calls,
            "streams_flagged": result.streams_flagged,
            "flagged": [dict(f.as_dict(), call_time=f.call_time.isoformat()) for f in result.flags],
        }
        print(json.dumps(doc, indent=2))
    else:
        print(provenance_note(calls))
        print(f"model: {model.model_id}")
        if window is not None and window.text != "..":
            print(f"window: the sessions starting {window.text} (--from/--to)")
        if split is not None:
            print(
                f"split: the test split of {split['given']} (streams start {split['streams_span']})"
            )
            placed = placed_by_arrival_line(split)
            if placed:
                print(f"split: {placed}")
        print(format_result(result, args.top))
        if saved:
            print(
                f"scores of {counted(result.streams, 'stream')} saved (table {STREAM_SCORES_TABLE})"
            )
    return 0


def format_result(result: ScanResult, top: int) -> str:
    from toolwatch.collector.store.result_formats import MAX_CELL, cut_cell, render, text_table

    lines = [
        f"{result.streams_flagged} of {counted(result.streams, 'stream')} flagged, in "
        f"{len(result.flags)} of {counted(result.sessions, 'session')} "
        f"({counted(result.calls, 'call')}); "
        f"the study: {SCAN_FLAGGED_SESSIONS} of {int(CORPUS['sessions'])} "
        "(it counted each subagent as a session: compare streams)"
    ]
    if not result.flags:
        return lines[0]
    rows = [
        [
            str(rank),
            f.session_id,
            f.agent_id or "-",
            f"{f.call_index:,}",
            f"{f.stream_calls:,}",
            "-" if f.seq is None else f"{f.seq:,}",
            cut_cell(f.tool),
            f.statistic,
            f.cue,
            f"{f.peak:.2f}",
            f"{f.threshold:.2f}",
            f"{f.calls_over:,}",
        ]
        for rank, f in enumerate(result.flags[:top], 1)
    ]
    columns = [
        ("#", True),
        ("session", False),
        ("agent", False),
        ("call", True),
        ("of", True),
        ("seq", True),
        ("tool", False),
        ("statistic", False),
        ("cue", False),
        ("peak", True),
        ("thresh", True),
        ("over", True),
    ]
    lines.append(render(text_table(columns, rows)).rstrip("\n"))
    long = sum(len(f.tool) > MAX_CELL for f in result.flags[:top])
    if long:
        lines.append(
            f"({counted(long, 'tool name')} longer than {MAX_CELL} characters cut to it; "
            "--json gives them whole)"
        )
    if len(result.flags) > top:
        lines.append(f"... {len(result.flags) - top} more (--top)")
    return "\n".join(lines)
