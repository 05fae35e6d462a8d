"""``toolwatch replay``: drive a stored corpus through the live scorer in time order.

    toolwatch replay [--store PATH] [--split-shares 0.44,0.07 | --split-dates A,B]
        [--min-calls 30] [--target-fa 0.05] [--seeds 5] [--kinds burst,runaway_retry,...]
        [--model-config KEY=VALUE]... [--half-life-days 14] [--floor-streams 0]
        [--quarantine-hours 24] [--novelty-streams 3] [--rerun RUN_ID] [--no-save] [--json]

What false-alarm rate will alerts give, week after week, and does the adaptive model hold it
while it still catches bursts and runaway loops? The test split is replayed as if it arrived
now (:mod:`toolwatch.injection.experiment.replay`), with the frozen model beside it. The result
is saved in the store's ``replays`` table under a new run id, as ``toolwatch experiment`` saves
its own (the app's Replay page shows it); ``--rerun`` repeats a saved run exactly.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from toolwatch.collector.store.location import add_store_argument
from toolwatch.detection.calls.split_options import add_split_arguments
from toolwatch.detection.cues.names import CUE_SETS
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.model.adaptive_config import (
    DAY_S,
    MAX_SPAN_DAYS,
    AdaptiveConfig,
    add_adaptive_arguments,
)
from toolwatch.detection.model.overrides import add_model_config_argument, model_overrides
from toolwatch.injection.experiment.saved_runs import (
    refuse_options_beside_rerun,
    require_writable,
    saved,
    saved_as_line,
    warn_if_data_changed,
)
from toolwatch.usage import UserError, positive_float, positive_int, positive_share

HELP = "replay a stored corpus through the live scorer, week by week"
log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    add_split_arguments(parser)
    parser.add_argument(
        "--target-fa",
        type=positive_share,
        default=0.05,
        help="share of normal streams the threshold lets alarm (default 0.05)",
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=5, help="injection seeds 0..N-1 (default 5)"
    )
    parser.add_argument(
        "--kinds",
        help="comma-separated kinds injected into the replayed weeks "
        "(default: burst,runaway_retry,control_same_response_burst)",
    )
    parser.add_argument(
        "--statistic",
        default="all_cusum",
        choices=[stat_column(s, d) for s in CUE_SETS for d in DETECTORS],
        help="the statistic alerts watch (default all_cusum)",
    )
    parser.add_argument(
        "--batch-seconds",
        type=batch_seconds,
        default=60.0,
        help="event time per batch handed to the live scorer, as the collector commits (60)",
    )
    add_model_config_argument(parser)
    add_adaptive_arguments(parser)
    parser.add_argument(
        "--rerun",
        metavar="RUN_ID",
        help="repeat a saved replay exactly: its saved configuration replaces the options above",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--save",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the results in the store's replays table (default: yes)",
    )


def batch_seconds(text: str) -> float:
    """A positive span of event time, at most the adaptive knobs' longest (event time is kept
    in whole microseconds: 1e13 s overflowed the batching, exit 70)."""
    value = positive_float(text)
    if value > MAX_SPAN_DAYS * DAY_S:
        raise argparse.ArgumentTypeError(
            f"{text} must be at most {MAX_SPAN_DAYS * DAY_S:,.0f} seconds "
            f"({MAX_SPAN_DAYS:,.0f} days)"
        )
    return value


def run(args: argparse.Namespace) -> int:
    # imported here: `replay --help` needs no tqdm, numpy, Arrow, DuckDB or scorer
    from tqdm import tqdm

    from toolwatch.collector.stats.corpus import provenance_note
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.injection.experiment import ExperimentConfig, load_calls
    from toolwatch.injection.experiment.replay import REPLAY_KINDS, ReplayConfig, run_replay
    from toolwatch.injection.experiment.replay_report import render, summary
    from toolwatch.injection.experiment.replay_storage import load_replay_run, save_replay
    from toolwatch.injection.experiment.results import finite_tree
    from toolwatch.injection.experiment.storage import data_changed

    store = Store(args.store)
    saved_split: dict[str, Any] | None = None
    try:
        if args.rerun:
            refuse_options_beside_rerun(args, add_arguments, "replay", ("store", "json", "save"))
            config, saved_split = load_replay_run(store, args.rerun)
        else:
            kinds = tuple(k.strip() for k in args.kinds.split(",")) if args.kinds else REPLAY_KINDS
            experiment = ExperimentConfig(
                split_dates=args.split_dates,
                split_shares=args.split_shares,
                min_calls=args.min_calls,
                include_artefacts=args.include_client_artefacts,
                seeds=tuple(range(args.seeds)) if args.seeds > 0 else (),
                target_fa=args.target_fa,
                kinds=kinds,
                model=model_overrides(args.model_config),
            )
            config = ReplayConfig(
                experiment=experiment,
                adaptive=AdaptiveConfig.from_args(args),
                statistic=args.statistic,
                batch_s=args.batch_seconds,
                replay_kinds=kinds,
            )
        calls = load_calls(store)  # an empty or missing store fails before the bar starts
        if args.save:  # said now, not after the whole replay
            require_writable(store, "replay")
        with tqdm(
            total=1, desc="replay", unit="step", file=sys.stderr, leave=False, disable=None
        ) as bar:
            result = run_replay(calls, config)
            bar.update()
    except UserError:
        raise  # cli.main says it: one line, its exit code, the traceback under -v
    except ValueError as exc:  # the scorer rejected a column of the stored calls (it names it)
        raise UserError(str(exc)) from exc
    if args.save and not saved(
        "replay", lambda: save_replay(store, result), result.run_id, store.root
    ):
        return 1
    if saved_split is not None:
        warn_if_data_changed("replay", args.rerun, data_changed(saved_split, result.split))
    if args.json:
        print(json.dumps(finite_tree(summary(result)), indent=2, allow_nan=False))
    else:
        print(provenance_note(calls))
        sys.stdout.write(render(result))
        if args.save:
            more = "; the app's Replay page shows it"
            print(saved_as_line("replay", args.store, store, result.run_id, more))
    return 0
