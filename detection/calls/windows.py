"""Time windows of the store: which sessions train, calibrate or get scored.

A window ``FROM..TO`` selects the *sessions whose first call* falls in it, so a session is
never cut in two (the study split by time, never shuffling sessions). Either side may be
empty (open). A date-only ``TO`` includes that whole day (``2026-08-04..2026-08-24`` ends at
2026-08-25 00:00 UTC); a date-time ``TO`` is exclusive. Times without a zone are UTC.

Sessions holding any labelled (injected) call are never used to train or calibrate: the
normal model must learn from normal data only.

Without explicit windows, :func:`default_windows` splits the days the store's unlabelled
sessions span like the study split its 42 days: the first :data:`TRAIN_SHARE` (21/42) of the
days train, the next :data:`CALIBRATE_SHARE` (7/42) calibrate, the rest is left for testing.
A store whose sessions leave either window empty is split by the same shares of its sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import pyarrow as pa

from toolwatch import study
from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.collector.store.parquet_store import Store
from toolwatch.usage import EXIT_USAGE, UserError
from toolwatch.words import counted

TRAIN_SHARE: Final = study.TRAIN_SHARE
CALIBRATE_SHARE: Final = study.CALIBRATE_SHARE


class WindowError(UserError, ValueError):
    """A window is malformed or selects nothing; the message says which."""


class WindowOptionError(WindowError):
    """A window option that cannot be read (bad usage, exit 2)."""

    code = EXIT_USAGE


@dataclass(frozen=True)
class Window:
    """Sessions whose first call is in ``[start, end)``; ``None`` = unbounded."""

    start: datetime | None = None
    end: datetime | None = None
    text: str = ""

    def describe(self) -> dict[str, Any]:
        return {
            "from": self.start.isoformat() if self.start else None,
            "to": self.end.isoformat() if self.end else None,
            "given": self.text,
        }


def parse_window(text: str) -> Window:
    """``"2026-08-04..2026-08-24"`` → a :class:`Window` (see the module docstring)."""
    if ".." not in text:
        raise WindowOptionError(
            f"window {text!r} must look like FROM..TO (ISO dates or date-times)"
        )
    left, right = (part.strip() for part in text.split("..", 1))
    start = _parse_time(left, end=False) if left else None
    end = _parse_time(right, end=True) if right else None
    if start and end and end <= start:
        raise WindowOptionError(f"window {text!r} ends before it starts")
    return Window(start, end, text)


def bounded(start: str | None, end: str | None) -> Window:
    """A window from separate ``--from`` / ``--to`` options."""
    return parse_window(f"{start or ''}..{end or ''}")


def load_window(
    store: Store, window: Window, *, normal_only: bool = True, need_calls: bool = False
) -> pa.Table:
    """Calls of the sessions whose first call is in ``window`` (``CALLS_SCHEMA`` columns);
    ``need_calls``: a window selecting none is a :class:`WindowError` naming the days the
    store's sessions start on (``score`` and ``scan``: "0 calls scored" and exit 0 read as a
    clean result)."""
    where = []
    params: list[Any] = []
    if window.start is not None:
        where.append("f.first >= ?")
        params.append(window.start)
    if window.end is not None:
        where.append("f.first < ?")
        params.append(window.end)
    if normal_only:
        where.append("f.labelled = 0")
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    columns = call_columns_sql(store, "c")
    sql = f"""
        WITH f AS (
            SELECT session_id, min(start_time) AS first,
                   count(*) FILTER (WHERE label IS NOT NULL) AS labelled
            FROM calls GROUP BY session_id
        )
        SELECT {columns} FROM calls c JOIN f USING (session_id) {clause}
    """
    table = store.query(sql, params)
    if table.num_rows:
        return table.cast(CALLS_SCHEMA)
    if need_calls:
        raise _empty_window(store, window, normal_only)
    return CALLS_SCHEMA.empty_table()


def _empty_window(store: Store, window: Window, normal_only: bool) -> WindowError:
    """What a window selecting no session says: the window as given and the store's days."""
    left, _, right = (part.strip() for part in window.text.partition(".."))
    asked = " ".join([f"from {left}"] * bool(left) + [f"up to {right}"] * bool(right))
    kept = "HAVING count(label) = 0" if normal_only else ""
    days = store.query(
        f"""
        SELECT min(first)::DATE AS a, max(first)::DATE AS b, count(*) AS n FROM (
            SELECT min(start_time AT TIME ZONE 'UTC') AS first FROM calls
            GROUP BY session_id {kept})
        """
    ).to_pylist()[0]
    held = (
        f"the store's {counted(days['n'], 'session')} start {days['a']}..{days['b']}"
        if days["n"]
        else f"the store {store.root} holds no {'normal ' if normal_only else ''}session"
    )
    return WindowError(f"no session starts {asked or 'at all'} (--from/--to): {held}")


#: DuckDB types of the call columns a store written before they existed may lack (nullable).
_SQL_TYPES: Final[dict[str, str]] = {
    "string": "VARCHAR",
    "int64": "BIGINT",
    "int32": "INTEGER",
    "bool": "BOOLEAN",
    "timestamp[us, tz=UTC]": "TIMESTAMPTZ",
}


def call_columns_sql(store: Store, alias: str) -> str:
    """The select list of every record column of ``calls`` (aliased ``alias``): files written
    before a column joined the record (dev-real's 21-column ``calls.parquet``, for one) lack
    it, and it then reads as NULL."""
    present = set(store.query("SELECT * FROM calls LIMIT 0").column_names)
    return ", ".join(
        f"{alias}.{f.name}"
        if f.name in present
        else f"CAST(NULL AS {_SQL_TYPES[str(f.type)]}) AS {f.name}"
        for f in CALLS_SCHEMA
    )


def default_windows(
    store: Store, train_share: float = TRAIN_SHARE, calibrate_share: float = CALIBRATE_SHARE
) -> tuple[Window, Window]:
    """Train and calibration windows: shares of the store's days, else of its sessions.

    The days run from the first normal session's (UTC) day to the last one's: the first
    ``round(days · train_share)`` days train, the next ``round(days · calibrate_share)``
    (at least one each) calibrate — the study's 21 + 7 of 42 days. When either window would
    hold no session (few days, or traffic in bursts), the normal sessions ordered by first
    call are split by the same shares instead.
    """
    firsts = (
        store.query(
            """
        SELECT min(start_time) AS first FROM calls GROUP BY session_id
        HAVING count(*) FILTER (WHERE label IS NOT NULL) = 0 ORDER BY first
        """
        )
        .column("first")
        .to_pylist()
    )
    if len(firsts) < 2:
        raise WindowError(
            f"the store {store.root} has {counted(len(firsts), 'normal session')}; at least 2 "
            "are needed to train and calibrate"
        )
    first_day = _day_start(firsts[0])
    days = (_day_start(firsts[-1]) - first_day).days + 1
    train_days = max(1, round(days * train_share))
    cal_days = max(1, round(days * calibrate_share))
    cal_start = first_day + timedelta(days=train_days)
    cal_end = cal_start + timedelta(days=cal_days)
    if any(cal_start <= f < cal_end for f in firsts):  # training holds the first session
        return (
            Window(first_day, cal_start, f"first {train_days} of {counted(days, 'day')}"),
            Window(cal_start, cal_end, f"next {cal_days} of {counted(days, 'day')}"),
        )
    n_train = min(max(1, round(len(firsts) * train_share)), len(firsts) - 1)
    n_cal = min(max(1, round(len(firsts) * calibrate_share)), len(firsts) - n_train)
    cal_start = firsts[n_train]
    after = n_train + n_cal
    cal_end = firsts[after] if after < len(firsts) else firsts[-1] + timedelta(microseconds=1)
    share = f"{train_share:.3g}/{calibrate_share:.3g} of sessions"
    return (
        Window(firsts[0], cal_start, f"first {share}"),
        Window(cal_start, cal_end, f"next {share}"),
    )


def _day_start(moment: datetime) -> datetime:
    """Midnight (UTC) of the day of ``moment``."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def _parse_time(text: str, *, end: bool) -> datetime:
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end else moment
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise WindowOptionError(f"{text!r} is not an ISO date (YYYY-MM-DD) or date-time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
