"""The cue and cue-set names, apart from the cues (numpy): ``toolwatch CMD --help`` builds its
options from them without loading the scorer. Standard library only."""

from __future__ import annotations

from typing import Final

#: The four cues, in the order their scores are summed into ``all``.
CUE_NAMES: Final[tuple[str, ...]] = ("order", "size", "time", "failure")
#: Cue sets scored by the detectors: ``all`` first (the study's headline), then each cue.
CUE_SETS: Final[tuple[str, ...]] = ("all", "order", "size", "time", "failure")
#: Batch/online output columns of the per-call cue-set scores, then the detector statistics.
SCORE_COLUMNS: Final[tuple[str, ...]] = (*CUE_NAMES, "all")
