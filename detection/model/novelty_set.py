"""The novelty cue as a cue set of its own beside the study's four (not in ``all``): what the
model artifact keeps of it (:mod:`toolwatch.detection.cues.novelty`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolwatch.detection.cues.novelty import NoveltyCue
from toolwatch.detection.detectors.names import DETECTORS


@dataclass
class NoveltySet:
    """The novelty cue as a cue set of its own (not in ``all``): the fitted cue, its training
    standardisation and its operating-point thresholds per detector."""

    cue: NoveltyCue
    standardisation: tuple[float, float]
    thresholds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mean, sd = self.standardisation
        return {"cue": self.cue.to_dict(), "mean": mean, "sd": sd, "thresholds": self.thresholds}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoveltySet:
        sd = float(data["sd"])
        if not sd > 0:
            raise ValueError("its sd is not positive")
        thresholds = {str(d): float(v) for d, v in data["thresholds"].items()}
        if thresholds and set(thresholds) != set(DETECTORS):
            raise ValueError(f"thresholds must cover {DETECTORS}")
        return cls(NoveltyCue.from_dict(data["cue"]), (float(data["mean"]), sd), thresholds)
