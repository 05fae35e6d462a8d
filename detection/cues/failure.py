"""The ``failure`` cue: how unlikely is this call's outcome for its tool?

Per tool, the failure probability is the posterior mean under a Beta prior centred on the
training-wide failure rate:

    p₀ = (F + 1) / (N + 2)                      (all training calls, Laplace-smoothed)
    p_tool = (f + m·p₀) / (n + m)               (the tool's f failures in n calls)

with prior strength ``m`` pseudo-calls (``prior_strength``, default 2). The score is the
negative log-likelihood of what happened: ``−log p_tool`` for a failed call,
``−log(1 − p_tool)`` for a successful one. A tool not seen in training gets ``p₀``. A retry
loop of failing calls to a tool that rarely fails therefore scores high on every call.

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> calls = pa.table({"session_id": ["a"] * 4, "tool": ["Bash"] * 4,
...     "start_time": pa.array([0, 1, 2, 3], pa.timestamp("us", tz="UTC")),
...     "input_bytes": [1] * 4, "failed": [False, False, False, True]})
>>> cue = FailureCue().fit(prepare(calls))   # p0 = 2/6, p = (1 + 2/3) / 6
>>> [round(s, 3) for s in cue.score_many(prepare(calls)).tolist()]
[0.325, 0.325, 0.325, 1.281]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext
from toolwatch.words import counted

GLOBAL = "*"


class FailureCue(Cue):
    """Negative log-likelihood of the outcome under a smoothed per-tool rate."""

    name: ClassVar[str] = "failure"

    def __init__(self, prior_strength: float = 2.0) -> None:
        if prior_strength <= 0:
            raise ValueError("failure: prior_strength must be positive")
        self.prior_strength = float(prior_strength)
        #: tool -> [calls, failures] (weights in the adaptive model); ``"*"`` = all calls
        self.counts: dict[str, list[float]] = {}
        self._scores: dict[str, tuple[float, float]] = {}  # tool -> (ok score, failed score)

    @property
    def fitted(self) -> bool:
        return GLOBAL in self.counts

    def fit(self, frame: CallFrame) -> FailureCue:
        calls = np.bincount(frame.tool, minlength=len(frame.tool_names))
        fails = np.bincount(frame.tool, weights=frame.failed, minlength=len(frame.tool_names))
        counts: dict[str, list[float]] = {GLOBAL: [frame.n, int(frame.failed.sum())]}
        for code, tool in enumerate(frame.tool_names):
            counts[tool] = [int(calls[code]), round(float(fails[code]))]
        self.counts = dict(sorted(counts.items()))
        self._build()
        return self

    @classmethod
    def from_counts(cls, counts: dict[str, list[float]], prior_strength: float = 2.0) -> FailureCue:
        """A cue from per-tool ``[calls, failures]`` (possibly weights, e.g. decayed)."""
        if GLOBAL not in counts:
            raise ValueError(f"failure: the all-calls entry {GLOBAL!r} is missing")
        cue = cls(prior_strength=prior_strength)
        cue.counts = dict(sorted(counts.items()))
        cue._build()
        return cue

    def rate(self, tool: str) -> float:
        """Smoothed failure probability of ``tool`` (``p₀`` for a tool not seen in training)."""
        self._check_fitted()
        n_all, f_all = self.counts[GLOBAL]
        p0 = (f_all + 1) / (n_all + 2)
        if tool == GLOBAL or tool not in self.counts:
            return p0
        n, f = self.counts[tool]
        return (f + self.prior_strength * p0) / (n + self.prior_strength)

    def _build(self) -> None:
        def nll(p: float) -> tuple[float, float]:
            return 0.0 - math.log(1.0 - p), 0.0 - math.log(p)

        self._scores = {tool: nll(self.rate(tool)) for tool in self.counts}

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        if frame.n == 0:
            return np.zeros(0)
        default = self._scores[GLOBAL]
        table = np.array([self._scores.get(t, default) for t in frame.tool_names])
        return table[frame.tool, frame.failed.astype(np.int64)]

    def score_one(self, call: Call, ctx: StreamContext, state: None) -> float:
        ok, failed = self._scores.get(call.tool) or self._scores[GLOBAL]
        return failed if call.failed else ok

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {"prior_strength": self.prior_strength, "tools": self.counts}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FailureCue:
        cue = cls(prior_strength=float(data["prior_strength"]))
        counts: dict[str, list[float]] = {}
        for tool, (n, f) in data["tools"].items():
            if not 0 <= f <= n * (1 + 1e-12):
                raise ValueError(
                    f"failure: tool {tool!r} has {counted(f, 'failure')} in {counted(n, 'call')}"
                )
            counts[str(tool)] = (
                [n, f]
                if isinstance(n, int) and isinstance(f, int)
                else [
                    float(n),
                    float(f),
                ]
            )
        if GLOBAL not in counts:
            raise ValueError(f"failure: the all-calls entry {GLOBAL!r} is missing")
        cue.counts = counts
        cue._build()
        return cue
