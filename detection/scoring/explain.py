"""Which cue explains a statistic at a call: the cue set itself for a single-cue statistic; for
``all``, the cue whose own statistic is largest at that call. Used by alerts and by the scan.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from toolwatch.detection.cues.names import CUE_NAMES
from toolwatch.detection.detectors.names import stat_column


def dominant_cue(cue_set: str, detector: str, scores: Mapping[str, float]) -> str:
    """The cue that explains an alarm of ``detector`` on ``cue_set``, from a call's scores.

    A single-cue set explains itself. For ``all``, the cue whose own standardised statistic is
    largest at the alarming call: its ``<cue>_point`` for the point detector, its
    ``<cue>_ewma`` for EWMA and CUSUM — an alarm that built up over several calls is explained
    by the cue that was high over those calls (for EWMA exactly: ``all_ewma`` is the mean of
    the cues' EWMAs), not by whichever cue peaked at the last one.
    """
    if cue_set != "all":
        return cue_set
    values = [scores[stat_column(c, _explaining(detector))] for c in CUE_NAMES]
    return CUE_NAMES[values.index(max(values))]


def dominant_cues(cue_set: str, detector: str, scores: Mapping[str, np.ndarray]) -> np.ndarray:
    """Vectorised :func:`dominant_cue` over arrays of score columns (e.g. a scored table's)."""
    first = np.asarray(scores[stat_column(CUE_NAMES[0], _explaining(detector))])
    if cue_set != "all":
        return np.full(first.shape[0], cue_set, dtype=object)
    z = np.vstack([np.asarray(scores[stat_column(c, _explaining(detector))]) for c in CUE_NAMES])
    return np.asarray(CUE_NAMES, dtype=object)[np.argmax(z, axis=0)]


def _explaining(detector: str) -> str:
    return "point" if detector == "point" else "ewma"
