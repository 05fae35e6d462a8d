"""toolwatch.detection: a content-free normal model of tool calls and its detectors.

Users need a handful of names: :class:`NormalModel` (fit / calibrate / save / load),
:func:`score_calls` (vectorised batch scoring), :class:`OnlineScorer` (per-call scoring),
:func:`run_detector` and :func:`threshold_at_false_alarm` (experiments), and
:class:`~toolwatch.detection.alerting.live.LiveScorer` (alerts while the collector ingests).

Rooms: ``calls`` (the columns and time windows a detector reads), ``cues`` (order, size, time,
failure), ``detectors`` (point, EWMA, CUSUM), ``model`` (the fitted normal model and its
thresholds), ``scoring`` (batch, online, scan), ``alerting`` (live alerts, webhook) and
``commands``. The names below load on first use, so ``toolwatch collector`` (which lives in
``commands``) starts without river or the scorer unless it is asked to score.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolwatch.detection.cues.names import CUE_NAMES, CUE_SETS
    from toolwatch.detection.detectors.names import DETECTORS
    from toolwatch.detection.model.config import ModelConfig
    from toolwatch.detection.model.location import ModelError
    from toolwatch.detection.model.normal_model import NormalModel
    from toolwatch.detection.model.thresholds import session_max_stats, threshold_at_false_alarm
    from toolwatch.detection.scoring.batch import run_detector, score_calls
    from toolwatch.detection.scoring.online import OnlineScorer

_PUBLIC: dict[str, str] = {
    "CUE_NAMES": "toolwatch.detection.cues.names",
    "CUE_SETS": "toolwatch.detection.cues.names",
    "DETECTORS": "toolwatch.detection.detectors.names",
    "ModelConfig": "toolwatch.detection.model.config",
    "ModelError": "toolwatch.detection.model.location",
    "NormalModel": "toolwatch.detection.model.normal_model",
    "OnlineScorer": "toolwatch.detection.scoring.online",
    "run_detector": "toolwatch.detection.scoring.batch",
    "score_calls": "toolwatch.detection.scoring.batch",
    "session_max_stats": "toolwatch.detection.model.thresholds",
    "threshold_at_false_alarm": "toolwatch.detection.model.thresholds",
}
__all__ = [
    "CUE_NAMES",
    "CUE_SETS",
    "DETECTORS",
    "ModelConfig",
    "ModelError",
    "NormalModel",
    "OnlineScorer",
    "run_detector",
    "score_calls",
    "session_max_stats",
    "threshold_at_false_alarm",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
