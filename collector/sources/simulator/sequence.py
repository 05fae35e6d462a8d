"""Step 2 of ``workload.generate``, **sequence**: per session, the tools it calls in order, where
each model response begins and which calls fail, drawn from the session's own habit matrix; and
the retry loop written over the end of its session.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from toolwatch.collector.sources.simulator.allocation import partition
from toolwatch.collector.sources.simulator.calibration import (
    FAIL_GAMMA,
    HABIT_SHAPE,
    MULTI_BASE,
    MULTI_P,
    RETRY_AFTER_FAILURE,
    SAME_TOOL_IN_RESPONSE,
    VOCAB_FLOOR,
    VOCAB_POWER,
    VOCAB_RATE,
)
from toolwatch.collector.sources.simulator.config import RETRY_TOOL
from toolwatch.collector.sources.simulator.plan import SessionPlan
from toolwatch.collector.sources.simulator.tools import (
    AFFINITY,
    ALL_TOOLS,
    KIND_WEIGHTS,
    LAZY_MCP_LOADER,
    RENAMES,
    SERVERS,
    TOOL_INDEX,
    ServerSpec,
)


@dataclass(slots=True)
class SessionCalls:
    tools: list[int]
    new_response: list[bool]
    failed: list[bool]


class _Chain:
    """A session's habit matrix over one vocabulary (cumulative rows for fast sampling)."""

    def __init__(
        self,
        tools: list[int],
        weights: np.ndarray,
        affinity: np.ndarray,
        entry: np.ndarray,
        rng: np.random.Generator,
    ) -> None:
        self.tools = tools
        self.local = {t: i for i, t in enumerate(tools)}
        m = weights[None, :] * affinity * rng.gamma(HABIT_SHAPE, 1.0, affinity.shape) + 1e-12
        cum = np.cumsum(m, axis=1) / m.sum(axis=1, keepdims=True)
        cum[:, -1] = 2.0  # any u < 1 lands on a tool
        self.rows: list[list[float]] = cum.tolist()
        e = np.cumsum(entry * weights)
        e = e / e[-1]
        e[-1] = 2.0
        self.entry: list[float] = e.tolist()

    def first(self, u: float) -> int:
        return self.tools[bisect.bisect_right(self.entry, u)]

    def next(self, prev: int, u: float) -> int:
        i = self.local.get(prev)
        row = self.entry if i is None else self.rows[i]
        return self.tools[bisect.bisect_right(row, u)]


def _vocabulary(
    base: np.ndarray, calls: int, rate: float, forced: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Indices of the tools a session works with: more (and rarer) tools in longer sessions."""
    include = rng.random(len(base)) < 1 - np.exp(-rate * base / base.sum())
    include[int(np.argmax(base * rng.gamma(2.0, 1.0, len(base))))] = True
    return np.flatnonzero(include | forced)


def _builtin_chain(p: SessionPlan, calls: int, rng: np.random.Generator) -> _Chain | None:
    if calls <= 0:
        return None
    kind = KIND_WEIGHTS[p.kind]
    names = [RENAMES.get(t, t) if p.new_era else t for t in kind]
    base = np.array(list(kind.values()), dtype=float)
    forced = np.array([TOOL_INDEX[x] in p.must for x in names])
    idx = _vocabulary(base, calls, VOCAB_RATE * calls**VOCAB_POWER, forced, rng)
    weights = base[idx] * rng.gamma(1.5, 1 / 1.5, len(idx))
    weights = np.maximum(weights, weights.sum() * VOCAB_FLOOR / calls)
    tools = [TOOL_INDEX[names[i]] for i in idx]
    return _Chain(tools, weights, _kind_affinity(p.kind)[np.ix_(idx, idx)], np.ones(len(idx)), rng)


@functools.cache
def _kind_affinity(kind: str) -> np.ndarray:
    names = list(KIND_WEIGHTS[kind])
    return np.array([[AFFINITY.get((a, b), 1.0) for b in names] for a in names])


def _server_chain(
    server: ServerSpec, calls: int, must: set[int], rng: np.random.Generator
) -> _Chain:
    names = [t for t, _, _ in server.tools]
    full = [TOOL_INDEX[f"mcp__{server.name}__{t}"] for t in names]
    base = np.array([w for _, w, _ in server.tools], dtype=float)
    forced = np.array([t in must for t in full])
    if calls >= 2:  # an episode starts with its entry tool (navigate, authenticate, ...)
        forced[names.index(max(server.entry, key=server.entry.__getitem__))] = True
    idx = _vocabulary(base, calls, 2.0 * calls**0.7, forced, rng)
    weights = base[idx] * rng.gamma(1.5, 1 / 1.5, len(idx))
    weights = np.maximum(weights, weights.sum() / calls)
    sel = [names[i] for i in idx]
    affinity = np.array([[server.affinity.get((a, b), 1.0) for b in sel] for a in sel])
    entry = np.array([server.entry.get(a, 1.0) for a in sel])
    return _Chain([full[i] for i in idx], weights, affinity, entry, rng)


_MULTI_P_BY_TOOL: Final = [min(0.6, MULTI_BASE * t.parallel) for t in ALL_TOOLS]
_FAIL_BY_TOOL: Final = np.array([t.fail for t in ALL_TOOLS])
_LOADER: Final = TOOL_INDEX[LAZY_MCP_LOADER]


def _segments(p: SessionPlan, rng: np.random.Generator) -> list[tuple[_Chain, int]]:
    """Built-in work cut into pieces with the session's MCP episodes between them."""
    n_mcp = sum(p.mcp.values())
    n_builtin = p.n - n_mcp
    builtin = _builtin_chain(p, n_builtin, rng)
    episodes: list[tuple[_Chain, int]] = []
    for server in SERVERS:
        budget = p.mcp.get(server.name, 0)
        if budget:
            chain = _server_chain(server, budget, p.must, rng)
            k = min(budget, 1 + int(rng.poisson(budget / 14)))
            sizes = partition(budget, rng.gamma(2.0, 1.0, k), 1, budget).tolist()
            episodes += [(chain, int(size)) for size in sizes]
    episodes = [episodes[i] for i in rng.permutation(len(episodes))]
    cuts = np.sort(rng.integers(0, n_builtin + 1, len(episodes)))
    pieces = np.diff(np.r_[0, cuts, n_builtin]).tolist()
    segments: list[tuple[_Chain, int]] = []
    for i, piece in enumerate(pieces):
        if builtin is not None and piece > 0:
            segments.append((builtin, int(piece)))
        if i < len(episodes):
            segments.append(episodes[i])
    return segments


def sequence_calls(p: SessionPlan, rng: np.random.Generator) -> SessionCalls:
    """The session's calls: tools, response boundaries and failures."""
    segments = _segments(p, rng)
    u = iter(rng.random(8 * p.n + 16).tolist())
    fail_scale = float(rng.gamma(*FAIL_GAMMA))
    fail_p: list[float] = np.minimum(0.9, _FAIL_BY_TOOL * fail_scale).tolist()
    multi_p = _MULTI_P_BY_TOOL
    log_q = math.log(1.0 - MULTI_P)
    out = SessionCalls([], [], [])
    prev = retry = -1
    mcp_seen = False
    for chain, size in segments:
        is_mcp = ALL_TOOLS[chain.tools[0]].server is not None
        lazy = is_mcp and not mcp_seen and p.new_era and bool(out.tools)
        if lazy and ALL_TOOLS[out.tools[-1]].server is None:  # newer clients load MCP lazily
            out.tools[-1], out.failed[-1] = _LOADER, False
        mcp_seen |= is_mcp
        left = size
        first = True
        while left > 0:
            if retry in chain.local:
                t = retry
            elif first:
                t = chain.first(next(u))
            else:
                t = chain.next(prev, next(u))
            k = 1
            if next(u) < multi_p[t]:
                k = 2 + int(math.log(1.0 - next(u)) / log_q)
            if k > left:
                k = left
            retry = -1
            for j in range(k):
                if j > 0:
                    t = prev if next(u) < SAME_TOOL_IN_RESPONSE else chain.next(prev, next(u))
                failed = next(u) < fail_p[t]
                out.tools.append(t)
                out.new_response.append(j == 0)
                out.failed.append(failed)
                if failed and next(u) < RETRY_AFTER_FAILURE:
                    retry = t
                prev = t
            left -= k
            first = False
    _ensure_used(out, p.must, fail_p, rng)
    return out


def _ensure_used(
    s: SessionCalls, must: set[int], fail_p: list[float], rng: np.random.Generator
) -> None:
    """A planned tool the chain happened not to draw replaces a repeated call of its kind."""
    missing = sorted(must.difference(s.tools))
    if not missing:
        return
    counts = Counter(s.tools)
    for t in missing:
        server = ALL_TOOLS[t].server
        spots = [
            i
            for i in range(1, len(s.tools))
            if ALL_TOOLS[s.tools[i]].server == server
            and s.tools[i] != _LOADER
            and counts[s.tools[i]] > 1
        ]
        if spots:
            i = spots[int(rng.integers(len(spots)))]
            counts[s.tools[i]] -= 1
            counts[t] += 1
            s.tools[i] = t
            s.failed[i] = bool(rng.random() < fail_p[t])


def insert_retry_loop(p: SessionPlan, s: SessionCalls, retries: int) -> None:
    """Overwrite the session's end with the refused call and its retries.

    A few ordinary calls come before and after (the subagent gives up); every refused call is
    its own model response.
    """
    n = len(s.tools)
    loop = min(retries + 1, max(0, n - 4))
    begin = max(1, n - loop - 3)
    tool = TOOL_INDEX[RETRY_TOOL]
    for i in range(begin, begin + loop):
        s.tools[i], s.new_response[i], s.failed[i] = tool, True, True
    if begin + loop < n:
        s.new_response[begin + loop] = True
    p.loop = (begin, begin + loop)


def retry_loop_rows(plans: Sequence[SessionPlan], lengths: np.ndarray) -> np.ndarray:
    """Row indices of the retry loop's refused calls (empty when there is none)."""
    first = np.cumsum(lengths) - lengths
    for p in plans:
        if p.runaway and p.loop[1] > p.loop[0]:
            return np.arange(p.loop[0], p.loop[1]) + int(first[p.index])
    return np.zeros(0, dtype=np.int64)
