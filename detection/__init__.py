"""toolwatch.detection: a content-free normal model of tool calls and its detectors.

Users need a handful of names: :class:`NormalModel` (fit / calibrate / save / load),
:func:`score_calls` (vectorised batch scoring), :class:`OnlineScorer` (per-call scoring),
:func:`run_detector` and :func:`threshold_at_false_alarm` (experiments), and
:class:`~toolwatch.detection.alerting.live.LiveScorer` (alerts while the collector ingests).
"""

from toolwatch.detection.cues.base import CUE_NAMES, CUE_SETS, DETECTORS
from toolwatch.detection.model.normal_model import ModelConfig, ModelError, NormalModel
from toolwatch.detection.model.thresholds import session_max_stats, threshold_at_false_alarm
from toolwatch.detection.scoring.batch import run_detector, score_calls
from toolwatch.detection.scoring.online import OnlineScorer

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
