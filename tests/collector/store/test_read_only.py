"""Which statements a read-only query may be, and how a refused one is named."""

from __future__ import annotations

import duckdb
import pytest

from toolwatch.collector.store.read_only import NotReadOnly, check_statement

PREFIX = "read-only: only SELECT and EXPLAIN queries run here, not "


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("INSTALL httpfs", "INSTALL"),  # DuckDB's type: LOAD
        ("checkpoint", "CHECKPOINT"),  # DuckDB's type: CALL
        ("FORCE CHECKPOINT", "FORCE CHECKPOINT"),
        ("  -- why\n/* a /* nested */ comment */ force install httpfs", "FORCE INSTALL"),
        ("IMPORT DATABASE 'x'", "IMPORT"),  # DuckDB's type: PRAGMA
        ("use memory", "USE"),  # DuckDB's type: SET
        ("LOAD httpfs", "LOAD"),
        ("COPY (SELECT 1) TO 'x.csv'", "COPY"),
        ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "INSERT"),  # the type: not WITH
        ("UPDATE EXTENSIONS", "UPDATE"),  # a type the binding cannot name: ValueError, exit 70
    ],
)
def test_a_refused_statement_is_named_by_its_own_keyword(sql: str, named: str) -> None:
    """INSTALL was refused as "not LOAD" and CHECKPOINT as "not CALL": DuckDB's statement type,
    not the statement typed."""
    (statement,) = duckdb.extract_statements(sql)
    with pytest.raises(NotReadOnly) as refused:
        check_statement(statement)
    assert str(refused.value) == PREFIX + named


@pytest.mark.parametrize(
    "sql", ["SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a", "EXPLAIN SELECT 1", "SHOW tables"]
)
def test_reads_pass(sql: str) -> None:
    (statement,) = duckdb.extract_statements(sql)
    assert check_statement(statement) == sql
