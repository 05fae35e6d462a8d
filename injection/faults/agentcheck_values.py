"""Reading an AgentCheck template's values in its clean responses: the expected answer field,
what a stale response changes, dates (the scenario's "now", a stale date written as a person
writes it) and where B2's two conflicting values lie (text, then numbers with units, commas and
scale words).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from toolwatch.injection.faults.pointer import lookup, pointer_join
from toolwatch.injection.mitigations.results import iter_leaves
from toolwatch.injection.mitigations.values import normalize_scalar, parse_date

#: Fields that describe a response rather than answer the task (not an expected value).
_DESCRIPTIVE: Final = re.compile(
    r"^(status|success|ok|source|currency|unit|.*_unit|message|note|query|q)$", re.I
)
_DATE_KEY: Final = re.compile(r"(^|_)(year|date|week|as_of|timestamp|updated|modified)", re.I)
_SCALE: Final = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_NUMBER: Final = re.compile(
    r"^[^\d-]{0,3}(-?\d[\d,]*(?:\.\d+)?)\s*(thousand|million|billion|trillion)?\b", re.I
)


def distinctive(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return len(normalize_scalar(value).lstrip("-").replace(".", "")) >= 2
    return isinstance(value, str) and len(value.strip()) >= 4


def mentioned(task: str, value: Any) -> bool:
    return normalize_scalar(value) in normalize_scalar(task)


def expected_field(clean: Any, task: str) -> tuple[str, Any] | None:
    """(pointer, value): the first distinctive answer field of a clean response that the task
    does not already say (the value an answer can only have from a successful call)."""
    for path, value in iter_leaves(clean):
        key = str(path[-1]) if path else ""
        if _DESCRIPTIVE.match(key) or not distinctive(value) or mentioned(task, value):
            continue
        return pointer_join(path), value
    return None


#: The shortest text the workbench finds in an answer as a value (``evidence.value_present``
#: reads a whole word from 3 characters): a changed gate ``A12`` or airport ``GRU`` is one.
_MIN_STALE_TEXT: Final = 3


def stale_change(clean: Any, stale: Any) -> tuple[str, Any, Any] | None:
    """(pointer, stale value, clean value) of the first answer field the stale response
    changes (dates and years are the date context, not the answer: a date-like key, or a value
    that is a date whatever its key, such as a ``delivery_day`` of "03.02.2023"). A distinctive
    field first; else a shorter text the answer can still be checked for (a gate ``E34`` that
    became ``A12``: the template was refused as changing no answer field)."""
    changes = []
    for path, value in iter_leaves(stale):
        key = str(path[-1]) if path else ""
        if _DATE_KEY.search(key) or _DESCRIPTIVE.match(key) or parse_date(value) is not None:
            continue
        found, before = lookup(clean, path)
        if found and before != value:
            changes.append((pointer_join(path), value, before))
    for pointer, value, before in changes:
        if distinctive(value):
            return pointer, value, before
    for pointer, value, before in changes:
        if isinstance(value, str) and len(value.strip()) >= _MIN_STALE_TEXT:
            return pointer, value, before
    return None


def dates_in(doc: Any) -> list[str]:
    """ISO dates in a JSON value: date strings, and years under year-like keys (the year's
    last day)."""
    out: list[str] = []
    for path, value in iter_leaves(doc):
        key = str(path[-1]) if path else ""
        when = parse_date(value) if isinstance(value, str) else None
        if when is not None:
            out.append(when.date().isoformat())
        elif (
            re.search(r"(^|_)year$", key, re.I)
            and isinstance(value, int)
            and not isinstance(value, bool)
            and 1900 <= value <= 2200
        ):
            out.append(f"{value:04d}-12-31")
    return out


UNREADABLE_DATE: Final = (
    "{} is not a date toolwatch can read (write it as 2023-02-03, 3 February 2023, "
    "February 3, 2023 or 03.02.2023)"
)


def iso_date(text: str) -> str | None:
    """A template's date as ``YYYY-MM-DD`` (an ISO date keeps the time it gives), ``None``
    when it is no date :func:`parse_date` reads (day and month never guessed)."""
    when = parse_date(text)
    if when is None:
        return None
    return text if re.match(r"\d{4}-\d{2}-\d{2}", text) else when.date().isoformat()


def number_of(value: Any) -> float | None:
    """A number from a value as AgentCheck writes it ("$119.58 billion", "38,500,000 (...)"),
    ``None`` for versions and text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    if re.fullmatch(r"v?\d+\.\d+\.\d+.*", text):
        return None  # a version is text
    m = _NUMBER.match(text)
    if not m:
        return None
    return float(m.group(1).replace(",", "")) * _SCALE.get((m.group(2) or "").lower(), 1.0)


def locate(value: Any, doc: Any, preferred: str | None) -> list[tuple[str, Any]]:
    """(pointer, field value) of the fields of ``doc`` that hold ``value``: by text
    containment first, then by number (units, commas and scale words read); a field named
    ``preferred`` first."""
    leaves = [(pointer_join(p), p, v) for p, v in iter_leaves(doc)]
    hits = [
        (ptr, path, leaf)
        for ptr, path, leaf in leaves
        if isinstance(leaf, str) and isinstance(value, str) and value.lower() in leaf.lower()
    ]
    if not hits:
        wanted = number_of(value)
        if wanted is not None:
            hits = [
                (ptr, path, leaf)
                for ptr, path, leaf in leaves
                if (n := number_of(leaf)) is not None
                and abs(n - wanted) <= 1e-9 * max(1.0, abs(wanted))
            ]
    if preferred:
        hits.sort(key=lambda hit: not hit[1] or str(hit[1][-1]) != preferred)
    return [(ptr, leaf) for ptr, _, leaf in hits]


def conflict_pair(clean_of: Mapping[str, Any], raw: Mapping[str, Any]) -> tuple[str, str]:
    """B2's two sources: the tool whose clean response holds ``tool_a_value`` and the one whose
    response holds ``tool_b_value`` (the faulted one). AgentCheck's templates list them first
    and second; the values decide when they are listed otherwise (or among more tools), and the
    first and second tools stay the answer when no pair holds both values (the conversion then
    names only the value no tool holds). ``clean_of``: each tool's clean response, in listing
    order."""
    ids = list(clean_of)
    default = (ids[0], ids[min(1, len(ids) - 1)])
    value_a, value_b = raw.get("tool_a_value"), raw.get("tool_b_value")
    if value_a is None or value_b is None:
        return default
    preferred = raw.get("conflict_field")
    holds_a = [t for t in ids if locate(value_a, clean_of[t], preferred)]
    holds_b = [t for t in ids if locate(value_b, clean_of[t], None)]
    pairs = [default] + [(a, b) for a in ids for b in ids if a != b and (a, b) != default]
    # both values found, else the one that is (so the problem names only the other), listing
    # order breaking ties
    return max(pairs, key=lambda ab: (ab[0] in holds_a) + (ab[1] in holds_b))
