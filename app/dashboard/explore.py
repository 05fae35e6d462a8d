"""Explore: a user's SQL over the store's views, read-only, bounded, with saved questions.

:func:`run_query` opens the store (scoped to the global time range when asked), locks the
connection down and runs one statement:

* **read-only**: only ``SELECT`` (``WITH … SELECT``, ``DESCRIBE``, ``SUMMARIZE``, ``SHOW``) and
  ``EXPLAIN`` statements run; DuckDB's file access is limited to the store's own directory and
  its configuration is locked, so a query can neither write a file (``COPY``, ``EXPORT``,
  ``ATTACH``) nor read one outside the store, nor undo those settings;
* **bounded**: at most ``limit`` rows are fetched (the result says when there were more), at
  most :data:`MAX_BYTES` of them are kept (what the page sends to the browser: Streamlit
  refuses a message over 200 MB, and a browser chokes well before), and a query still running
  after ``timeout_s`` is interrupted.

What a query returns is made showable or refused in one line: duplicate column names are made
unique the way DuckDB names them (``a``, ``a_1``; said in :attr:`QueryResult.notes`), and a
value pandas cannot hold (a date past year 9999, a union) is an error naming its column.

No Streamlit here: the page (:mod:`toolwatch.app.dashboard.explore_page`) draws what these
functions return, and the tests call them directly.
"""

from __future__ import annotations

import contextlib
import io
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
from toolwatch.collector.store.result_formats import write_csv
from toolwatch.usage import one_line
from toolwatch.words import counted

DEFAULT_LIMIT: Final = 1_000
MAX_LIMIT: Final = 100_000
DEFAULT_TIMEOUT_S: Final = 30.0
#: At most this much result data (Arrow bytes) is kept for the page; the rest is cut and said.
MAX_BYTES: Final = 50_000_000


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
    """What a query returned: at most ``limit`` rows (and :data:`MAX_BYTES`), whether there
    were more, how long it took, or the one-line error that stopped it. ``size_capped``: the
    rows were cut by size, not by the row limit; ``notes``: what was changed to show them."""

    frame: pd.DataFrame
    truncated: bool = False
    seconds: float = 0.0
    error: str = ""
    size_capped: bool = False
    notes: tuple[str, ...] = ()
    #: the rows shown, as Arrow: the CSV download is written from them (:func:`csv_bytes`)
    table: pa.Table | None = None

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
    max_bytes: int | None = None,
) -> QueryResult:
    """Run ``sql`` read-only on the store (see the module docstring); ``max_bytes`` defaults
    to :data:`MAX_BYTES`."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
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
            batches, rows, size = [], 0, 0
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                size += batch.nbytes
                if rows > limit or size > max_bytes:
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
    return _showable(table, limit, max_bytes, started)


def _showable(table: pa.Table, limit: int, max_bytes: int, started: float) -> QueryResult:
    """The fetched ``table`` as the page can show it: the first ``limit`` rows that fit in
    ``max_bytes``, unique column names, converted to pandas (or the one-line reason not)."""
    shown = table.slice(0, limit)
    size_capped = shown.nbytes > max_bytes
    if size_capped:
        shown = shown.slice(0, _rows_within(shown, max_bytes))
    seconds = time.perf_counter() - started
    if size_capped and shown.num_rows == 0:
        return QueryResult(
            pd.DataFrame(),
            seconds=seconds,
            error=f"the first row alone is over {max_bytes / 1e6:,.0f} MB, more than the page "
            "shows: select less of it (e.g. left(column, 1000))",
        )
    names, notes = unique_names(shown.column_names)
    shown = shown.rename_columns(names)
    try:
        frame = shown.to_pandas()
    except (pa.ArrowException, ValueError, OverflowError, TypeError) as exc:
        return QueryResult(pd.DataFrame(), seconds=seconds, error=_unconvertible(shown, exc))
    return QueryResult(
        frame,
        truncated=table.num_rows > shown.num_rows,
        seconds=seconds,
        size_capped=size_capped,
        notes=notes,
        table=shown,
    )


def csv_bytes(result: QueryResult) -> bytes:
    """The rows shown as ``toolwatch sql --format csv`` writes them (times ``+00:00``, NaN
    ``nan`` rather than an empty NULL, a FLOAT as stored), not as pandas does."""
    if result.table is None:
        return result.frame.to_csv(index=False).encode("utf-8")
    out = io.StringIO()
    write_csv(result.table, out)
    return out.getvalue().encode("utf-8")


def _rows_within(table: pa.Table, max_bytes: int) -> int:
    """The most leading rows of ``table`` whose data fits in ``max_bytes`` (binary search:
    a slice's ``nbytes`` counts only its own rows)."""
    lo, hi = 0, table.num_rows
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if table.slice(0, mid).nbytes <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo


def unique_names(names: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """``names`` with every repeat renamed as DuckDB names them (``a``, ``a_1``, ``a_2``,
    skipping names already taken), and a note saying so (a table needs unique columns)."""
    taken = set(names)
    seen: set[str] = set()
    out: list[str] = []
    renamed: list[tuple[str, str]] = []
    for name in names:
        new = name
        if name in seen:
            k = 1
            while f"{name}_{k}" in taken:
                k += 1
            new = f"{name}_{k}"
            taken.add(new)
            renamed.append((name, new))
        seen.add(name)
        out.append(new)
    if not renamed:
        return out, ()
    if len(renamed) == 1:
        (old, new), *_ = renamed
        return out, (f"a repeated column name {old!r} is shown as {new!r}",)
    listed = ", ".join(f"{new!r}" for _, new in renamed[:3])
    more = f" and {len(renamed) - 3:,} more" if len(renamed) > 3 else ""
    return out, (f"{counted(len(renamed), 'repeated column name')} are shown as {listed}{more}",)


def _unconvertible(table: pa.Table, exc: Exception) -> str:
    """Why ``table`` cannot be shown, naming the first column that pandas cannot hold."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        try:
            column.to_pandas()
        except (pa.ArrowException, ValueError, OverflowError, TypeError) as found:
            return (
                f"column {name!r} ({column.type}) cannot be shown: {_message(found).rstrip('.')}; "
                "cast it to VARCHAR"
            )
    return f"the result cannot be shown: {_message(exc)}"


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
