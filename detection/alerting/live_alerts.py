"""The live scorer's alerts: the row of a call that alarmed, and its delivery (a WARNING line,
the ``alerts`` table, the webhook).

Three kinds of statistic alarm on the live path (:mod:`toolwatch.detection.alerting.live`
decides when): a watched statistic crossing its threshold (one alert per excursion), the
novelty cue set crossing its operating point (option), and a call's provenance payload above
its egress class's threshold (every such call, cue set :data:`PROVENANCE_CUE_SET`). Each row
names the call, the statistic, its value and threshold, the model and the explaining cue —
numbers, tool names and the egress class, never content. Delivery never breaks ingest: a failed
write of the ``alerts`` table is logged and counted, the alerts are still posted.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Final

from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.alerts import ALERTS_SCHEMA, ALERTS_TABLE, describe
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.detection.cues.base import Call
from toolwatch.detection.model.normal_model import VERSION
from toolwatch.detection.scoring.explain import dominant_cue
from toolwatch.words import counted

log = logging.getLogger(__name__)

#: The provenance alert's statistic: the cue alone, at the call (no detector accumulates it).
PROVENANCE_CUE_SET: Final = "provenance"
PROVENANCE_DETECTOR: Final = "point"


def alert_row(
    call: Call,
    span_id: str | None,
    index: int,
    statistic: tuple[str, str, float, float],
    scores: Any,
    now: datetime,
    model_id: str,
    explanation: str | None = None,
) -> dict[str, Any]:
    """The ``alerts`` row of a call whose ``statistic`` (cue set, detector, value, threshold)
    alarmed; ``scores`` (None for a cue alone) name the explaining cue."""
    cue_set, detector, value, threshold = statistic
    return {
        "alert_time": now,
        "session_id": call.session_id,
        "agent_id": call.agent_id,
        "seq": call.seq,
        "call_index": index,
        "call_time": datetime.fromtimestamp(call.start_us / 1e6, UTC),
        "span_id": span_id,
        "tool": call.tool,
        "cue_set": cue_set,
        "detector": detector,
        "cue": cue_set if scores is None else dominant_cue(cue_set, detector, scores),
        "score": float(value),
        "threshold": float(threshold),
        "model_id": model_id,
        "model_version": VERSION,
        "explanation": explanation,
    }


def deliver(alerts: list[dict[str, Any]], store: Store | None, poster: WebhookPoster | None) -> int:
    """Log each alert at WARNING, append them to the ``alerts`` table and hand them to the
    webhook; returns how many the table could not take (logged, never raised)."""
    for alert in alerts:
        log.warning(describe(alert))
    if store is None:
        return 0
    unstored = 0
    try:
        store.append(ALERTS_TABLE, alerts, schema=ALERTS_SCHEMA, partition_by="alert_time")
    except Exception as exc:  # never break ingest over an alert write
        unstored = len(alerts)
        log.error("could not store %s in %s: %s", counted(len(alerts), "alert"), store.root, exc)
    if poster is not None:
        poster.post(alerts)
    return unstored
