"""The ``toolwatch`` command line: one entry point, one subcommand per job.

Subcommands live in the component that owns them; this module only maps names to modules and
imports a module when its subcommand is used, so ``toolwatch --help`` needs no extras and a
missing extra is reported as a clear install hint. A subcommand module provides
``HELP: str``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

#: subcommand -> (module, extra that provides its dependencies, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": (
        "toolwatch.app.commands.demo",
        "all",
        "simulate, train, experiment, then a live alert",
    ),
    "collector": (
        "toolwatch.detection.commands.collector",
        "collector",
        "receive OTLP/HTTP spans into the store",
    ),
    "sql": (
        "toolwatch.collector.commands.sql",
        "collector",
        "run SQL over the store and print a table",
    ),
    "store": (
        "toolwatch.collector.commands.store",
        "collector",
        "verify, compact or describe (info) the store",
    ),
    "import": (
        "toolwatch.collector.commands.import_transcripts",
        "collector",
        "import agent transcripts as call records",
    ),
    "simulate": (
        "toolwatch.collector.commands.simulate",
        "collector",
        "write a simulated workload (labelled simulated)",
    ),
    "stats": ("toolwatch.collector.commands.stats", "collector", "corpus facts beside the study's"),
    "train": (
        "toolwatch.detection.commands.train",
        "detection",
        "fit the normal model and thresholds",
    ),
    "score": ("toolwatch.detection.commands.score", "detection", "score a stored window"),
    "scan": (
        "toolwatch.detection.commands.scan",
        "detection",
        "rank sessions flagged at the operating point",
    ),
    "experiment": (
        "toolwatch.injection.commands.experiment",
        "detection",
        "the study's injection experiment",
    ),
    "proxy": ("toolwatch.injection.commands.proxy", "", "MCP fault-injection proxy"),
    "serve-scenario": (
        "toolwatch.injection.commands.serve_scenario",
        "",
        "serve a scenario's tools as an MCP server",
    ),
    "scenarios": (
        "toolwatch.injection.commands.scenarios",
        "",
        "list and validate fault scenarios",
    ),
    "workbench": (
        "toolwatch.injection.commands.workbench",
        "detection",
        "reproduce -> intervene -> mitigate runs",
    ),
    "app": ("toolwatch.app.commands.app", "app", "open the Streamlit dashboard"),
}


def _load(name: str) -> ModuleType:
    module_name, extra, _ = COMMANDS[name]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or "a dependency"
        if missing.startswith("toolwatch"):
            raise
        hint = f"pip install 'toolwatch[{extra}]'" if extra else "pip install toolwatch"
        raise SystemExit(
            f"toolwatch {name}: needs {missing!r}, which is not installed ({hint})"
        ) from exc


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwatch",
        description="Content-free telemetry and anomaly detection for LLM agents using MCP tools.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Only the chosen subcommand's module is imported; the others show their one-line help.
    chosen = next((a for a in argv if a in COMMANDS), None)
    for name, (_, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = _load(name)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `toolwatch sql ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
