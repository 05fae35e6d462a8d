"""Where the store is and what a table may be called: the standard library only, so a command's
``--help`` (which builds the ``--store`` option) loads neither DuckDB nor Arrow."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from toolwatch.usage import UserError

ENV_STORE = "TOOLWATCH_STORE"
TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class StoreError(UserError, RuntimeError):
    """The store is missing, unreadable or holds a corrupt file; the message names it."""


def default_store_path() -> Path:
    """``$TOOLWATCH_STORE`` if set, else ``~/.toolwatch/store``."""
    env = os.environ.get(ENV_STORE)
    return Path(env).expanduser() if env else Path.home() / ".toolwatch" / "store"


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--store`` option every command shares (one wording, one default)."""
    parser.add_argument(
        "--store", help=f"store directory (default: ${ENV_STORE} or ~/.toolwatch/store)"
    )


def resolve_store(path: str | os.PathLike[str] | None) -> Path:
    return Path(path).expanduser() if path else default_store_path()


def check_table_name(name: str) -> None:
    """:class:`StoreError` for a name that is no table name (a path, an upper-case name)."""
    if not TABLE_NAME.match(name):
        raise StoreError(
            f"invalid table name {name!r} (lower-case letters, digits and _, starting with a "
            "letter)"
        )
