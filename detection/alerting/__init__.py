"""Live alerts: the scorer the collector runs on every committed batch, the ``alerts`` rows it
writes, and the webhook that delivers them (retried, never blocking ingest).

The names below load on first use: importing a sibling (``alerting.rules``, ``alerting.pins``,
``alerting.listings``) runs this file first, and the live scorer needs river, which only the
``detection`` extra installs, so ``toolwatch collector``, ``pins`` and ``rules`` run on the
``collector`` extra unless asked to score (``--model``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# the guard lives with the calls, which the split by time reads too (it may not import alerting)
from toolwatch.detection.calls.clock import CLOCK_AHEAD_S

if TYPE_CHECKING:
    from toolwatch.detection.alerting.live import LiveScorer
    from toolwatch.detection.alerting.webhook import WebhookPoster

_PUBLIC: dict[str, str] = {
    "LiveScorer": "toolwatch.detection.alerting.live",
    "WebhookPoster": "toolwatch.detection.alerting.webhook",
}
__all__ = ["CLOCK_AHEAD_S", "LiveScorer", "WebhookPoster"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
