"""The Sessions page's stream list: one DuckDB query over stored rows, never a scoring pass.

Each row is a stream (``calls`` aggregated per session × agent like the ``streams`` view,
scoped to the global time range by :func:`~toolwatch.app.dashboard.queries.open_store`) with
its live alerts (``alerts``) and, for the model in use, its latest stored score
(``stream_scores``, written by ``toolwatch scan``): peak against the operating point, margin,
the cue of the first crossing. Filtering, ranking (flagged first, by margin, then alerts,
then newest) and the row limit happen in SQL, so a 1 M-call store answers in about a second.
What the page does not find stored it says (and names the command that writes it) rather
than computing it on page load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import duckdb
import pandas as pd

from toolwatch.app.dashboard import queries as q
from toolwatch.tables import STREAM_SCORES

SCORES: Final = STREAM_SCORES.name
FLAGS: Final[tuple[str, ...]] = ("all", "flagged", "not flagged")
AGENTS: Final[tuple[str, ...]] = ("all", "main", "subagents")
#: Rows the list shows at most (the caption says how many matched).
LIST_LIMIT: Final = 5_000


@dataclass(frozen=True)
class StreamFilter:
    sources: Sequence[str] | None = None
    flag: str = "all"
    agents: str = "all"
    injected_only: bool = False
    session_prefix: str = ""


@dataclass(frozen=True)
class StreamList:
    rows: pd.DataFrame  # at most LIST_LIMIT rows, ranked
    matched: int
    main_agents: int
    sessions: int
    flagged: int
    alerted: int
    scanned: int
    scanned_sessions: int  # the sessions of the scanned streams (what `toolwatch scan` lists)
    injected_sessions: int  # sessions holding injected calls (the Corpus facts leave them out)


def scored_models(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Models with stored stream scores: ``model_id, statistic, scored_time, streams`` — the
    newest scan's time and the streams with a score (each counted once, however many scans
    stored one: the list reads the newest per stream)."""
    if not q.has_rows(con, SCORES):
        return pd.DataFrame(columns=["model_id", "statistic", "scored_time", "streams"])
    return q.frame(
        con,
        f"""
        SELECT model_id, statistic, max(scored_time) AS scored_time,
               count(DISTINCT (session_id, agent_id)) AS streams
        FROM {SCORES} GROUP BY ALL ORDER BY scored_time DESC, model_id, statistic
        """,
    )


def _latest_scores(con: duckdb.DuckDBPyConnection, model_id: str | None, statistic: str) -> str:
    """SQL of the newest stored score per stream for ``model_id`` × ``statistic`` (none when
    the model has none)."""
    if model_id is None or not q.has_rows(con, SCORES):
        return (
            "(SELECT NULL::VARCHAR AS session_id, NULL::VARCHAR AS agent_id, NULL::DOUBLE AS "
            "margin, NULL::DOUBLE AS peak, NULL::BOOLEAN AS flagged, NULL::VARCHAR AS cue, "
            "NULL::INTEGER AS first_over_index WHERE false)"
        )
    model = model_id.replace("'", "''")
    stat = statistic.replace("'", "''")
    return f"""(
        SELECT session_id, agent_id, margin, peak, flagged, cue, first_over_index
        FROM {SCORES}
        WHERE model_id = '{model}' AND statistic = '{stat}'
        QUALIFY row_number() OVER (
            PARTITION BY session_id, agent_id ORDER BY scored_time DESC) = 1
    )"""


def _alert_counts(con: duckdb.DuckDBPyConnection) -> str:
    if not q.has_rows(con, q.ALERTS):
        return (
            "(SELECT NULL::VARCHAR AS session_id, NULL::VARCHAR AS agent_id, 0::BIGINT AS "
            "alerts WHERE false)"
        )
    return f"(SELECT session_id, agent_id, count(*) AS alerts FROM {q.ALERTS} GROUP BY ALL)"


def stream_list(
    con: duckdb.DuckDBPyConnection,
    chosen: StreamFilter,
    model_id: str | None,
    statistic: str,
    limit: int = LIST_LIMIT,
    *,
    detail: bool = False,
) -> StreamList:
    """The ranked, filtered stream list and its counts (see the module docstring). The
    streams are aggregated once (into a temporary table the counts and the rows both read);
    ``detail`` adds the distinct tools and responses per stream, which cost a second pass."""
    distinct = (
        "count(DISTINCT tool) AS tools, count(DISTINCT response_id) AS responses"
        if detail
        else "NULL::BIGINT AS tools, NULL::BIGINT AS responses"
    )
    params: dict[str, Any] = {
        "sources": list(chosen.sources) if chosen.sources is not None else None,
        "prefix": chosen.session_prefix.strip(),
        "injected": bool(chosen.injected_only),
        "agents": chosen.agents if chosen.agents in AGENTS else "all",
        "flag": chosen.flag if chosen.flag in FLAGS else "all",
    }
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _listed AS
        WITH s AS (
          SELECT session_id, agent_id, any_value(source) AS source,
                 min(start_time) AS first_time, max(start_time) AS last_time,
                 count(*) AS calls, count(*) FILTER (WHERE failed) AS failures,
                 count(*) FILTER (WHERE label IS NOT NULL) AS labelled_calls, {distinct}
          FROM {q.CALLS}
          WHERE ($sources IS NULL OR list_contains($sources, source))
            AND ($prefix = '' OR starts_with(session_id, $prefix))
            AND ($agents = 'all' OR ($agents = 'main') = (agent_id IS NULL))
          GROUP BY session_id, agent_id
          HAVING NOT $injected OR count(*) FILTER (WHERE label IS NOT NULL) > 0
        ),
        joined AS (
          SELECT s.*, coalesce(a.alerts, 0) AS alerts,
                 sc.margin AS scan_margin, sc.peak AS scan_peak,
                 coalesce(sc.flagged, false) AS scanned, sc.cue AS scan_cue,
                 sc.first_over_index AS scan_first_call
          FROM s
          LEFT JOIN {_alert_counts(con)} a
            ON a.session_id = s.session_id AND a.agent_id IS NOT DISTINCT FROM s.agent_id
          LEFT JOIN {_latest_scores(con, model_id, statistic)} sc
            ON sc.session_id = s.session_id AND sc.agent_id IS NOT DISTINCT FROM s.agent_id
        )
        SELECT *, (alerts > 0 OR scanned) AS is_flagged,
               CASE WHEN alerts > 0 AND scanned THEN 'alert + scan'
                    WHEN alerts > 0 THEN 'alert'
                    WHEN scanned THEN 'scan' ELSE '' END AS flagged_by
        FROM joined
        WHERE $flag = 'all' OR ($flag = 'flagged') = (alerts > 0 OR scanned)
        """,
        params,
    )
    counts = con.execute(
        """
        SELECT count(*), count(*) FILTER (WHERE agent_id IS NULL), count(DISTINCT session_id),
               count(*) FILTER (WHERE is_flagged), count(*) FILTER (WHERE alerts > 0),
               count(*) FILTER (WHERE scanned),
               count(DISTINCT session_id) FILTER (WHERE scanned),
               count(DISTINCT session_id) FILTER (WHERE labelled_calls > 0)
        FROM _listed"""
    ).fetchall()[0]
    rows = con.execute(
        f"""
        SELECT session_id, agent_id, flagged_by, scan_cue, scan_margin, scan_first_call, alerts,
               source, first_time, last_time, calls, tools, failures, responses, labelled_calls
        FROM _listed
        ORDER BY is_flagged DESC, scan_margin DESC NULLS LAST, alerts DESC, first_time DESC,
                 session_id, agent_id NULLS FIRST
        LIMIT {int(limit)}"""
    ).df()
    con.execute("DROP TABLE _listed")
    return StreamList(rows, *(int(c) for c in counts))


def siblings(con: duckdb.DuckDBPyConnection, session_id: str) -> pd.DataFrame:
    """Every stream of one session (whatever the time range), first call first."""
    return q.frame(
        con,
        """
        SELECT agent_id, count(*) AS calls, min(start_time) AS first_time
        FROM memory.main.calls WHERE session_id = ?
        GROUP BY agent_id ORDER BY first_time
        """,
        [session_id],
    )
