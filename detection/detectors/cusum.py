"""The ``cusum`` detector: Page's one-sided cumulative sum.

    S₋₁ = 0,    S_t = max(0, S_{t−1} + x_t − k),    k = 0.5 by default.

``x`` is the cue set's standardised score: a single cue's z (training mean 0, sd 1), or for
``all`` the mean of the four cues' z (training mean 0; not re-standardised, as in the study), so
calls at most ``k`` above the training mean drain the sum and a run of calls above it
accumulates. river 0.26 has no CUSUM, so this is written by hand; :meth:`CUSUM.run` is the
same recursion vectorised across streams (bit-identical).

>>> d = CUSUM(k=0.5)
>>> [d.update(x) for x in (1.0, 1.0, -2.0, 3.0)]
[0.5, 1.0, 0.0, 2.5]
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from toolwatch.detection.calls.frame import sweep
from toolwatch.detection.detectors.base import Detector


class CUSUM(Detector):
    """One-sided upper CUSUM over one stream."""

    name: ClassVar[str] = "cusum"
    __slots__ = ("k", "s")

    def __init__(self, k: float = 0.5) -> None:
        if k < 0:
            raise ValueError(f"cusum: k must be non-negative, got {k}")
        self.k = float(k)
        self.s = 0.0

    def update(self, x: float) -> float:
        s = self.s + x - self.k
        self.s = s if s > 0.0 else 0.0
        return self.s

    def clone(self) -> CUSUM:
        return CUSUM(self.k)

    def run(self, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        k = self.k

        def step(prev: np.ndarray, cur: np.ndarray) -> np.ndarray:
            s = prev + cur - k
            return np.where(s > 0.0, s, 0.0)

        return sweep(x, starts, lambda first: step(np.zeros_like(first), first), step)

    def params(self) -> dict[str, float]:
        return {"k": self.k}
