"""The ``order`` cue: how surprising is this tool after the previous one?

Score = −log P(next | prev), where ``prev`` is the previous tool of the stream (the start
symbol ``<s>`` for a stream's first call) and P mixes two bigram models:

**Global** (training calls). Vocabulary = training tools + ``<unk>`` (every tool not seen in
training). Unigram with add-one: ``P_u(w) = (C(w) + 1) / (N + |V|)``, ``|V|`` counting
``<unk>``. Bigram interpolated with it by Witten–Bell:
``P_g(w | p) = (C(p, w) + T(p) · P_u(w)) / (C(p) + T(p))``, with ``C(p)`` the training count of
``p`` as a context and ``T(p)`` its number of distinct followers; a context never seen in
training (an unseen tool, or ``<unk>``) backs off to ``P_u(w)``. An unseen ``next`` tool
therefore scores ``−log P_g(<unk> | prev)``: finite, and large.

**Session** (the stream's own calls before this one). With ``n`` the stream's count of
``prev`` as a context so far, ``t`` its distinct followers and ``c`` the count of
``prev → next``, the Witten–Bell weight of the session model is ``λ = n / (n + t)`` and

    P(next | prev) = λ · c / n + (1 − λ) · P_g(next | prev)  =  (c + t · P_g) / (n + t),

the right-hand form being what is computed. ``n = 0`` (first use of ``prev`` as a context,
and every stream's first call) gives ``λ = 0``: the global model alone. The session counts
key tools by their exact name, so an unseen tool the session keeps using stops being
surprising. Without this mix a session that repeats a procedure of its own keeps paying the
global price for every repetition (the study: 22 % of normal sessions alarmed).

**Named option** ``smoothing="kneser_ney"`` (issue 13, a stronger order model; default
``"witten_bell"``, the study's): the global bigram is interpolated Kneser–Ney with absolute
discount ``D = 0.75``, ``P_g(w | p) = max(C(p, w) − D, 0) / C(p) + D · T(p) / C(p) · P_c(w)``,
backing off to the *continuation* unigram ``P_c(w) = (N₁₊(·w) + 1) / (N₁₊(··) + |V|)`` (how
many distinct tools ``w`` follows, add-one so ``<unk>`` keeps mass) rather than raw frequency.
The session mix is the same. Its measured effect is in ``docs/ARCHITECTURE.md``.

**Named option** ``smoothing="witten_bell_novel"``: the same Witten–Bell bigram over an
*open-vocabulary* unigram, ``P_u(w) = C(w) / (N + T)`` for a training tool and
``P_u(<unk>) = T / (N + T)`` (``T`` distinct training tools): ``<unk>`` stands for every tool
never seen in training, so it takes Witten–Bell's own estimate of how often a call is the first
of a new tool, instead of add-one's one pseudo-count (the mass of one unseen *tool*). A tool
that first appears after training — a new server, a client upgrade — then scores like a tool
seen ``T`` times but never after this context, a rare training tool more. The study does not
say how it scored unseen tools; this is the knob behind Kneser–Ney's effect on drift (its
continuation unigram also gives ``<unk>`` far more mass). Measured in ``docs/ARCHITECTURE.md``.

>>> import pyarrow as pa
>>> from toolwatch.detection.calls.frame import prepare
>>> calls = pa.table({"session_id": ["a"] * 4, "tool": ["Read", "Edit", "Read", "Edit"],
...     "start_time": pa.array([0, 1, 2, 3], pa.timestamp("us", tz="UTC")),
...     "input_bytes": [1] * 4, "failed": [False] * 4})
>>> cue = OrderCue().fit(prepare(calls))
>>> [round(s, 3) for s in cue.score_many(prepare(calls)).tolist()]
[0.336, 0.211, 0.336, 0.1]
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext

#: Per-stream counts are packed into 64-bit integers kept in sorted ``array('q')``s — a few
#: bytes per distinct pair instead of a dict entry plus boxed ints (≤ 4 KB per open session).
#: Tool keys and counts have 20 bits each; a count saturates at 2**20 − 1.
_BITS = 20
_LOW = (1 << _BITS) - 1
#: Keys of tools outside the vocabulary start here, above any vocabulary index, so a stream's
#: keys stay valid when the adaptive model swaps in a snapshot with a larger vocabulary
#: (vocabulary indices are stable there: new tools are appended).
_UNSEEN_BASE = 1 << 19
#: Global bigram smoothing: the study's Witten–Bell (add-one unigram), or the named options
#: interpolated Kneser–Ney and Witten–Bell over the open-vocabulary unigram.
SMOOTHINGS = ("witten_bell", "kneser_ney", "witten_bell_novel")
KN_DISCOUNT = 0.75


class _OrderState:
    """Per-stream session bigram, sparse: only the pairs and contexts the stream produced.

    ``pairs``: sorted ``(prev << 20 | next) << 20 | c`` entries; ``contexts``: sorted
    ``prev << 40 | n << 20 | t`` entries.
    """

    __slots__ = ("contexts", "pairs", "prev", "unseen")

    def __init__(self) -> None:
        self.prev = -1  # key of the previous tool; -1 before the first call
        self.pairs = array("q")
        self.contexts = array("q")
        self.unseen: dict[str, int] | None = None  # names outside the vocabulary -> key


class OrderCue(Cue):
    """Global Witten–Bell bigram mixed with the stream's running bigram (module docstring)."""

    name: ClassVar[str] = "order"

    def __init__(self, session_mix: bool = True, smoothing: str = "witten_bell") -> None:
        if smoothing not in SMOOTHINGS:
            raise ValueError(f"order smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
        self.session_mix = session_mix
        self.smoothing = smoothing
        self.tools: list[str] = []
        self.unigram: list[float] = []
        self.bigrams: list[tuple[str | None, str, float]] = []  # (prev or None for <s>, next, n)
        #: the adaptive model's bounded novelty: a score for a tool in ``novel`` (or outside the
        #: vocabulary) is capped at ``novelty_cap``; ``None`` = no cap (the study)
        self.novelty_cap: float | None = None
        self.novel: frozenset[str] = frozenset()
        self._index: dict[str, int] = {}
        self._novel_keys: frozenset[int] = frozenset()
        self._pg = np.zeros((0, 0))
        self._pg_rows: list[list[float]] = []

    # ----------------------------------------------------------------- fitting

    @property
    def fitted(self) -> bool:
        return bool(self._pg_rows)

    def fit(self, frame: CallFrame) -> OrderCue:
        names = frame.tool_names
        self.tools = sorted(names)
        rank = {t: i for i, t in enumerate(self.tools)}
        to_vocab = np.array([rank[t] for t in names], dtype=np.int64)
        nxt = to_vocab[frame.tool] if frame.n else np.zeros(0, dtype=np.int64)
        self.unigram = np.bincount(nxt, minlength=len(self.tools)).astype(int).tolist()
        prev = frame.prev_tool
        prev_v = np.where(prev < 0, -1, to_vocab[np.maximum(prev, 0)]) if frame.n else prev
        pairs: dict[tuple[int, int], int] = {}
        if frame.n:
            keys = (prev_v + 1) * (len(self.tools) + 1) + nxt
            uniq, counts = np.unique(keys, return_counts=True)
            for key, count in zip(uniq.tolist(), counts.tolist(), strict=True):
                p, w = divmod(key, len(self.tools) + 1)
                pairs[(p - 1, w)] = count
        self.bigrams = [
            (None if p < 0 else self.tools[p], self.tools[w], c)
            for (p, w), c in sorted(pairs.items())
        ]
        self._build()
        return self

    @classmethod
    def from_counts(
        cls,
        tools: list[str],
        unigram: list[float],
        bigrams: list[tuple[str | None, str, float]],
        *,
        session_mix: bool = True,
        novel: frozenset[str] = frozenset(),
        novelty_cap: float | None = None,
        smoothing: str = "witten_bell",
    ) -> OrderCue:
        """A cue from (possibly weighted) counts over ``tools`` kept in the given order."""
        cue = cls(session_mix=session_mix, smoothing=smoothing)
        cue.tools, cue.unigram, cue.bigrams = list(tools), list(unigram), list(bigrams)
        cue.novel, cue.novelty_cap = frozenset(novel), novelty_cap
        cue._build()
        return cue

    def _build(self) -> None:
        """Dense global P_g over contexts (tools, <unk>, <s>) × next (tools, <unk>)."""
        v = len(self.tools)
        self._index = {t: i for i, t in enumerate(self.tools)}
        self._novel_keys = frozenset(self._index[t] for t in self.novel if t in self._index)
        total = sum(self.unigram)
        if self.smoothing == "witten_bell_novel" and total > 0:
            novel = v / (total + v)  # a tool the (decayed) counts no longer hold is novel too
            p_u = [c / (total + v) if c > 0 else novel for c in self.unigram] + [novel]
        else:
            p_u = [(c + 1) / (total + v + 1) for c in [*self.unigram, 0]]
        counts = np.zeros((v + 2, v + 1), dtype=np.float64)
        for prev, nxt, c in self.bigrams:
            row = v + 1 if prev is None else self._index[prev]
            counts[row, self._index[nxt]] += c
        ctx_n = counts.sum(axis=1, keepdims=True)
        ctx_t = (counts > 0).sum(axis=1, keepdims=True).astype(np.float64)
        p_u_arr = np.array(p_u, dtype=np.float64)
        if self.smoothing == "kneser_ney":
            follows = (counts > 0).sum(axis=0).astype(np.float64)  # N1+(· w)
            p_u_arr = (follows + 1.0) / (follows.sum() + v + 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                mixed = (
                    np.maximum(counts - KN_DISCOUNT, 0.0) + KN_DISCOUNT * ctx_t * p_u_arr
                ) / ctx_n
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                mixed = (counts + ctx_t * p_u_arr) / (ctx_n + ctx_t)  # IEEE ops, as in Python
        self._pg = np.where(ctx_n > 0, mixed, p_u_arr)
        self._pg_rows = self._pg.tolist()

    # ----------------------------------------------------------------- batch

    def score_many(self, frame: CallFrame) -> np.ndarray:
        self._check_fitted()
        n = frame.n
        if n == 0:
            return np.zeros(0)
        v = len(self.tools)
        to_vocab = np.array([self._index.get(t, v) for t in frame.tool_names], dtype=np.int64)
        nxt_g = to_vocab[frame.tool]
        prev_raw = frame.prev_tool
        prev_g = np.where(prev_raw < 0, v + 1, to_vocab[np.maximum(prev_raw, 0)])
        p = self._pg[prev_g, nxt_g]
        if self.session_mix:
            ctx_n, pair_c, ctx_t = _session_counts(frame.stream, prev_raw, frame.tool)
            mixed = ctx_n > 0
            c = pair_c[mixed]
            t = ctx_t[mixed]
            p = p.copy()
            p[mixed] = (c + t * p[mixed]) / (ctx_n[mixed] + t)
        scores = np.array([0.0 - math.log(q) for q in p.tolist()], dtype=np.float64)
        cap = self.novelty_cap
        if cap is not None:
            novel = np.array([t not in self._index or t in self.novel for t in frame.tool_names])
            capped = novel[frame.tool] & (scores > cap)
            scores[capped] = cap
        return scores

    # ----------------------------------------------------------------- online

    def new_state(self) -> _OrderState:
        return _OrderState()

    def score_one(self, call: Call, ctx: StreamContext, state: _OrderState) -> float:
        v = len(self.tools)
        key = self._index.get(call.tool)
        if key is None:
            unseen = state.unseen
            if unseen is None:
                unseen = state.unseen = {}
            key = unseen.get(call.tool)
            if key is None:
                key = unseen[call.tool] = _UNSEEN_BASE + len(unseen)
            nxt_g = v
        else:
            nxt_g = key
        prev = state.prev
        state.prev = key
        if prev < 0:
            p = self._pg_rows[v + 1][nxt_g]
        else:
            p = self._pg_rows[prev if prev < v else v][nxt_g]
            if self.session_mix:
                # the stream's counts before this call: c(prev -> key), n(prev), t(prev)
                pairs = state.pairs
                pair_base = ((prev << _BITS) | key) << _BITS
                i = bisect.bisect_left(pairs, pair_base)
                if i < len(pairs) and pairs[i] >> _BITS == pair_base >> _BITS:
                    c = pairs[i] & _LOW
                    if c < _LOW:
                        pairs[i] += 1
                else:
                    c = 0
                    pairs.insert(i, pair_base | 1)
                contexts = state.contexts
                ctx_base = prev << (2 * _BITS)
                j = bisect.bisect_left(contexts, ctx_base)
                if j < len(contexts) and contexts[j] >> (2 * _BITS) == prev:
                    packed = contexts[j]
                    n = (packed >> _BITS) & _LOW
                    t = packed & _LOW
                    p = (c + t * p) / (n + t)
                    if n < _LOW:
                        contexts[j] = packed + (1 << _BITS) + (1 if c == 0 else 0)
                else:
                    contexts.insert(j, ctx_base | (1 << _BITS) | 1)
        score = 0.0 - math.log(p)
        cap = self.novelty_cap
        if cap is not None and score > cap and (nxt_g == v or key in self._novel_keys):
            return cap
        return score

    def state_to_json(self, state: _OrderState) -> list[Any]:
        return [state.prev, list(state.pairs), list(state.contexts), state.unseen]

    def state_from_json(self, data: Any) -> _OrderState:
        state = _OrderState()
        state.prev = int(data[0])
        state.pairs = array("q", [int(x) for x in data[1]])
        state.contexts = array("q", [int(x) for x in data[2]])
        state.unseen = None if data[3] is None else {str(k): int(v) for k, v in data[3].items()}
        return state

    # ----------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        out: dict[str, Any] = {
            "session_mix": self.session_mix,
            **({"smoothing": self.smoothing} if self.smoothing != "witten_bell" else {}),
            "tools": list(self.tools),
            "unigram": list(self.unigram),
            "bigrams": [[p, w, c] for p, w, c in self.bigrams],
        }
        if self.novelty_cap is not None:
            out["novelty"] = {"cap": self.novelty_cap, "tools": sorted(self.novel)}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OrderCue:
        cue = cls(
            session_mix=bool(data["session_mix"]),
            smoothing=str(data.get("smoothing", "witten_bell")),
        )
        cue.tools = [str(t) for t in data["tools"]]
        cue.unigram = [_count(c) for c in data["unigram"]]
        if "novelty" in data:
            cue.novelty_cap = float(data["novelty"]["cap"])
            cue.novel = frozenset(str(t) for t in data["novelty"]["tools"])
        if len(cue.unigram) != len(cue.tools):
            raise ValueError("order: 'unigram' and 'tools' differ in length")
        known = set(cue.tools)
        bigrams = []
        for prev, nxt, count in data["bigrams"]:
            if (prev is not None and prev not in known) or nxt not in known:
                raise ValueError(f"order: bigram {prev!r} -> {nxt!r} names an unknown tool")
            bigrams.append((None if prev is None else str(prev), str(nxt), _count(count)))
        cue.bigrams = bigrams
        cue._build()
        return cue


def _count(value: Any) -> float:
    """A count from JSON: an int stays an int (training counts), weights are floats."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"order: count {value!r} is not a number")
    if value < 0:
        raise ValueError(f"order: count {value!r} is negative")
    return value


def _session_counts(
    stream: np.ndarray, prev: np.ndarray, tool: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call, the stream's counts *before* it: n(prev), c(prev→tool), t(prev).

    Stream starts (``prev == -1``) get zeros. Exact integer arithmetic, so the online
    scorer's running dictionaries give the same numbers.
    """
    n_calls = stream.shape[0]
    k = int(tool.max()) + 2 if n_calls else 1
    ctx_key = stream * k + (prev + 1)
    ctx_n = _cumcount(ctx_key)
    pair_key = ctx_key * k + (tool + 1)
    pair_c = _cumcount(pair_key)
    # t = distinct followers seen before = earlier calls of the context that were first pairs
    first_pair = (pair_c == 0).astype(np.int64)
    ctx_t = _cumsum_within(ctx_key, first_pair)
    started = prev < 0
    ctx_n[started] = 0
    pair_c[started] = 0
    ctx_t[started] = 0
    return ctx_n, pair_c, ctx_t


def _cumcount(keys: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements share its key."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    n = keys.shape[0]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_keys[1:] != sorted_keys[:-1]
    idx = np.arange(n, dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(new_group, idx, 0))
    out = np.empty(n, dtype=np.int64)
    out[order] = idx - group_start
    return out


def _cumsum_within(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each element, the sum of ``values`` over earlier elements sharing its key."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    vals = values[order]
    n = keys.shape[0]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = sorted_keys[1:] != sorted_keys[:-1]
    csum = np.cumsum(vals) - vals  # exclusive running sum over the whole array
    idx = np.arange(n, dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(new_group, idx, 0))
    out = np.empty(n, dtype=np.int64)
    out[order] = csum - csum[group_start]
    return out
