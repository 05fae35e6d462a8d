"""What each due fault came to over a proxy's run: injected, or not applicable to the real
upstream's result; recorded as it happens and summed up when the proxy stops.

A scenario's patch pointer or A4 rename fits its sample ``response``; a real server's answer
may lack the field. Such a due call is forwarded unchanged and unlabelled. It used to leave only
a WARNING, nothing in the injection log, so a run whose log stayed empty could not be told from
one where the fault never fell due. Now it is a log line of its own (``"outcome":
"not_applicable"``, :class:`.injection_log.NotApplicable`) and :meth:`Outcomes.summary` counts
both outcomes, by rule, for ``toolwatch proxy``'s last line. A ``tools/list`` rewrite (C2, C4
in a description, A4's renamed schema) due on a listing it cannot act on — the upstream no
longer lists the tool, its schema has nothing to rename — is recorded the same way (it used to
pass as a listing the fault never fell due on).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.proxy.injection_log import Injection, InjectionLog, NotApplicable
from toolwatch.words import counted

logger = logging.getLogger(__name__)


#: How the summary names each kind of injection (a count of one, of more).
_KINDS = {
    "call": ("call", "calls"),
    "reject": ("call rejected", "calls rejected"),
    "listing": ("tools/list answer", "tools/list answers"),
    "under_listing": ("call under the listing", "calls under the listing"),
}


class Outcomes:
    """The injections and not-applicable due calls of one armed proxy, and the log they go to."""

    def __init__(
        self, scenario: Scenario | None, engine: FaultEngine | None, log: str | Path | None
    ) -> None:
        self.scenario = scenario
        self.engine = engine
        self.log = InjectionLog(Path(log)) if log else None
        self.injections: list[Injection] = []
        self.not_applicable: list[NotApplicable] = []

    def injected(self, tool: str, occurrence: int, kind: str, note: str) -> None:
        """Record an injected response (``kind``: call, reject, listing, under_listing)."""
        assert self.engine is not None and self.scenario is not None
        fault = self.engine.fault
        event = Injection(
            time.time(), self.scenario.id, fault.fault_id, fault.action, tool, occurrence, kind,
            self.engine.label, note,
        )  # fmt: skip
        self.injections.append(event)
        unit = "tools/list" if kind == "listing" else "call"
        logger.info("injected %s into %s #%d of %r: %s", event.label, unit, occurrence, tool, note)
        if self.log is not None:
            self.log.append(event)

    def skipped(self, tool: str, occurrence: int, reason: str, unit: str = "call") -> None:
        """Record a due call (``unit`` ``tools/list``: a due listing) the fault could not act
        on, forwarded unchanged and unlabelled."""
        assert self.engine is not None and self.scenario is not None
        fault = self.engine.fault
        event = NotApplicable(
            time.time(), self.scenario.id, fault.fault_id, fault.action, tool, occurrence,
            note=reason,
        )  # fmt: skip
        self.not_applicable.append(event)
        logger.warning(
            "fault %s due on %s #%d of %r but not applicable (%s); forwarded unchanged",
            self.engine.label,
            unit,
            occurrence,
            tool,
            reason,
        )
        if self.log is not None:
            self.log.append(event)

    def summary(self) -> str | None:
        """One line for the end of the run: injections made and due calls not applicable, by
        rule (the armed fault's label), with kinds and reasons counted; ``None`` unarmed."""
        if self.engine is None:
            return None
        made, missed = len(self.injections), len(self.not_applicable)
        head = f"run summary: {counted(made, 'injection')} made, {missed:,} not applicable"
        kinds = Counter(i.kind for i in self.injections)
        reasons = Counter(n.note for n in self.not_applicable)
        parts = [counted(n, *_KINDS.get(kind, (kind, kind))) for kind, n in sorted(kinds.items())]
        parts += [f"{n:,} not applicable: {why}" for why, n in sorted(reasons.items())]
        rule = f"{self.engine.label} on {self.engine.fault.tool!r}"
        line = f"{head} ({rule}: {'; '.join(parts) or 'never due'})"
        if self.log is not None and self.log.failures:
            line += f"; {counted(self.log.failures, 'line')} not written to {self.log.path}"
        return line
