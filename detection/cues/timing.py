"""The ``time`` cue: did this call follow the previous one too fast for a new model response?

A language model needs seconds to produce a new response (the study: none of 21,300 gaps
between different responses was ≤ 1 s), while one response's parallel calls come within
milliseconds. So only gaps to a *different* response are scored (BRIEF §3):

    time = −log P̂(gap ≤ g),    P̂(gap ≤ g) = #{training gaps ≤ g} / n,

the empirical lower-tail probability of ``g`` (the seconds since the previous call of the
stream) among the ``n`` different-response gaps of the training window. **Below the training
minimum** ``g_min`` the empirical CDF is extended linearly to the origin,

    P̂(g) = P̂(g_min) · max(g, 1 ms) / g_min        (g < g_min),

so the tail is *graded*: a 0.05 s gap scores higher than a 1 s gap, and both higher than any
gap seen in training (the 1 ms floor keeps a 0 s gap finite). A gap above every training gap
scores 0. Score 0 as well for: a stream's first call, a same-response gap, a gap with a
``restamped`` end (its time is not real; such gaps are not learnt either), and a negative gap
(a call that arrived out of order in a live stream). A NULL ``response_id`` counts as a
different response (the boundary is unknown, so the call is not excused as parallel). With no
training gaps at all (n = 0) the cue is silent (P̂ = 1).

``tail="floor"`` is the named variant toolwatch used before issue 12: P̂ = (count + 1) /
(n + 1) everywhere, so every gap below the minimum ties at the floor ``log(n + 1)`` and no
threshold can tell a machine-speed burst from the fastest normal gap (time·point caught 0 % of
bursts on dev-real; ``docs/ARCHITECTURE.md`` gives the measured effect).

The empirical CDF is stored as its *knots*: the sorted distinct training gaps (µs) and the
count of gaps ≤ each (counts may be weights: the adaptive model's decayed histogram,
:mod:`toolwatch.detection.model.adaptive`, compiles to the same cue). Above ``max_knots``
training gaps, the lowest half of the knot budget keeps the smallest gaps exactly (the tail
that matters) and the rest are evenly spaced ranks; between knots the count is the lower
knot's, so P̂ can only be under-estimated (scores err high, never low).

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> s = 1_000_000
>>> calls = pa.table({"session_id": ["a"] * 6, "tool": ["Read"] * 6,
...     "start_time": pa.array([0, 2 * s, 6 * s, 14 * s, 14 * s + 100, 15 * s + 100],
...                            pa.timestamp("us", tz="UTC")),
...     "input_bytes": [1] * 6, "failed": [False] * 6,
...     "response_id": ["r1", "r2", "r3", "r4", "r4", "r5"]})
>>> cue = TimeCue().fit(prepare(calls))
>>> cue.knots_us, cue.counts
([1000000, 2000000, 4000000, 8000000], [1, 2, 3, 4])
>>> # 2 s: -log(2/4); 8 s: -log(4/4); 1 s (the minimum): -log(1/4)
>>> [round(x, 3) for x in cue.score_many(prepare(calls)).tolist()]
[0.0, 0.693, 0.288, 0.0, 0.0, 1.386]
>>> round(cue.score_gap(500_000), 3)  # half the minimum: -log(1/4 · 0.5)
2.079
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext

#: The tail's floor: gaps shorter than this score as this gap (a 0 s gap stays finite).
TAIL_FLOOR_US: Final = 1_000
#: The two tails: the study's empirical CDF with a graded tail, or the pre-issue-12 floor.
TAILS: Final[tuple[str, ...]] = ("graded", "floor")


class TimeCue(Cue):
    """−log of the lower-tail probability of a different-response gap (module docstring)."""

    name: ClassVar[str] = "time"

    def __init__(self, max_knots: int = 5000, tail: str = "graded") -> None:
        if max_knots < 2:
            raise ValueError("time: max_knots must be at least 2")
        if tail not in TAILS:
            raise ValueError(f"time: tail must be one of {TAILS}, got {tail!r}")
        self.max_knots = int(max_knots)
        self.tail = tail
        self.n: float = 0
        self.knots_us: list[int] = []
        self.counts: list[float] = []
        self._fitted = False
        self._table: list[float] = []
        self._knots = np.zeros(0, dtype=np.int64)
        self._table_arr = np.zeros(1)
        self._tail_mass = 0.0  # P̂ at the first knot (graded tail: scaled below it)

    @property
    def fitted(self) -> bool:
        return self._fitted

    # ----------------------------------------------------------------- fitting

    def fit(self, frame: CallFrame) -> TimeCue:
        learn = scored_gaps(frame)
        gaps = np.sort(frame.gap_us[learn])
        self.n = int(gaps.shape[0])
        uniq, counts = np.unique(gaps, return_counts=True)
        cum = np.cumsum(counts)
        if uniq.shape[0] > self.max_knots:
            exact = self.max_knots // 2
            rest = np.linspace(exact, uniq.shape[0] - 1, self.max_knots - exact).round()
            keep = np.unique(np.concatenate([np.arange(exact), rest.astype(np.int64)]))
            uniq, cum = uniq[keep], cum[keep]
        self.knots_us = [int(v) for v in uniq.tolist()]
        self.counts = [int(c) for c in cum.tolist()]
        self._build()
        return self

    @classmethod
    def from_counts(
        cls,
        knots_us: Sequence[int],
        counts: Sequence[float],
        *,
        tail: str = "graded",
        max_knots: int = 5000,
    ) -> TimeCue:
        """A cue from knots and cumulative (possibly weighted) counts, e.g. a histogram."""
        cue = cls(max_knots=max(max_knots, len(knots_us), 2), tail=tail)
        cue.knots_us = [int(v) for v in knots_us]
        cue.counts = [float(c) for c in counts]
        cue.n = cue.counts[-1] if cue.counts else 0
        cue._check()
        cue._build()
        return cue

    def _build(self) -> None:
        n = self.n
        if self.tail == "floor":
            below = [0, *self.counts]  # count of gaps <= g when g falls before knot j
            self._table = [0.0 - math.log((c + 1) / (n + 1)) for c in below]
            self._tail_mass = 0.0
        else:
            # knot j's own count when g falls in [knot j, knot j+1); index 0 (below the
            # minimum) is scored by the graded tail instead
            self._table = [0.0] + [0.0 - math.log(c / n) for c in self.counts]
            self._tail_mass = self.counts[0] / n if self.counts else 0.0
        self._knots = np.array(self.knots_us, dtype=np.int64)
        self._table_arr = np.array(self._table, dtype=np.float64)
        self._fitted = True

    # ----------------------------------------------------------------- scoring

    def score_gap(self, gap_us: int) -> float:
        """Score of one different-response gap of ``gap_us`` µs (``gap_us >= 0``)."""
        j = bisect.bisect_right(self.knots_us, gap_us)
        if j == 0 and self.tail == "graded" and self.knots_us:
            g = gap_us if gap_us > TAIL_FLOOR_US else TAIL_FLOOR_US
            return 0.0 - math.log(self._tail_mass * (g / self.knots_us[0]))
        return self._table[j]

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        scored = scored_gaps(frame)
        j = np.searchsorted(self._knots, frame.gap_us, side="right")
        out = np.where(scored, self._table_arr[j], 0.0)
        if self.tail == "graded" and self.knots_us:
            for i in np.flatnonzero(scored & (j == 0)).tolist():
                out[i] = self.score_gap(int(frame.gap_us[i]))  # the same floats as online
        return out

    def score_one(self, call: Call, ctx: StreamContext, state: None) -> float:
        prev = ctx.prev_start_us
        if prev is None or call.restamped or ctx.prev_restamped:
            return 0.0
        if call.response_id is not None and call.response_id == ctx.prev_response:
            return 0.0
        gap = call.start_us - prev
        if gap < 0:
            return 0.0
        return self.score_gap(gap)

    # ----------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "max_knots": self.max_knots,
            "tail": self.tail,
            "n": self.n,
            "knots_us": list(self.knots_us),
            "counts": list(self.counts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeCue:
        cue = cls(max_knots=int(data["max_knots"]), tail=str(data["tail"]))
        n = data["n"]
        cue.n = int(n) if isinstance(n, int) else float(n)
        cue.knots_us = [int(v) for v in data["knots_us"]]
        cue.counts = [c if isinstance(c, int) else float(c) for c in data["counts"]]
        cue._check()
        cue._build()
        return cue

    def _check(self) -> None:
        if len(self.knots_us) != len(self.counts):
            raise ValueError("time: 'knots_us' and 'counts' differ in length")
        if any(b <= a for a, b in zip(self.knots_us, self.knots_us[1:], strict=False)):
            raise ValueError("time: 'knots_us' is not strictly increasing")
        if self.knots_us and self.knots_us[0] < 0:
            raise ValueError("time: 'knots_us' holds a negative gap")
        if any(b < a for a, b in zip(self.counts, self.counts[1:], strict=False)) or (
            self.counts
            and (self.counts[0] <= 0 or not math.isclose(self.counts[-1], self.n, rel_tol=1e-9))
        ):
            raise ValueError("time: 'counts' is not a cumulative count ending at 'n'")


def scored_gaps(frame: CallFrame) -> np.ndarray:
    """Calls whose gap is a real different-response gap (scored, and learnt in training)."""
    return frame.timing_valid & ~frame.same_response & (frame.gap_us >= 0)
