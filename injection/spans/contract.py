"""What every injector returns (:class:`Injection`) or raises (:class:`InjectionError`), and the
notes an injection can carry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from toolwatch.injection.spans.session_arrays import SessionCalls

#: Note set on an exfiltration whose session had no Read before any allowed position.
NOTE_READ_PAIR: Final = "read_pair_inserted"
#: Note set when the insertion point falls inside a model response (no boundary was usable).
NOTE_MID_RESPONSE: Final = "mid_response"


class InjectionError(ValueError):
    """The anomaly cannot be placed in this session (the message says why)."""


@dataclass(frozen=True, slots=True)
class Injection:
    """An injected session: where the anomaly starts and how many calls carry its label."""

    calls: SessionCalls
    kind: str
    position: int  # index of the first injected call in ``calls``
    inserted: int  # labelled calls (inserted or re-timed)
    note: str = ""


#: ``(kind, session, position, rng, context, params) -> Injection`` (exfiltration: + bounds).
Injector = Callable[..., Injection]
