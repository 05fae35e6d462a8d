"""The live path's scorer: streams scored online, their thresholds, and — when the model is
adaptive — the model and thresholds kept up with normal traffic.

:class:`StreamScorer` wraps :class:`~toolwatch.detection.scoring.online.OnlineScorer` and keeps,
per open stream, its first and last call, its length and the peak of every watched statistic.
Frozen (``adaptive=None``), the thresholds are the model's operating point and a stream idle for
``max_idle_s`` is forgotten, as the collector always did. Adaptive
(:mod:`toolwatch.detection.model.adaptive`):

1. **Close.** A stream with no call for ``idle_min`` of event time closes.
2. **Threshold.** Its peak of each watched statistic (if it has ``min_calls`` calls) enters that
   statistic's pool, a river ``stats.RollingQuantile(1 − target_fa, window)``: the threshold is
   the pool's quantile, so about ``target_fa`` of recent long streams rise above it whatever the
   drift. Streams that alarmed stay in the pool (leaving them out censors it and ratchets the
   threshold down: 26 % of dev-real's normal streams alarmed that way). The pool starts from the
   calibration streams; below ``min_pool`` maxima the operating point is used.
3. **Quarantine, then fold.** ``quarantine_h`` after closing, a stream that never crossed a
   threshold is folded into the model (its calls read back by ``calls_of``: the store in the
   collector, the corpus in a replay), so an attack is not learnt the moment it starts.
   Injected (labelled) streams and client artefacts (warm-up agents) are never folded or
   pooled.
4. **Refresh.** The streams out of quarantine are folded together at most every
   ``refresh_min`` of event time (and once a day anyway, as decay moves the effective counts),
   then a new snapshot is compiled and swapped into the online scorer; open streams keep their
   state (tool ids are stable across snapshots).

At most ``max_open_streams`` streams are open: a new one past the cap evicts the least
recently active (an ``OrderedDict``, O(1) per call), closed early exactly as an idle one,
and (adaptive) pooled and queued by the usual rules at once, before the call that evicted it
is scored — never where a batch happens to end, so batching changes nothing.

Everything is bounded (the number of open streams; per stream: the online scorer's state plus
a few numbers; pools of ``window`` values; pending streams of one quarantine) and is saved by
:meth:`state` and restored by :meth:`restore` — frozen or adaptive (a frozen state is its open
streams and clock) — so a restarted collector resumes where it stopped.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from river import stats

from toolwatch.detection.cues.base import Call
from toolwatch.detection.detectors.names import parse_statistic
from toolwatch.detection.model.adaptive import AdaptiveModel, DecayedStats
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.detection.scoring.online import SCORE_NAMES, OnlineScorer, Scores, StreamKey

#: Open streams held at most (≈ 1.6 KB each: ≈ 160 MB): one more evicts the least recently
#: active, closed early as if idle — a sender inventing a session id per call must not grow
#: the collector's memory until its streams idle out.
MAX_OPEN_STREAMS: Final = 100_000
STATE_FORMAT: Final = "toolwatch.live-state"
STATE_VERSION: Final = 1
_DAY_US: Final = 86_400_000_000
#: What a damaged or hand-edited state raises while it is read back (wrong shapes and types,
#: a time so far off that the decay overflows).
_DAMAGED: Final = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


@dataclass(frozen=True, slots=True)
class Closed:
    """A stream that went idle: what the quarantine and the fold need to know."""

    key: StreamKey
    first_us: int
    last_us: int
    calls: int
    learn: bool  # neither injected nor a client artefact
    alarmed: bool
    peaks: tuple[float, ...]


#: Reads back the calls of closed streams (each between its first and last call).
CallsOf = Callable[[Sequence[Closed]], pa.Table]


class _Track:
    __slots__ = ("alarmed", "calls", "first_us", "last_us", "learn", "peaks")

    def __init__(self, first_us: int, watched: int) -> None:
        self.first_us = first_us
        self.last_us = first_us
        self.calls = 0
        self.peaks = [-math.inf] * watched
        self.alarmed = False
        self.learn = True


class StreamScorer:
    """Score calls per stream against thresholds that are frozen or held at a target rate."""

    def __init__(
        self,
        model: NormalModel,
        *,
        watch: Sequence[str] | None = None,
        adaptive: AdaptiveModel | None = None,
        calls_of: CallsOf | None = None,
        max_idle_s: float = 6 * 3600.0,
        max_open_streams: int = MAX_OPEN_STREAMS,
    ) -> None:
        if max_open_streams < 1:
            raise ValueError(f"max_open_streams must be at least 1, not {max_open_streams}")
        self.base = model
        self.watch = list(watch or model.config.alert_on)
        self.adaptive = adaptive
        self.calls_of = calls_of
        self._idx = [SCORE_NAMES.index(name) for name in self.watch]
        self._operating = [model.threshold(*parse_statistic(name)) for name in self.watch]
        #: open streams, least recently active first (a call moves its stream to the end)
        self.tracks: OrderedDict[StreamKey, _Track] = OrderedDict()
        self.max_open = max_open_streams
        #: told the key of each stream evicted, at once (before the next call is scored)
        self.on_evict: Callable[[StreamKey], None] | None = None
        self._evicted: list[Closed] = []  # closed early, handed out by the next advance()
        self.pending: list[tuple[int, int, Closed]] = []  # (release_us, order, stream) heap
        self.now_us = 0
        self.counts = {"closed": 0, "pooled": 0, "folded": 0, "folded_calls": 0, "refreshes": 0}
        self.counts["fold_errors"] = 0
        self.counts["evicted"] = 0
        self._order = 0
        self._dirty = False
        if adaptive is None:
            self.idle_us = int(max_idle_s * 1e6)
            self.online = OnlineScorer(model)
            self.pools: list[deque[tuple[int, float]]] = []  # (time µs, stream maximum)
            self._quantiles: list[stats.RollingQuantile] = []
            self.snapshot_s = 0.0
        else:
            cfg = adaptive.config
            self.idle_us = int(cfg.idle_min * 60e6)
            self.snapshot_s = adaptive.stats.learnt_until_s
            self.online = OnlineScorer(adaptive.snapshot(self.snapshot_s))
            start = int(self.snapshot_s * 1e6)  # the calibration maxima: as of training's end
            self.pools = [
                deque([(start, x) for x in adaptive.pool.get(name, [])[-cfg.window :]], cfg.window)
                for name in self.watch
            ]
            self._quantiles = []
            self._rebuild_quantiles()
        self.thresholds = self._current_thresholds()

    # ---------------------------------------------------------------- scoring

    def score(
        self, call: Call, *, learn: bool = True, latest_us: int | None = None
    ) -> tuple[int, Scores, int]:
        """Score one call: its index in its stream, its scores, and a bit mask of the watched
        statistics above their thresholds (bit i: ``watch[i]``). ``learn=False`` marks the
        stream as never to be folded or pooled (an injected copy, a client artefact).

        ``latest_us`` is the latest believable call time (the collector: its clock plus a
        tolerance). A call stamped after it is scored, but its time counts as ``latest_us`` for
        the event clock and its stream's life, and its stream is never learnt: one skewed
        clock would otherwise close every other open stream and age the model to its date."""
        index, scores = self.online.score(call)
        t = call.start_us
        if latest_us is not None and t > latest_us:
            t, learn = latest_us, False
        key = (call.session_id, call.agent_id)
        tracks = self.tracks
        track = tracks.get(key)
        if track is None:
            if len(tracks) >= self.max_open:
                self._evict()
            track = tracks[key] = _Track(t, len(self._idx))
        else:
            tracks.move_to_end(key)  # O(1): the least recently active stays first
        values = scores._values
        peaks = track.peaks
        mask = 0
        for bit, j in enumerate(self._idx):
            v = values[j]
            if v > peaks[bit]:
                peaks[bit] = v
            if v > self.thresholds[bit]:
                mask |= 1 << bit
        if mask:
            track.alarmed = True
        if not learn:
            track.learn = False
        track.calls += 1
        if t > track.last_us:
            track.last_us = t
        if t > self.now_us:
            self.now_us = t
        return index, scores, mask

    # ---------------------------------------------------------------- stream life cycle

    def advance(self, now_us: int | None = None, *, at_us: int | None = None) -> list[Closed]:
        """Close idle streams; adaptive: pool them, fold those out of quarantine, refresh.

        ``now_us`` defaults to the latest call time seen (event time: a replay of old data
        behaves as live traffic did). ``at_us``: act as of this time instead, the clock left
        as it is — the live path acts at minute boundaries of event time, so what closes when
        does not depend on how the calls were batched. Returns the streams closed now.
        """
        now = self.now_us if now_us is None else max(now_us, self.now_us)
        self.now_us = now
        if at_us is not None:
            now = at_us
        cutoff = now - self.idle_us
        idle = [self._close(k) for k in [k for k, t in self.tracks.items() if t.last_us < cutoff]]
        closed, self._evicted = self._evicted + idle, []  # the evicted: retired already
        self.counts["closed"] += len(closed)
        if self.adaptive is None:
            return closed
        cfg = self.adaptive.config
        self._retire(idle)
        if not math.isinf(cfg.pool_days):  # only recent maxima: the old ones age out
            oldest = now - int(cfg.pool_days * _DAY_US)
            aged = False
            for pool in self.pools:
                while pool and pool[0][0] < oldest and len(pool) > cfg.min_pool:
                    pool.popleft()
                    aged = True
            if aged:
                self._rebuild_quantiles()
        # out of quarantine, the streams wait for the next refresh and are folded together
        # (one read-back and one fold per refresh, however often advance() is called)
        since = now / 1e6 - self.snapshot_s
        ready = bool(self.pending) and self.pending[0][0] <= now
        if (ready and since >= cfg.refresh_min * 60) or since * 1e6 >= _DAY_US:
            due = []
            while self.pending and self.pending[0][0] <= now:
                due.append(heapq.heappop(self.pending)[2])
            if due:
                self._fold(due)
            self.refresh(now / 1e6)
        self.thresholds = self._current_thresholds()
        return closed

    def _close(self, key: StreamKey) -> Closed:
        track = self.tracks.pop(key)
        self.online.forget(key)
        peaks = tuple(track.peaks)
        return Closed(
            key, track.first_us, track.last_us, track.calls, track.learn, track.alarmed, peaks
        )

    def _retire(self, closed: Sequence[Closed]) -> None:
        """Adaptive: pool the closed streams' peaks (if long enough) and queue them for the
        fold after the quarantine (if they may be learnt)."""
        assert self.adaptive is not None
        cfg = self.adaptive.config
        quarantine_us = int(cfg.quarantine_h * 3600e6)
        for c in closed:
            if c.learn and c.calls >= cfg.min_calls:
                for bit, peak in enumerate(c.peaks):
                    self.pools[bit].append((c.last_us, peak))
                    self._quantiles[bit].update(peak)
                self.counts["pooled"] += 1
            if c.learn and (cfg.fold_alarmed or not c.alarmed):
                self._order += 1
                heapq.heappush(
                    self.pending, (c.last_us + self.idle_us + quarantine_us, self._order, c)
                )

    def _evict(self) -> None:
        """Close the least recently active stream now, as if idle, and (adaptive) pool and
        queue it at once, before the call that evicted it is scored: pooled at the next
        :meth:`advance` instead, it moved the threshold where a batch happened to end, so one
        batch and one call a batch alerted differently. Handed out (and counted closed) by the
        next :meth:`advance`."""
        key = next(iter(self.tracks))
        closed = self._close(key)
        self._evicted.append(closed)
        self.counts["evicted"] += 1
        if self.adaptive is not None:
            self._retire([closed])
            self.thresholds = self._current_thresholds()
        if self.on_evict is not None:
            self.on_evict(key)

    def _fold(self, streams: Sequence[Closed]) -> None:
        assert self.adaptive is not None
        if self.calls_of is None:
            raise ModelError("an adaptive scorer needs calls_of to read back the streams it folds")
        calls = self.calls_of(streams)
        self.adaptive.fold(calls)
        self.counts["folded"] += len(streams)
        self.counts["folded_calls"] += calls.num_rows
        self._dirty = True

    def refresh(self, now_s: float) -> None:
        """Compile a snapshot of the adaptive model at ``now_s`` and score with it."""
        assert self.adaptive is not None
        self.online.use_model(self.adaptive.snapshot(now_s))
        self.snapshot_s = now_s
        self._dirty = False
        self.counts["refreshes"] += 1

    @property
    def last_seen_s(self) -> float:
        """Adaptive: event time of the newest call learnt or scored (its statistics' age)."""
        assert self.adaptive is not None
        return max(self.now_us / 1e6, self.adaptive.stats.learnt_until_s)

    def skip_gap(self, now_s: float) -> float:
        """Adaptive: start fading at ``now_s`` (a fresh state's first live call: the gap since
        the newest learnt call does not count) and score with the snapshot as of then; returns
        the seconds skipped."""
        assert self.adaptive is not None
        skipped = self.adaptive.stats.skip_gap(now_s)
        if skipped:
            self.refresh(now_s)
        return skipped

    def _rebuild_quantiles(self) -> None:
        assert self.adaptive is not None
        cfg = self.adaptive.config
        self._quantiles = []
        for pool in self.pools:
            q = stats.RollingQuantile(q=1.0 - cfg.target_fa, window_size=cfg.window)
            for _, x in pool:
                q.update(x)
            self._quantiles.append(q)

    def _current_thresholds(self) -> list[float]:
        if self.adaptive is None:
            return list(self._operating)
        out = []
        for bit, pool in enumerate(self.pools):
            value = self._quantiles[bit].get()
            if value is not None and len(pool) >= self.adaptive.config.min_pool:
                out.append(float(value))
            else:
                out.append(self._operating[bit])
        return out

    def threshold(self, name: str) -> float:
        """The current threshold of a watched statistic."""
        return self.thresholds[self.watch.index(name)]

    @property
    def open_streams(self) -> int:
        return len(self.tracks)

    # ---------------------------------------------------------------- saved state

    def state(self) -> dict[str, Any]:
        """Everything needed to resume (JSON-ready): the open streams and the clock; adaptive,
        also the statistics, pools and pending streams."""
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "model_id": self.base.model_id,
            "watch": self.watch,
            "now_us": self.now_us,
            "snapshot_s": self.snapshot_s,
            "dirty": self._dirty,
            "order": self._order,
            "counts": dict(self.counts),
            "adaptive": None if self.adaptive is None else self.adaptive.stats.to_dict(),
            "pools": [[list(e) for e in p] for p in self.pools],
            "streams": [
                [
                    key[0],
                    key[1],
                    t.first_us,
                    t.last_us,
                    t.calls,
                    t.peaks,
                    t.alarmed,
                    t.learn,
                    self.online.save_stream(key),
                ]
                for key, t in self.tracks.items()
            ],
            "pending": [
                [
                    r,
                    o,
                    c.key[0],
                    c.key[1],
                    c.first_us,
                    c.last_us,
                    c.calls,
                    c.learn,
                    c.alarmed,
                    list(c.peaks),
                ]
                for r, o, c in sorted(self.pending)
            ],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state`; :class:`ModelError` if it belongs to another model or is
        damaged (any bad field, a non-finite threshold maximum, a time the decay cannot reach)."""
        if not isinstance(state, dict):
            raise ModelError("not a toolwatch live state (not a JSON object)")
        if state.get("format") != STATE_FORMAT or state.get("version") != STATE_VERSION:
            raise ModelError("not a toolwatch live state of this version")
        if state.get("model_id") != self.base.model_id or state.get("watch") != self.watch:
            raise ModelError(
                f"the live state belongs to model {state.get('model_id')!r} watching "
                f"{state.get('watch')}, not to {self.base.model_id!r} watching {self.watch}"
            )
        if "adaptive" not in state:
            raise ModelError("the live state is damaged: it has no 'adaptive' field")
        saved, mode = ("a frozen", "adaptive") if self.adaptive else ("an adaptive", "frozen")
        if (state["adaptive"] is None) != (self.adaptive is None):
            raise ModelError(f"the live state was saved by {saved} scorer, this one is {mode}")
        try:
            if self.adaptive is not None:
                cfg = self.adaptive.config
                self.adaptive.stats = DecayedStats.from_dict(
                    state["adaptive"], cfg.half_life_s, cfg.floor_streams
                )
                self.pools = [
                    deque([(int(t), _finite(x)) for t, x in p][-cfg.window :], cfg.window)
                    for p in state["pools"]
                ]
                if len(self.pools) != len(self.watch):
                    raise ValueError("one pool per watched statistic is expected")
                self._rebuild_quantiles()
                self.snapshot_s = float(state["snapshot_s"])
                self.online = OnlineScorer(self.adaptive.snapshot(self.snapshot_s))
            self.now_us = int(state["now_us"])
            self._dirty = bool(state["dirty"])
            self._order = int(state["order"])
            self.counts.update({k: int(v) for k, v in state["counts"].items()})
            self.tracks = OrderedDict()
            for sid, agent, first, last, calls, peaks, alarmed, learn, online in state["streams"]:
                key = (str(sid), None if agent is None else str(agent))
                track = _Track(int(first), len(self.watch))
                track.last_us, track.calls = int(last), int(calls)
                track.peaks = [float(p) for p in peaks]
                track.alarmed, track.learn = bool(alarmed), bool(learn)
                self.tracks[key] = track
                self.online.load_stream(key, online)
            self.pending = []
            for r, o, sid, agent, first, last, calls, learn, alarmed, peaks in state["pending"]:
                key = (str(sid), None if agent is None else str(agent))
                closed = Closed(
                    key,
                    int(first),
                    int(last),
                    int(calls),
                    bool(learn),
                    bool(alarmed),
                    tuple(float(p) for p in peaks),
                )
                self.pending.append((int(r), int(o), closed))
            heapq.heapify(self.pending)
        except _DAMAGED as exc:
            raise ModelError(f"the live state is damaged: {exc}") from None
        while len(self.tracks) > self.max_open:  # saved under a higher cap
            self._evict()
        self.thresholds = self._current_thresholds()


def _finite(x: Any) -> float:
    """A saved stream maximum; river's rolling quantile aborts the process on a NaN."""
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"a threshold pool holds {value}")
    return value
