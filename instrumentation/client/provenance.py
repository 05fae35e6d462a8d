"""The instrumentor's provenance glue: measure each call's arguments against the stream's earlier
results, in the agent's process, and put only the numbers on the span.

:class:`ProvenanceHook` is what :mod:`.instrumentor` calls: :meth:`~ProvenanceHook.check`
before the request (its attributes go on the span as it starts, so the check's time is not in
the call's duration) and :meth:`~ProvenanceHook.ingest` after the span has ended (so the result's
copy into the window is not in it either). A stream is ``(conversation id, agent id)``, as the
records group calls; the results of the model response whose calls are being made are held
back until its calls are over (:mod:`toolwatch.instrumentation.provenance.tracker`).

By default only calls that send data off the machine are measured (``egress`` is set on every
call; the ``reused_*`` numbers only on egress calls, the ones the provenance cue reads). The
window keeps at most ``DEFAULT_MAX_STREAMS`` streams of ≈ 5.9 MiB each, allocated per stream
that exists. ``TOOLWATCH_PROVENANCE=off`` (or ``instrument(provenance=False)``) turns it off.

Nothing here may break a call or leak content: every failure is logged by its exception
*type* only (a message could quote an argument) and the call goes on without the attributes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, Final, TypeAlias

from toolwatch.conventions import ATTR_MCP_SERVER
from toolwatch.instrumentation.client.context import CallContext
from toolwatch.instrumentation.provenance import (
    DEFAULT_CONFIG,
    EXPORTED_FIELDS,
    ProvenanceTracker,
    TrackerStats,
)
from toolwatch.record import CALL_FIELDS

log = logging.getLogger(__name__)

#: environment switch for zero-code use: ``off``/``0``/``false`` turns provenance off
ENV_PROVENANCE: Final = "TOOLWATCH_PROVENANCE"
_OFF: Final = frozenset({"0", "off", "false", "no", "none"})
#: the live default: egress calls only (the importer measures every call)
LIVE_CONFIG: Final = dataclasses.replace(DEFAULT_CONFIG, check_non_egress=False)
#: record field -> span attribute, for the fields a Provenance fills
_ATTRIBUTES: Final = {
    f.name: f.attribute for f in CALL_FIELDS if f.name in EXPORTED_FIELDS and f.attribute
}
_EGRESS: Final = _ATTRIBUTES["egress"]
#: what ``instrument(provenance=...)`` takes (see :func:`install`)
ProvenanceSpec: TypeAlias = bool | ProvenanceTracker | None


class ProvenanceHook:
    """Checks and ingests for the instrumentor, over one :class:`ProvenanceTracker`."""

    def __init__(self, tracker: ProvenanceTracker | None = None) -> None:
        self.tracker = tracker or ProvenanceTracker(LIVE_CONFIG)
        self.failures = 0

    def check(self, where: CallContext, tool: str, arguments: Any, attrs: dict[str, Any]) -> None:
        """Add the provenance attributes of a call about to be sent to its span attributes
        ``attrs`` (which name its server); none when it cannot be measured."""
        try:
            server = _server(attrs.get(ATTR_MCP_SERVER))
            found = self.tracker.check_call((where[0], where[1]), tool, server, arguments, where[2])
        except Exception as exc:
            self._failed("measure a call", exc)
            return
        if found.reused_longest is None:  # not measured: its class only (as exported())
            attrs[_EGRESS] = found.egress
            return
        for name, value in found.exported().items():
            if value is not None:
                attrs[_ATTRIBUTES[name]] = value

    def ingest(self, where: CallContext, tool: str, result: Any, attrs: dict[str, Any]) -> None:
        """Make a call's result (an MCP ``CallToolResult``) visible to the stream's later
        responses; anything else (an input-required round) is not a result."""
        content = getattr(result, "content", None)
        if not isinstance(content, list):
            return
        try:
            self.tracker.add_result(
                (where[0], where[1]),
                tool,
                _server(attrs.get(ATTR_MCP_SERVER)),
                content,
                getattr(result, "structured_content", None),
                where[2],
            )
        except Exception as exc:
            self._failed("keep a result", exc)

    def _failed(self, what: str, exc: Exception) -> None:
        self.failures += 1
        log.warning("toolwatch provenance: could not %s (%s)", what, type(exc).__name__)


def _server(server: str | None) -> str:
    """Every instrumented call is an MCP call: an unnamed server is ``""``, not built-in."""
    return server or ""


_active: ProvenanceHook | None = None


def install(provenance: ProvenanceSpec) -> ProvenanceHook | None:
    """Put in force the hook ``instrument(provenance=...)`` asks for, and return it: ``None``
    = the default tracker unless ``$TOOLWATCH_PROVENANCE`` says off, ``True`` = the default
    tracker, ``False`` = none, or a tracker of the caller's (its config, its stream bound)."""
    global _active
    if isinstance(provenance, ProvenanceTracker):
        _active = ProvenanceHook(provenance)
    else:
        if provenance is None:
            provenance = os.environ.get(ENV_PROVENANCE, "").strip().lower() not in _OFF
        _active = ProvenanceHook() if provenance else None
    return _active


def forget_conversation(conversation_id: str) -> int:
    """Drop a finished conversation's provenance windows (their bytes are overwritten);
    returns how many streams were dropped (0 when provenance is off)."""
    return 0 if _active is None else _active.tracker.forget(conversation_id)


def provenance_stats() -> TrackerStats | None:
    """The provenance counters of the instrumentation in force (None when off)."""
    return None if _active is None else _active.tracker.stats()
