"""The dashboard's one time range: relative (last hour / day / week / 30 days), absolute dates,
or all time; parsed from the URL (``?range=7d`` or ``?range=custom&from=…&to=…``).

A bounded range scopes the store's ``calls`` and ``alerts`` views for every page that reads
them (:func:`toolwatch.app.dashboard.queries.open_store`), so Sessions, Live, Corpus and
Explore agree on what "now" covers. Relative ranges end at the moment the page runs; absolute
ones are whole UTC days, both ends included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

#: URL key -> (label, length; None = all time or custom dates)
RANGES: Final[dict[str, tuple[str, timedelta | None]]] = {
    "all": ("all time", None),
    "1h": ("last hour", timedelta(hours=1)),
    "24h": ("last day", timedelta(days=1)),
    "7d": ("last week", timedelta(days=7)),
    "30d": ("last 30 days", timedelta(days=30)),
    "custom": ("dates…", None),
}
DEFAULT: Final = "all"


@dataclass(frozen=True)
class TimeSpan:
    """``[start, end)`` in UTC; ``None`` ends are open."""

    key: str
    start: datetime | None = None
    end: datetime | None = None
    first_day: date | None = None  # the custom range's dates, as picked
    last_day: date | None = None

    @property
    def bounded(self) -> bool:
        return self.start is not None or self.end is not None

    @property
    def label(self) -> str:
        if self.key == "custom" and self.first_day and self.last_day:
            if self.first_day == self.last_day:
                return f"{self.first_day:%Y-%m-%d} (UTC)"
            return f"{self.first_day:%Y-%m-%d} – {self.last_day:%Y-%m-%d} (UTC)"
        return RANGES.get(self.key, RANGES[DEFAULT])[0]


def parse_day(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def resolve(
    key: str | None, first: str | None = None, last: str | None = None, now: datetime | None = None
) -> TimeSpan:
    """The span of a URL's ``range`` (and ``from``/``to`` for custom); unknown keys are all time."""
    key = key if key in RANGES else DEFAULT
    # relative ranges end at the next whole minute: the same span (and cached results) for a
    # minute of reruns, and the newest calls inside it
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0) + timedelta(minutes=1)
    if key == "custom":
        lo, hi = parse_day(first), parse_day(last)
        if lo is None and hi is None:
            return TimeSpan("all")
        lo, hi = lo or hi, hi or lo
        assert lo is not None and hi is not None
        lo, hi = min(lo, hi), max(lo, hi)
        start = datetime.combine(lo, time(), UTC)
        # the last day a date can be has no next day: the range is open at its end
        end = None if hi == date.max else datetime.combine(hi + timedelta(days=1), time(), UTC)
        return TimeSpan("custom", start, end, lo, hi)
    length = RANGES[key][1]
    if length is None:
        return TimeSpan(key)
    return TimeSpan(key, now - length, now)
