"""``toolwatch score``: score a stored window with a model and summarise (optionally save).

    toolwatch score [--model model.json] [--from 2026-09-01 --to 2026-09-14] [--store PATH]
        [--out scores.parquet|scores.csv]

Every call of the sessions whose first call is in the window is scored (batch scorer);
labelled (injected) sessions are included. A window no session starts in is an error (exit 1)
naming the days the store's sessions start on. The summary gives, per cue set × detector, how
many calls and sessions are above the model's operating point.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolwatch.collector.store.location import add_store_argument
from toolwatch.detection.cues.names import CUE_SETS, SCORE_COLUMNS
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.model.location import MODEL_IN_STORE, model_path_for
from toolwatch.usage import UsageError, check_output
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `score --help` needs no numpy or Arrow
    import pyarrow as pa

    from toolwatch.detection.model.normal_model import NormalModel

HELP = "score a stored window"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help=f"model artifact (default: STORE/{MODEL_IN_STORE}, where `toolwatch train` writes)",
    )
    parser.add_argument("--from", dest="start", metavar="DATE", help="first day (ISO)")
    parser.add_argument("--to", dest="end", metavar="DATE", help="last day (ISO, inclusive)")
    add_store_argument(parser)
    parser.add_argument("--out", help="write per-call scores to this .parquet or .csv file")


def run(args: argparse.Namespace) -> int:
    # the inputs first, so an error (said by cli.main: one line, its exit code) is not glued
    # to a progress bar
    if args.out:
        out = Path(args.out)
        if out.suffix.lower() not in (".parquet", ".csv"):
            raise UsageError(f"--out {args.out}: use a .parquet or .csv file name")
        check_output(out, "--out")  # written after the scoring: exit 1, as every output path
    # imported here: `score --help` needs neither the scorer (scipy, river) nor tqdm
    from tqdm import tqdm

    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.detection.calls.windows import bounded, load_window
    from toolwatch.detection.model.normal_model import NormalModel
    from toolwatch.detection.scoring.batch import score_calls

    window = bounded(args.start, args.end)
    model = NormalModel.load(model_path_for(Store(args.store).root, args.model))
    with tqdm(
        total=3, desc="score", unit="step", file=sys.stderr, leave=False, disable=None
    ) as bar:
        bar.update()
        calls = load_window(Store(args.store), window, normal_only=False, need_calls=True)
        bar.update()
        scored = score_calls(model, calls)
        bar.update()
    print(summary(model, scored))
    if args.out:
        write_scores(scored, Path(args.out))
        print(f"scores -> {args.out}")
    return 0


def summary(model: NormalModel, scored: pa.Table) -> str:
    """Calls/sessions above the operating point per cue set × detector, and cue-score means."""
    import numpy as np

    n = scored.num_rows
    sessions = np.asarray(scored.column("session_id").to_pylist(), dtype=object)
    n_sessions = len(set(sessions.tolist()))
    lines = [
        f"{counted(n, 'call')}, {counted(n_sessions, 'session')} scored with model {model.model_id}"
    ]
    if n == 0:
        return "\n".join(lines)
    means = ", ".join(
        f"{c} {float(np.mean(scored.column(c).to_numpy())):.3f}" for c in SCORE_COLUMNS
    )
    lines.append(f"  mean per-call score: {means}")
    if not model.calibrated:
        lines.append("  (model not calibrated: no operating point)")
        return "\n".join(lines)
    lines.append("  above the operating point (calls / sessions):")
    lines.append("    " + f"{'cue set':<9}" + "".join(f"{d:>16}" for d in DETECTORS))
    for s in CUE_SETS:
        cells = []
        for d in DETECTORS:
            over = scored.column(stat_column(s, d)).to_numpy() > model.threshold(s, d)
            cells.append(f"{int(over.sum()):,} / {len(set(sessions[over].tolist())):,}")
        lines.append("    " + f"{s:<9}" + "".join(f"{c:>16}" for c in cells))
    return "\n".join(lines)


def write_scores(scored: pa.Table, path: Path) -> None:
    """Parquet, or CSV as ``toolwatch sql --format csv`` writes it (times ``+00:00``, as the
    product's every CSV: Arrow's own writer gave ``2026-08-04 09:00:00.000000Z``)."""
    import pyarrow.parquet as pq

    from toolwatch.collector.store.result_formats import write_csv

    if path.suffix.lower() == ".csv":
        with path.open("w", encoding="utf-8", newline="") as out:
            write_csv(scored, out)
    else:
        pq.write_table(scored, path, compression="zstd")
