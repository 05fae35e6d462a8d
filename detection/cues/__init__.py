"""The four cues of the normal model (BRIEF §3), one per file behind one contract (:class:`Cue`):
order (Witten–Bell mixed bigram), size, time (gaps between model responses) and failure.

The names below load on first use (:mod:`toolwatch.lazy`): ``names`` (the cue sets an option
offers) needs no numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.detection.cues.base import Cue
    from toolwatch.detection.cues.failure import FailureCue
    from toolwatch.detection.cues.names import CUE_NAMES, CUE_SETS
    from toolwatch.detection.cues.order import OrderCue
    from toolwatch.detection.cues.size import SizeCue
    from toolwatch.detection.cues.timing import TimeCue

__all__ = ["CUE_NAMES", "CUE_SETS", "Cue", "FailureCue", "OrderCue", "SizeCue", "TimeCue"]
__getattr__ = lazy_names(
    __name__,
    {
        "CUE_NAMES": "toolwatch.detection.cues.names",
        "CUE_SETS": "toolwatch.detection.cues.names",
        "Cue": "toolwatch.detection.cues.base",
        "FailureCue": "toolwatch.detection.cues.failure",
        "OrderCue": "toolwatch.detection.cues.order",
        "SizeCue": "toolwatch.detection.cues.size",
        "TimeCue": "toolwatch.detection.cues.timing",
    },
)
