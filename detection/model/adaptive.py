"""The adaptive normal model: the same four cues, learnt from normal traffic as it comes.

A deployment drifts (new CLI versions, new MCP servers, another user's pace), and a model frozen
at training time then alarms on a growing share of normal streams (issue 12 measured 17 % of
dev-real's long test streams at the operating point). The adaptive model keeps the *sufficient
statistics* of the cues instead of their fitted parameters, with old behaviour fading:

* **Decay.** Every observation (a call, a gap, a stream using a tool) is stored with the weight
  ``2^((t − t_ref)/H)``, ``H`` the half-life (``half_life_days``, 14 by default; ``inf`` = no
  decay). Ratios need no rescaling; the counts the cues' smoothing reads (Witten–Bell ``T``,
  add-one, the size cue's minimum count, the failure prior) use the *effective* counts, stored ×
  ``2^(−(now − t_ref)/H)``. Every 20 half-lives the statistics are renormalised and entries
  below 10⁻³ pruned, which bounds them.
* **Decay floor** (``floor_streams`` F, 0 = off). On a quiet deployment time decay alone leaves
  the model resting on the last few streams it folded (months-old training counts for little).
  With a floor, weights follow a *decay clock* instead of event time: between two folded streams
  it advances by their time apart, but by at most ``H / (F·ln 2)`` — the model forgets at most
  a factor ``e^(−1/F)`` per stream it learns, so its effective weight never falls below about
  F streams (once it has learnt them) however slowly traffic comes, and without new streams it
  forgets nothing. A busy deployment (streams closer than that in time) decays as before.
* **A deployment gap** (:meth:`DecayedStats.skip_gap`, the collector's
  ``--fade-from-first-call``). Without a floor, a model first used long after its newest call
  has faded by then (23 half-lives for a model whose newest call is in January, used in December:
  the first fold prunes its statistics to nothing). Skipping the gap moves the decay clock
  back by the time between the newest learnt call and the first live one, so fading starts
  there: a gap without traffic brings no new behaviour to replace the old with.
* **Statistics.** Unigram and bigram counts over a tool registry whose ids never change (new
  tools are appended, so open streams keep valid keys when a snapshot is swapped in); per tool the
  weighted moments of ``log1p`` input and result bytes and the weighted calls and failures; a
  log-spaced histogram of different-response gaps (1 ms – 10⁶ s, 50 bins a decade) whose
  compiled time cue keeps the graded tail below its first populated bin; per tool the decayed
  number of folded streams that used it.
* **Snapshots.** :meth:`AdaptiveModel.snapshot` compiles the statistics into ordinary cues
  (:class:`~toolwatch.detection.cues.order.OrderCue` etc., so scoring is the frozen model's code)
  inside a :class:`~toolwatch.detection.model.normal_model.NormalModel` with the standardisation
  fixed at the initial fit (re-estimating it from folded traffic lowered sensitivity on
  dev-real: runaway 0.90 → 0.84).
* **Bounded novelty.** A tool used in fewer than ``novelty_streams`` (decayed) folded streams —
  every tool of a server never seen, every tool never seen — is *novel*: its order and size
  scores are capped at the training mean + ``novelty_zcap`` training sd of that cue, so a new MCP
  server contributes a bounded surprise until it has been seen in enough streams.

What is folded and when (quarantine, the threshold held at a target false-alarm rate) is the
scorer's job: :mod:`toolwatch.detection.scoring.adaptive`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch.detection.calls.frame import CallFrame, prepare
from toolwatch.detection.cues.failure import FailureCue
from toolwatch.detection.cues.order import OrderCue
from toolwatch.detection.cues.size import GLOBAL, SizeCue
from toolwatch.detection.cues.timing import TimeCue, scored_gaps
from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.words import counted

#: The gap histogram: bins of 1/50 decade from 1 ms to 10⁶ s.
GAP_LOG10_MIN: Final = -3.0
GAP_BINS_PER_DECADE: Final = 50
GAP_BINS: Final = 450
_RENORM_HALF_LIVES: Final = 20.0
_PRUNE: Final = 1e-3


# ------------------------------------------------------------------------------ statistics


class DecayedStats:
    """The cues' sufficient statistics with exponential decay (module docstring)."""

    def __init__(self, half_life_s: float, floor_streams: float = 0.0) -> None:
        self.half_life_s = float(half_life_s)
        #: the decay floor in streams (0: off, weights follow event time)
        self.floor_streams = float(floor_streams)
        #: decay time of the weights' reference: weights are 2^((d - t_ref)/H), d the decay
        #: time (event seconds since the epoch without a floor, the decay clock with one)
        self.t_ref = 0.0
        #: with a floor: the last stream end the decay clock has seen (s) and the clock there
        self.clock_t = 0.0
        self.clock_d = 0.0
        #: without a floor: the deployment gap skipped (s): decay time = event time − this
        self.skipped_s = 0.0
        self.tools: list[str] = []  # the registry: index = stable id
        self.unigram: dict[int, float] = {}
        self.bigram: dict[tuple[int, int], float] = {}  # (prev id or -1 for <s>, next id)
        self.size: dict[int, list[float]] = {}  # id -> [w_in, s_in, s2_in, w_out, s_out, s2_out]
        self.size_all = [0.0] * 6
        self.fail: dict[int, list[float]] = {}  # id -> [w, failures]
        self.fail_all = [0.0, 0.0]
        self.gaps = np.zeros(GAP_BINS)
        self.streams: dict[int, float] = {}  # id -> folded streams that used it
        self._ids: dict[str, int] = {}

    # --------------------------------------------------------------- weights

    @property
    def floored(self) -> bool:
        """Whether weights follow the decay clock (a floor and a finite half-life)."""
        return self.floor_streams > 0 and not math.isinf(self.half_life_s)

    @property
    def clock_step_s(self) -> float:
        """The most the decay clock advances per folded stream: ``H / (F·ln 2)`` seconds, so
        one stream multiplies older weights by at least ``e^(−1/F)``."""
        return self.half_life_s / (self.floor_streams * math.log(2.0))

    def decay_time(self, now_s: float) -> float:
        """The decay time at event time ``now_s`` (with a floor: the clock stands still
        between folds, as nothing new was learnt)."""
        return self.clock_d if self.floored else now_s - self.skipped_s

    @property
    def learnt_until_s(self) -> float:
        """The event time of the latest learnt stream end (the initial snapshot's time)."""
        return self.clock_t if self.floored else self.t_ref + self.skipped_s

    @property
    def fades_in_gaps(self) -> bool:
        """Whether time without traffic fades the statistics (no floor, a finite half-life)."""
        return not self.floored and not math.isinf(self.half_life_s)

    def skip_gap(self, now_s: float) -> float:
        """Start fading at event time ``now_s`` (the first live call): the time since the
        newest learnt call does not count. Returns the seconds skipped (0 with a floor, whose
        clock stands still anyway, or when ``now_s`` is not later)."""
        gap = now_s - self.learnt_until_s
        if not self.fades_in_gaps or gap <= 0:
            return 0.0
        self.skipped_s += gap
        return gap

    def factor(self, now_s: float) -> float:
        """Stored → effective counts at ``now_s``."""
        if math.isinf(self.half_life_s):
            return 1.0
        return float(2.0 ** (-(self.decay_time(now_s) - self.t_ref) / self.half_life_s))

    def _clock(self, frame: CallFrame, t_s: np.ndarray) -> np.ndarray:
        """Each call's decay time: its stream's, as the clock reads when that stream (in order
        of its last call) is folded; the clock moves by ``min(time apart, clock_step_s)``."""
        ends = np.flatnonzero(np.append(frame.start[1:], True))
        end_t = t_s[ends]
        d_stream = np.empty(ends.size)
        step = self.clock_step_s
        fresh = self.t_ref == 0.0 and not self.tools
        for j in np.argsort(end_t, kind="stable").tolist():
            t = float(end_t[j])
            if fresh:
                self.clock_t = self.clock_d = t
                fresh = False
            else:
                self.clock_d += min(max(t - self.clock_t, 0.0), step)
                self.clock_t = max(self.clock_t, t)
            d_stream[j] = self.clock_d
        return np.asarray(d_stream[frame.stream], dtype=np.float64)

    def _weights(self, t_s: np.ndarray) -> np.ndarray:
        if math.isinf(self.half_life_s):
            return np.ones(t_s.shape[0])
        return np.asarray(2.0 ** ((t_s - self.t_ref) / self.half_life_s), dtype=np.float64)

    def _renormalise(self, d: float) -> None:
        """Rescale to ``t_ref = d`` (a decay time) and prune what decayed away (bounds every
        dict)."""
        f = float(2.0 ** (-(d - self.t_ref) / self.half_life_s))
        self.t_ref = d
        if f == 1.0:
            return
        tables: tuple[dict[Any, float], ...] = (self.unigram, self.bigram, self.streams)
        for table in tables:
            for key in list(table):
                table[key] *= f
                if table[key] < _PRUNE:
                    del table[key]
        for stats in (self.size, self.fail):
            for vec in stats.values():
                vec[:] = [x * f for x in vec]
        self.size_all = [x * f for x in self.size_all]
        self.fail_all = [x * f for x in self.fail_all]
        self.gaps *= f
        self.gaps[self.gaps < _PRUNE] = 0.0

    # --------------------------------------------------------------- learning

    def fold(self, frame: CallFrame) -> None:
        """Add every call of ``frame`` (one stream or many) at its own time."""
        if frame.n == 0:
            return
        t_s = frame.start_us / 1e6
        if self.floored:
            t_s = self._clock(frame, t_s)  # decay time, not event time
        elif self.skipped_s:
            t_s = t_s - self.skipped_s
        t_max = float(t_s.max())
        if self.t_ref == 0.0 and not self.tools:
            self.t_ref = t_max
        elif (
            not math.isinf(self.half_life_s)
            and (t_max - self.t_ref) > _RENORM_HALF_LIVES * self.half_life_s
        ):
            self._renormalise(t_max)
        w = self._weights(t_s)
        ids = np.array([self._id(t) for t in frame.tool_names], dtype=np.int64)[frame.tool]
        prev = np.where(frame.start, -1, np.roll(ids, 1))
        _add_grouped(self.unigram, ids, w)
        pair = (prev + 1) * (len(self.tools) + 1) + ids
        uniq, inverse = np.unique(pair, return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=w)
        width = len(self.tools) + 1
        for key, total in zip(uniq.tolist(), sums.tolist(), strict=True):
            p, n = divmod(key, width)
            k = (p - 1, n)
            self.bigram[k] = self.bigram.get(k, 0.0) + total
        self._fold_sizes(frame, ids, w)
        self._fold_failures(frame, ids, w)
        gaps = scored_gaps(frame)
        if gaps.any():
            bins = gap_bins(frame.gap_us[gaps])
            np.add.at(self.gaps, bins, w[gaps])
        # a stream's tools, counted once per stream at its last call
        ends = np.flatnonzero(np.append(frame.start[1:], True))
        w_end = self._weights(t_s[ends])
        used = np.unique(frame.stream * width + ids)
        per_tool = np.bincount(used % width, weights=w_end[used // width], minlength=width)
        for tool in np.flatnonzero(per_tool).tolist():
            self.streams[tool] = self.streams.get(tool, 0.0) + float(per_tool[tool])

    def _id(self, tool: str) -> int:
        i = self._ids.get(tool)
        if i is None:
            i = self._ids[tool] = len(self.tools)
            self.tools.append(tool)
        return i

    def _fold_sizes(self, frame: CallFrame, ids: np.ndarray, w: np.ndarray) -> None:
        # numpy's log1p: these are sums for moments, not scores (no bit-exactness needed)
        l_in = np.log1p(frame.input_bytes.astype(np.float64))
        l_out = np.log1p(frame.output_bytes.astype(np.float64))
        # an unknown size (a span that carried none) is not learnt, as in SizeCue.fit
        wi = np.where(frame.input_known, w, 0.0)
        learn = frame.output_known & ~frame.output_truncated
        wo = np.where(learn, w, 0.0)
        lo = np.where(learn, l_out, 0.0)
        parts = (wi, wi * l_in, wi * l_in * l_in, wo, wo * lo, wo * lo * lo)
        uniq, inverse = np.unique(ids, return_inverse=True)
        inverse = inverse.reshape(-1)
        sums = [np.bincount(inverse, weights=x, minlength=len(uniq)) for x in parts]
        for j, tool in enumerate(uniq.tolist()):
            vec = self.size.setdefault(tool, [0.0] * 6)
            for k in range(6):
                vec[k] += float(sums[k][j])
        for k in range(6):
            self.size_all[k] += float(sums[k].sum())

    def _fold_failures(self, frame: CallFrame, ids: np.ndarray, w: np.ndarray) -> None:
        failed = frame.failed.astype(np.float64)
        uniq, inverse = np.unique(ids, return_inverse=True)
        inverse = inverse.reshape(-1)
        calls = np.bincount(inverse, weights=w, minlength=len(uniq))
        fails = np.bincount(inverse, weights=w * failed, minlength=len(uniq))
        for j, tool in enumerate(uniq.tolist()):
            vec = self.fail.setdefault(tool, [0.0, 0.0])
            vec[0] += float(calls[j])
            vec[1] += float(fails[j])
        self.fail_all[0] += float(calls.sum())
        self.fail_all[1] += float(fails.sum())

    # --------------------------------------------------------------- compiling

    def novel_tools(self, now_s: float, min_streams: float) -> frozenset[str]:
        """Registry tools used in fewer than ``min_streams`` (effective) folded streams."""
        f = self.factor(now_s)
        return frozenset(
            t for i, t in enumerate(self.tools) if self.streams.get(i, 0.0) * f < min_streams
        )

    def order_cue(
        self,
        now_s: float,
        *,
        session_mix: bool,
        novel: frozenset[str],
        cap: float | None,
        smoothing: str = "witten_bell",
    ) -> OrderCue:
        f = self.factor(now_s)
        unigram = [self.unigram.get(i, 0.0) * f for i in range(len(self.tools))]
        bigrams = [
            (None if p < 0 else self.tools[p], self.tools[n], c * f)
            for (p, n), c in sorted(self.bigram.items())
        ]
        return OrderCue.from_counts(
            self.tools,
            unigram,
            bigrams,
            session_mix=session_mix,
            novel=novel,
            novelty_cap=cap,
            smoothing=smoothing,
        )

    def size_cue(
        self,
        now_s: float,
        *,
        min_count: int,
        min_sd: float,
        novel: frozenset[str],
        cap: float | None,
    ) -> SizeCue:
        f = self.factor(now_s)
        stats = {GLOBAL: _moments(self.size_all, f)}
        for i, vec in self.size.items():
            stats[self.tools[i]] = _moments(vec, f)
        return SizeCue.from_stats(
            stats, min_count=min_count, min_sd=min_sd, novel=novel, novelty_cap=cap
        )

    def time_cue(self, now_s: float, *, tail: str) -> TimeCue:
        f = self.factor(now_s)
        populated = np.flatnonzero(self.gaps > 0)
        if populated.size == 0:
            return TimeCue.from_counts([], [], tail=tail)
        knots = [_KNOTS_US[b] for b in populated.tolist()]
        counts = np.cumsum(self.gaps[populated] * f).tolist()
        return TimeCue.from_counts(knots, counts, tail=tail)

    def failure_cue(self, now_s: float, *, prior_strength: float) -> FailureCue:
        f = self.factor(now_s)
        counts = {GLOBAL: [self.fail_all[0] * f, self.fail_all[1] * f]}
        for i, (n, k) in self.fail.items():
            counts[self.tools[i]] = [n * f, k * f]
        return FailureCue.from_counts(counts, prior_strength)

    # --------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        clock = {"clock": [self.clock_t, self.clock_d]} if self.floored else {}
        skipped = {"skipped_s": self.skipped_s} if self.skipped_s else {}
        return {
            **clock,
            **skipped,
            "t_ref": self.t_ref,
            "tools": list(self.tools),
            "unigram": [[i, c] for i, c in sorted(self.unigram.items())],
            "bigram": [[p, n, c] for (p, n), c in sorted(self.bigram.items())],
            "size": [[i, *v] for i, v in sorted(self.size.items())],
            "size_all": list(self.size_all),
            "fail": [[i, *v] for i, v in sorted(self.fail.items())],
            "fail_all": list(self.fail_all),
            "gaps": [[int(b), float(self.gaps[b])] for b in np.flatnonzero(self.gaps).tolist()],
            "streams": [[i, c] for i, c in sorted(self.streams.items())],
        }

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], half_life_s: float, floor_streams: float = 0.0
    ) -> DecayedStats:
        stats = cls(half_life_s, floor_streams)
        stats.t_ref = float(data["t_ref"])
        # a model learnt without the floor starts its clock where its event time stood
        stats.clock_t, stats.clock_d = (float(x) for x in data.get("clock", (stats.t_ref,) * 2))
        stats.skipped_s = float(data.get("skipped_s", 0.0))
        stats.tools = [str(t) for t in data["tools"]]
        stats._ids = {t: i for i, t in enumerate(stats.tools)}
        if len(stats._ids) != len(stats.tools):
            raise ValueError("the tool registry repeats a tool")
        v = len(stats.tools)

        def tool(i: Any) -> int:
            if not isinstance(i, int) or not -1 <= i < v:
                raise ValueError(f"tool id {i!r} is outside the registry")
            return i

        stats.unigram = {tool(i): float(c) for i, c in data["unigram"]}
        stats.bigram = {(tool(p), tool(n)): float(c) for p, n, c in data["bigram"]}
        stats.size = {tool(row[0]): [float(x) for x in row[1:7]] for row in data["size"]}
        stats.size_all = [float(x) for x in data["size_all"]]
        stats.fail = {tool(row[0]): [float(row[1]), float(row[2])] for row in data["fail"]}
        stats.fail_all = [float(x) for x in data["fail_all"]]
        for b, c in data["gaps"]:
            if not 0 <= int(b) < GAP_BINS:
                raise ValueError(f"gap bin {b!r} is outside the histogram")
            stats.gaps[int(b)] = float(c)
        stats.streams = {tool(i): float(c) for i, c in data["streams"]}
        return stats


def gap_bins(gap_us: np.ndarray) -> np.ndarray:
    """Histogram bin of each gap (µs): 1/50 decade from 1 ms, clipped at both ends."""
    g = np.maximum(np.asarray(gap_us, dtype=np.float64), 1.0) / 1e6
    b = np.floor((np.log10(g) - GAP_LOG10_MIN) * GAP_BINS_PER_DECADE)
    return np.clip(b, 0, GAP_BINS - 1).astype(np.int64)


def bin_knot_us(b: int) -> int:
    """The largest whole µs gap of bin ``b``: every gap of bins ≤ b is ≤ it."""
    upper = 10.0 ** (GAP_LOG10_MIN + (b + 1) / GAP_BINS_PER_DECADE) * 1e6
    return max(math.ceil(upper) - 1, 1)


_KNOTS_US: Final[list[int]] = [bin_knot_us(b) for b in range(GAP_BINS)]


def _add_grouped(table: dict[int, float], keys: np.ndarray, w: np.ndarray) -> None:
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=w, minlength=len(uniq))
    for key, total in zip(uniq.tolist(), sums.tolist(), strict=True):
        table[key] = table.get(key, 0.0) + total


def _moments(vec: Sequence[float], f: float) -> dict[str, list[float]]:
    def side(w: float, s1: float, s2: float) -> list[float]:
        if w <= 0:
            return [0.0, 0.0, 0.0]
        mean = s1 / w
        var = (s2 - s1 * s1 / w) / (w - 1) if w > 1 else 0.0
        return [w * f, mean, math.sqrt(max(var, 0.0))]

    return {"in": side(*vec[0:3]), "out": side(*vec[3:6])}


# ------------------------------------------------------------------------------ the model


@dataclass
class AdaptiveModel:
    """Decayed statistics + the fixed standardisation + the initial threshold pool."""

    config: AdaptiveConfig
    base: NormalModel  # the frozen model it started from (cue knobs, alert_on, thresholds)
    stats: DecayedStats
    standardisation: dict[str, tuple[float, float]]
    #: statistic -> the calibration streams' maxima under the initial snapshot
    pool: dict[str, list[float]]

    @classmethod
    def from_model(cls, model: NormalModel) -> AdaptiveModel:
        """The adaptive model a trained artifact carries (``toolwatch train --adaptive``)."""
        doc = model.adaptive
        if doc is None:
            raise ModelError(
                "the model has no adaptive part: train it with `toolwatch train --adaptive`"
            )
        try:
            config = AdaptiveConfig.from_dict(doc["config"])
            stats = DecayedStats.from_dict(doc["stats"], config.half_life_s, config.floor_streams)
            std = {k: (float(v[0]), float(v[1])) for k, v in doc["standardisation"].items()}
            pool = {k: [float(x) for x in v] for k, v in doc["pool"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"the model's adaptive part is invalid: {exc}") from None
        return cls(config, model, stats, std, pool)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "stats": self.stats.to_dict(),
            "standardisation": {k: list(v) for k, v in sorted(self.standardisation.items())},
            "pool": {k: list(v) for k, v in sorted(self.pool.items())},
        }

    def with_config(self, config: AdaptiveConfig) -> AdaptiveModel:
        """The same statistics under other knobs (``toolwatch replay`` overrides)."""
        stats = DecayedStats.from_dict(
            self.stats.to_dict(), config.half_life_s, config.floor_streams
        )
        return AdaptiveModel(config, self.base, stats, dict(self.standardisation), self.pool)

    def fold(self, calls: pa.Table | CallFrame) -> None:
        """Learn the calls of finished normal streams."""
        self.stats.fold(calls if isinstance(calls, CallFrame) else prepare(calls))

    def snapshot(self, now_s: float, *, novelty: bool = True) -> NormalModel:
        """The current statistics compiled into a frozen model (the live scorer scores with it)."""
        cfg = self.base.config
        novel: frozenset[str] = frozenset()
        caps: dict[str, float | None] = {"order": None, "size": None}
        if novelty and self.config.novelty_streams > 0:
            novel = self.stats.novel_tools(now_s, self.config.novelty_streams)
            for cue in caps:
                mean, sd = self.standardisation[cue]
                caps[cue] = mean + self.config.novelty_zcap * sd
        cues = {
            "order": self.stats.order_cue(
                now_s,
                session_mix=cfg.order_session_mix,
                novel=novel,
                cap=caps["order"],
                smoothing=cfg.order_smoothing,
            ),
            "size": self.stats.size_cue(
                now_s,
                min_count=cfg.size_min_count,
                min_sd=cfg.size_min_sd,
                novel=novel,
                cap=caps["size"],
            ),
            "time": self.stats.time_cue(now_s, tail=cfg.time_tail),
            "failure": self.stats.failure_cue(now_s, prior_strength=cfg.failure_prior_strength),
        }
        return NormalModel(
            config=cfg,
            cues=cues,
            standardisation=dict(self.standardisation),
            thresholds=self.base.thresholds,
            data={"adaptive_snapshot": now_s},
            created=self.base.created,
        )

    def describe(self) -> str:
        c = self.config
        half = "no decay" if math.isinf(c.half_life_days) else f"half-life {c.half_life_days:g} d"
        if c.floor_streams and not math.isinf(c.half_life_days):
            half += f" (floor {c.floor_streams:g} streams)"
        pooled = ", ".join(f"{k} {len(v)}" for k, v in self.pool.items())
        return (
            f"adaptive model: {half}, quarantine {c.quarantine_h:g} h, novelty until "
            f"{c.novelty_streams:g} streams (cap +{c.novelty_zcap:g} sd), threshold at "
            f"{c.target_fa:.1%} of the last {c.window} stream maxima (initial pool: {pooled}; "
            f"{counted(len(self.stats.tools), 'tool')} learnt)"
        )


def attach_adaptive(
    model: NormalModel, train: pa.Table, calibration: pa.Table, config: AdaptiveConfig
) -> AdaptiveModel:
    """Give a calibrated model its adaptive part, learnt from the same training calls.

    The training calls are folded at their own times (so their oldest fade, like later
    traffic); the standardisation is the initial snapshot's in-sample mean and sd, as
    :meth:`NormalModel.fit` does; the threshold pool is the maxima of the calibration streams
    with at least ``min_calls`` calls under the initial snapshot, per watched statistic.
    """
    frame = prepare(train)
    if frame.n == 0:
        raise ModelError("the training split has no calls: nothing to learn from")
    stats = DecayedStats(config.half_life_s, config.floor_streams)
    stats.fold(frame)
    now = float(frame.start_us.max()) / 1e6
    draft = AdaptiveModel(config, model, stats, dict(model.standardisation), {})
    plain = draft.snapshot(now, novelty=False)
    fitted = NormalModel.from_cues(plain.cues, frame, model.config)
    draft.standardisation = dict(fitted.standardisation)
    pool: dict[str, list[float]] = {name: [] for name in model.config.alert_on}
    calib = prepare(calibration)
    if calib.n:
        scores = draft.snapshot(now).score_frame(calib)
        lengths = np.bincount(calib.stream)
        starts = np.flatnonzero(calib.start)
        for name in pool:
            maxima = np.maximum.reduceat(scores[name], starts)
            pool[name] = [float(x) for x in maxima[lengths >= config.min_calls].tolist()]
    draft.pool = pool
    model.adaptive = draft.to_dict()
    model.checksum = model.identity = ""
    return draft
