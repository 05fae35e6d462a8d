"""Thresholds on detector statistics: the operating point and a target false-alarm share.

* **Operating point** (:func:`operating_threshold`): the top 0.1 % of calibration-window call
  statistics. The threshold is the order statistic of rank ⌈q·n⌉ (q = 0.999) of the ``n``
  calibration values; a call *alarms* when its statistic is strictly greater, so at most
  ``(1 − q)·n`` calibration calls alarm.
* **Session false-alarm share** (:func:`threshold_at_false_alarm`): a session alarms at
  threshold ``h`` when its maximum statistic exceeds ``h``. From a grid shared with the
  injected runs, the chosen threshold is the *smallest* grid value at which at most
  ``target`` of the normal sessions alarm — the most sensitive threshold within the budget.

>>> operating_threshold(np.arange(1, 2001, dtype=float), 0.999)
1998.0
>>> threshold_at_false_alarm(np.array([1.0, 2.0, 3.0, 4.0]), target=0.25, grid=[0, 2.5, 3.5])
3.5
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.words import counted


def operating_threshold(values: np.ndarray, quantile: float = 0.999) -> float:
    """Order statistic of rank ⌈quantile·n⌉ of ``values`` (alarm = strictly above it)."""
    values = np.asarray(values, dtype=np.float64)
    n = int(values.shape[0])
    if n == 0:
        raise ValueError("no calibration values to set a threshold from")
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile must be in (0, 1], got {quantile}")
    # ⌈q·n⌉ in exact integer arithmetic (q to 1e-9), so 0.999·1000 is 999, not 1000
    scale = 1_000_000_000
    rank = -(-round(quantile * scale) * n // scale)
    rank = min(max(rank, 1), n)
    return float(np.partition(values, rank - 1)[rank - 1])


def false_alarm_share(session_max: np.ndarray, threshold: float) -> float:
    """Share of sessions whose maximum statistic exceeds ``threshold``."""
    session_max = np.asarray(session_max, dtype=np.float64)
    if session_max.shape[0] == 0:
        raise ValueError("no sessions")
    return float(np.mean(session_max > threshold))


def threshold_at_false_alarm(
    session_max_stats: np.ndarray,
    target: float = 0.05,
    grid: Sequence[float] | np.ndarray | None = None,
) -> float:
    """Smallest grid threshold at which at most ``target`` of normal sessions ever alarm.

    ``session_max_stats``: one value per normal session, its maximum detector statistic
    (see :func:`session_max_stats`). ``grid``: candidate thresholds (any order); ``None`` uses
    the session maxima themselves (the exact answer). Raises ``ValueError`` when no grid value
    keeps the share within ``target`` (the grid does not reach high enough).
    """
    maxima = np.asarray(session_max_stats, dtype=np.float64)
    if maxima.shape[0] == 0:
        raise ValueError("threshold_at_false_alarm: no normal sessions given")
    if not 0.0 <= target <= 1.0:
        raise ValueError(f"threshold_at_false_alarm: target must be in [0, 1], got {target}")
    candidates = np.unique(np.asarray(maxima if grid is None else grid, dtype=np.float64))
    if candidates.shape[0] == 0:
        raise ValueError("threshold_at_false_alarm: empty grid")
    ordered = np.sort(maxima)
    # sessions alarming at h = those with max > h = n - (number <= h)
    alarming = ordered.shape[0] - np.searchsorted(ordered, candidates, side="right")
    ok = alarming <= target * ordered.shape[0] + 1e-12
    if not ok.any():
        worst = float(alarming[-1] / ordered.shape[0])
        raise ValueError(
            f"threshold_at_false_alarm: even the largest grid value {candidates[-1]:g} lets "
            f"{worst:.1%} of sessions alarm (target {target:.1%}); extend the grid"
        )
    return float(candidates[np.argmax(ok)])


def session_max_stats(scored: pa.Table, column: str, *, per_stream: bool = False) -> np.ndarray:
    """Maximum of ``column`` per session of a :func:`score_calls` table, by session id.

    ``per_stream=True``: per stream ``(session_id, agent_id)`` instead, ordered by session id
    then agent id (main agent first) — the study's unit, which counted each subagent as a
    session of its own.
    """
    if column not in scored.column_names:
        raise ValueError(f"scored table has no column {column!r}")
    if scored.num_rows == 0:
        return np.zeros(0)
    keys = ["session_id", "agent_id"] if per_stream else ["session_id"]
    grouped = scored.group_by(keys, use_threads=False).aggregate([(column, "max")])
    order = [(k, "ascending", "at_start") for k in keys]  # main agent (NULL) first
    grouped = grouped.take(pc.sort_indices(grouped, sort_keys=order))
    return np.asarray(grouped.column(f"{column}_max").to_numpy(), dtype=np.float64)


#: Fewer calibration streams than this and the operating point is one stream's behaviour.
MIN_CALIBRATION_STREAMS: Final = 10


def thin_calibration(streams: int, calls: int, quantile: float = 0.999) -> str:
    """Why a calibration split of ``streams`` / ``calls`` is too small for the operating point
    (the top ``1 - quantile`` of its call statistics), or ``""``; ``toolwatch train`` and
    ``toolwatch experiment`` warn with it."""
    share = 1 - quantile
    needed = math.ceil(1 / share) if share > 0 else 0
    if streams >= MIN_CALIBRATION_STREAMS and calls >= needed:
        return ""
    return (
        f"the calibration split holds {counted(streams, 'stream')} and {counted(calls, 'call')}: "
        f"a top {share:.2%} threshold needs at least {counted(needed, 'call')} and "
        f"{MIN_CALIBRATION_STREAMS} streams to mean anything; give calibration a larger share "
        "(--split-shares) or more days (--split-dates)"
    )
