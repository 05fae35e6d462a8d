"""Alert rows: the ``alerts`` table and how an alert reads.

An alert is raised when a watched statistic (``ModelConfig.alert_on``, default ``all_cusum``)
*crosses* its operating-point threshold in a stream — one alert per excursion above the threshold,
not one per call while it stays above. The row names the call (session, agent, seq, index in the
stream, time, tool), the statistic (cue set × detector), its value and threshold, the model that
raised it, and the *cue* that explains it
(:func:`~toolwatch.detection.scoring.explain.dominant_cue`). Nothing of the call's content is in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS

ALERTS_TABLE: Final = tables.ALERTS.name
ALERTS_SCHEMA: Final = SCHEMAS[ALERTS_TABLE]


def alert_json(alert: Mapping[str, Any]) -> dict[str, Any]:
    """An alert row with times as ISO-8601 strings (for logs and webhooks)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in alert.items()}


def describe(alert: Mapping[str, Any]) -> str:
    """One log line for an alert."""
    agent = f" agent={alert['agent_id']}" if alert.get("agent_id") else ""
    why = f": {alert['explanation']}" if alert.get("explanation") else ""
    # another sender's span carries no position: no "seq None"
    seq = f"seq {alert['seq']}, " if alert.get("seq") is not None else ""
    return (
        f"ALERT {alert['cue_set']}/{alert['detector']} session={alert['session_id']}{agent} "
        f"call #{alert['call_index']} ({seq}{alert['tool']}) "
        f"score {alert['score']:.2f} > {alert['threshold']:.2f}, cue {alert['cue']}{why}"
    )
