"""Read-only SQL over a store: which statements may run, and a connection that cannot write.

Both places a user's SQL reaches the store — ``toolwatch sql`` and the app's Explore page — use
these: only ``SELECT`` (``WITH … SELECT``, ``DESCRIBE``, ``SUMMARIZE``, ``SHOW`` parse as
SELECT) and ``EXPLAIN`` statements run, and the connection is locked down (file access limited
to the store's directory, settings locked), so a query can neither write a file (``COPY``,
``EXPORT``, ``ATTACH``) — not even a Parquet file into the store's own tables — nor read one
outside the store, nor undo those settings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import duckdb

#: Statement types a read-only query may be.
READ_ONLY: Final = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
_WORD: Final = re.compile(r"[A-Za-z_]+")


class NotReadOnly(ValueError):
    """The statement would change something; the message names its kind."""


def check_statement(statement: duckdb.Statement) -> str:
    """The statement's SQL, or :class:`NotReadOnly` naming it by :func:`leading_keyword`."""
    if _statement_type(statement) not in READ_ONLY:
        kind = leading_keyword(statement)
        raise NotReadOnly(f"read-only: only SELECT and EXPLAIN queries run here, not {kind}")
    return str(statement.query)


def leading_keyword(statement: duckdb.Statement) -> str:
    """The keyword the statement opens with, upper-cased (``INSTALL``, ``FORCE CHECKPOINT``):
    what the user typed, where DuckDB's statement type would say ``LOAD`` or ``CALL``. Opening
    with ``WITH`` (``WITH … INSERT``) or no word at all, the statement type names it."""
    query = str(statement.query)
    kind = str(_statement_type(statement) or "a statement").rsplit(".", 1)[-1]
    words: list[str] = []
    for position, token in duckdb.tokenize(query):
        if token == duckdb.token_type.comment:
            continue
        word = _WORD.match(query, position)
        if word is None or token != duckdb.token_type.keyword:
            break
        words.append(word.group().upper())
        if words[0] != "FORCE" or len(words) == 2:
            break
    if not words or words[0] == "WITH":
        return kind
    return " ".join(words)


def _statement_type(statement: duckdb.Statement) -> duckdb.StatementType | None:
    """DuckDB's type of the statement; None for one its Python binding has no name for
    (``UPDATE EXTENSIONS`` raised "29 is not a valid StatementType", exit 70)."""
    try:
        return statement.type
    except ValueError:
        return None


def lock_down(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """No file access outside ``root``, no writes through it, no extension installs, settings
    locked (after the store's views are made)."""
    allowed = str(root.resolve()).replace("'", "''")
    con.execute(f"SET allowed_directories = ['{allowed}/']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
