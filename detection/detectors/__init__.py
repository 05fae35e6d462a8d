"""The three detectors over a stream's standardised scores, one per file behind one contract
(:class:`Detector`): point, EWMA (α = 0.3) and CUSUM (Page, k = 0.5)."""

from toolwatch.detection.detectors.base import DETECTORS, Detector, stat_column
from toolwatch.detection.detectors.cusum import CUSUM
from toolwatch.detection.detectors.ewma import EWMA
from toolwatch.detection.detectors.point import Point

__all__ = ["CUSUM", "DETECTORS", "EWMA", "Detector", "Point", "stat_column"]
