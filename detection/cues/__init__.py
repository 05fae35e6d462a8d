"""The four cues of the normal model (BRIEF §3), one per file behind one contract (:class:`Cue`):
order (Witten–Bell mixed bigram), size, time (gaps between model responses) and failure."""

from toolwatch.detection.cues.base import CUE_NAMES, CUE_SETS, Cue
from toolwatch.detection.cues.failure import FailureCue
from toolwatch.detection.cues.order import OrderCue
from toolwatch.detection.cues.size import SizeCue
from toolwatch.detection.cues.timing import TimeCue

__all__ = ["CUE_NAMES", "CUE_SETS", "Cue", "FailureCue", "OrderCue", "SizeCue", "TimeCue"]
