"""``toolwatch demo``: simulate → train → experiment → live alert → exfiltration alert →
dashboard command.

    toolwatch demo [--store PATH] [--sessions N] [--seeds N] [--bootstrap N] [--quick]

See :mod:`toolwatch.app.demo.pipeline` for the stages. Exit status 0 when every stage ran and
the live alerts behaved (runaway alarmed, clean did not; the exfiltrating call raised the
provenance alert naming its source tool); 1 with a message naming the stage
otherwise; 2 for bad options.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolwatch.app.demo.options import DEFAULT_STORE, FULL, QUICK, DemoError, DemoOptions
from toolwatch.usage import non_negative_int, positive_int

HELP = "simulate, train, experiment, then two live alerts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help=f"demo store directory, wiped first if it is a previous demo store; any other "
        f"non-empty directory is refused (default ./{DEFAULT_STORE})",
    )
    parser.add_argument(
        "--sessions",
        type=positive_int,
        help=f"simulated sessions (default {FULL['sessions']}; --quick {QUICK['sessions']})",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
        help=f"injection seeds of the experiment (default {FULL['seeds']}; "
        f"--quick {QUICK['seeds']})",
    )
    parser.add_argument(
        "--bootstrap",
        type=non_negative_int,
        help=f"bootstrap resamples (default {FULL['bootstrap']}; --quick {QUICK['bootstrap']})",
    )
    parser.add_argument(
        "--retries",
        type=positive_int,
        help=f"retries of the runaway agent's failing call (default {FULL['retries']}; "
        f"--quick {QUICK['retries']})",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed of the corpus and the agent's pacing (default 0)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smaller run for CI (sizes above unless given explicitly)",
    )


def options_from(args: argparse.Namespace) -> DemoOptions:
    sizes = QUICK if args.quick else FULL
    return DemoOptions(
        store=Path(args.store),
        sessions=args.sessions if args.sessions is not None else sizes["sessions"],
        seeds=args.seeds if args.seeds is not None else sizes["seeds"],
        bootstrap=args.bootstrap if args.bootstrap is not None else sizes["bootstrap"],
        retries=args.retries if args.retries is not None else sizes["retries"],
        seed=args.seed,
    )


def run(args: argparse.Namespace) -> int:
    try:
        options = options_from(args)
    except DemoError as exc:
        print(f"toolwatch demo: {exc}", file=sys.stderr)
        return 2
    from toolwatch.app.demo.pipeline import run_demo  # `demo --help` needs none of its stages

    try:
        run_demo(options)
    except DemoError as exc:
        print(f"toolwatch demo: stage {exc.stage!r} failed: {exc}", file=sys.stderr)
        return 1
    return 0
