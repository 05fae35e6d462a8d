"""The ``point`` detector: the standardised score itself (alarm on one surprising call).

>>> d = Point()
>>> [d.update(x) for x in (0.5, 3.0, -1.0)]
[0.5, 3.0, -1.0]
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from toolwatch.detection.detectors.base import Detector


class Point(Detector):
    """Statistic = x; stateless, so one instance serves every stream."""

    name: ClassVar[str] = "point"
    __slots__ = ()

    def update(self, x: float) -> float:
        return x

    def clone(self) -> Point:
        return self

    def run(self, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=np.float64, copy=True)

    def params(self) -> dict[str, float]:
        return {}
