"""Evaluation metrics of the injection experiment (BRIEF §3), as small pure functions.

Conventions (one place, used by the experiment, the report and the tests):

* a call *alarms* when its detector statistic is strictly above the threshold; NaN never alarms;
* a session *alarms* when any of its calls does (its maximum statistic is above the threshold);
* an injected run is *detected* when a call at or after the insertion point alarms within the
  detection window: ``max(#inserted, 10) + 10`` calls starting at the insertion point;
* *latency* counts calls from the insertion point to the first alarming call, the insertion
  call itself being call 1 (an alarm on the first injected call has latency 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolwatch.detection.model.thresholds import false_alarm_share, threshold_at_false_alarm

WINDOW_MIN: int = 10
WINDOW_EXTRA: int = 10


def detection_window(
    inserted: int | np.ndarray, minimum: int = WINDOW_MIN, extra: int = WINDOW_EXTRA
) -> np.ndarray:
    """Calls (from the insertion point) in which an alarm counts as a detection."""
    return np.asarray(np.maximum(np.asarray(inserted), minimum) + extra)


def nan_as_lowest(stat: np.ndarray) -> np.ndarray:
    """``stat`` as float64 with NaN (a call no cue could score) as -inf: the lowest, never a
    maximum or an alarm."""
    x = np.asarray(stat, dtype=np.float64)
    return np.where(np.isnan(x), -np.inf, x)


def session_max(stat: np.ndarray, session_starts: np.ndarray) -> np.ndarray:
    """Maximum statistic per session (``session_starts``: index of each session's first call)."""
    x = nan_as_lowest(stat)
    starts = np.asarray(session_starts, dtype=np.int64)
    if starts.size == 0:
        return np.zeros(0)
    return np.maximum.reduceat(x, starts)


def first_alarm_latency(
    stat: np.ndarray, threshold: float, position: int, window: int
) -> int | None:
    """Latency of one session's run (reference implementation), ``None`` if not detected."""
    x = nan_as_lowest(stat)
    for j in range(position, min(position + window, len(x))):
        if x[j] > threshold:
            return j - position + 1
    return None


@dataclass(frozen=True, slots=True)
class RunLayout:
    """Where each run (one injected session) sits in a concatenated call array.

    Built once per batch of runs; the window indices let every threshold and statistic be
    evaluated with a gather and two ``reduceat`` calls.
    """

    starts: np.ndarray  # first call of each run's session
    lengths: np.ndarray  # calls per run's session
    positions: np.ndarray  # insertion point, relative to the session start
    windows: np.ndarray  # detection window length in calls
    inserted: np.ndarray  # injected (labelled) calls from the insertion point on
    counts: np.ndarray  # calls of each window inside the session (window cut at the end)
    index: np.ndarray  # flat call index of every in-window call, run by run, in order
    rel: np.ndarray  # per in-window call: 1-based calls since the insertion point
    segments: np.ndarray  # offset of each run's first in-window call in ``index``

    @classmethod
    def build(cls, lengths: np.ndarray, positions: np.ndarray, inserted: np.ndarray) -> RunLayout:
        lengths = np.asarray(lengths, dtype=np.int64)
        positions = np.asarray(positions, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        inserted = np.asarray(inserted, dtype=np.int64)
        windows = np.asarray(detection_window(inserted), dtype=np.int64)
        counts = np.clip(np.minimum(windows, lengths - positions), 0, None)
        segments = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        total = int(counts.sum())
        offset = np.arange(total, dtype=np.int64) - np.repeat(segments, counts)
        index = np.repeat(starts + positions, counts) + offset
        return cls(
            starts, lengths, positions, windows, inserted, counts, index, offset + 1, segments
        )

    def injected_mask(self) -> np.ndarray:
        """Per call of the concatenated runs: is it one of the injected calls?"""
        mask = np.zeros(int(self.lengths.sum()), dtype=bool)
        first = np.repeat(self.starts + self.positions, self.inserted)
        offset = np.arange(int(self.inserted.sum())) - np.repeat(
            np.concatenate([[0], np.cumsum(self.inserted)[:-1]]), self.inserted
        )
        mask[first + offset] = True
        return mask

    def _reduce(self, ufunc: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        out = np.full(len(self.lengths), empty, dtype=np.float64)
        nonempty = self.counts > 0
        if values.size:
            out[nonempty] = ufunc.reduceat(values, self.segments[nonempty])
        return out


def window_outcomes(
    stat: np.ndarray, layout: RunLayout, thresholds: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Detected flag and latency (0 when not detected) per run, vectorised over runs.

    ``thresholds`` is one value or one per run.
    """
    xw = np.asarray(stat, dtype=np.float64)[layout.index]  # NaN > thr is False: never alarms
    thr = np.asarray(thresholds, dtype=np.float64)
    if thr.ndim:
        thr = np.repeat(thr, layout.counts)
    first = layout._reduce(np.minimum, np.where(xw > thr, layout.rel, np.inf), np.inf)
    detected = np.isfinite(first)
    return detected, np.where(detected, first, 0).astype(np.int64)


def window_max(stat: np.ndarray, layout: RunLayout) -> np.ndarray:
    """Per run, the largest statistic inside its detection window (-inf if empty)."""
    return layout._reduce(np.maximum, nan_as_lowest(np.asarray(stat)[layout.index]), -np.inf)


def false_alarm_rate(session_maxima: np.ndarray, threshold: float) -> float:
    """Share of (normal) sessions that ever alarm at ``threshold`` (0 with no sessions)."""
    m = np.asarray(session_maxima, dtype=np.float64)
    return false_alarm_share(m, threshold) if m.size else 0.0


@dataclass(frozen=True, slots=True)
class FalseAlarmChoice:
    threshold: float
    reached: float  # the false-alarm rate actually reached (k / #sessions)
    target: float
    sessions: int


def threshold_for_false_alarm(
    session_maxima: np.ndarray, target: float, grid: np.ndarray | None = None
) -> FalseAlarmChoice:
    """The smallest grid threshold at which at most ``target`` of normal sessions alarm.

    The false-alarm rate is a non-increasing step function of the threshold, so the smallest
    admissible threshold reaches the *largest reachable level not above the target*; with N
    sessions the levels are multiples of 1/N at best (19 sessions: 0 % or 5.3 % around 5 %).
    The default grid is the sessions' own maxima, where the rate changes, plus ±inf.
    """
    m = np.asarray(session_maxima, dtype=np.float64)
    m = np.where(np.isnan(m), -np.inf, m)
    if grid is None:
        grid = np.unique(m[np.isfinite(m)])
    candidates = np.append(np.asarray(grid, dtype=np.float64), [-np.inf, np.inf])
    threshold = threshold_at_false_alarm(m, target, candidates)
    return FalseAlarmChoice(threshold, false_alarm_share(m, threshold), float(target), len(m))


def threshold_above_false_alarm(session_maxima: np.ndarray, target: float) -> FalseAlarmChoice:
    """The neighbouring level on the other side: the threshold at which the *smallest*
    reachable false-alarm rate above ``target`` is reached (the largest such threshold).

    With few normal streams the rate moves in steps of 1/n or more (ties), so the report
    shows detection at both levels around the target (issue 12): 19 streams and a 5 % target
    give 0/19 below and 1/19 = 5.3 % above.
    """
    m = np.asarray(session_maxima, dtype=np.float64)
    m = np.where(np.isnan(m), -np.inf, m)
    candidates = np.append(np.unique(m[np.isfinite(m)]), -np.inf)
    ordered = np.sort(m)
    alarming = ordered.shape[0] - np.searchsorted(ordered, candidates, side="right")
    above = alarming > target * ordered.shape[0] + 1e-12
    if not above.any():
        raise ValueError(f"no reachable false-alarm level above {target:.1%}")
    threshold = float(candidates[above].max())
    return FalseAlarmChoice(threshold, false_alarm_share(m, threshold), float(target), len(m))


def bootstrap_rate_ci(
    per_session: np.ndarray,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of a rate by resampling sessions with replacement.

    ``per_session`` is (sessions × seeds) of 0/1 outcomes (NaN = run missing); every
    resample draws sessions and keeps all their runs, so runs of one session stay together.
    """
    x = np.atleast_2d(np.asarray(per_session, dtype=np.float64))
    n = x.shape[0]
    if n == 0 or resamples <= 0:
        return (float("nan"), float("nan"))
    hits = np.nansum(x, axis=1)
    runs = np.sum(~np.isnan(x), axis=1).astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    tot = runs[idx].sum(axis=1)
    rates = np.divide(hits[idx].sum(axis=1), tot, out=np.full(resamples, np.nan), where=tot > 0)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(rates, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_weights(sessions: int, resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """(resamples × sessions) counts: how often each session is drawn in each resample.

    Draws exactly what :func:`bootstrap_rate_ci` draws for the same seed, so one weight matrix
    gives every rate's interval with two matrix products (:func:`bootstrap_rate_cis`).
    """
    if sessions == 0 or resamples <= 0:
        return np.zeros((0, sessions))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, sessions, size=(resamples, sessions))
    w = np.zeros((resamples, sessions))
    np.add.at(w, (np.repeat(np.arange(resamples), sessions), idx.ravel()), 1.0)
    return w


def bootstrap_rate_cis(
    hits: np.ndarray, runs: np.ndarray, weights: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of many rates at once.

    ``hits`` and ``runs`` are (sessions × rates): per session, detected runs and runs done.
    """
    if weights.shape[0] == 0:
        nan = np.full(hits.shape[1], np.nan)
        return nan, nan.copy()
    num = weights @ hits
    den = weights @ runs
    rates = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    alpha = (1.0 - level) / 2.0
    quantile = np.nanquantile if np.isnan(rates).any() else np.quantile
    q = quantile(rates, [alpha, 1.0 - alpha], axis=0)
    return q[0], q[1]


def stream_rates(
    detected: Sequence[np.ndarray],
    stream: Sequence[np.ndarray],
    streams: int,
    weights: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: the detection rate and its bootstrap interval over test streams.

    ``detected[j]`` holds column ``j``'s runs (detected or not) and ``stream[j]`` each run's
    stream, its index in the experiment's test split (``weights``' columns, from
    :func:`bootstrap_weights`). The experiment's cells and the dashboard's cells at any other
    target both come from here, so the same runs in the same order give the same numbers.
    """
    hits = [
        np.bincount(s, weights=d.astype(np.float64), minlength=streams)
        for d, s in zip(detected, stream, strict=True)
    ]
    runs = [np.bincount(s, minlength=streams).astype(np.float64) for s in stream]
    rates = np.array([float(d.mean()) if len(d) else float("nan") for d in detected])
    if not detected:
        return rates, rates.copy(), rates.copy()
    lo, hi = bootstrap_rate_cis(np.stack(hits, 1), np.stack(runs, 1), weights)
    return rates, lo, hi


def rank_average(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x)
    xs = x[order]
    n = len(x)
    if n == 0:
        return np.zeros(0)
    boundaries = np.flatnonzero(xs[1:] != xs[:-1]) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [n]])
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(n)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Mann–Whitney AUC: P(score of a positive > score of a negative), ties counted half.

    NaN scores are ranked lowest (a call the model cannot score looks normal).
    """
    s = nan_as_lowest(scores)
    pos = np.asarray(positive, dtype=bool)
    n_pos = int(pos.sum())
    n_neg = len(pos) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rank_average(s)
    u = r[pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def median_or_nan(values: np.ndarray) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.median(v)) if v.size else float("nan")
