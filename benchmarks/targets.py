"""The benchmarks' one convention for targets (``benchmarks/README.md``), shared by the scripts.

Each target is printed as one line with the figure reached and ``met`` or ``MISSED``; a script
exits 1 when any target is missed, unless ``--no-fail`` is given (absolute rates move with the
load of a shared machine, so a run may only report). Not a package module: the scripts import it
from their own folder (``python benchmarks/<name>.py`` puts that folder first on the path).
"""

from __future__ import annotations

import argparse
import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from toolwatch.cli import Parser

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
}


def description(doc: str | None) -> str:
    """A script's ``--help`` description: its docstring's first paragraph, whole (its first
    line alone often stops mid-sentence)."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def command_line(doc: str | None) -> argparse.ArgumentParser:
    """A script's parser: ``--help`` opens with its docstring's first paragraph, and a wrong
    command line (an unknown option, a count of 0) is one line and exit 2, as every toolwatch
    command says it (``toolwatch.usage``), not argparse's usage block or a traceback later."""
    return Parser(description=description(doc))


def add_no_fail(parser: argparse.ArgumentParser) -> None:
    """The one flag that turns a missed target into a report only."""
    parser.add_argument(
        "--no-fail", action="store_true", help="exit 0 even when a target is missed"
    )


@dataclass
class Targets:
    """Targets checked in one run, in the order they were checked."""

    lines: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    def check(self, name: str, value: float, op: str, target: float, unit: str = "") -> bool:
        """Records and returns whether ``value op target``; ``unit`` follows both numbers."""
        if op not in _OPS:
            raise ValueError(f"unknown comparison {op!r}: use one of {', '.join(_OPS)}")
        met = _OPS[op](value, target)
        self.lines.append(
            f"target {name}: {_number(value)}{unit} (target {op} {_number(target)}{unit}) -> "
            f"{'met' if met else 'MISSED'}"
        )
        if not met:
            self.missed.append(name)
        return met

    def report(self) -> str:
        """Every target's line, then a summary line."""
        summary = f"targets: {len(self.lines) - len(self.missed)}/{len(self.lines)} met" + (
            f"; MISSED: {'; '.join(self.missed)}" if self.missed else ""
        )
        return "\n".join([*self.lines, summary])

    def exit_code(self, no_fail: bool) -> int:
        """1 when a target was missed and ``--no-fail`` was not given, else 0."""
        return 1 if self.missed and not no_fail else 0


def _number(value: float) -> str:
    if abs(value) >= 1000 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.3g}"
