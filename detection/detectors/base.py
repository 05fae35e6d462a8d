"""The detector contract: a detector turns one stream's sequence of standardised scores ``x`` into a
statistic that is compared with a threshold.

An instance is the state of one stream (``update(x)`` returns the statistic after ``x``; ``clone()``
gives a fresh stream with the same parameters) and ``run(x, starts)`` computes the same statistic
for many streams at once. The statistic columns are named per cue set × detector
(:func:`~toolwatch.detection.detectors.names.stat_column`).
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np


class Detector(abc.ABC):
    """The state of one stream's detector over standardised scores ``x``."""

    __slots__ = ()
    name: ClassVar[str]

    @abc.abstractmethod
    def update(self, x: float) -> float:
        """Feed the stream's next score; returns the statistic after it."""

    @abc.abstractmethod
    def clone(self) -> Detector:
        """A fresh detector (new stream) with the same parameters."""

    @abc.abstractmethod
    def run(self, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The statistic over many streams laid end to end.

        ``starts`` is a boolean mask marking each stream's first call (index 0 always starts
        one). Identical, element by element, to feeding each stream through :meth:`update`.
        This instance's own state is not touched.
        """

    @abc.abstractmethod
    def params(self) -> dict[str, float]:
        """The parameters (saved in the model config)."""
