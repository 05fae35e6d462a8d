"""The ``novelty`` cue: the first use of a tool (or of a server) mid-stream, weighted by how
rarely it appears in training streams (issue 13, beyond the study's four cues).

A stream's call scores ``−log((df(k) + ½) / (N + 1))`` when it is the stream's first use of
its key ``k`` at position ``warmup`` or later, else 0; ``df(k)`` is the number of training
streams that used ``k`` and ``N`` the training streams (a key never seen in training scores
``−log(½ / (N + 1))``, the largest). First uses in a stream's first ``warmup`` calls are how a
stream starts, not a change of plan, and score 0. Named option ``unseen="skip"``: a key never
seen in training scores 0 — it is a new installation (population drift: on dev-real 36 % of
the normal test streams first use such a tool mid-stream), left to the listing watcher's
``new_tool`` alert; the cue then watches rare *known* tools only, and is blind by construction
to an attack through a tool never seen in training.

Keys (``key``): ``"tool"`` (default, the tool's name) or ``"server"`` (named option, the
issue's wording: an MCP tool's server, a built-in tool's own name). On dev-real the tool key
is the one that helps (``docs/ARCHITECTURE.md``, *Beyond the study's cues*): a hijacked plan
calls several tools the stream never used, and a CUSUM over their first uses accumulates; by
server, tools of one server count once.

The cue is not part of ``all`` (the study's mean of four): the model standardises it by its
training mean and sd and runs the same detectors on it as a cue set of its own (``novelty``).

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> train = pa.table({"session_id": ["a", "a", "b", "b"], "tool": ["Read", "Edit", "Read", "Bash"],
...     "start_time": pa.array([0, 1, 2, 3], pa.timestamp("us", tz="UTC")),
...     "input_bytes": [1] * 4, "failed": [False] * 4})
>>> cue = NoveltyCue(warmup=1).fit(prepare(train))
>>> [round(s, 3) for s in cue.score_many(prepare(train)).tolist()]
[0.0, 0.693, 0.0, 0.693]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext
from toolwatch.record import split_mcp_name

KEYS: Final[tuple[str, ...]] = ("tool", "server")
#: What a key never seen in training scores: the largest weight (default), or nothing
#: (``skip``: such tools are new installations — population drift — left to the listing
#: watcher's ``new_tool`` alert on approved servers).
UNSEEN: Final[tuple[str, ...]] = ("score", "skip")


class NoveltyCue(Cue):
    """First uses mid-stream, weighted by training rarity (module docstring)."""

    name: ClassVar[str] = "novelty"

    def __init__(self, key: str = "tool", warmup: int = 5, unseen: str = "score") -> None:
        if key not in KEYS:
            raise ValueError(f"novelty key must be one of {KEYS}, got {key!r}")
        if unseen not in UNSEEN:
            raise ValueError(f"novelty unseen must be one of {UNSEEN}, got {unseen!r}")
        self.unseen = unseen
        if warmup < 0:
            raise ValueError(f"novelty warmup must be >= 0, got {warmup}")
        self.key = key
        self.warmup = int(warmup)
        self.streams = 0
        self.df: dict[str, int] = {}
        self._cache: dict[str, str] = {}

    @property
    def fitted(self) -> bool:
        return self.streams > 0

    def key_of(self, tool: str) -> str:
        """The key a tool counts under (its server for ``key="server"`` MCP tools)."""
        if self.key == "tool":
            return tool
        found = self._cache.get(tool)
        if found is None:
            server = split_mcp_name(tool)[0]
            found = self._cache[tool] = f"server:{server}" if server else tool
        return found

    def weight(self, key: str) -> float:
        df = self.df.get(key, 0)
        if df == 0 and self.unseen == "skip":
            return 0.0
        return -math.log((df + 0.5) / (self.streams + 1))

    def fit(self, frame: CallFrame) -> NoveltyCue:
        keys = np.array([self.key_of(t) for t in frame.tool_names], dtype=object)
        per_call = keys[frame.tool] if frame.n else keys[:0]
        pairs = {(int(s), str(k)) for s, k in zip(frame.stream.tolist(), per_call, strict=True)}
        df: dict[str, int] = {}
        for _, k in pairs:
            df[k] = df.get(k, 0) + 1
        self.df = dict(sorted(df.items()))
        self.streams = max(frame.stream_count, 1)
        return self

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        scores = np.zeros(frame.n)
        if frame.n == 0:
            return scores
        names = sorted({self.key_of(t) for t in frame.tool_names})
        rank = {k: i for i, k in enumerate(names)}
        code = np.array([rank[self.key_of(t)] for t in frame.tool_names], dtype=np.int64)
        key = code[frame.tool]
        combined = frame.stream * len(names) + key
        _, first = np.unique(combined, return_index=True)
        first = first[frame.position[first] >= self.warmup]
        weights = np.array([self.weight(k) for k in names])
        scores[first] = weights[key[first]]
        return scores

    def new_state(self) -> set[str]:
        return set()

    def score_one(self, call: Call, ctx: StreamContext, state: set[str]) -> float:
        key = self.key_of(call.tool)
        if key in state:
            return 0.0
        state.add(key)
        return self.weight(key) if ctx.index >= self.warmup else 0.0

    def state_to_json(self, state: set[str]) -> list[str]:
        return sorted(state)

    def state_from_json(self, data: Any) -> set[str]:
        return {str(k) for k in data}

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "key": self.key,
            "warmup": self.warmup,
            "unseen": self.unseen,
            "streams": self.streams,
            "df": self.df,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoveltyCue:
        cue = cls(
            key=str(data["key"]),
            warmup=int(data["warmup"]),
            unseen=str(data.get("unseen", "score")),
        )
        cue.streams = int(data["streams"])
        cue.df = {str(k): int(v) for k, v in data["df"].items()}
        if cue.streams < 1 or any(v < 0 for v in cue.df.values()):
            raise ValueError("novelty: streams must be >= 1 and counts >= 0")
        return cue
