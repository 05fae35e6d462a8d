"""The CLI's parsers as a user reaches them: a subcommand's and each of its sub-actions'
(``store verify``), for tests that hold the docs and ``--help`` to the parser itself."""

from __future__ import annotations

import argparse

from toolwatch import cli


def command_parsers(command: str) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """A subcommand's parser and its sub-actions' (``store verify``), keyed by their path."""
    top = cli.build_parser([command])
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found[path] = parser
        for action in parser._actions:  # argparse has no public way to list sub-actions
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk((*path, name), child)

    walk((), top)
    return {path[1:]: parser for path, parser in found.items() if path[:1] == (command,)}


def all_parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every subcommand's parsers, keyed by the full path (``("store", "verify")``)."""
    return {
        (name, *path): parser
        for name in cli.COMMANDS
        for path, parser in command_parsers(name).items()
    }
