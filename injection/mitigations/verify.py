"""The output verifier: cross-checks values between tools and flags contradictions, stale timestamps
and results that do not mention what was asked for (annotations: the result is kept).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

from mcp.types import CallToolResult, ListToolsResult

from toolwatch.injection.mitigations.acts import ListedTool, tool_verb
from toolwatch.injection.mitigations.keys import DATA_DATE_KEYS, FRESHNESS_KEYS, anchor_name
from toolwatch.injection.mitigations.results import annotate, iter_leaves, result_data
from toolwatch.injection.mitigations.values import (
    identifier_mismatches,
    normalize_scalar,
    parse_date,
)
from toolwatch.injection.mitigations.wrapper import EventSink, Mitigation, Send
from toolwatch.words import counted


class OutputVerifier(Mitigation):
    """Cross-check results within a session: contradictions, staleness, off-target answers.

    * **conflict**: a number in this result differs (beyond rounding) from one another
      *reading* tool returned
      about the same entity (the results share an identifier such as ``employee_id`` or
      ``sku``) under a field with a name in common (``temp_c`` / ``temp_c``,
      ``stock_total`` / ``on_hand_total``); a record in a list (a warehouse's ``items``) is
      compared as its own entity, only with a result or record of another tool that carries
      the same identifying field with the same value (``sku: BOLT-M8``, or ``item_sku``: one
      identifier under another tool's spelling, :func:`anchor_name`) — the other items of
      a list are other entities, and a record without an identifier cannot be matched; the
      results of actions (a restart, an update) are not compared, since they are a new state;
    * **stale**: a freshness field (``as_of``, ``updated_at``, ``published``, ...) is more than
      ``max_age`` older than the newest freshness date any result of the session carried —
      data is judged against the other sources, not the wall clock, so an archived session
      does not look stale by age alone (``reference_time`` overrides). When the fresher
      result comes second, its annotation names the earlier, stale one. When the task needs
      current data (``require_fresh``, a property of the task the deployment knows, like its
      clock), the dates data is *of* count too — a ``year``, a ``date``, a ``release_date``,
      an ISO week — and ``fresh_max_age`` applies: a single source about "the current
      population" dated 2010 is stale against a 2024 ``reference_time`` (a year-only date is
      stale when it is older than last year); so are dates under any other key, found by
      their value (``delivery_day: 03.02.2023``, ``reported: 2024-11-02T08:00Z``), when even
      the newest date of the result is that old;
    * **mismatch**: the result names a different entity than the one asked for (called with
      ``runbook_id=RB-CHK-07``, it answers about ``runbook_id: RB-SRCH-02``).
    """

    name = "verify"

    def __init__(
        self,
        inner: Any,
        *,
        max_age: timedelta = timedelta(days=180),
        reference_time: datetime | None = None,
        require_fresh: bool = False,
        fresh_max_age: timedelta = timedelta(days=30),
        on_event: EventSink | None = None,
    ) -> None:
        super().__init__(inner, on_event=on_event)
        self.max_age = max_age
        self.reference_time = reference_time
        self.require_fresh = require_fresh
        self.fresh_max_age = fresh_max_age
        self._seen: list[_Seen] = []
        #: what each listed tool says it does (description, annotations): whether a tool
        #: acts is read from them, not from its name alone
        self._listed: dict[str, tuple[str, dict[str, Any]]] = {}

    async def list_tools(self, *args: Any, **kwargs: Any) -> ListToolsResult:
        listing = await super().list_tools(*args, **kwargs)
        for t in listing.tools:
            listed = ListedTool.of(t)
            self._listed[t.name] = (listed.description, dict(listed.annotations or {}))
        return listing

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        result = await send(timeout)
        if result.is_error:
            return result
        for flag, message, detail in self.inspect(name, arguments, result_data(result)):
            self._emit(flag, name, detail)
            result = annotate(result, self.name, flag, message, detail)
        return result

    def inspect(
        self, tool: str, arguments: Mapping[str, Any], data: Any
    ) -> list[tuple[str, str, str]]:
        """Problems of one result given the session so far: (flag, message, detail)."""
        seen = _Seen.of(tool, data, arguments, *self._listed.get(tool, ("", None)))
        found: list[tuple[str, str, str]] = []
        mismatched = identifier_mismatches(arguments, data)
        if mismatched:
            detail = ", ".join(f"{name} differs from the request" for name in mismatched)
            found.append(
                (
                    "mismatch",
                    f"This result is about something else than what was asked ({detail}); it "
                    "may be unrelated to the request.",
                    detail,
                )
            )
        if not seen.writes:
            conflicts = sorted(
                {
                    f"{key} vs {other_key} of {prior.tool}"
                    for prior in self._seen
                    if not prior.writes and prior.tool != tool and prior.same_entity(seen)
                    for key, other_key in _contradictions(seen, prior)
                }
                | {
                    f"{key} vs {other_key} of {prior.tool} (records with the same {anchor})"
                    for prior in self._seen
                    if not prior.writes and prior.tool != tool
                    for anchor, mine, theirs in _matched_records(seen, prior)
                    for key, other_key in _contradictions(mine, theirs)
                }
            )
            if conflicts:
                detail = "; ".join(conflicts)
                found.append(
                    (
                        "conflict",
                        f"Values in this result contradict an earlier result ({detail}). The "
                        "sources disagree; do not pick one without saying so.",
                        detail,
                    )
                )
        newest = max((d for p in self._seen for _, d in p.dates), default=None)
        reference = self.reference_time or max(
            [d for d in (newest, *[d for _, d in seen.dates]) if d is not None], default=None
        )
        limit = self.fresh_max_age if self.require_fresh else self.max_age
        stale = [
            f"{key} {counted((reference - when).days, 'day')} older"
            for key, when in seen.dates
            if reference is not None and reference - when > limit
        ]
        if self.require_fresh and reference is not None:
            stale += [
                f"{key} {counted((reference - when).days, 'day')} older"
                for key, when, year_only in seen.data_dates
                if (reference.year - when.year > 1 if year_only else reference - when > limit)
            ]
            if seen.other_dates:
                # a date under any other key (delivery_day, reported): the result is as
                # current as its newest date — an old order date beside a fresh scan is fine
                newest_own = max(
                    [d for _, d in (*seen.dates, *seen.other_dates)]
                    + [d for _, d, _ in seen.data_dates]
                )
                if reference - newest_own > limit:
                    key, when = max(seen.other_dates, key=lambda kd: kd[1])
                    stale.append(f"{key} {counted((reference - when).days, 'day')} older")
        stale = list(dict.fromkeys(stale))
        if stale:
            detail = ", ".join(stale)
            found.append(
                (
                    "stale",
                    f"This result may be out of date ({detail} than other data in this "
                    "session); confirm it is current before relying on it.",
                    detail,
                )
            )
        fresh = max((d for _, d in seen.dates), default=None)
        if fresh is not None and self.reference_time is None:
            older = sorted(
                {
                    f"{prior.tool} {key} {counted((fresh - when).days, 'day')} older"
                    for prior in self._seen
                    for key, when in prior.dates
                    if fresh - when > self.max_age
                }
            )
            if older:
                detail = ", ".join(older)
                found.append(
                    (
                        "stale",
                        f"An earlier result is much older than this one ({detail}); it may be "
                        "out of date.",
                        detail,
                    )
                )
        self._seen.append(seen)
        return found


@dataclass
class _Seen:
    """What the verifier keeps of one result: anchors, top-level numbers, freshness dates."""

    tool: str
    writes: bool
    anchors: set[tuple[str, str]]
    numbers: dict[str, float]
    #: top-level strings (what a result says in words) and the request's argument values
    strings: dict[str, str]
    asked: set[str]
    dates: list[tuple[str, datetime]]
    #: dates the data is *of* (key, date, only the year is known), read when fresh data is
    #: required
    data_dates: list[tuple[str, datetime, bool]]
    #: dates under other keys, found by value (``delivery_day: 03.02.2023``), read when fresh
    #: data is required
    other_dates: list[tuple[str, datetime]] = field(default_factory=list)
    #: the records of its lists — compared only when matched by an identifier
    records: list[_Seen] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        tool: str,
        data: Any,
        arguments: Mapping[str, Any] | None = None,
        description: str = "",
        annotations: Mapping[str, Any] | None = None,
    ) -> _Seen:
        anchors: set[tuple[str, str]] = set()
        numbers: dict[str, float] = {}
        strings: dict[str, str] = {}
        dates: list[tuple[str, datetime]] = []
        data_dates: list[tuple[str, datetime, bool]] = []
        other_dates: list[tuple[str, datetime]] = []
        for path, value in iter_leaves(data):
            if not path or not isinstance(path[-1], str):
                continue
            key = str(path[-1])
            in_list = any(isinstance(p, int) for p in path)
            if FRESHNESS_KEYS.search(key) and (when := parse_date(value)) is not None:
                dates.append((key, when))
                continue
            if DATA_DATE_KEYS.search(key) and (dated := _data_date(value)) is not None:
                data_dates.append((key, *dated))
            elif (when := parse_date(value)) is not None:
                other_dates.append((key, when))
            if not in_list:
                _classify(key, value, anchors, numbers, strings)
        asked = {
            normalize_scalar(v)
            for v in (arguments or {}).values()
            if isinstance(v, str) and len(v.strip()) >= 5
        }
        writes = tool_verb(tool, description, annotations)[1]
        records = [
            cls(tool, writes, *_fields(record), set(), [], []) for record in _list_records(data)
        ]
        return cls(
            tool, writes, anchors, numbers, strings, asked, dates, data_dates, other_dates, records
        )

    def names(self) -> set[str]:
        """Short values that name what a result is about (an identifier, a drug, a query):
        under a key that is not a unit, a source or a status."""
        return {
            normalize_scalar(v)
            for k, v in self.strings.items()
            if 5 <= len(v) <= 60 and not _DESCRIPTIVE.search(k)
        }

    def same_entity(self, other: _Seen) -> bool:
        """Both results are about the same thing: they share an anchor (``sku``, ``ticker``),
        a naming value (``"metformin"``, ``"CVE-2024-1234"``, the same query echoed), or
        were asked with the same argument value."""
        mine = {v for _, v in self.anchors} | self.names()
        theirs = {v for _, v in other.anchors} | other.names()
        return bool(mine & theirs) or bool(self.asked & other.asked)


def _classify(
    key: str,
    value: Any,
    anchors: set[tuple[str, str]],
    numbers: dict[str, float],
    strings: dict[str, str],
) -> None:
    """File one scalar field as an anchor (under its identifier's one spelling, so
    ``item_sku`` meets ``sku``), a number or a statement."""
    anchor = anchor_name(key)
    if anchor is not None and isinstance(value, str | int) and value != "":
        anchors.add((anchor, normalize_scalar(value)))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        numbers[key] = float(value)
    elif isinstance(value, str) and _NUMERIC.fullmatch(value.strip()):
        numbers[key] = float(value.replace(",", ""))
    elif isinstance(value, str) and value.strip():
        strings[key] = value.strip()


def _fields(
    record: Mapping[str, Any],
) -> tuple[set[tuple[str, str]], dict[str, float], dict[str, str]]:
    """(anchors, numbers, statements) of a record's own fields (not those of its lists)."""
    anchors: set[tuple[str, str]] = set()
    numbers: dict[str, float] = {}
    strings: dict[str, str] = {}
    for path, value in iter_leaves(record):
        if path and isinstance(path[-1], str) and not any(isinstance(p, int) for p in path):
            _classify(str(path[-1]), value, anchors, numbers, strings)
    return anchors, numbers, strings


def _list_records(data: Any) -> list[Mapping[str, Any]]:
    """Every object that is an item of a list, at any depth."""
    out: list[Mapping[str, Any]] = []
    if isinstance(data, Mapping):
        for value in data.values():
            out += _list_records(value)
    elif isinstance(data, list | tuple):
        for item in data:
            if isinstance(item, Mapping):
                out.append(item)
            out += _list_records(item)
    return out


def _identifiers(seen: _Seen) -> set[tuple[str, str]]:
    """Anchors distinctive enough to match records by (``sku: BOLT-M8``, not ``id: 3``)."""
    return {(k, v) for k, v in seen.anchors if len(v) >= 3}


def _matched_records(seen: _Seen, prior: _Seen) -> list[tuple[str, _Seen, _Seen]]:
    """(identifying key, mine, theirs): a list record of one result and the other result, or
    one of its records, that carry the same identifying field with the same value (two whole
    results are :meth:`_Seen.same_entity`'s to match)."""
    pairs = [(mine, theirs) for mine in seen.records for theirs in (prior, *prior.records)]
    pairs += [(seen, theirs) for theirs in prior.records]
    out = []
    for mine, theirs in pairs:
        shared = sorted(_identifiers(mine) & _identifiers(theirs))
        if shared:
            out.append((shared[0][0], mine, theirs))
    return out


_UNIT_WORDS: Final = frozenset(
    [
        "eur",
        "usd",
        "gbp",
        "pct",
        "percent",
        "c",
        "f",
        "k",
        "kph",
        "mph",
        "mm",
        "cm",
        "km",
        "kg",
        "mg",
        "ms",
        "s",
        "min",
    ]
)


_NUMERIC: Final = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
#: Keys whose strings describe a value (its unit, source, definition) rather than state it.
_DESCRIPTIVE: Final = re.compile(
    r"(^|_)(currency|unit|units|source|sources|type|format|measurement|definition|note|notes|"
    r"method|url|link|title|description|lts|language)$",
    re.I,
)
_NEGATIONS: Final = frozenset({"not", "no", "never", "don't", "doesn't", "didn't", "isn't", "nor"})


def _contradictions(seen: _Seen, prior: _Seen) -> list[tuple[str, str]]:
    """(key, prior key) pairs on which two results about the same entity disagree: numbers
    beyond rounding under related keys; short categorical values under the same key
    (``Patched`` / ``Vulnerable``); and statements under the same key that differ only in a
    number or a negation ("has 206 bones" / "has 213 bones", "reduce" / "do not reduce")."""
    out = [
        (key, other_key)
        for key, value in seen.numbers.items()
        for other_key, other in prior.numbers.items()
        if _related_keys(key, other_key) and _differ(value, other)
    ]
    for key, text in seen.strings.items():
        other = prior.strings.get(key)
        if other is None or _DESCRIPTIVE.search(key) or parse_date(text) or parse_date(other):
            continue
        mine, theirs = _words(text), _words(other)
        if mine == theirs:
            continue
        if len(mine) <= 3 and len(theirs) <= 3:
            out.append((key, key))
            continue
        numbers_mine = {w for w in mine if _NUMERIC.fullmatch(w)}
        numbers_theirs = {w for w in theirs if _NUMERIC.fullmatch(w)}
        rest = (mine - numbers_mine) ^ (theirs - numbers_theirs)
        if (not rest and numbers_mine != numbers_theirs) or (
            rest & _NEGATIONS and rest <= _NEGATIONS | {"do", "does", "did"}
        ):
            out.append((key, key))
    return out


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w'.,-]+", text.lower().rstrip(".")) if w}


def _key_words(key: str) -> set[str]:
    return {w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", key.lower()) if w} - _UNIT_WORDS


def _related_keys(a: str, b: str) -> bool:
    return a.lower() == b.lower() or bool(_key_words(a) & _key_words(b))


_WEEK: Final = re.compile(r"^(\d{4})-W(\d{2})$")


def _data_date(value: Any) -> tuple[datetime, bool] | None:
    """(date, only the year is known) of a value under a data-date key: an ISO date, an ISO
    week (its Monday) or a year."""
    if isinstance(value, int) and not isinstance(value, bool) and 1900 <= value <= 2200:
        return datetime(value, 12, 31, tzinfo=UTC), True
    if not isinstance(value, str):
        return None
    when = parse_date(value)
    if when is not None:
        return when, False
    week = _WEEK.match(value.strip())
    if week:
        try:
            day = date.fromisocalendar(int(week.group(1)), int(week.group(2)), 1)
        except ValueError:
            return None
        return datetime(day.year, day.month, day.day, tzinfo=UTC), False
    return None


def _decimals(x: float) -> int:
    text = repr(float(x))
    return 0 if "e" in text or text.endswith(".0") else len(text.split(".")[1])


def _differ(a: float, b: float) -> bool:
    """The two numbers disagree beyond rounding: compared at the precision of the coarser one
    (192.5 and 193.25 disagree, 131.4 and 131.42 do not)."""
    places = min(_decimals(a), _decimals(b))
    return round(a, places) != round(b, places)
