"""Tool spans kept with a flaw in their times: stored without a duration, flagged by reason.

A span that ends before it starts still records a call that happened: the OTel Python SDK
takes both times from the wall clock, so a clock step during a call gives end < start, and
rejecting it would remove a call from its stream and change the order the detectors score.
So, like Jaeger's clock-skew handling, the call is kept (duration null) and flagged: counted
by reason (:data:`FLAW_REASONS`, a closed set: they are metric labels) and named in
``partial_success`` as a warning with ``rejected_spans`` 0, which OTLP allows of a request it
accepted whole. A span with no end time is kept and flagged the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from toolwatch.words import counted

END_BEFORE_START: Final = "end_before_start"
NO_END_TIME: Final = "no_end_time"
#: why a stored call has no duration; a span's flaw code is 1 + its index here (0: none)
FLAW_REASONS: Final = (END_BEFORE_START, NO_END_TIME)
#: per reason: (one span, several spans, what the sender can do), for the OTLP answer
_SAID: Final = {
    END_BEFORE_START: (
        "ends before it starts",
        "end before they start",
        "did the sender's clock step back during the call?",
    ),
    NO_END_TIME: ("has no end time", "have no end time", "end each span before exporting it"),
}


def flaw_codes(start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Each span's flaw code (int8; 0 for a span whose times give a duration)."""
    codes = np.zeros(start_ns.shape, np.int8)
    codes[(end_ns != 0) & (end_ns < start_ns)] = 1 + FLAW_REASONS.index(END_BEFORE_START)
    codes[end_ns == 0] = 1 + FLAW_REASONS.index(NO_END_TIME)
    return codes


def flaw_code(start_ns: int, end_ns: int) -> int:
    """:func:`flaw_codes` of one span (Python integers: OTLP/JSON times may pass 2**64)."""
    if not end_ns:
        return 1 + FLAW_REASONS.index(NO_END_TIME)
    return 1 + FLAW_REASONS.index(END_BEFORE_START) if end_ns < start_ns else 0


def flaw_counts(codes: np.ndarray) -> dict[str, int]:
    """Spans by flaw reason (only the reasons present)."""
    counts = np.bincount(codes.astype(np.int64), minlength=len(FLAW_REASONS) + 1).tolist()
    return {reason: counts[i + 1] for i, reason in enumerate(FLAW_REASONS) if counts[i + 1]}


def flaw_message(counts: Mapping[str, int]) -> str:
    """The warning for a request's flagged spans ("" when none): each reason, its count and
    what to do, then that they were stored without a duration."""
    parts = []
    for reason in FLAW_REASONS:
        n = counts.get(reason, 0)
        if n:
            one, many, hint = _SAID[reason]
            said = one if n == 1 else many
            parts.append(f"{counted(n, 'span')} {said}: stored without a duration ({hint})")
    return "; ".join(parts)
