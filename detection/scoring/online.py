"""Online scoring: one call at a time, with per-stream state, on river primitives.

:class:`OnlineScorer` keeps, per open stream ``(session_id, agent_id)``, the previous call's
time/response (:class:`~toolwatch.detection.cues.base.StreamContext`), the order cue's sparse
session bigram, and per cue set the detector state: the float mean of the EWMA (starting at 0,
as in the study; river 0.26's ``EWMean`` can only start at the first value) and the float sum of
a hand-written Page CUSUM (river 0.26 has none); the point detector is the score itself.
The recursions are inlined in :meth:`OnlineScorer.score` with the same float operations as
``point.py``, ``ewma.py`` and ``cusum.py`` (a method call per detector cost a third of the
scorer's time). Feeding a stream's calls in ``(start_time, seq)`` order gives exactly the
floats :func:`~toolwatch.detection.scoring.batch.score_calls` computes; streams may interleave
freely.
A call that arrives out of order in its stream is scored as it comes (its negative gap scores
0 on the time cue).

Memory per open stream is about 2–3 KB (the session bigram holds only the pairs the stream
produced, packed 8 bytes each; see ``benchmarks/bench_detection.py``), and idle streams are
dropped with :meth:`OnlineScorer.evict_idle` — a stream seen again after eviction starts
afresh, like a new stream.

A running river ``stats.Mean`` of every cue set's standardised score is kept as a drift
gauge (:attr:`OnlineScorer.drift`): near 0 while traffic looks like the training window.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from river import stats

from toolwatch.detection.cues.base import Call, StreamContext
from toolwatch.detection.cues.names import CUE_NAMES, CUE_SETS
from toolwatch.detection.detectors.cusum import CUSUM
from toolwatch.detection.detectors.ewma import EWMA
from toolwatch.detection.detectors.names import DETECTORS, stat_column

if TYPE_CHECKING:
    from toolwatch.detection.model.normal_model import NormalModel

StreamKey = tuple[str, str | None]


#: Output names, in the order of :func:`~toolwatch.detection.scoring.batch.score_calls`'s score
#: columns.
SCORE_NAMES: tuple[str, ...] = (
    *CUE_NAMES,
    "all",
    *(stat_column(s, d) for s in CUE_SETS for d in DETECTORS),
)
_SCORE_INDEX = {name: i for i, name in enumerate(SCORE_NAMES)}
_INLINED: tuple[str, ...] = ("point", "ewma", "cusum")


class Scores(Mapping[str, float]):
    """One call's scores, read like a dict (``scores["all_cusum"]``, ``dict(scores)``).

    A thin view over a list in :data:`SCORE_NAMES` order: building a 20-key dict per call
    would cost the online scorer a sixth of its time.
    """

    __slots__ = ("_values",)

    def __init__(self, values: list[float]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> float:
        return self._values[_SCORE_INDEX[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(SCORE_NAMES)

    def __len__(self) -> int:
        return len(SCORE_NAMES)

    def __repr__(self) -> str:
        return f"Scores({dict(self)!r})"


class _Stream:
    """One open stream: context, cue states, and per cue set an EWMA mean and a CUSUM sum."""

    __slots__ = ("ctx", "cusum", "ewma", "last_us", "states")

    def __init__(self, states: list[Any]) -> None:
        self.ctx = StreamContext()
        self.states = states
        self.ewma = [0.0] * len(CUE_SETS)
        self.cusum = [0.0] * len(CUE_SETS)
        self.last_us = 0


class OnlineScorer:
    """Score calls one by one (``update``) with the model's cues and detectors.

    >>> import pyarrow as pa
    >>> from toolwatch.detection import NormalModel
    >>> train = pa.table({"session_id": ["a"] * 4, "tool": ["Read", "Edit", "Read", "Edit"],
    ...     "start_time": pa.array([0, 1, 2, 3], pa.timestamp("us", tz="UTC")),
    ...     "input_bytes": [1] * 4, "failed": [False] * 4})
    >>> scorer = OnlineScorer(NormalModel.fit(train))
    >>> s = scorer.update({"session_id": "x", "tool": "Read", "start_time": 0,
    ...                    "input_bytes": 1, "failed": False})
    >>> round(s["order"], 3), s["time"], s["all_cusum"] >= 0.0
    (0.336, 0.0, True)
    """

    def __init__(self, model: NormalModel) -> None:
        self._streams: dict[StreamKey, _Stream] = {}
        self.use_model(model)
        self._drift = {s: stats.Mean() for s in CUE_SETS}
        self._drift_sums = [0.0] * len(CUE_SETS)  # since the last fold into _drift
        self._drift_n = 0
        self.calls_seen = 0

    def use_model(self, model: NormalModel) -> None:
        """Score with ``model`` from the next call on; open streams keep their state.

        The adaptive scorer swaps in each refreshed snapshot this way: a snapshot's order cue
        keys tools by their stable ids (:mod:`toolwatch.detection.model.adaptive`), so the
        streams' session bigrams stay valid.
        """
        self.model = model
        std = model.standardisation
        self._cues = [(name, model.cues[name], std[name][0], std[name][1]) for name in CUE_NAMES]
        self._fast = tuple((cue, mean, sd) for _, cue, mean, sd in self._cues)
        restandardised = model.config.all_restandardised
        self._all_mean, self._all_sd = std["all"] if restandardised else (0.0, 1.0)
        self._restandardised = restandardised
        # the detectors, inlined per stream below: point = x, EWMA and CUSUM as floats (the
        # recursions of point.py / ewma.py / cusum.py, with the same float operations)
        detectors = model.detectors()
        if tuple(detectors) != _INLINED:
            raise ValueError(f"the online scorer inlines the detectors {_INLINED}")
        ewma = cast(EWMA, detectors["ewma"])
        self._alpha = ewma.alpha
        self._ewma_first = ewma.start == "first"
        self._k = cast(CUSUM, detectors["cusum"]).k

    # ---------------------------------------------------------------- scoring

    def update(self, call: Mapping[str, Any] | Call) -> Scores:
        """Score one call and fold it into its stream's state.

        ``call``: a record dict (``CallRecord.as_dict()``, an Arrow row) or a :class:`Call`.
        Returns the call's scores (a read-only mapping) by the batch column names:
        ``order, size, time, failure, all`` and ``<set>_<detector>`` for every cue set and
        detector (:data:`SCORE_NAMES`).
        """
        parsed = call if isinstance(call, Call) else Call.from_mapping(call)
        return self.score(parsed)[1]

    def score(self, call: Call) -> tuple[int, Scores]:
        """Like :meth:`update`, also returning the call's 0-based index in its stream."""
        key = (call.session_id, call.agent_id)
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = self._new_stream()
        ctx = stream.ctx
        index = ctx.index
        states = stream.states
        # the four cues, unrolled in CUE_NAMES order (the same float operations as batch)
        (o_cue, o_m, o_sd), (s_cue, s_m, s_sd), (t_cue, t_m, t_sd), (f_cue, f_m, f_sd) = self._fast
        o = o_cue.score_one(call, ctx, states[0])
        s = s_cue.score_one(call, ctx, states[1])
        t = t_cue.score_one(call, ctx, states[2])
        f = f_cue.score_one(call, ctx, states[3])
        zo = (o - o_m) / o_sd
        zs = (s - s_m) / s_sd
        zt = (t - t_m) / t_sd
        zf = (f - f_m) / f_sd
        combined = (zo + zs + zt + zf) / 4.0
        za = (combined - self._all_mean) / self._all_sd if self._restandardised else combined
        values = [o, s, t, f, combined]
        # per cue set: point, EWMA, CUSUM — inlined, as method calls on detector objects
        # cost a third of the scorer's time (benchmarks/bench_detection.py)
        ew = stream.ewma
        cs = stream.cusum
        k = self._k
        a = self._alpha
        b = 1.0 - a
        first = self._ewma_first and index == 0
        drift = self._drift_sums
        for j, x in enumerate((za, zo, zs, zt, zf)):
            drift[j] += x
            e = x if first else a * x + b * ew[j]
            ew[j] = e
            c = cs[j] + x - k
            c = c if c > 0.0 else 0.0
            cs[j] = c
            values += (x, e, c)
        ctx.advance(call)
        if call.start_us > stream.last_us:
            stream.last_us = call.start_us
        self._drift_n += 1
        self.calls_seen += 1
        return index, Scores(values)

    def _new_stream(self) -> _Stream:
        return _Stream([cue.new_state() for _, cue, _, _ in self._cues])

    # ---------------------------------------------------------------- stream life cycle

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def evict_idle(self, max_idle_s: float, now_us: int | None = None) -> list[StreamKey]:
        """Drop streams whose last call is more than ``max_idle_s`` before ``now_us``.

        ``now_us`` defaults to the latest call time seen (event time, so replaying old data
        evicts the same way as live traffic). Returns the dropped stream keys.
        """
        if not self._streams:
            return []
        if now_us is None:
            now_us = max(s.last_us for s in self._streams.values())
        cutoff = now_us - int(max_idle_s * 1_000_000)
        gone = [k for k, s in self._streams.items() if s.last_us < cutoff]
        for k in gone:
            del self._streams[k]
        return gone

    def forget(self, key: StreamKey) -> bool:
        """Drop one stream (a later call of it starts afresh); whether it was open."""
        return self._streams.pop(key, None) is not None

    def save_stream(self, key: StreamKey) -> list[Any]:
        """One open stream's whole state as JSON (context, cue states, detector sums)."""
        st = self._streams[key]
        cues = [
            cue.state_to_json(state)
            for (_, cue, _, _), state in zip(self._cues, st.states, strict=True)
        ]
        return [st.ctx.to_json(), cues, list(st.ewma), list(st.cusum), st.last_us]

    def load_stream(self, key: StreamKey, data: list[Any]) -> None:
        """Reopen a stream saved by :meth:`save_stream` (a restarted scorer resumes it)."""
        ctx, cues, ewma, cusum, last_us = data
        st = self._new_stream()
        st.ctx = StreamContext.from_json(ctx)
        st.states = [
            cue.state_from_json(d) for (_, cue, _, _), d in zip(self._cues, cues, strict=True)
        ]
        if len(ewma) != len(CUE_SETS) or len(cusum) != len(CUE_SETS):
            raise ValueError("a saved stream has the wrong number of detector states")
        st.ewma = [float(x) for x in ewma]
        st.cusum = [float(x) for x in cusum]
        st.last_us = int(last_us)
        self._streams[key] = st

    def close_session(self, session_id: str) -> int:
        """Forget every stream of a finished session; returns how many were open."""
        gone = [k for k in self._streams if k[0] == session_id]
        for k in gone:
            del self._streams[k]
        return len(gone)

    @property
    def drift(self) -> dict[str, stats.Mean]:
        """Running river ``Mean`` of each cue set's standardised score since the start.

        Calls are summed per cue set and folded in as one weighted update when this is read
        (a ``Mean.update`` per call and cue set cost a tenth of the scorer's time).
        """
        n = self._drift_n
        if n:
            for mean, total in zip(self._drift.values(), self._drift_sums, strict=True):
                mean.update(total / n, w=n)
            self._drift_sums = [0.0] * len(CUE_SETS)
            self._drift_n = 0
        return self._drift

    def drift_means(self) -> dict[str, float]:
        """Running mean of each cue set's standardised score since this scorer started."""
        return {s: float(m.get()) for s, m in self.drift.items()}
