"""Helpers for the simulator tests: a generated corpus in DuckDB with the views the tests
compute every figure from (streams, gaps between consecutive calls of a stream, the split of
each stream by the study's rule), independently of the generator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from toolwatch import study
from toolwatch.collector.sources.simulator import SPLIT_DATES


@dataclass
class Corpus:
    seed: int
    table: pa.Table
    con: duckdb.DuckDBPyConnection

    def one(self, sql: str, params: list[Any] | None = None) -> Any:
        row = self.con.execute(sql, params or []).fetchone()
        assert row is not None
        return row[0] if len(row) == 1 else row

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, params or []).fetchall()


def connect(table: pa.Table) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("generated", table)
    # the study's "session" is a stream (session_id, agent_id): each subagent is one
    con.execute(
        "CREATE VIEW calls AS "
        "SELECT *, session_id || coalesce('/' || agent_id, '') AS stream FROM generated"
    )
    # gaps between consecutive calls of one stream (session, agent), in time order
    con.execute(
        """
        CREATE VIEW gaps AS
        SELECT * FROM (
            SELECT session_id, agent_id,
                   (epoch_us(start_time) - lag(epoch_us(start_time)) OVER w) / 1e6 AS gap_s,
                   response_id = lag(response_id) OVER w AS same_response
            FROM calls
            WINDOW w AS (PARTITION BY session_id, agent_id ORDER BY start_time, seq)
        ) WHERE gap_s IS NOT NULL
        """
    )
    con.execute(
        f"""
        CREATE VIEW session_split AS
        SELECT stream, count(*) AS n,
               min(start_time) AS first_time, max(start_time) AS last_time,
               CASE WHEN min(start_time) < TIMESTAMPTZ '{SPLIT_DATES["calibration"][0]} 00:00:00+00'
                    THEN 'train'
                    WHEN min(start_time) < TIMESTAMPTZ '{SPLIT_DATES["test"][0]} 00:00:00+00'
                    THEN 'calibration'
                    WHEN count(*) >= {study.TEST_MIN_CALLS} THEN 'test'
                    ELSE 'test_short' END AS split
        FROM calls GROUP BY stream
        """
    )
    return con


def within(value: float, target: float, rel: float) -> bool:
    return abs(value - target) <= rel * target
