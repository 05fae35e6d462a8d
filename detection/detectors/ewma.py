"""The ``ewma`` detector: an exponentially weighted mean of the stream's scores.

    E₋₁ = 0,    E_t = α·x_t + (1 − α)·E_{t−1},    α = 0.3 by default.

The mean starts at 0 — the training mean of every standardised score — as in the study, so a
stream's first call counts with weight α like any other: one surprising first call (a tool the
model never saw) cannot set the stream's maximum on its own. :meth:`EWMA.run` is the same
recursion vectorised across streams with the same float operations, so batch and online
statistics are bit-identical. A sustained shift of the score mean (a retry loop) builds up over
a few calls while single spikes are damped.

``start="first"`` is the named variant of toolwatch before issue 12 (river's ``EWMean``, whose
first value initialises the mean: E₀ = x₀); ``docs/ARCHITECTURE.md`` gives its measured effect.
river 0.26's ``EWMean`` has no other start, so the recursion is written out (like CUSUM).

>>> d = EWMA(alpha=0.5)
>>> [d.update(x) for x in (2.0, 0.0, 4.0)]
[1.0, 0.5, 2.25]
>>> d = EWMA(alpha=0.5, start="first")
>>> [d.update(x) for x in (2.0, 0.0, 4.0)]
[2.0, 1.0, 2.5]
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np

from toolwatch.detection.calls.frame import sweep
from toolwatch.detection.detectors.base import Detector

#: Where the mean starts: at 0 (the study) or at the first score (the pre-issue-12 variant).
STARTS: Final[tuple[str, ...]] = ("zero", "first")


class EWMA(Detector):
    """Exponentially weighted moving average over one stream."""

    name: ClassVar[str] = "ewma"
    __slots__ = ("alpha", "e", "start", "started")

    def __init__(self, alpha: float = 0.3, start: str = "zero") -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"ewma: alpha must be in (0, 1], got {alpha}")
        if start not in STARTS:
            raise ValueError(f"ewma: start must be one of {STARTS}, got {start!r}")
        self.alpha = float(alpha)
        self.start = start
        self.e = 0.0
        self.started = False

    def update(self, x: float) -> float:
        if not self.started and self.start == "first":
            self.e = x
        else:
            self.e = self.alpha * x + (1.0 - self.alpha) * self.e
        self.started = True
        return self.e

    def clone(self) -> EWMA:
        return EWMA(self.alpha, self.start)

    def run(self, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        a = self.alpha
        b = 1.0 - a
        if self.start == "first":
            return sweep(x, starts, lambda first: first, lambda prev, cur: a * cur + b * prev)
        return sweep(x, starts, lambda first: a * first + b * 0.0, lambda p, c: a * c + b * p)

    def params(self) -> dict[str, float]:
        return {"alpha": self.alpha}
