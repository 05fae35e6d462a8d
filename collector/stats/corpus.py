"""The study's corpus facts, computed by SQL over the store's ``calls`` view.

One function, :func:`corpus_stats`, shared by ``toolwatch stats``, the simulator's tests and the
app, so "our corpus beside the study's" always means the same numbers. Keys that the study
publishes are named as in :data:`toolwatch.study.CORPUS`.

Definitions (the why is in the study, BRIEF §2):

* **gaps** are between consecutive calls of one *stream* = (session, agent): a subagent runs
  beside its parent, so interleaving their calls would make fake short gaps. Streams are ordered
  by start time (then ``seq``, call id). A gap is *within-response* when both calls carry the
  same ``response_id`` (each such gap is one "parallel call"), *inter-response* when both carry
  different ones; gaps where either id is unknown are left out of both. Gaps touching a
  ``restamped`` call are skipped (their times are rewrites, not observations).
* **medians** are DuckDB's ``median`` (the interpolated middle for an even count).
* **days** is the calendar span in UTC, both ends included (2026-08-04 → 09-14 = 42).
* **sessions** counts streams (session, agent): the study counted each subagent transcript as a
  session of its own (its scan's top finding was a subagent).
* **first_use_share** = the mean over streams of (distinct tools / calls): in a typical stream,
  the share of calls that are its first use of a tool. The pooled ratio over the whole corpus
  (``first_use_share_pooled``) is dominated by long sessions and cannot reach the study's 37 %
  with its published counts (422 sessions, 26,327 calls, 78 tools), so the study's figure is
  read as the per-session mean; both are shown.
* **mcp_*** count calls with a ``server``; ``mcp_tools`` counts distinct full tool names.

Values are floats; NaN when undefined (e.g. a median of no gaps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.words import counted

#: Output keys, in display order (those also in ``study.CORPUS`` are compared with it).
STAT_KEYS: Final[tuple[str, ...]] = (
    "sessions",
    "calls",
    "tools",
    "mcp_servers",
    "mcp_tools",
    "mcp_calls",
    "days",
    "inter_response_gaps",
    "inter_response_gap_min_s",
    "inter_response_gap_median_s",
    "inter_response_share_le_1s",
    "parallel_calls",
    "within_response_gap_median_s",
    "within_response_share_le_1s",
    "first_use_share",
    "first_use_share_pooled",
    "failure_rate",
    "subagent_calls",
    "restamped_calls",
    "skipped_restamped_gaps",
)

_US_PER_DAY: Final = 86_400_000_000
#: The corpus is behaviour as recorded: a session holding a labelled call carries injected
#: calls (``experiment --write-injected``'s copies, the fault proxy's labels), so it is left
#: out of every fact (and counted by :func:`injected_sessions`).
NOT_INJECTED: Final = "session_id NOT IN (SELECT session_id FROM calls WHERE label IS NOT NULL)"

CORPUS_STATS_SQL: Final = f"""
WITH c AS (
    SELECT session_id, agent_id, tool, server, start_time, seq, call_id, response_id,
           failed, coalesce(restamped, false) AS restamped
    FROM calls
    WHERE ($sources IS NULL OR list_contains($sources, source)) AND {NOT_INJECTED}
),
streams AS (
    SELECT epoch_us(start_time) AS t_us,
           lag(epoch_us(start_time)) OVER w AS prev_us,
           response_id,
           lag(response_id) OVER w AS prev_response,
           restamped,
           lag(restamped) OVER w AS prev_restamped
    FROM c
    WINDOW w AS (PARTITION BY session_id, agent_id ORDER BY start_time, seq, call_id)
),
pairs AS (
    SELECT t_us - prev_us AS gap_us,
           response_id = prev_response AS same_response,
           restamped OR prev_restamped AS touches_restamped
    FROM streams
    WHERE prev_us IS NOT NULL AND response_id IS NOT NULL AND prev_response IS NOT NULL
),
gaps AS (SELECT * FROM pairs WHERE NOT touches_restamped),
base AS (
    SELECT count(DISTINCT (session_id, agent_id)) AS sessions,
           count(*) AS calls,
           count(DISTINCT tool) AS tools,
           count(DISTINCT server) AS mcp_servers,
           count(DISTINCT tool) FILTER (WHERE server IS NOT NULL) AS mcp_tools,
           count(*) FILTER (WHERE server IS NOT NULL) AS mcp_calls,
           max(epoch_us(start_time)) // {_US_PER_DAY}
               - min(epoch_us(start_time)) // {_US_PER_DAY} + 1 AS days,
           count(DISTINCT (session_id, agent_id, tool)) / nullif(count(*), 0)
               AS first_use_share_pooled,
           avg(CAST(failed AS DOUBLE)) AS failure_rate,
           count(*) FILTER (WHERE agent_id IS NOT NULL) AS subagent_calls,
           count(*) FILTER (WHERE restamped) AS restamped_calls
    FROM c
),
inter AS (
    SELECT count(*) AS inter_response_gaps,
           min(gap_us) / 1e6 AS inter_response_gap_min_s,
           median(gap_us / 1e6) AS inter_response_gap_median_s,
           avg(CAST(gap_us <= 1000000 AS DOUBLE)) AS inter_response_share_le_1s
    FROM gaps WHERE NOT same_response
),
within AS (
    SELECT count(*) AS parallel_calls,
           median(gap_us / 1e6) AS within_response_gap_median_s,
           avg(CAST(gap_us <= 1000000 AS DOUBLE)) AS within_response_share_le_1s
    FROM gaps WHERE same_response
),
skipped AS (SELECT count(*) AS skipped_restamped_gaps FROM pairs WHERE touches_restamped)
SELECT * FROM base, inter, within, skipped
"""

#: Each stream's (distinct tools, calls), for ``first_use_share`` (averaged in Python, below).
FIRST_USE_SQL: Final = f"""
SELECT count(DISTINCT tool), count(*) FROM calls
WHERE ($sources IS NULL OR list_contains($sources, source)) AND {NOT_INJECTED}
GROUP BY session_id, agent_id
"""


def corpus_stats(
    con: duckdb.DuckDBPyConnection, sources: Sequence[str] | None = None
) -> dict[str, float]:
    """Corpus facts of the ``calls`` view on ``con`` (optionally only the given sources)."""
    params = {"sources": list(sources) if sources is not None else None}
    cursor = con.execute(CORPUS_STATS_SQL, params)
    row = cursor.fetchone()
    assert row is not None and cursor.description is not None
    names = [d[0] for d in cursor.description]
    values = dict(zip(names, row, strict=True))
    # a mean of doubles summed by parallel threads varies in its last digits from run to run;
    # math.fsum is exactly rounded, so the same corpus prints the same figure every time
    shares = [tools / calls for tools, calls in con.execute(FIRST_USE_SQL, params).fetchall()]
    values["first_use_share"] = math.fsum(shares) / len(shares) if shares else None
    return {key: _float(values[key]) for key in STAT_KEYS}


def source_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Calls per ``source`` in the store's corpus (to label a simulated corpus as such)."""
    rows = con.execute(
        f"SELECT source, count(*) FROM calls WHERE {NOT_INJECTED} GROUP BY source ORDER BY source"
    ).fetchall()
    return {str(source): int(n) for source, n in rows}


def injected_sessions(con: duckdb.DuckDBPyConnection) -> int:
    """Sessions left out of the corpus facts as injected copies (see :data:`NOT_INJECTED`)."""
    row = con.execute(
        "SELECT count(DISTINCT session_id) FROM calls WHERE label IS NOT NULL"
    ).fetchone()
    return int(row[0]) if row else 0


def _float(value: object) -> float:
    if value is None:
        return math.nan
    return float(value)  # type: ignore[arg-type]


def source_counts_of(calls: pa.Table) -> dict[str, int]:
    """Calls per ``source`` of a table of calls, by source name (what :func:`provenance_note`
    says in words; ``{}`` without the column)."""
    if "source" not in calls.column_names or calls.num_rows == 0:
        return {}
    rows = pc.value_counts(calls.column("source")).to_pylist()
    return {
        str(row["values"]): int(row["counts"])
        for row in sorted(rows, key=lambda r: str(r["values"]))
    }


def provenance_note(calls: pa.Table) -> str:
    """One line saying where a table of calls came from, loud when any of it is simulated.

    Results computed on the simulator describe the simulator, not real agents; every report
    that prints numbers from calls says so with this line.
    """
    if "source" not in calls.column_names or calls.num_rows == 0:
        return f"data: {counted(calls.num_rows, 'call')}"
    counts = source_counts_of(calls)
    parts = ", ".join(f"{source} {n:,}" for source, n in sorted(counts.items()))
    line = f"data: {counted(calls.num_rows, 'call')} ({parts})"
    if counts.get("simulated"):
        line += " — SIMULATED workload (toolwatch simulate), not real agent traffic"
    return line
