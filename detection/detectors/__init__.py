"""The three detectors over a stream's standardised scores, one per file behind one contract
(:class:`Detector`): point, EWMA (α = 0.3) and CUSUM (Page, k = 0.5).

The names below load on first use (:mod:`toolwatch.lazy`): ``names`` (the detectors an option
offers, the statistic columns) needs no numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.detection.detectors.base import Detector
    from toolwatch.detection.detectors.cusum import CUSUM
    from toolwatch.detection.detectors.ewma import EWMA
    from toolwatch.detection.detectors.names import DETECTORS, stat_column
    from toolwatch.detection.detectors.point import Point

__all__ = ["CUSUM", "DETECTORS", "EWMA", "Detector", "Point", "stat_column"]
__getattr__ = lazy_names(
    __name__,
    {
        "CUSUM": "toolwatch.detection.detectors.cusum",
        "DETECTORS": "toolwatch.detection.detectors.names",
        "EWMA": "toolwatch.detection.detectors.ewma",
        "Detector": "toolwatch.detection.detectors.base",
        "Point": "toolwatch.detection.detectors.point",
        "stat_column": "toolwatch.detection.detectors.names",
    },
)
