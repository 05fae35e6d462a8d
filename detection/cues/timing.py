"""The ``time`` cue: did this call follow the previous one too fast for a new model response?

A language model needs seconds to produce a new response (the study: none of 21,300 gaps
between different responses was ≤ 1 s), while one response's parallel calls come within
milliseconds. So only gaps to a *different* response are scored:

    time = −log P̂(gap ≤ g),    P̂(gap ≤ g) = (#{training gaps ≤ g} + 1) / (n + 1),

with ``g`` the seconds since the previous call of the stream and the training gaps the ``n``
different-response gaps of the training window. The ``+1`` is the floor: a gap below every
training gap scores ``log(n + 1)`` — large but finite — and a gap above all of them scores 0.
Score 0 as well for: a stream's first call, a same-response gap, a gap with a ``restamped``
end (its time is not real; such gaps are not learnt either), and a negative gap (a call that
arrived out of order in a live stream). A NULL ``response_id`` counts as a different response
(the boundary is unknown, so the call is not excused as parallel). With no training gaps at
all (n = 0) the cue is silent (P̂ = 1).

The empirical CDF is stored as its *knots*: the sorted distinct training gaps (µs) and the
count of gaps ≤ each. Above ``max_knots`` training gaps, the lowest half of the knot budget
keeps the smallest gaps exactly (the tail that matters) and the rest are evenly spaced ranks;
between knots the count is the lower knot's, so P̂ can only be under-estimated (scores err
high, never low).

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> s = 1_000_000
>>> calls = pa.table({"session_id": ["a"] * 5, "tool": ["Read"] * 5,
...     "start_time": pa.array([0, 2 * s, 6 * s, 14 * s, 14 * s + 100],
...                            pa.timestamp("us", tz="UTC")),
...     "input_bytes": [1] * 5, "failed": [False] * 5,
...     "response_id": ["r1", "r2", "r3", "r4", "r4"]})
>>> cue = TimeCue().fit(prepare(calls))
>>> cue.knots_us, cue.counts
([2000000, 4000000, 8000000], [1, 2, 3])
>>> [round(x, 3) for x in cue.score_many(prepare(calls)).tolist()]  # 2 s: -log(2/4); 8 s: -log(4/4)
[0.0, 0.693, 0.288, 0.0, 0.0]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext


class TimeCue(Cue):
    """−log of the lower-tail probability of a different-response gap (module docstring)."""

    name: ClassVar[str] = "time"

    def __init__(self, max_knots: int = 5000) -> None:
        if max_knots < 2:
            raise ValueError("time: max_knots must be at least 2")
        self.max_knots = int(max_knots)
        self.n = 0
        self.knots_us: list[int] = []
        self.counts: list[int] = []
        self._fitted = False
        self._table: list[float] = []
        self._knots = np.zeros(0, dtype=np.int64)
        self._table_arr = np.zeros(1)

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

    def _build(self) -> None:
        n = self.n
        below = [0, *self.counts]  # count of gaps <= g when g falls before knot j
        self._table = [0.0 - math.log((c + 1) / (n + 1)) for c in below]
        self._knots = np.array(self.knots_us, dtype=np.int64)
        self._table_arr = np.array(self._table, dtype=np.float64)
        self._fitted = True

    # ----------------------------------------------------------------- scoring

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        scored = scored_gaps(frame)
        j = np.searchsorted(self._knots, frame.gap_us, side="right")
        return np.where(scored, self._table_arr[j], 0.0)

    def score_one(self, call: Call, ctx: StreamContext, state: None) -> float:
        prev = ctx.prev_start_us
        if prev is None or call.restamped or ctx.prev_restamped:
            return 0.0
        if call.response_id is not None and call.response_id == ctx.prev_response:
            return 0.0
        gap = call.start_us - prev
        if gap < 0:
            return 0.0
        return self._table[bisect.bisect_right(self.knots_us, gap)]

    # ----------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "max_knots": self.max_knots,
            "n": self.n,
            "knots_us": list(self.knots_us),
            "counts": list(self.counts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeCue:
        cue = cls(max_knots=int(data["max_knots"]))
        cue.n = int(data["n"])
        cue.knots_us = [int(v) for v in data["knots_us"]]
        cue.counts = [int(c) for c in data["counts"]]
        if len(cue.knots_us) != len(cue.counts):
            raise ValueError("time: 'knots_us' and 'counts' differ in length")
        if any(b <= a for a, b in zip(cue.knots_us, cue.knots_us[1:], strict=False)):
            raise ValueError("time: 'knots_us' is not strictly increasing")
        if any(b < a for a, b in zip(cue.counts, cue.counts[1:], strict=False)) or (
            cue.counts and (cue.counts[0] < 1 or cue.counts[-1] != cue.n)
        ):
            raise ValueError("time: 'counts' is not a cumulative count ending at 'n'")
        cue._build()
        return cue


def scored_gaps(frame: CallFrame) -> np.ndarray:
    """Calls whose gap is a real different-response gap (scored, and learnt in training)."""
    return frame.timing_valid & ~frame.same_response & (frame.gap_us >= 0)
