"""``toolwatch experiment``: the study's injection experiment on the calls of a store."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from typing import Any

from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.detection.calls.split_options import add_split_arguments
from toolwatch.detection.model.overrides import add_model_config_argument, model_overrides
from toolwatch.injection.experiment.saved_runs import (
    refuse_options_beside_rerun,
    require_writable,
    saved,
    saved_as_line,
    warn_if_data_changed,
)
from toolwatch.usage import UserError, non_negative_int, positive_int, share
from toolwatch.words import counted

HELP = "run the study's injection experiment on the store"
log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    add_split_arguments(parser)
    parser.add_argument(
        "--head",
        type=non_negative_int,
        default=10,
        help="insert no earlier than this call (default 10, the study's)",
    )
    parser.add_argument(
        "--tail",
        type=non_negative_int,
        default=10,
        help="leave at least this many calls after the insertion point (default 10); "
        "--min-calls must be at least head + tail + 1",
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=5, help="random seeds 0..N-1 (default 5)"
    )
    parser.add_argument(
        "--target-fa",
        type=share,
        default=None,
        help="target share of normal test streams that alarm (default 0.05; with --rerun, the "
        "saved run at this target instead of its own: what the app's Detection page shows at it)",
    )
    parser.add_argument(
        "--bootstrap",
        type=non_negative_int,
        default=2000,
        help="bootstrap resamples (default 2000; 0: no intervals)",
    )
    parser.add_argument(
        "--kinds",
        help="comma-separated subset of anomaly kinds (default: all seven and both controls)",
    )
    parser.add_argument(
        "--ablation",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run with response ids dropped (default: yes)",
    )
    add_model_config_argument(parser)
    parser.add_argument(
        "--rerun",
        metavar="RUN_ID",
        help="repeat a saved run exactly: its saved configuration replaces the options above "
        "(all but --target-fa; giving one of the others beside it is an error)",
    )
    parser.add_argument(
        "--write-injected",
        action="store_true",
        help="also append the first seed's injected sessions (labelled with their kind) to "
        "the store's calls, e.g. to browse them in the dashboard",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--save",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save results in the store's experiments / experiment_runs tables (default: yes)",
    )


def run(args: argparse.Namespace) -> int:
    # imported here: `experiment --help` needs no numpy, Arrow, DuckDB or scorer
    from toolwatch.collector.sources.delivery import append_new_calls
    from toolwatch.collector.stats.corpus import provenance_note
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.injection.experiment import (
        ExperimentConfig,
        ExperimentError,
        load_calls,
        run_with_progress,
        save_result,
    )
    from toolwatch.injection.experiment.report import render, summary
    from toolwatch.injection.experiment.runs import injected_calls
    from toolwatch.injection.experiment.storage import data_changed, load_run

    store = Store(args.store)
    saved_split: dict[str, Any] | None = None
    try:
        if args.rerun:
            kept = ("store", "target_fa", "json", "save", "write_injected")
            refuse_options_beside_rerun(args, add_arguments, "experiment", kept)
            config, saved_split = load_run(store, args.rerun)
            if args.target_fa is not None:  # the same run at another target
                config = dataclasses.replace(config, target_fa=args.target_fa)
        else:
            kinds = tuple(k.strip() for k in args.kinds.split(",")) if args.kinds else None
            config = ExperimentConfig(
                model=model_overrides(args.model_config),
                split_dates=args.split_dates,
                split_shares=args.split_shares,
                min_calls=args.min_calls,
                include_artefacts=args.include_client_artefacts,
                head=args.head,
                tail=args.tail,
                seeds=tuple(range(args.seeds)) if args.seeds > 0 else (),
                bootstrap=args.bootstrap,
                ablation=args.ablation,
                **({} if args.target_fa is None else {"target_fa": args.target_fa}),
            )
            if kinds:
                config = dataclasses.replace(config, kinds=kinds)
        calls = load_calls(store)
        if args.save or args.write_injected:  # said now, not after the whole run
            require_writable(store, "experiment")
        result = run_with_progress(calls, config)
    except UserError:
        raise  # cli.main says it: one line, its exit code, the traceback under -v
    except ValueError as exc:  # the scorer rejected a column of the stored calls (it names it)
        raise UserError(str(exc)) from exc
    if args.save and not saved(
        "experiment", lambda: save_result(store, result), result.run_id, store.root
    ):
        return 1
    if args.write_injected:
        try:  # by session id: the same seed's copies are there already after a first write
            written = append_new_calls(store, injected_calls(calls, config), key="session_id")
        except (ExperimentError, StoreError, OSError) as exc:
            print(f"toolwatch experiment: could not write injected calls: {exc}", file=sys.stderr)
            return 1
        log.info(
            "wrote %s of labelled injected sessions to %s (%d already there)",
            counted(written.calls.num_rows, "call"),
            store.root,
            written.already_stored,
        )
    if saved_split is not None:
        warn_if_data_changed("experiment", args.rerun, data_changed(saved_split, result.split))
    if args.json:
        print(json.dumps(summary(result), indent=2, sort_keys=False))
    else:
        print(provenance_note(calls))
        sys.stdout.write(render(result))
        if args.save:
            print(saved_as_line("experiment", args.store, store, result.run_id))
    return 0
