"""Comparing values across tool results: dates, scalars, identifiers, word tokens and JSON-schema
problems (used by the verifier, the agents and the checks; whether a tool acts is ``acts.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import jsonschema

from toolwatch.injection.mitigations.keys import ANCHOR_KEYS, IDENTIFIER_NAME
from toolwatch.injection.mitigations.results import iter_leaves
from toolwatch.words import counted, noun_for

_DATE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)


def parse_date(value: Any) -> datetime | None:
    """A UTC datetime from a whole-string date, else ``None``: ISO 8601, and the forms tool
    results and scenario authors write (:func:`_written_date`), so a stale report dated
    "03.02.2023" or "March 9, 2024" is as old as one dated 2023-02-03."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value.strip())
    if not m:
        return _written_date(value.strip())
    try:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hh, mm, ss = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
        dt = datetime(y, mo, d, hh, mm, ss, tzinfo=UTC)
    except ValueError:
        return None
    tz = m.group(7)
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return dt


_MONTHS: Final = {
    name: i + 1
    for i, names in enumerate(
        (
            "jan january",
            "feb february",
            "mar march",
            "apr april",
            "may",
            "jun june",
            "jul july",
            "aug august",
            "sep sept september",
            "oct october",
            "nov november",
            "dec december",
        )
    )
    for name in names.split()
}
_MONTH = r"([A-Za-z]{3,9})\.?"
#: An optional time after a written date ("08:12", "8:12:30 pm") and a zone ("UTC", "CDT",
#: "+02:00"); a zone named by letters other than UTC/GMT/Z is read as UTC (hours off at most:
#: these dates are compared in days).
_TIME = r"(?:,?\s*(?:at\s+)?(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?)?"
_ZONE = r"(?:\s*([A-Z]{1,5}|[+-]\d{2}:?\d{2}))?"
_WEEKDAY = r"(?:(?:[Mm]on|[Tt]ue|[Ww]ed|[Tt]hu|[Ff]ri|[Ss]at|[Ss]un)[a-z]*\.?,?\s+)?"
_WRITTEN: Final = (
    # 2025/03/14, 2025.03.14, 2025-08-04 15:30 CDT
    ("ymd", re.compile(rf"^(\d{{4}})([-/.])(\d{{1,2}})\2(\d{{1,2}}){_TIME}{_ZONE}$")),
    # 14.03.2025 (dots: day first), 14/03/2025 or 03/14/2025 (slashes, dashes: whichever
    # reading is the only valid one; 03/04/2025 is ambiguous and not read)
    ("dmy", re.compile(rf"^(\d{{1,2}})\.(\d{{1,2}})\.(\d{{4}}){_TIME}{_ZONE}$")),
    ("either", re.compile(rf"^(\d{{1,2}})[/-](\d{{1,2}})[/-](\d{{4}}){_TIME}{_ZONE}$")),
    # March 9, 2024 / Sunday, Mar. 9 2024
    (
        "mdy",
        re.compile(
            rf"^{_WEEKDAY}{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}}){_TIME}{_ZONE}$"
        ),
    ),
    # 9 March 2024 / 9th of March, 2024
    (
        "dMy",
        re.compile(
            rf"^{_WEEKDAY}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}}){_TIME}{_ZONE}$"
        ),
    ),
)


def _written_date(text: str) -> datetime | None:
    """A date in one of the :data:`_WRITTEN` forms (never a guess between day and month)."""
    for kind, pattern in _WRITTEN:
        m = pattern.match(text)
        if m is None:
            continue
        groups = [g for i, g in enumerate(m.groups()) if not (kind == "ymd" and i == 1)]
        a, b, c, *clock = groups
        if kind in ("mdy", "dMy"):
            month = _MONTHS.get((a if kind == "mdy" else b).lower())
            if month is None:
                return None
            y, mo, d = int(c), month, int(b if kind == "mdy" else a)
        elif kind == "ymd":
            y, mo, d = int(a), int(b), int(c)
        elif kind == "dmy" or int(a) > 12 >= int(b):
            y, mo, d = int(c), int(b), int(a)
        elif int(b) > 12 >= int(a):
            y, mo, d = int(c), int(a), int(b)
        else:
            return None
        return _at(y, mo, d, *clock)
    return None


def _at(
    y: int,
    mo: int,
    d: int,
    hh: str | None,
    mm: str | None,
    ss: str | None,
    half: str | None,
    zone: str | None,
) -> datetime | None:
    hour = int(hh or 0)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.lower() == "pm" else 0)
    try:
        dt = datetime(y, mo, d, hour, int(mm or 0), int(ss or 0), tzinfo=UTC)
    except ValueError:
        return None
    if zone and zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        sign = 1 if zone[0] == "+" else -1
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return dt


def normalize_scalar(value: Any) -> str:
    """Comparable form of a scalar: numbers canonical, strings case/space folded."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        f = float(value)
        if math.isfinite(f) and f == int(f):
            return str(int(f))
        return repr(round(f, 6))
    return re.sub(r"\s+", " ", str(value)).strip().lower()


_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{2,}", re.I)
_STOP: Final = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "into",
        "about",
        "what",
        "when",
        "where",
        "which",
        "their",
        "there",
        "have",
        "has",
        "are",
        "was",
        "were",
        "will",
        "would",
        "could",
        "should",
        "any",
        "all",
        "not",
        "but",
        "you",
        "your",
        "our",
        "its",
        "per",
        "via",
    ]
)


def tokens(value: Any) -> set[str]:
    """Content words (≥ 3 chars, stop words dropped) of all strings/numbers in a value."""
    out: set[str] = set()
    for _, leaf in iter_leaves(value):
        if isinstance(leaf, str | int | float) and not isinstance(leaf, bool):
            for w in _WORD.findall(str(leaf)):
                w = w.lower()
                if w not in _STOP:
                    out.add(w)
                    out.update(p for p in re.split(r"[_-]", w) if len(p) >= 3 and p not in _STOP)
    return out


def schema_problems(data: Any, schema: Mapping[str, Any]) -> list[str]:
    """Human-readable reasons ``data`` violates ``schema`` (empty list = valid)."""
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except jsonschema.exceptions.SchemaError as exc:
        return [f"declared output schema is invalid: {exc.message}"]
    return [describe_schema_error(err) for err in errors[:8]]


def _additional(err: jsonschema.ValidationError) -> list[str]:
    """The fields of an ``additionalProperties`` violation that the schema does not allow."""
    if not isinstance(err.instance, Mapping):
        return []
    named = err.schema.get("properties", {}) if isinstance(err.schema, Mapping) else {}
    patterns = err.schema.get("patternProperties", {}) if isinstance(err.schema, Mapping) else {}
    return [
        str(k)
        for k in err.instance
        if k not in named and not any(re.search(p, str(k)) for p in patterns)
    ]


def describe_schema_error(err: jsonschema.ValidationError) -> str:
    """One schema violation by field path and rule only: never the offending value, which is
    result content (jsonschema's own message quotes it)."""
    where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
    if err.validator == "required":
        missing = [
            str(r)
            for r in err.validator_value
            if isinstance(err.instance, Mapping) and r not in err.instance
        ]
        return f"{where}: missing required {noun_for(len(missing), 'field')} {', '.join(missing)}"
    if err.validator == "additionalProperties":  # counted, never named: the names are content
        return f"{where}: {counted(len(_additional(err)), 'unexpected field')}"
    return f"{where}: expected {err.validator} {err.validator_value!r}"


def client_rejection_detail(exc: BaseException) -> str:
    """Why the mcp client refused a result (see :func:`is_client_validation_error`), by field
    names: the SDK chains the jsonschema error it raised from."""
    cause = exc.__cause__
    if isinstance(cause, jsonschema.ValidationError):
        return describe_schema_error(cause)
    if "did not return structured content" in str(exc):
        return "(top level): no structured content"
    return "the declared output schema could not be applied"


def same_identifier(asked: Any, answered: Any) -> bool:
    """Loose equality for identifiers: equal after normalising, containment (``Lisbon`` /
    ``Lisbon, PT``) or a long common prefix (``Lisbon`` / ``Lisboa``) — but never when their
    digits differ (``GDPR-Art-33`` is not ``GDPR-Art-20``)."""
    a, b = normalize_scalar(asked), normalize_scalar(answered)
    if a == b or not a or not b:
        return True  # nothing to tell them apart by
    if re.findall(r"\d+", a) != re.findall(r"\d+", b):
        return False
    if min(len(a), len(b)) >= 4 and (a in b or b in a):
        return True
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    return prefix >= max(5, int(0.8 * min(len(a), len(b))))


def is_identifier_name(name: str) -> bool:
    """Argument or field names that say *which* entity is meant (an id, a symbol, a city,
    a repository path) rather than what is asked about it."""
    return bool(IDENTIFIER_NAME.search(name) or ANCHOR_KEYS.search(name)) or name == "path"


def identifier_mismatches(arguments: Mapping[str, Any], data: Any) -> list[str]:
    """Identifier arguments that the result echoes (top-level field of the same name) with
    another value: the answer is about another entity than the one asked for."""
    if not isinstance(data, Mapping):
        return []
    out: list[str] = []
    for name, asked in arguments.items():
        if not is_identifier_name(name):
            continue  # free text (a query) is echoed normalised; only identifiers must match
        if not isinstance(asked, str | int) or isinstance(asked, bool) or name not in data:
            continue
        answered = data[name]
        scalar = isinstance(answered, str | int) and not isinstance(answered, bool)
        if scalar and not same_identifier(asked, answered):
            out.append(name)
    return out
