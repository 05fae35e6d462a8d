"""What the fault proxy injected, one content-free record per event, and the JSONL file it is
appended to (``toolwatch proxy --injection-log``).

Every line says its ``outcome``: ``injected`` (an :class:`Injection`), or ``not_applicable``
(a :class:`NotApplicable`: the fault was due but could not act on the real upstream's result,
which went to the client unchanged and unlabelled). Both have the same fields, so the file
reads as one table; a not-applicable line's ``kind`` is ``not_applicable`` too and its ``label``
``null`` (nothing was labelled), so a reader that picks lines by kind or label never counts it
as an injection.

A write that fails (a full disk, a directory removed under a running proxy) must not fail the
agent's call the injection rode on: it is logged and counted, and the event stays in
``FaultProxy.injections``. A file that cannot be opened at all is refused when the proxy starts
(:mod:`toolwatch.injection.commands.proxy`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

logger = logging.getLogger(__name__)

INJECTED: Final = "injected"
NOT_APPLICABLE: Final = "not_applicable"


@dataclass(frozen=True, slots=True)
class Injection:
    """One injected response (content-free): what, where, when."""

    time: float
    scenario: str
    fault: str
    action: str
    tool: str
    occurrence: int
    kind: str  # "call" | "reject" | "listing" | "under_listing"
    label: str
    note: str
    outcome: str = INJECTED


@dataclass(frozen=True, slots=True)
class NotApplicable:
    """A due fault that could not act on the real result (content-free): ``note`` is the
    engine's reason, made of the scenario's own pointers (``no field at /x in the result``)."""

    time: float
    scenario: str
    fault: str
    action: str
    tool: str
    occurrence: int
    kind: str = NOT_APPLICABLE
    label: None = None
    note: str = ""
    outcome: str = NOT_APPLICABLE


class InjectionLog:
    """Appends each :class:`Injection` or :class:`NotApplicable` as one JSON line; counts the
    writes that failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: lines (injections, not-applicable due calls) the file could not take
        self.failures = 0

    def append(self, event: Injection | NotApplicable) -> None:
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(event)) + "\n")
        except OSError as exc:
            self.failures += 1
            logger.error(
                "injection log %s not written (%d so far): %s", self.path, self.failures, exc
            )
