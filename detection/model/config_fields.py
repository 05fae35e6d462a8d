"""The type of each field of a config read from JSON or ``--model-config KEY=VALUE``.

A dataclass takes whatever it is given, so before this check ``order_session_mix=maybe`` ran
as *true* (a non-empty string), ``size_min_count=2.5`` ran as a fraction and ``cusum_k=abc``
failed deep inside a fit as a bug. Each value is validated against its field's annotation by
pydantic in strict mode (an integer stands for a float; nothing else is converted), so a wrong
value is refused before any work, naming the field, the value and the type wanted.

pydantic is imported when a value is first checked, not with this module: the options of
``toolwatch train|replay`` live beside these checks, and their ``--help`` needs no pydantic.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_type_hints

from toolwatch.words import noun_for

if TYPE_CHECKING:
    from pydantic import TypeAdapter


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation)


_WANTED = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _wanted(annotation: Any) -> str:
    return _WANTED.get(annotation) or f"of type {str(annotation).replace('typing.', '')}"


def checked_fields(cls: type, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``values`` validated against the annotations of ``cls``'s fields: the values to build
    ``cls`` from (JSON arrays as tuples), and the problems (one ``name must be …, got …`` per bad
    value; or the unknown names alone)."""
    hints = _hints(cls)
    unknown = sorted(set(values) - set(hints))
    if unknown:
        return {}, [
            f"has no {noun_for(len(unknown), 'field')} {unknown} (its fields: {', '.join(hints)})"
        ]
    from pydantic import ValidationError

    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in values.items():
        annotation = hints[name]
        given = tuple(value) if isinstance(value, list) else value  # JSON has no tuples
        try:
            out[name] = _adapter(annotation).validate_python(given, strict=True)
        except ValidationError:
            problems.append(f"{name} must be {_wanted(annotation)}, got {value!r}")
    return out, problems
