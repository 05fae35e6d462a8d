"""Explore: a user's SQL over the store's views, read-only, bounded, with saved questions.

:func:`run_query` opens the store (scoped to the global time range when asked), locks the
connection down and runs one statement:

* **read-only**: only ``SELECT`` (``WITH … SELECT``, ``DESCRIBE``, ``SUMMARIZE``, ``SHOW``) and
  ``EXPLAIN`` statements run; DuckDB's file access is limited to the store's own directory and
  its configuration is locked, so a query can neither write a file (``COPY``, ``EXPORT``,
  ``ATTACH``) nor read one outside the store, nor undo those settings;
* **bounded**: at most ``limit`` rows are fetched (the result says when there were more), and a
  query still running after ``timeout_s`` is interrupted.

No Streamlit here: the page (:mod:`toolwatch.app.dashboard.explore_page`) draws what these
functions return, and the tests call them directly.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import duckdb
import pandas as pd
import pyarrow as pa

from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard.time_range import TimeSpan
from toolwatch.collector.store.parquet_store import Store
from toolwatch.collector.store.read_only import check_statement, lock_down
from toolwatch.usage import one_line

DEFAULT_LIMIT: Final = 1_000
MAX_LIMIT: Final = 100_000
DEFAULT_TIMEOUT_S: Final = 30.0


@dataclass(frozen=True)
class SavedQuery:
    """An example that answers a question a practitioner asks (shown beside the editor)."""

    key: str
    title: str
    sql: str


SAVED: Final[tuple[SavedQuery, ...]] = (
    SavedQuery(
        "failures-per-tool",
        "Failures per tool this week",
        """-- calls and failures per tool over the last 7 days (UTC), most failures first
SELECT tool,
       coalesce(server, '(built-in)') AS server,
       count(*) AS calls,
       count(*) FILTER (WHERE failed) AS failures,
       round(100.0 * count(*) FILTER (WHERE failed) / count(*), 1) AS failure_pct
FROM calls
WHERE start_time >= now() - INTERVAL 7 DAY
GROUP BY ALL
HAVING count(*) FILTER (WHERE failed) > 0
ORDER BY failures DESC, calls DESC, tool""",
    ),
    SavedQuery(
        "slowest-servers",
        "Slowest MCP servers",
        """-- MCP servers by median call duration (ms); p95 shows the tail
SELECT server,
       count(*) AS calls,
       round(median(duration_us) / 1000, 1) AS median_ms,
       round(quantile_cont(duration_us, 0.95) / 1000, 1) AS p95_ms,
       round(max(duration_us) / 1000, 1) AS max_ms
FROM calls
WHERE server IS NOT NULL AND duration_us IS NOT NULL
GROUP BY server
ORDER BY median_ms DESC, server""",
    ),
    SavedQuery(
        "most-retries",
        "Sessions with the most retries",
        """-- a retry: a call of the same tool right after that tool failed, in the same stream
WITH ordered AS (
  SELECT session_id, agent_id, tool, failed,
         lag(tool) OVER w AS previous_tool, lag(failed) OVER w AS previous_failed
  FROM calls
  WINDOW w AS (PARTITION BY session_id, agent_id ORDER BY start_time, seq)
)
SELECT session_id,
       count(*) FILTER (WHERE previous_failed AND tool = previous_tool) AS retries,
       count(*) AS calls,
       count(*) FILTER (WHERE failed) AS failures
FROM ordered
GROUP BY session_id
HAVING retries > 0
ORDER BY retries DESC, session_id
LIMIT 50""",
    ),
    SavedQuery(
        "calls-per-hour",
        "Calls and failures per hour",
        """-- traffic per UTC hour (use the sidebar's time range to zoom)
SELECT date_trunc('hour', start_time) AS hour,
       count(*) AS calls,
       count(*) FILTER (WHERE failed) AS failures
FROM calls
GROUP BY ALL
ORDER BY hour""",
    ),
)


@dataclass(frozen=True)
class QueryResult:
    """What a query returned: at most ``limit`` rows, whether there were more, how long it
    took, or the one-line error that stopped it."""

    frame: pd.DataFrame
    truncated: bool = False
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The single statement of ``sql``, or raise ``ValueError`` saying why it cannot run."""
    try:
        statements = [s for s in con.extract_statements(sql) if s.query.strip()]
    except duckdb.Error as exc:
        raise ValueError(_message(exc)) from exc
    if not statements:
        raise ValueError("write a query, e.g. SELECT * FROM sessions LIMIT 10")
    if len(statements) > 1:
        raise ValueError(f"one statement at a time (this has {len(statements)})")
    return check_statement(statements[0])


def run_query(
    root: Path,
    sql: str,
    *,
    span: TimeSpan | None = None,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> QueryResult:
    """Run ``sql`` read-only on the store (see the module docstring)."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    started = time.perf_counter()
    with _private(root, span) as con:
        lock_down(con, root)
        try:
            statement = check_read_only(con, sql)
        except ValueError as exc:
            return QueryResult(pd.DataFrame(), error=str(exc))
        timer = threading.Timer(timeout_s, con.interrupt)
        timer.start()
        try:
            reader = con.sql(statement).to_arrow_reader(min(limit + 1, 10_000))
            batches, rows = [], 0
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                if rows > limit:
                    break
            table = pa.Table.from_batches(batches, schema=reader.schema)
        except duckdb.InterruptException:
            return QueryResult(
                pd.DataFrame(),
                seconds=time.perf_counter() - started,
                error=f"stopped after {timeout_s:g} s: narrow the query or the time range",
            )
        except duckdb.Error as exc:
            return QueryResult(
                pd.DataFrame(), seconds=time.perf_counter() - started, error=_message(exc)
            )
        finally:
            timer.cancel()
    truncated = table.num_rows > limit
    frame = table.slice(0, limit).to_pandas()
    return QueryResult(frame, truncated=truncated, seconds=time.perf_counter() - started)


@contextlib.contextmanager
def _private(root: Path, span: TimeSpan | None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A database of its own (not the pages' shared one): the lock-down is database-wide."""
    store = Store(root)
    con = store.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        if span is not None:
            q.scope(con, span)
        with store.reading():  # a live collector's compaction cannot swap files meanwhile
            yield con
    finally:
        con.close()


def schema(root: Path) -> pd.DataFrame:
    """Every view a query can read and its columns (``view, column, type``), in view order."""
    with q.open_store(root) as con:
        return q.frame(
            con,
            """
            SELECT DISTINCT table_name AS view, column_name AS column, data_type AS type,
                   ordinal_position AS position
            FROM information_schema.columns
            WHERE table_schema = 'main'
            ORDER BY view, position
            """,
        ).drop(columns=["position"])


def chart_columns(frame: pd.DataFrame) -> tuple[str, list[str]] | None:
    """A quick chart's x column and numeric y columns, or None when the result has no
    obvious shape (the first non-numeric or time column against the numeric ones)."""
    if frame.empty or len(frame.columns) < 2:
        return None
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    numeric = [c for c in numeric if not pd.api.types.is_bool_dtype(frame[c])]
    others = [c for c in frame.columns if c not in numeric]
    x = others[0] if others else frame.columns[0]
    ys = [c for c in numeric if c != x]
    return (str(x), [str(c) for c in ys]) if ys else None


def _message(exc: Exception) -> str:
    return one_line(exc)
