"""The normal model: fitted cues, their standardisation, the detectors' parameters and the
thresholds (operating point and false-alarm targets), saved as a checksummed JSON artifact."""

from toolwatch.detection.model.config import ModelConfig, ModelError
from toolwatch.detection.model.normal_model import MODEL_IN_STORE, NormalModel, model_path_for
from toolwatch.detection.model.thresholds import operating_threshold, threshold_at_false_alarm

__all__ = [
    "MODEL_IN_STORE",
    "ModelConfig",
    "ModelError",
    "NormalModel",
    "model_path_for",
    "operating_threshold",
    "threshold_at_false_alarm",
]
