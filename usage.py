"""What a user can get wrong on the command line, and how it is said: one convention for every
command.

A user error is one line on stderr, ``toolwatch COMMAND: what is wrong (and what to do)``, and a
non-zero exit; never a traceback (``toolwatch -v …`` shows one). Exit codes:

====  ========================================================================================
0     done
1     the command could not do its job with what it found (a missing store, model or input
      file — a path that names nothing is what it found, not bad usage —, a file whose
      contents it cannot use: a model, rules or scenario file that does not load or validate,
      a query the store cannot answer, a port already in use, …): :class:`UserError`
2     bad usage, caught before any work: an unknown option or a value out of range
      (argparse, with the types below), or :class:`UsageError`
70    an unexpected error inside toolwatch (a bug): still one line, ``-v`` for the traceback
130   interrupted (Ctrl-C)
141   the reader of the output went away (``toolwatch sql … | head``)
====  ========================================================================================

Commands raise :class:`UserError` / :class:`UsageError` (or return the code after printing their
own one-line message); :func:`toolwatch.cli.main` prints and maps them. Error types of the
components that describe a user's mistake (a corrupt store, a model that cannot be loaded, an
empty window) subclass :class:`UserError`, so they read the same wherever they surface.

The argparse types check a value when the command line is parsed, before a progress bar starts
or a socket is bound, and name the option in the message; a value that starts like a negative
number is kept with its option (:func:`attach_dashed_values`) so that its type says what is
wrong with it. Only the standard library is used (and ``packaging``, which the base install
always has through OpenTelemetry, to compare an extra's versions; without it only presence is
checked): every command, including the production install's, can import this module.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_BUG: Final = 70
EXIT_INTERRUPTED: Final = 130
EXIT_BROKEN_PIPE: Final = 141


def exit_code(stopped_by: signal.Signals | None) -> int:
    """A serving command's exit code once it has shut down: 130 after Ctrl-C (SIGINT), as every
    toolwatch command interrupted, 0 after a service manager's SIGTERM or a client that left."""
    return EXIT_INTERRUPTED if stopped_by == signal.SIGINT else EXIT_OK


class UserError(Exception):
    """A problem with the user's input or data, said in one line (exit code :attr:`code`)."""

    code: int = EXIT_ERROR

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(UserError):
    """Bad usage found by the command itself (an option combination argparse cannot see)."""

    code = EXIT_USAGE


def check_output(path: Path, option: str) -> None:
    """An output file a command writes after its work (``score --out``, ``workbench suite
    --json``) that it could never write is said before the work, exit 1 (input the command
    cannot use, as every command says an output path), without creating the file: it failed
    after the work before, the results lost, and ``score`` said a missing folder as bad usage."""
    if path.is_dir():
        raise UserError(f"{option}: cannot write {path}: it is a directory")
    if path.exists():  # written over in place: the file's own permission, not its folder's
        if not os.access(path, os.W_OK):
            raise UserError(f"{option}: cannot write {path}: permission denied")
        return
    folder = path.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        why = f"{folder} is not writable" if folder.is_dir() else f"no directory {folder}"
        raise UserError(f"{option}: cannot write {path}: {why}")


#: The log level of a command run without ``-v`` (a level name: WARNING, ERROR, ...; default
#: INFO), so a program that starts toolwatch as a child process (the demo's stdio MCP servers)
#: keeps the child's INFO lines off its own stderr.
ENV_LOG_LEVEL: Final = "TOOLWATCH_LOG_LEVEL"


def log_level(verbose: bool) -> int:
    """The root log level: DEBUG with ``-v``, else ``$TOOLWATCH_LOG_LEVEL``, else INFO; a name
    that is no level is bad usage, said in one line."""
    if verbose:
        return logging.DEBUG
    name = os.environ.get(ENV_LOG_LEVEL, "").strip()
    if not name:
        return logging.INFO
    level = logging.getLevelNamesMapping().get(name.upper())
    if level is None:
        raise UsageError(
            f"${ENV_LOG_LEVEL} {name!r} is not a log level (DEBUG, INFO, WARNING, ERROR)"
        )
    return level


#: DuckDB's guesses from its own catalogue ("Did you mean "pg_sequences"?"), no help to a user.
_SYSTEM_GUESS = re.compile(r'^Did you mean "(pg_|duckdb_|sqlite_|information_schema)')


def one_line(text: object) -> str:
    """``text`` on one line (DuckDB and others put hints on extra lines): lines joined by
    ' — ', without a caret line under a query or a guess from the system catalogue."""
    lines = [line.strip() for line in str(text).splitlines()]
    lines = [x for x in lines if x.strip("^ ") and not _SYSTEM_GUESS.match(x)]
    return " — ".join(lines) if lines else type(text).__name__


# ------------------------------------------------------------------------ extras

#: ``extra == "collector"`` alone (a requirement with any other condition is not checked)
_EXTRA_MARKER = re.compile(r"""^\s*extra\s*==\s*["']([\w.-]+)["']\s*$""")
#: name, [extras], version specifier (``>=1.2``, or ``(>=1.2)`` in older metadata), ; marker
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?([^;]*)(?:;(.*))?$")


@dataclass(frozen=True)
class Outdated:
    """A distribution an extra needs that is installed at a version it does not accept."""

    name: str
    required: str  # the specifier, e.g. ">=1.2"
    installed: str

    def __str__(self) -> str:
        return f"'{self.name}{self.required}' ({self.installed} is installed)"


def unmet_distributions(extra: str) -> tuple[list[str], list[Outdated]]:
    """The distributions ``toolwatch[extra]`` declares (its nested extras too) that are not
    installed, and those installed at a version the extra does not accept, so a command that
    needs them says which extra to install before it starts, not at the stage that first
    imports one (the demo after its simulation, ``replay`` on scipy; an old duckdb failed
    deep inside a query). Empty when toolwatch has no installed metadata (a bare source
    tree): the import then says what is missing."""
    try:
        declared = importlib.metadata.requires("toolwatch") or []
    except importlib.metadata.PackageNotFoundError:
        return [], []
    by_extra: dict[str, list[tuple[str, list[str], str]]] = {}
    for line in declared:
        match = _REQUIREMENT.match(line)
        marker = _EXTRA_MARKER.match(match.group(4) or "") if match else None
        if match and marker:
            nested = [e.strip() for e in (match.group(2) or "").split(",") if e.strip()]
            spec = match.group(3).strip().removeprefix("(").removesuffix(")").replace(" ", "")
            by_extra.setdefault(marker.group(1), []).append((match.group(1), nested, spec))
    missing: list[str] = []
    outdated: list[Outdated] = []
    todo, seen = [extra], set()
    while todo:
        current = todo.pop()
        seen.add(current)
        for dist, nested, spec in by_extra.get(current, []):
            if dist.lower() == "toolwatch":
                todo += [e for e in nested if e not in seen]
                continue
            if dist in missing or any(o.name == dist for o in outdated):
                continue
            version = _installed_version(dist)
            if version is None:
                missing.append(dist)
            elif spec and not _accepts(spec, version):
                outdated.append(Outdated(dist, spec, version))
    return missing, outdated


def missing_distributions(extra: str) -> list[str]:
    """The names of what ``toolwatch[extra]`` needs and lacks: not installed, or too old."""
    missing, outdated = unmet_distributions(extra)
    return missing + [o.name for o in outdated]


def unmet_line(extra: str) -> str | None:
    """What ``toolwatch[extra]`` needs and lacks, as :func:`not_installed` says it; None when
    nothing is."""
    missing, outdated = unmet_distributions(extra)
    return not_installed(missing, extra, outdated) if missing or outdated else None


def _installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _accepts(spec: str, version: str) -> bool:
    """Whether ``version`` meets ``spec`` (PEP 440; pre-releases count); True when it cannot
    tell (no ``packaging``, or a version or specifier it cannot read): presence is checked."""
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.version import InvalidVersion
    except ImportError:
        return True
    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def not_installed(names: Sequence[str], extra: str, outdated: Sequence[Outdated] = ()) -> str:
    """One line: ``names`` (distributions) are not installed, ``outdated`` too old, and the
    extra that brings them (upgrading with ``-U`` when one is too old)."""
    target = f"'toolwatch[{extra}]'" if extra else "toolwatch"
    hint = f"pip install -U {target}" if outdated else f"pip install {target}"
    parts = []
    if names:
        which = "which is" if len(names) == 1 else "which are"
        listed = ", ".join(repr(n) for n in names[:3]) + (
            f" and {len(names) - 3} more" * (len(names) > 3)
        )
        parts.append(f"{listed}, {which} not installed")
    if outdated:
        parts.append(
            ", ".join(str(o) for o in outdated[:3])
            + (f" and {len(outdated) - 3} more too old" * (len(outdated) > 3))
        )
    return f"needs {', and '.join(parts)} ({hint})"


# ------------------------------------------------------------------------ argparse value types

#: A value that starts like a negative number: "-0.1,0.5" (a pair of shares), "-1e-3".
_DASHED_NUMBER = re.compile(r"-\.?\d")
#: The negative numbers argparse itself takes as a value (its own rule): every other value
#: starting with '-' it reads as an option, and says "expected one argument".
_ARGPARSE_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def attach_dashed_values(argv: list[str]) -> list[str]:
    """``argv`` with ``--option -0.1,0.5`` written ``--option=-0.1,0.5``, so the option's own
    type refuses a negative value with the real reason, as it does for the ``=`` form, instead
    of argparse's "expected one argument". Only a value starting like a negative number that
    argparse would misread is attached, only to a long option, and nothing after ``--``."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        prev = out[-1] if out else ""
        if (
            prev.startswith("--")
            and len(prev) > 2
            and "=" not in prev
            and _DASHED_NUMBER.match(arg)
            and not _ARGPARSE_NEGATIVE.match(arg)
        ):
            out[-1] = f"{prev}={arg}"
        else:
            out.append(arg)
    return out


def port(text: str) -> int:
    """A TCP port, 0-65535 (0 = any free port)."""
    value = integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (0-65535; 0 = any free port)")
    return value


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """A whole number ≥ 1."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def non_negative_int(text: str) -> int:
    """A whole number ≥ 0."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or more")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number")
    return value


def share(text: str) -> float:
    """A share of something, 0 ≤ x < 1 (a target false-alarm rate of 0 is a level too)."""
    value = _number(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be a share from 0 to below 1, e.g. 0.05")
    return value


def positive_share(text: str) -> float:
    """A share strictly between 0 and 1."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be a share between 0 and 1, e.g. 0.05")
    return value


def non_negative_float(text: str) -> float:
    """A finite number ≥ 0."""
    value = _number(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be 0 or a positive number")
    return value
