"""The ``ewma`` detector: an exponentially weighted mean of the stream's scores.

    E₀ = x₀,    E_t = α·x_t + (1 − α)·E_{t−1},    α = 0.3 by default.

The running state is :class:`river.stats.EWMean` (``fading_factor = α``), whose first value
initialises the mean; :meth:`EWMA.run` is the same recursion vectorised across streams with
the same operations, so batch and online statistics are bit-identical. A sustained shift of
the score mean (a retry loop) builds up over a few calls while single spikes are damped.

>>> d = EWMA(alpha=0.5)
>>> [d.update(x) for x in (2.0, 0.0, 4.0)]
[2.0, 1.0, 2.5]
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from river import stats

from toolwatch.detection.calls.frame import sweep
from toolwatch.detection.detectors.base import Detector


class EWMA(Detector):
    """Exponentially weighted moving average over one stream (river ``EWMean``)."""

    name: ClassVar[str] = "ewma"
    __slots__ = ("_mean", "alpha")

    def __init__(self, alpha: float = 0.3) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"ewma: alpha must be in (0, 1], got {alpha}")
        self.alpha = float(alpha)
        self._mean = stats.EWMean(fading_factor=self.alpha)

    def update(self, x: float) -> float:
        self._mean.update(x)
        return float(self._mean.get())

    def clone(self) -> EWMA:
        return EWMA(self.alpha)

    def run(self, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        a = self.alpha
        b = 1.0 - a
        return sweep(x, starts, lambda first: first, lambda prev, cur: a * cur + b * prev)

    def params(self) -> dict[str, float]:
        return {"alpha": self.alpha}
