"""Why a page or a query shows nothing when the store holds calls: the time range (or a query's
window counted back from now, "this week") falls where the store has none, as on a store of
past data. The note names the store's own span and links to it, rather than a bare empty table;
a result that is empty over the store's calls too is left as it is.

No Streamlit here: pages draw the one-line notes these functions return.
"""

from __future__ import annotations

import re
import urllib.parse
from datetime import date, datetime
from pathlib import Path
from typing import Final

from toolwatch.app.dashboard import explore as ex
from toolwatch.app.dashboard.time_range import TimeSpan

#: The clock in a query (DuckDB's names for the current time and day), to rewrite "as of" a day.
_TIME_NOW: Final = re.compile(
    r"\b(?:now|get_current_timestamp|transaction_timestamp)\s*\(\s*\)|\bcurrent_timestamp\b",
    re.IGNORECASE,
)
_DAY_NOW: Final = re.compile(r"\btoday\s*\(\s*\)|\bcurrent_date\b", re.IGNORECASE)


def days_text(days: tuple[date, date]) -> str:
    """The store's span as the time range labels its days: ``2025-12-01 – 2026-07-30 (UTC)``."""
    first, last = days
    return (
        f"{first:%Y-%m-%d} (UTC)" if first == last else f"{first:%Y-%m-%d} – {last:%Y-%m-%d} (UTC)"
    )


def range_link(days: tuple[date, date], **keep: str) -> str:
    """A link (query string) to the custom range of ``days``, with the page's ``keep`` params."""
    span = {"range": "custom", "from": days[0].isoformat(), "to": days[1].isoformat()}
    return "?" + urllib.parse.urlencode({**keep, **span})


def range_note(span: TimeSpan, days: tuple[date, date] | None, what: str, **keep: str) -> str:
    """Nothing (``what``) in the range ``span``: the store's span and a link to it, when the
    store has calls (``days``); else just that the range holds none."""
    said = f"No {what} in the time range ({span.label})"
    if days is None:
        return f"{said}."
    return (
        f"{said}; the store's calls run {days_text(days)}: "
        f"[show those dates]({range_link(days, **keep)})."
    )


def counts_from_now(sql: str) -> bool:
    """Whether ``sql`` reads the clock (``now()``, ``current_date``, …)."""
    return bool(_TIME_NOW.search(sql) or _DAY_NOW.search(sql))


def as_of(sql: str, moment: datetime) -> str:
    """``sql`` with the clock replaced by ``moment`` (a UTC time), so "the last 7 days" are the
    7 days up to it."""
    sql = _TIME_NOW.sub(f"TIMESTAMPTZ '{moment.isoformat()}'", sql)
    return _DAY_NOW.sub(f"DATE '{moment.date().isoformat()}'", sql)


def explore_note(
    root: Path,
    sql: str,
    span: TimeSpan | None,
    days: tuple[date, date] | None,
    keep: dict[str, str] | None = None,
) -> str:
    """Why Explore's empty result of ``sql`` (read in ``span``) is empty when the store's calls
    answer it: the range holds none of them (a link to the store's days, the query kept), or
    the query counts back from now, past the store's last call (a link to the query as of that
    call), the page's other parameters ``keep`` kept. Each is said only when the rewritten
    query returns rows; else ``""``."""
    if days is None:
        return ""
    keep = keep or {}
    bounded = span is not None and span.bounded
    if bounded and ex.run_query(root, sql, limit=1).frame.shape[0]:
        assert span is not None
        return range_note(span, days, "rows", **{**keep, "sql": sql})
    if not counts_from_now(sql):
        return ""
    for scope in (span, None) if bounded else (None,):
        last = _last_call(root, scope)
        if last is None:
            continue
        rewritten = as_of(sql, last)
        if not ex.run_query(root, rewritten, span=scope, limit=1).frame.shape[0]:
            continue
        link = {**keep, "sql": rewritten, **(_params(scope) if bounded else {})}
        return (
            f"No rows counting back from now: the store's calls run {days_text(days)}, the last "
            f"at {last:%Y-%m-%d %H:%M} UTC; "
            f"[run it as of that call](?{urllib.parse.urlencode(link)})."
        )
    return ""


def _params(span: TimeSpan | None) -> dict[str, str]:
    """The URL parameters of ``span`` (``None``: all time)."""
    if span is None:
        return {"range": "all"}
    if span.key == "custom" and span.first_day and span.last_day:
        return {"range": "custom", "from": f"{span.first_day}", "to": f"{span.last_day}"}
    return {"range": span.key}


def _last_call(root: Path, span: TimeSpan | None) -> datetime | None:
    found = ex.run_query(root, "SELECT max(start_time) AS last FROM calls", span=span)
    if not found.ok or found.frame.empty:
        return None
    last = found.frame["last"].iloc[0]
    return None if last is None or last != last else last.to_pydatetime()
