"""Vectorised batch scoring: a whole calls table at once, identical to the online scorer.

:func:`score_calls` returns one row per call, in stream order (``session_id``, ``agent_id``,
then ``start_time``, ``seq``; input order is not kept — join on ``span_id``), with

* identity: ``session_id, agent_id, seq, start_time, call_index`` (0-based position in the
  stream; 0 = a stream start), ``tool``, and ``span_id`` / ``label`` when the input has them;
* the per-call scores ``order, size, time, failure`` (raw cue scores) and ``all`` (the mean
  of the four standardised cues);
* one column per cue set × detector, ``<set>_<detector>`` (``all_cusum``, ``time_point``, …):
  the detector statistic over the cue set's standardised score (see
  :mod:`toolwatch.detection.model.normal_model`); ``<set>_point`` is that standardised score itself.

Every float equals :class:`~toolwatch.detection.scoring.online.OnlineScorer`'s for the same calls
fed
stream by stream in the same order (checked by a property test).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from toolwatch.detection.calls.frame import CallsError, prepare, starts_mask
from toolwatch.detection.detectors.cusum import CUSUM
from toolwatch.detection.detectors.ewma import EWMA
from toolwatch.detection.detectors.names import DETECTORS
from toolwatch.detection.detectors.point import Point

if TYPE_CHECKING:
    from toolwatch.detection.model.normal_model import NormalModel

_PASSTHROUGH = ("span_id", "label")


def score_calls(model: NormalModel, calls: pa.Table) -> pa.Table:
    """Score every call of ``calls`` (see the module docstring for the columns).

    An empty table gives an empty result with the same columns. Raises
    :class:`~toolwatch.detection.calls.frame.CallsError` (a ``ValueError``) naming a missing or
    invalid column.
    """
    frame = prepare(calls)
    values = model.score_frame(frame)
    table = frame.table
    columns: dict[str, pa.Array | pa.ChunkedArray] = {
        "session_id": table.column("session_id"),
        "agent_id": table.column("agent_id"),
        "seq": table.column("seq"),
        "start_time": table.column("start_time"),
        "call_index": pa.array(frame.position, type=pa.int32()),
        "tool": table.column("tool"),
    }
    for name in _PASSTHROUGH:
        if name in table.column_names:
            columns[name] = table.column(name)
    for name, arr in values.items():
        columns[name] = pa.array(arr, type=pa.float64())
    return pa.table(columns)


def run_detector(
    kind: str,
    scores: np.ndarray,
    session_starts: np.ndarray,
    *,
    alpha: float = 0.3,
    k: float = 0.5,
) -> np.ndarray:
    """A detector's statistic over many streams laid end to end.

    ``kind``: ``"point"``, ``"ewma"`` (α = ``alpha``) or ``"cusum"`` (``k``).
    ``scores``: standardised per-call scores in stream order (e.g. a ``<set>_point`` column).
    ``session_starts``: a boolean mask of stream starts (``call_index == 0``) or the start
    indices; index 0 always starts a stream. The state resets at every start.

    >>> run_detector("cusum", np.array([1.0, 1.0, 1.0, 1.0]), np.array([0, 2]))
    array([0.5, 1. , 0.5, 1. ])
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {scores.shape}")
    mask = starts_mask(session_starts, scores.shape[0])
    detectors: dict[str, Any] = {"point": Point(), "ewma": EWMA(alpha), "cusum": CUSUM(k)}
    if kind not in detectors:
        raise ValueError(f"unknown detector {kind!r}; choose one of {DETECTORS}")
    return np.asarray(detectors[kind].run(scores, mask))


__all__ = ["CallsError", "run_detector", "score_calls"]
