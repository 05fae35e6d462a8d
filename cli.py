"""The ``toolwatch`` command line: one entry point, one subcommand per job.

Subcommands live in the component that owns them; this module only maps names to modules and
imports a module when its subcommand is used, so ``toolwatch --help`` needs no extras and a
missing extra is reported as a clear install hint. A subcommand module provides
``HELP: str``, ``add_arguments(parser)`` and ``run(args) -> int``.

Every command follows one error convention (:mod:`toolwatch.usage`): a user error is one line
on stderr and a non-zero exit code (1: could not do the job, 2: bad usage), never a traceback;
``-v`` (before or after the command name) adds the traceback and debug logging. :func:`main`
enforces it for whatever a command raises, so no command has to catch everything itself.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from toolwatch.usage import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UserError,
    attach_dashed_values,
    log_level,
    not_installed,
    one_line,
    unmet_line,
)

#: subcommand -> (module, extra that provides its dependencies, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": (
        "toolwatch.app.commands.demo",
        "all",
        "simulate, train, experiment, then two live alerts",
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
    "stats": (
        "toolwatch.collector.commands.stats",
        "collector",
        "show the corpus's facts beside the study's",
    ),
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
    "pins": (
        "toolwatch.detection.commands.pins",
        "collector",
        "list, approve and export pinned tool digests",
    ),
    "rules": (
        "toolwatch.detection.commands.rules",
        "collector",
        "validate and try alert rules (SQL with a threshold)",
    ),
    "experiment": (
        "toolwatch.injection.commands.experiment",
        "detection",
        "run the study's injection experiment on the store",
    ),
    "replay": (
        "toolwatch.injection.commands.replay",
        "detection",
        "replay a stored corpus through the live scorer, week by week",
    ),
    "proxy": (
        "toolwatch.injection.commands.proxy",
        "",
        "run the MCP fault-injection proxy in front of a server",
    ),
    "serve-scenario": (
        "toolwatch.injection.commands.serve_scenario",
        "",
        "serve a scenario's tools as an MCP server",
    ),
    "scenarios": (
        "toolwatch.injection.commands.scenarios",
        "",
        "list, validate and show fault scenarios",
    ),
    "workbench": (
        "toolwatch.injection.commands.workbench",
        "detection",
        "run scenarios against agents: reproduce, intervene, mitigate",
    ),
    "app": ("toolwatch.app.commands.app", "app", "open the Streamlit dashboard"),
}


def _load(name: str) -> ModuleType:
    module_name, extra, _ = COMMANDS[name]
    unmet = unmet_line(extra) if extra else None
    if unmet:  # before the import: a command may import a part of its extra only when it runs
        raise UserError(unmet)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        hint = _missing_module(exc, extra)
        if hint is None:
            raise
        raise hint from exc


def _missing_module(exc: ModuleNotFoundError, extra: str) -> UserError | None:
    """The install hint for a third-party module that is absent; None for one of our own."""
    missing = (exc.name or "a dependency").partition(".")[0]  # the package to install
    return None if missing.startswith("toolwatch") else UserError(not_installed([missing], extra))


class Parser(argparse.ArgumentParser):
    """argparse with the convention's one-line error (argparse prints the usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


VERBOSE_HELP = "debug logging, and the traceback of an error"


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = Parser(
        prog="toolwatch",
        description="Content-free telemetry and anomaly detection for LLM agents using MCP tools.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Only the chosen subcommand's module is imported; the others show their one-line help.
    chosen = next((a for a in argv if a in COMMANDS), None)
    for name, (_, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        # `toolwatch sql -v …` works too; SUPPRESS keeps a `toolwatch -v sql` from being reset
        _add_verbose(p)
        if name == chosen:
            module = _load(name)
            module.add_arguments(p)
            for action in _subcommands(p):  # `toolwatch store verify -v` works too
                _add_verbose(action)
            p.set_defaults(_run=module.run)
    return parser


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS keeps a `toolwatch -v sql` from being reset by the subcommand's default
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
    )


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every nested sub-action parser of ``parser`` (``store verify``, ``workbench run``, ...)."""
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:  # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += [sub, *_subcommands(sub)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if a in COMMANDS), None)
    verbose = any(a in ("-v", "--verbose") for a in args_list)  # until the line is parsed
    try:
        parser = build_parser(args_list)
        args = parser.parse_args(attach_dashed_values(args_list))
        verbose = bool(args.verbose)
        logging.basicConfig(
            level=log_level(verbose),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        if not getattr(args, "_run", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `toolwatch sql ... | head`: the reader left; stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):  # argparse's exit (its line is out)
            raise
        return _report(chosen, str(exc.code), exc, verbose, EXIT_ERROR)
    except UserError as exc:
        return _report(chosen, one_line(exc), exc, verbose, exc.code)
    except ModuleNotFoundError as exc:  # a dependency imported only when the command runs
        hint = _missing_module(exc, COMMANDS[chosen][1] if chosen else "")
        if hint is None:
            return _report_bug(chosen, exc, verbose)
        return _report(chosen, str(hint), exc, verbose, EXIT_ERROR)
    except OSError as exc:  # the environment said no: a busy port, a permission, a full disk
        return _report(chosen, one_line(exc), exc, verbose, EXIT_ERROR)
    except Exception as exc:
        return _report_bug(chosen, exc, verbose)


def _report_bug(command: str | None, exc: Exception, verbose: bool) -> int:
    what = f"unexpected {type(exc).__name__}: {one_line(exc)}"
    hint = "" if verbose else " (a bug: `toolwatch -v …` shows the traceback to report)"
    return _report(command, what + hint, exc, verbose, EXIT_BUG)


def _report(command: str | None, message: str, exc: BaseException, verbose: bool, code: int) -> int:
    """Print the convention's one line (after the traceback under ``-v``); return ``code``."""
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    prefix = f"toolwatch {command}: " if command else "toolwatch: "
    line = one_line(message)
    print(line if line.startswith("toolwatch") else prefix + line, file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
