"""What the fault proxy injected, one content-free record per event, and the JSONL file it is
appended to (``toolwatch proxy --injection-log``).

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

logger = logging.getLogger(__name__)


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


class InjectionLog:
    """Appends each :class:`Injection` as one JSON line; counts the writes that failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: injections the file could not take
        self.failures = 0

    def append(self, event: Injection) -> None:
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(event)) + "\n")
        except OSError as exc:
            self.failures += 1
            logger.error(
                "injection log %s not written (%d so far): %s", self.path, self.failures, exc
            )
