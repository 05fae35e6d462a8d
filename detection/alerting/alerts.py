"""Alert rows: the ``alerts`` table schema and which cue explains an alarm.

An alert is raised when a watched statistic (``ModelConfig.alert_on``, default
``all_cusum``) *crosses* its operating-point threshold in a stream — one alert per excursion
above the threshold, not one per call while it stays above. The row names the call (session,
agent, seq, index in the stream, time, tool), the statistic (cue set × detector), its value and
threshold, the model that raised it, and the *cue* that explains it: the cue set itself for a
single-cue statistic; for ``all``, the cue whose own statistic is largest at that call (see
:func:`dominant_cue`).
Nothing of the call's content is in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import numpy as np

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.detection.cues.base import CUE_NAMES, stat_column

ALERTS_TABLE: Final = tables.ALERTS.name
ALERTS_SCHEMA: Final = SCHEMAS[ALERTS_TABLE]


def parse_statistic(name: str) -> tuple[str, str]:
    """``"all_cusum"`` -> ``("all", "cusum")``."""
    cue_set, _, detector = name.rpartition("_")
    return cue_set, detector


def dominant_cue(cue_set: str, detector: str, scores: Mapping[str, float]) -> str:
    """The cue that explains an alarm of ``detector`` on ``cue_set``, from a call's scores.

    A single-cue set explains itself. For ``all``, the cue whose own standardised statistic is
    largest at the alarming call: its ``<cue>_point`` for the point detector, its
    ``<cue>_ewma`` for EWMA and CUSUM — an alarm that built up over several calls is explained
    by the cue that was high over those calls (for EWMA exactly: ``all_ewma`` is the mean of
    the cues' EWMAs, rescaled), not by whichever cue peaked at the last one.
    """
    if cue_set != "all":
        return cue_set
    values = [scores[stat_column(c, _explaining(detector))] for c in CUE_NAMES]
    return CUE_NAMES[values.index(max(values))]


def dominant_cues(cue_set: str, detector: str, scores: Mapping[str, np.ndarray]) -> np.ndarray:
    """Vectorised :func:`dominant_cue` over arrays of score columns (e.g. a scored table's)."""
    first = np.asarray(scores[stat_column(CUE_NAMES[0], _explaining(detector))])
    if cue_set != "all":
        return np.full(first.shape[0], cue_set, dtype=object)
    z = np.vstack([np.asarray(scores[stat_column(c, _explaining(detector))]) for c in CUE_NAMES])
    return np.asarray(CUE_NAMES, dtype=object)[np.argmax(z, axis=0)]


def _explaining(detector: str) -> str:
    return "point" if detector == "point" else "ewma"


def alert_json(alert: Mapping[str, Any]) -> dict[str, Any]:
    """An alert row with times as ISO-8601 strings (for logs and webhooks)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in alert.items()}


def describe(alert: Mapping[str, Any]) -> str:
    """One log line for an alert."""
    agent = f" agent={alert['agent_id']}" if alert.get("agent_id") else ""
    return (
        f"ALERT {alert['cue_set']}/{alert['detector']} session={alert['session_id']}{agent} "
        f"call #{alert['call_index']} (seq {alert['seq']}, {alert['tool']}) "
        f"score {alert['score']:.2f} > {alert['threshold']:.2f}, cue {alert['cue']}"
    )
