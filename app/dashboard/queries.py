"""The dashboard's named queries: SQL over the store's DuckDB views, nothing else.

Every page reads through these functions and :func:`open_store`; the views themselves (and the
shared ``sessions`` and ``streams`` views) are defined by
:mod:`toolwatch.collector.store.parquet_store`, the
table names by the modules that write them, the corpus facts by
:func:`toolwatch.collector.stats.corpus.corpus_stats`, the workbench aggregation by
:func:`toolwatch.injection.workbench.runner.summarize`, the flags by
:func:`toolwatch.detection.scoring.scan.scan` — this module only selects rows for display.
Results are pandas frames (what Streamlit and altair take); times are UTC.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

import duckdb
import pandas as pd
import pyarrow as pa

from toolwatch.app.dashboard.time_range import TimeSpan
from toolwatch.collector.stats.corpus import NOT_INJECTED
from toolwatch.collector.store.parquet_store import CALLS, Store, StoreError
from toolwatch.detection.alerting.alerts import ALERTS_TABLE as ALERTS
from toolwatch.detection.alerting.rules import RULE_ALERTS_TABLE as RULE_ALERTS
from toolwatch.injection.experiment.replay_storage import REPLAYS
from toolwatch.injection.experiment.storage import EXPERIMENT_RUNS, EXPERIMENTS
from toolwatch.injection.workbench.report import RUNS_TABLE as WORKBENCH_RUNS


@dataclass
class StoreState:
    """What the store at ``root`` holds, or why it cannot be read."""

    root: Path
    status: str  # "ok" | "empty" | "missing" | "unreadable"
    tables: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def readable(self) -> bool:
        return self.status in ("ok", "empty")


def store_state(root: Path) -> StoreState:
    """Check the store before any page reads it (missing, not a directory, corrupt, empty)."""
    if not root.exists():
        return StoreState(root, "missing", error=f"there is no store at {root}")
    if not root.is_dir():
        return StoreState(root, "unreadable", error=f"the store path {root} is not a directory")
    store = Store(root)
    try:
        tables = store.tables()
        with open_store(root) as con:
            one(con, f"SELECT count(*) FROM {CALLS}")
    except (StoreError, duckdb.Error, OSError) as exc:
        return StoreState(root, "unreadable", error=f"cannot read the store {root}: {exc}")
    return StoreState(root, "ok" if tables else "empty", tables=tables)


#: One DuckDB database with the store's views per store and set of tables, shared by every
#: page run. Making the views is cheap now (each footer is read once per process and kept:
#: ``collector/store/footers.py``); sharing saves the recovery check, the file walk and the
#: views per page. Views re-list their files and re-decide whether they mix schemas on each
#: query, so appended rows and a file of another schema are read right; a new table (a new
#: folder) makes a new database.
_DATABASES: dict[tuple[str, tuple[str, ...]], duckdb.DuckDBPyConnection] = {}
_DATABASES_LOCK = threading.Lock()


def _database(root: Path) -> duckdb.DuckDBPyConnection:
    store = Store(root)
    key = (str(root.resolve()), tuple(store.tables()))
    with _DATABASES_LOCK:
        found = _DATABASES.get(key)
        if found is None:
            for old in [k for k in _DATABASES if k[0] == key[0]]:
                _DATABASES.pop(old).close()
            found = _DATABASES[key] = store.connect()
        return found


@contextlib.contextmanager
def open_store(root: Path, span: TimeSpan | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the store's views, times in UTC; closed on exit. With a bounded
    ``span`` (the global time range) the ``calls`` and ``alerts`` views, and so ``sessions``
    and ``streams`` built on ``calls``, hold only that span (see :func:`scope`). It is a
    cursor of the store's shared database (its own temporary views and settings)."""
    con = _database(root).cursor()
    try:
        con.execute("SET TimeZone = 'UTC'")
        if span is not None:
            scope(con, span)
        with Store(root).reading():  # a live collector's compaction cannot swap files mid-page
            yield con
    finally:
        con.close()


#: The views a time range narrows, by the column it is read on.
SCOPED_VIEWS: Final[dict[str, str]] = {CALLS: "start_time", ALERTS: "alert_time"}


def scope(con: duckdb.DuckDBPyConnection, span: TimeSpan) -> None:
    """Shadow ``calls`` and ``alerts`` with temporary views limited to ``span``: every query
    of the connection (the shared ``sessions``/``streams`` views, the corpus facts, a user's
    SQL) then reads the range without repeating it. The ``date`` partition bound lets DuckDB
    skip the files of other days."""
    if not span.bounded:
        return
    for view, column in SCOPED_VIEWS.items():
        terms = []
        if span.start is not None:
            terms.append(f"{column} >= TIMESTAMPTZ '{span.start.isoformat()}'")
            terms.append(f"date >= DATE '{span.start.date().isoformat()}'")
        if span.end is not None:
            terms.append(f"{column} < TIMESTAMPTZ '{span.end.isoformat()}'")
            terms.append(f"date <= DATE '{span.end.date().isoformat()}'")
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM memory.main.{view} "
            f"WHERE {' AND '.join(terms)}"
        )


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> Any:
    """Run ``sql`` and return a pandas frame."""
    return con.execute(sql, list(params) if params else []).df()


def arrow(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
) -> pa.Table:
    """Run ``sql`` and return an Arrow table (for the detection functions)."""
    return con.sql(sql, params=list(params) if params else None).to_arrow_table()


def one(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
) -> tuple[Any, ...] | None:
    """The first row of ``sql``, fetched to the end: DuckDB 2.0 refuses a later ``con.sql``
    while an ``execute`` result is still open, which ``fetchone`` leaves behind."""
    rows = con.execute(sql, list(params) if params else []).fetchall()
    return tuple(rows[0]) if rows else None


def records(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """Run ``sql`` and return plain rows (NULL stays ``None``, unlike a pandas frame)."""
    return arrow(con, sql, params).to_pylist()


def has_rows(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """The view exists (every registered table has one, empty or not) and holds a row."""
    row = one(con, "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name])
    return bool(row and row[0]) and one(con, f"SELECT 1 FROM {name} LIMIT 1") is not None


def has_column(con: duckdb.DuckDBPyConnection, view: str, column: str) -> bool:
    row = one(
        con,
        "SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
        [view, column],
    )
    return bool(row and row[0])


def count(con: duckdb.DuckDBPyConnection, view: str) -> int:
    if not has_rows(con, view):
        return 0
    row = one(con, f"SELECT count(*) FROM {view}")
    return int(row[0]) if row else 0


def fingerprint(root: Path, *tables: str) -> tuple[str, ...]:
    """Names of the files behind ``tables``: changes whenever rows are appended or compacted
    (file names are unique per write), so it keys caches of derived results."""
    store = Store(root)
    return tuple(str(p.relative_to(root)) for t in tables for p in store.files(t))


# ------------------------------------------------------------------------------ experiments


def experiment_list(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per saved experiment run, newest first."""
    return frame(
        con,
        f"""
        SELECT run_id, max(created) AS created, any_value(fa_target) AS fa_target,
               any_value(normal_sessions) AS normal_sessions, any_value(seeds) AS seeds,
               any_value(config_json) AS config_json, any_value(split_json) AS split_json,
               list(DISTINCT variant ORDER BY variant DESC) AS variants,
               count(DISTINCT kind) AS kinds
        FROM {EXPERIMENTS}
        GROUP BY run_id
        ORDER BY created DESC, run_id
        """,
    )


def experiment_cells(con: duckdb.DuckDBPyConnection, run_id: str, variant: str) -> pd.DataFrame:
    """The stored study-style cells of one run and variant (every kind × cue set × detector ×
    threshold mode)."""
    return frame(
        con,
        f"""
        SELECT kind, cue_set, detector, threshold_mode, threshold, fa_target, fa_reached,
               normal_sessions, runs, detected, rate, ci_low, ci_high, median_latency, auc,
               notes_json
        FROM {EXPERIMENTS}
        WHERE run_id = ? AND variant = ?
        """,
        [run_id, variant],
    )


def experiment_run_maxima(
    con: duckdb.DuckDBPyConnection, run_id: str, variant: str
) -> pd.DataFrame:
    """Per cue set × detector and run (and per normal test stream, kind ``normal``): the
    largest statistic in its detection window, and the stream's place in the experiment's
    bootstrap order (``stream_index``, null for a run saved before it). Empty when the store's
    experiment rows predate the ``window_max`` column."""
    columns = ["cue_set", "detector", "kind", "session_id", "stream_index", "seed", "window_max"]
    if not has_column(con, EXPERIMENT_RUNS, "window_max"):
        return pd.DataFrame(columns=columns)
    return frame(
        con,
        f"""
        SELECT {", ".join(columns)}
        FROM {EXPERIMENT_RUNS}
        WHERE run_id = ? AND variant = ? AND threshold_mode = 'fa_target'
        ORDER BY cue_set, detector, kind, session_id, seed
        """,
        [run_id, variant],
    )


def experiment_roc_maxima(
    con: duckdb.DuckDBPyConnection, run_id: str, variant: str, cue_set: str, detector: str
) -> pd.DataFrame:
    """The window maxima of one cue set × detector (``kind, window_max``): what its ROC curves
    need, a fifteenth of :func:`experiment_run_maxima`'s rows."""
    if not has_column(con, EXPERIMENT_RUNS, "window_max"):
        return pd.DataFrame(columns=["kind", "window_max"])
    return frame(
        con,
        f"""
        SELECT kind, window_max FROM {EXPERIMENT_RUNS}
        WHERE run_id = ? AND variant = ? AND threshold_mode = 'fa_target' AND cue_set = ?
          AND detector = ?
        """,
        [run_id, variant, cue_set, detector],
    )


def experiment_latencies(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    variant: str,
    cue_set: str,
    detector: str,
    mode: str,
) -> pd.DataFrame:
    """Latency (calls from the insertion point) of every detected injected run."""
    if not has_rows(con, EXPERIMENT_RUNS):
        return pd.DataFrame(columns=["kind", "latency"])
    return frame(
        con,
        f"""
        SELECT kind, latency
        FROM {EXPERIMENT_RUNS}
        WHERE run_id = ? AND variant = ? AND cue_set = ? AND detector = ?
          AND threshold_mode = ? AND kind <> 'normal' AND detected AND latency IS NOT NULL
        ORDER BY kind, latency
        """,
        [run_id, variant, cue_set, detector, mode],
    )


# ------------------------------------------------------------------------------ replays


def replay_list(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per saved replay run, newest first."""
    return frame(
        con,
        f"""
        SELECT run_id, max(created) AS created, any_value(statistic) AS statistic,
               any_value(fa_target) AS fa_target, any_value(seeds) AS seeds,
               count(DISTINCT week) AS weeks,
               sum(runs) FILTER (WHERE kind = 'normal' AND model = 'adaptive') AS streams
        FROM {REPLAYS}
        GROUP BY run_id
        ORDER BY created DESC, run_id
        """,
    )


def replay_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """Every ``replays`` row of one run, as plain rows (the summary is built from them)."""
    return records(con, f"SELECT * EXCLUDE (date) FROM {REPLAYS} WHERE run_id = ?", [run_id])


# ------------------------------------------------------------------------------ streams


def sources(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        str(r[0]) for r in con.execute(f"SELECT DISTINCT source FROM {CALLS} ORDER BY 1").fetchall()
    ]


def data_days(root: Path) -> tuple[date, date] | None:
    """The first and last UTC day holding calls, read from the partition folders' names
    (``date=YYYY-MM-DD``) without opening a file."""
    days = sorted(
        {p.parent.name.partition("=")[2] for p in Store(root).files(CALLS) if "=" in p.parent.name}
    )
    try:
        return (date.fromisoformat(days[0]), date.fromisoformat(days[-1])) if days else None
    except ValueError:
        return None


def stream_calls(con: duckdb.DuckDBPyConnection, session_id: str, agent_id: str | None) -> pa.Table:
    """Every call of one stream, in stream order (time, then position), as the scorer takes
    them; the whole stream, whatever the time range."""
    return arrow(
        con,
        f"""
        SELECT * EXCLUDE (date) FROM memory.main.{CALLS}
        WHERE session_id = ? AND agent_id IS NOT DISTINCT FROM ?
        ORDER BY start_time, seq
        """,
        [session_id, agent_id],
    )


def calls_of_sessions(con: duckdb.DuckDBPyConnection, session_ids: Sequence[str]) -> pd.DataFrame:
    """The calls of several sessions (e.g. one workbench unit's runs), in session order."""
    return frame(
        con,
        f"""
        SELECT session_id, seq, start_time, tool, server, input_bytes, output_bytes, failed,
               error_type, response_id, label
        FROM {CALLS}
        WHERE list_contains(?, session_id)
        ORDER BY session_id, start_time, seq
        """,
        [list(session_ids)],
    )


def stream_alerts(
    con: duckdb.DuckDBPyConnection, session_id: str, agent_id: str | None
) -> pd.DataFrame:
    """The live alerts of one stream, in call order."""
    if not has_rows(con, ALERTS):
        return pd.DataFrame(columns=["alert_time", "agent_id", "seq", "call_index", "span_id"])
    return frame(
        con,
        f"""SELECT alert_time, agent_id, seq, call_index, span_id, tool, cue_set, detector, cue,
                   score, threshold, model_id
            FROM memory.main.{ALERTS} WHERE session_id = ? AND agent_id IS NOT DISTINCT FROM ?
            ORDER BY call_time, alert_time""",
        [session_id, agent_id],
    )


# ------------------------------------------------------------------------------ live alerts


def alert_totals(con: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, Any]:
    """Counts for the live page's headline: all alerts, last hour, last 24 hours, latest."""
    row = one(
        con,
        f"""
        SELECT count(*),
               count(*) FILTER (WHERE alert_time > ?::TIMESTAMPTZ - INTERVAL 1 HOUR),
               count(*) FILTER (WHERE alert_time > ?::TIMESTAMPTZ - INTERVAL 24 HOUR),
               max(alert_time),
               count(DISTINCT session_id)
        FROM {ALERTS}
        """,
        [now, now],
    )
    assert row is not None
    return {
        "total": int(row[0]),
        "last_hour": int(row[1]),
        "last_day": int(row[2]),
        "latest": row[3],
        "sessions": int(row[4]),
    }


def alerts_per_hour(con: duckdb.DuckDBPyConnection, by: str = "alert_time") -> pd.DataFrame:
    """Alerts per UTC hour (``by`` = arrival ``alert_time`` or the alerted ``call_time``),
    split by the cue that explains them."""
    if by not in ("alert_time", "call_time"):
        raise ValueError(f"alerts are counted by alert_time or call_time, not {by!r}")
    return frame(
        con,
        f"""
        SELECT date_trunc('hour', {by}) AS hour, cue, count(*) AS alerts
        FROM {ALERTS}
        GROUP BY ALL
        ORDER BY hour, cue
        """,
    )


def recent_alerts(con: duckdb.DuckDBPyConnection, limit: int = 50) -> pd.DataFrame:
    return frame(
        con,
        f"""
        SELECT alert_time, session_id, agent_id, tool, cue, score, threshold, cue_set, detector,
               call_time, seq, call_index, model_id
        FROM {ALERTS}
        ORDER BY alert_time DESC, call_time DESC
        LIMIT ?
        """,
        [int(limit)],
    )


def recent_rule_alerts(
    con: duckdb.DuckDBPyConnection, since: datetime | None, limit: int = 50
) -> pd.DataFrame:
    """The newest alerts of the user's rules (since ``since`` when given)."""
    return frame(
        con,
        f"""
        SELECT alert_time, rule, key, value, op, threshold, window_s, description
        FROM {RULE_ALERTS}
        WHERE $1 IS NULL OR alert_time >= $1
        ORDER BY alert_time DESC, rule, key
        LIMIT $2
        """,
        [since, int(limit)],
    )


# ------------------------------------------------------------------------------ workbench


def workbench_suites(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per workbench run id (a suite or a single run), newest first."""
    return frame(
        con,
        f"""
        SELECT run_id, max(time) AS time, count(*) AS runs,
               count(DISTINCT scenario_id) AS scenarios,
               string_agg(DISTINCT agent, ', ' ORDER BY agent) AS agents
        FROM {WORKBENCH_RUNS}
        GROUP BY run_id
        ORDER BY time DESC, run_id
        """,
    )


def workbench_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """The run rows of one workbench run id, as plain rows (the shape
    :func:`toolwatch.injection.workbench.runner.summarize` takes)."""
    return records(
        con,
        f"""
        SELECT * EXCLUDE (date) FROM {WORKBENCH_RUNS}
        WHERE run_id = ?
        ORDER BY scenario_id, agent,
                 CASE mode WHEN 'clean' THEN 0 WHEN 'faulted' THEN 1 ELSE 2 END, mitigation
        """,
        [run_id],
    )


# ------------------------------------------------------------------------------ corpus


def session_ids(con: duckdb.DuckDBPyConnection, source_filter: Sequence[str]) -> dict[str, int]:
    """Distinct session ids per source, and over all of ``source_filter`` ("all selected"),
    of the corpus (sessions holding injected calls left out, as the corpus facts do)."""
    where = f"WHERE list_contains(?, source) AND {NOT_INJECTED}"
    found = {
        str(src): int(n)
        for src, n in con.execute(
            f"SELECT source, count(DISTINCT session_id) FROM {CALLS} {where} GROUP BY source",
            [list(source_filter)],
        ).fetchall()
    }
    row = one(
        con,
        f"SELECT count(DISTINCT session_id) FROM {CALLS} {where}",
        [list(source_filter)],
    )
    found["all selected"] = int(row[0]) if row else 0
    return found


def calls_per_day(
    con: duckdb.DuckDBPyConnection, source_filter: Sequence[str] | None = None
) -> pd.DataFrame:
    """Calls per UTC day and source of the corpus: sessions holding injected calls left out,
    as the facts beside the chart leave them out (a source's bars sum to its ``calls``)."""
    return frame(
        con,
        f"""
        SELECT start_time::DATE AS day, source, count(*) AS calls
        FROM {CALLS}
        WHERE ($1 IS NULL OR list_contains($1, source)) AND {NOT_INJECTED}
        GROUP BY ALL ORDER BY day, source
        """,
        [list(source_filter) if source_filter is not None else None],
    )


def top_tools(
    con: duckdb.DuckDBPyConnection, source_filter: Sequence[str] | None = None, limit: int = 20
) -> pd.DataFrame:
    """The most-called tools of the corpus (injected sessions left out, as in the facts)."""
    return frame(
        con,
        f"""
        SELECT tool, server, count(*) AS calls, avg(CAST(failed AS DOUBLE)) AS failure_rate
        FROM {CALLS}
        WHERE ($1 IS NULL OR list_contains($1, source)) AND {NOT_INJECTED}
        GROUP BY ALL ORDER BY calls DESC, tool LIMIT $2
        """,
        [list(source_filter) if source_filter is not None else None, int(limit)],
    )
