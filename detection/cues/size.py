"""The ``size`` cue: is this call's input (or result) unusually large for its tool?

Sizes are compared on a log scale, ``ℓ = ln(1 + bytes)`` (so an empty argument object, 0
bytes, is finite). Per tool, training gives the mean and sd of ℓ for inputs and for results;
a call scores, in σ units,

    size = max(0, z_in) + |z_out|,    z = (ℓ − mean_tool) / sd_tool.

Only the *upper* side of the input counts (a smaller-than-usual argument is not a risk; a
larger one can carry data out), while results count on both sides (an empty or a huge result
are both off-normal). The two parts are **summed** rather than maxed so that extra input
always raises the score, whatever the result did. Special cases:

* result size unknown (NULL) → the result part is 0; a truncated result (``output_bytes``
  is a lower bound) counts only upward, ``max(0, z_out)``; truncated results are not learnt;
* a tool with fewer than ``min_count`` training values, or not seen in training, uses the
  statistics of all training calls (``"*"``);
* sd is floored at ``min_sd`` (log units) so a tool that always sends the same bytes does not
  turn one extra byte into hundreds of σ.

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> calls = pa.table({"session_id": ["a"] * 3, "tool": ["Read"] * 3,
...     "start_time": pa.array([0, 1, 2], pa.timestamp("us", tz="UTC")),
...     "input_bytes": [99, 99, 999], "failed": [False] * 3})
>>> cue = SizeCue(min_count=1, min_sd=0.5).fit(prepare(calls.slice(0, 2)))
>>> [round(s, 3) for s in cue.score_many(prepare(calls)).tolist()]
[0.0, 0.0, 4.605]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext

GLOBAL = "*"


def log_size(nbytes: int) -> float:
    """ℓ = ln(1 + bytes), with ``math.log1p`` (the one log both scorers use)."""
    return math.log1p(nbytes)


class SizeCue(Cue):
    """Per-tool log-size z-scores: input upper side + result both sides (module docstring)."""

    name: ClassVar[str] = "size"

    def __init__(self, min_count: int = 5, min_sd: float = 0.25) -> None:
        self.min_count = int(min_count)
        self.min_sd = float(min_sd)
        #: tool -> {"in": [n, mean, sd], "out": [n, mean, sd]}; ``"*"`` = all calls
        self.stats: dict[str, dict[str, list[float]]] = {}
        #: the adaptive model's bounded novelty (see OrderCue): a tool in ``novel`` or unseen
        #: scores at most ``novelty_cap``; ``None`` = no cap (the study)
        self.novelty_cap: float | None = None
        self.novel: frozenset[str] = frozenset()
        self._in: dict[str, tuple[float, float]] = {}
        self._out: dict[str, tuple[float, float]] = {}

    @property
    def fitted(self) -> bool:
        return GLOBAL in self.stats

    # ----------------------------------------------------------------- fitting

    def fit(self, frame: CallFrame) -> SizeCue:
        l_in = _log_sizes(frame.input_bytes)
        l_out = _log_sizes(frame.output_bytes)
        learn_out = frame.output_known & ~frame.output_truncated
        learn_in = frame.input_known
        stats: dict[str, dict[str, list[float]]] = {
            GLOBAL: {"in": _moments(l_in[learn_in]), "out": _moments(l_out[learn_out])}
        }
        for code, tool in enumerate(frame.tool_names):
            mine = frame.tool == code
            stats[tool] = {
                "in": _moments(l_in[mine & learn_in]),
                "out": _moments(l_out[mine & learn_out]),
            }
        self.stats = dict(sorted(stats.items()))
        self._build()
        return self

    @classmethod
    def from_stats(
        cls,
        stats: dict[str, dict[str, list[float]]],
        *,
        min_count: int = 5,
        min_sd: float = 0.25,
        novel: frozenset[str] = frozenset(),
        novelty_cap: float | None = None,
    ) -> SizeCue:
        """A cue from per-tool ``[n, mean, sd]`` (``n`` may be a weight), e.g. decayed moments."""
        if GLOBAL not in stats:
            raise ValueError(f"size: the all-calls entry {GLOBAL!r} is missing")
        cue = cls(min_count=min_count, min_sd=min_sd)
        cue.stats = dict(sorted(stats.items()))
        cue.novel, cue.novelty_cap = frozenset(novel), novelty_cap
        cue._build()
        return cue

    def _build(self) -> None:
        def pick(side: str, tool: str) -> tuple[float, float]:
            n, mean, sd = self.stats[tool][side]
            if n < self.min_count or n < 1:
                n, mean, sd = self.stats[GLOBAL][side]
            if n < 1:  # no data at all (e.g. no known result sizes): a neutral scale
                return 0.0, 1.0
            return float(mean), max(float(sd), self.min_sd)

        self._in = {t: pick("in", t) for t in self.stats}
        self._out = {t: pick("out", t) for t in self.stats}

    # ----------------------------------------------------------------- scoring

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        if frame.n == 0:
            return np.zeros(0)
        names = frame.tool_names
        mean_in = np.array([self._in.get(t, self._in[GLOBAL])[0] for t in names])[frame.tool]
        sd_in = np.array([self._in.get(t, self._in[GLOBAL])[1] for t in names])[frame.tool]
        mean_out = np.array([self._out.get(t, self._out[GLOBAL])[0] for t in names])[frame.tool]
        sd_out = np.array([self._out.get(t, self._out[GLOBAL])[1] for t in names])[frame.tool]
        z_in = (_log_sizes(frame.input_bytes) - mean_in) / sd_in
        z_out = (_log_sizes(frame.output_bytes) - mean_out) / sd_out
        part_in = np.where(frame.input_known & (z_in > 0.0), z_in, 0.0)
        part_out = np.where(
            frame.output_truncated, np.where(z_out > 0.0, z_out, 0.0), np.abs(z_out)
        )
        part_out = np.where(frame.output_known, part_out, 0.0)
        scores = part_in + part_out
        cap = self.novelty_cap
        if cap is not None:
            novel = np.array([t not in self._in or t in self.novel for t in names])
            capped = novel[frame.tool] & (scores > cap)
            scores[capped] = cap
        return scores

    def score_one(self, call: Call, ctx: StreamContext, state: None) -> float:
        score = 0.0
        if call.input_bytes is not None:  # a span without sizes scores no size
            mean, sd = self._in.get(call.tool) or self._in[GLOBAL]
            z = (log_size(call.input_bytes) - mean) / sd
            score = z if z > 0.0 else 0.0
        if call.output_bytes is not None:
            mean, sd = self._out.get(call.tool) or self._out[GLOBAL]
            z = (log_size(call.output_bytes) - mean) / sd
            part = (z if z > 0.0 else 0.0) if call.output_truncated else abs(z)
            score = score + part
        else:
            score = score + 0.0
        cap = self.novelty_cap
        if (
            cap is not None
            and score > cap
            and (call.tool not in self._in or call.tool in self.novel)
        ):
            return cap
        return score

    # ----------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        out: dict[str, Any] = {"min_count": self.min_count, "min_sd": self.min_sd}
        out["tools"] = self.stats
        if self.novelty_cap is not None:
            out["novelty"] = {"cap": self.novelty_cap, "tools": sorted(self.novel)}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SizeCue:
        cue = cls(min_count=int(data["min_count"]), min_sd=float(data["min_sd"]))
        stats: dict[str, dict[str, list[float]]] = {}
        for tool, sides in data["tools"].items():
            entry = {}
            for side in ("in", "out"):
                n, mean, sd = sides[side]
                entry[side] = [n if isinstance(n, int) else float(n), float(mean), float(sd)]
            stats[str(tool)] = entry
        if GLOBAL not in stats:
            raise ValueError(f"size: the all-calls entry {GLOBAL!r} is missing")
        cue.stats = stats
        if "novelty" in data:
            cue.novelty_cap = float(data["novelty"]["cap"])
            cue.novel = frozenset(str(t) for t in data["novelty"]["tools"])
        cue._build()
        return cue


def _log_sizes(nbytes: np.ndarray) -> np.ndarray:
    """ℓ for an array, computed with :func:`log_size` on each distinct value."""
    if nbytes.shape[0] == 0:
        return np.zeros(0)
    uniq, inverse = np.unique(nbytes, return_inverse=True)
    logs = np.array([log_size(v) for v in uniq.tolist()], dtype=np.float64)
    return logs[inverse.reshape(-1)]


def _moments(values: np.ndarray) -> list[float]:
    """``[n, mean, sd]`` (sample sd; 0 for fewer than two values)."""
    n = int(values.shape[0])
    if n == 0:
        return [0, 0.0, 0.0]
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if n > 1 else 0.0
    return [n, mean, sd]
