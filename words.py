"""How toolwatch writes a count with its noun, in every report, summary and page.

Standard library only, so the production install (instrumentation) and the proxy can use it
without the extras the store needs.
"""

from __future__ import annotations

from typing import Any


def counted(n: Any, noun: str, plural: str | None = None) -> str:
    """A count with its noun, singular for exactly one: ``1 stream``, ``0 streams``,
    ``8,729 streams`` (``plural`` defaults to ``noun + "s"``), never "1 streams" or
    "1 stream(s)"."""
    value = int(n)
    return f"{value:,} {noun_for(value, noun, plural)}"


def noun_for(n: Any, noun: str, plural: str | None = None) -> str:
    """The noun alone for a count of ``n`` (singular for exactly one), for a message that lists
    the things instead of counting them: ``unknown fields 'a', 'b'``, ``unknown field 'a'``."""
    return noun if int(n) == 1 else plural or noun + "s"
