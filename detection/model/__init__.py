"""The normal model: fitted cues, their standardisation, the detectors' parameters and the
thresholds (operating point and false-alarm targets), saved as a checksummed JSON artifact.

The names below load on first use (:mod:`toolwatch.lazy`): ``location`` (the store's model
path, :class:`ModelError`), ``overrides`` and ``adaptive_config`` (the options) need no numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.detection.model.config import ModelConfig
    from toolwatch.detection.model.location import MODEL_IN_STORE, ModelError, model_path_for
    from toolwatch.detection.model.normal_model import NormalModel
    from toolwatch.detection.model.thresholds import (
        operating_threshold,
        threshold_at_false_alarm,
    )

__all__ = [
    "MODEL_IN_STORE",
    "ModelConfig",
    "ModelError",
    "NormalModel",
    "model_path_for",
    "operating_threshold",
    "threshold_at_false_alarm",
]
__getattr__ = lazy_names(
    __name__,
    {
        "MODEL_IN_STORE": "toolwatch.detection.model.location",
        "ModelConfig": "toolwatch.detection.model.config",
        "ModelError": "toolwatch.detection.model.location",
        "NormalModel": "toolwatch.detection.model.normal_model",
        "model_path_for": "toolwatch.detection.model.location",
        "operating_threshold": "toolwatch.detection.model.thresholds",
        "threshold_at_false_alarm": "toolwatch.detection.model.thresholds",
    },
)
