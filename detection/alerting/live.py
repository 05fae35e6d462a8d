"""Live alerts: score each call as the collector stores it and record what crosses a threshold.

``toolwatch collector --model FILE`` builds one :class:`LiveScorer` and calls
:meth:`LiveScorer.process` with every batch right after it was durably written. Each call is
scored online by a :class:`~toolwatch.detection.scoring.adaptive.StreamScorer` and every
statistic in the model's ``alert_on`` (default ``all_cusum``) is compared with its threshold; an
alert is raised when a stream *crosses* it (see :mod:`toolwatch.detection.alerting.alerts`).
Alerts are appended to the store's ``alerts`` table (partitioned by alert time), logged at
WARNING, and optionally POSTed to a webhook by a background thread
(:mod:`toolwatch.detection.alerting.webhook`).

A model trained with ``--adaptive`` keeps up with normal traffic: its threshold is held at a
target false-alarm rate of recent streams and the streams that did not alarm are folded into it
after a quarantine (:mod:`toolwatch.detection.scoring.adaptive`; their calls are read back from
the store). A frozen model alerts at its operating point.

**Live state.** Either way the scorer's state is saved to ``state_path``
(``STORE/models/live-state.json``, :mod:`.live_state`) every ``save_every_s``, right after a
batch that crossed a threshold and at :meth:`close`, and restored at start; with ``catch_up``
(the collector) the calls stored after the last save — the writes after the arrival mark of the
last batch scored (``received_time``) — are re-scored then, write by write (:mod:`.readback`),
so a collector killed between saves resumes as if never stopped: no repeated alert, no runaway
restarting from 0, a call that arrived late included.

**Provenance alerts.** Besides the watched statistics, every call is checked against the model's
per-egress-class payload thresholds (:mod:`toolwatch.detection.cues.provenance`, saved by
``toolwatch train``). A call that exceeds raises an alert at once — every such call, not one per
excursion (:mod:`.live_alerts`: the rows and their delivery). Calls without provenance (not
measured) never alarm and are counted in ``provenance_unmeasured``; a model artifact from
before the cue has no thresholds, and then no provenance alert is raised (logged once).

**Novelty alerts** (named option ``novelty_alert``, off by default): with
``toolwatch train --model-config novelty_alert=cusum`` the scorer also runs the novelty cue set
(:mod:`toolwatch.detection.cues.novelty`: first uses mid-stream weighted by training rarity) and
raises an alert when its statistic crosses the operating point (one per excursion, like the
study's), explained by the tool that was first used and how many training streams used it;
its per-stream state is saved with the live state, so a restart resumes it too.

Nothing here may break ingest: a call that cannot be scored is logged and skipped, a failed
alert write, fold or state save is logged (the alerts are still returned and posted), the
webhook never blocks. Calls are scored in ``(start_time, seq)`` order within a batch
(:mod:`.live_batch` reads them); a stream idle for ``max_idle_s`` (adaptive: ``idle_min``) of
event time closes (a late call then starts a fresh stream) when the first call past a minute
boundary of event time arrives (:data:`TICK_US`), not where a batch ends: the same calls
batched otherwise — the catch-up's one batch, the collector's group commits — close the same
streams at the same calls. At most ``max_open_streams`` are open: one more closes the least
recently active early, exactly as if idle (counted in ``streams_evicted``, logged at most once
a minute, in :meth:`metrics` for the collector's ``/metrics`` and the shutdown line), so a
sender inventing a session id per call cannot grow the collector's memory. ``toolwatch
replay`` drives a stored corpus through this very class.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import EGRESS_NONE
from toolwatch.detection.alerting import model_age, readback
from toolwatch.detection.alerting.live_alerts import (
    PROVENANCE_CUE_SET,
    PROVENANCE_DETECTOR,
    alert_row,
    deliver,
)
from toolwatch.detection.alerting.live_batch import BatchCall, batch_calls
from toolwatch.detection.alerting.live_state import (
    STATE_IN_STORE,
    read_state,
    set_aside,
    write_state,
)
from toolwatch.detection.alerting.novelty_watch import NoveltyWatch
from toolwatch.detection.alerting.readback import ScoredWindow, alert_key, store_calls_of
from toolwatch.detection.alerting.webhook import WebhookPoster, metrics_line, webhook_metrics
from toolwatch.detection.cues.base import Call
from toolwatch.detection.detectors.names import parse_statistic
from toolwatch.detection.model.adaptive import AdaptiveModel
from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.detection.scoring.adaptive import MAX_OPEN_STREAMS, CallsOf, StreamScorer
from toolwatch.detection.scoring.online import Scores, StreamKey
from toolwatch.log_limits import RateLimiter
from toolwatch.record import RECEIVED
from toolwatch.words import counted

log = logging.getLogger(__name__)

__all__ = ["PROVENANCE_CUE_SET", "PROVENANCE_DETECTOR", "STATE_IN_STORE", "LiveScorer", "Observer"]
#: At most one log line per this many seconds about open streams evicted (a sender inventing a
#: session id per call evicts at every call).
EVICTION_LOG_EVERY_S = 60.0
#: Streams close, and an adaptive model pools, folds and refreshes, when the first call past a
#: boundary of this much event time arrives, as of the event clock then (and again as of that
#: time at a batch's end, which changes nothing): what closes when is the same however the
#: calls were batched, so the catch-up after a kill ends as the uninterrupted collector did.
#: ``toolwatch replay``'s default batches are these minutes, so it acts as it always did.
TICK_US = 60_000_000
#: Called per scored call: (call, index in its stream, scores, mask above) — replay measures.
Observer = Callable[[Call, int, Scores, int], None]


class LiveScorer:
    """Score stored batches online and record alerts (see the module docstring).

    ``model_path``: a calibrated model artifact; ``store``: a :class:`Store` or its path;
    ``webhook``: an http(s) URL to POST alerts to; ``alert_on``: statistics to alert on
    (``"<cue set>_<detector>"``; default the model's ``alert_on``); ``poster``: a ready
    :class:`WebhookPoster` (overrides ``webhook``); ``clock_ahead_s``: how far after this
    machine's clock a call may be stamped before its time is distrusted (the collector;
    ``None``, a replay of stored calls: event time is trusted); ``max_open_streams``: the cap
    on open streams (the least recently active is evicted past it); ``catch_up``: at start,
    re-score the stored calls the saved state never saw (the collector; see
    :mod:`~toolwatch.detection.alerting.readback`); ``fade_from_first_call``: an adaptive
    model's fading starts at a fresh state's first call, the gap before it skipped (else a
    model far older than that call is warned of: :mod:`.model_age`).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | NormalModel,
        store: Store | str | os.PathLike[str] | None,
        webhook: str | None = None,
        *,
        alert_on: Sequence[str] | None = None,
        max_idle_s: float = 6 * 3600.0,
        poster: WebhookPoster | None = None,
        adaptive: bool | AdaptiveConfig | None = None,
        calls_of: CallsOf | None = None,
        state_path: str | os.PathLike[str] | None = None,
        save_every_s: float = 60.0,
        record: bool = True,
        clock_ahead_s: float | None = None,
        max_open_streams: int = MAX_OPEN_STREAMS,
        catch_up: bool = False,
        fade_from_first_call: bool = False,
    ) -> None:
        if isinstance(model_path, NormalModel):
            self.model_path: Path | None = None
            self.model = model_path
        else:
            self.model_path = Path(model_path)
            self.model = NormalModel.load(self.model_path)
        if not self.model.calibrated:
            raise ModelError(
                f"model file {self.model_path} has no thresholds (it was never calibrated)"
            )
        self.model_id = self.model.model_id  # a checksum of the artifact: computed once
        self.store = store if isinstance(store, Store) or store is None else Store(store)
        watch = list(alert_on or self.model.config.alert_on)
        #: (statistic, cue set, detector, operating-point threshold) per watched statistic;
        #: the thresholds in force are ``self.scorer.thresholds`` (adaptive: they move)
        self.watch: list[tuple[str, str, str, float]] = []
        for name in watch:
            cue_set, detector = parse_statistic(name)
            self.watch.append((name, cue_set, detector, self.model.threshold(cue_set, detector)))
        use_adaptive = self.model.adaptive is not None if adaptive is None else bool(adaptive)
        model_adaptive = None
        if use_adaptive:
            model_adaptive = AdaptiveModel.from_model(self.model)
            if isinstance(adaptive, AdaptiveConfig):
                model_adaptive = model_adaptive.with_config(adaptive)
            if calls_of is None:
                if self.store is None:
                    raise ModelError("an adaptive live scorer needs a store (or calls_of)")
                calls_of = store_calls_of(self.store)

        def make_scorer() -> StreamScorer:
            scorer = StreamScorer(
                self.model,
                watch=watch,
                adaptive=None
                if model_adaptive is None
                else model_adaptive.with_config(model_adaptive.config),
                calls_of=calls_of,
                max_idle_s=max_idle_s,
                max_open_streams=max_open_streams,
            )
            scorer.on_evict = self._evicted
            return scorer

        self._make_scorer = make_scorer
        self.scorer = self._make_scorer()
        self.state_path: Path | None = None  # frozen or adaptive: open streams survive restarts
        if state_path is not None:
            self.state_path = Path(state_path)
        elif self.store is not None and record:
            self.state_path = self.store.root / STATE_IN_STORE
        self.save_every_s = save_every_s
        self.clock_ahead_s = clock_ahead_s
        #: calls stamped more than ``clock_ahead_s`` ahead of this machine's clock
        self.calls_ahead = 0
        self._limited = RateLimiter(log, EVICTION_LOG_EVERY_S)
        self._saved_at = time.monotonic()
        self.record = record
        self.poster = poster or (WebhookPoster(webhook) if webhook else None)
        self.on_scored: Observer | None = None
        self.fade_from_first_call = fade_from_first_call
        self.age_checked = False  # the model's age at the first call: warned or skipped
        self._above: dict[StreamKey, int] = {}  # bit i set: stream is above watch[i]
        self.alerts_raised = 0
        self.alerts_unstored = 0  # raised, but the alerts table could not take them (disk)
        self.state_save_errors = 0
        self.calls_scored = 0
        self.calls_skipped = 0
        #: calls without provenance measured (they are never provenance alerts)
        self.provenance_unmeasured = 0
        self.provenance = self.model.provenance
        if self.provenance is None:
            log.info("live scoring: the model has no provenance thresholds (retrain to add them)")
        self.novelty = NoveltyWatch.of(self.model)
        self._evicted_before = 0  # evictions of earlier runs, in a restored state's counts
        #: how far the state got (saved with it); None until a catch-up or a state sets it
        self.window: ScoredWindow | None = None
        self._raised: set[tuple[Any, ...]] = set()  # alerts stored before a kill (catch-up)
        #: the event time the streams were last closed as of (saved: a restart acts alike)
        self._acted_us = 0
        #: the arrival mark (``received_time``, µs) of the newest batch scored; None: a state
        #: from before arrival marks (the catch-up then goes by event time, once)
        self.received_us: int | None = None
        self._resume()
        if catch_up:
            self._catch_up()

    @property
    def adaptive(self) -> bool:
        return self.scorer.adaptive is not None

    @property
    def streams_evicted(self) -> int:
        """Open streams closed early to hold ``max_open_streams`` since this process started
        (the live state keeps the running total; a Prometheus counter restarts from 0)."""
        return self.scorer.counts["evicted"] - self._evicted_before

    def metrics(self) -> dict[str, tuple[str, str, float]]:
        """The live scorer's numbers for the collector's ``/metrics`` and the shutdown line:
        name -> (kind, help, value); every counter counts since this process started, as
        Prometheus expects of a counter after a restart (``rate()`` reads the reset)."""
        return {
            "live_calls_scored": ("counter", "calls scored live", self.calls_scored),
            "live_calls_skipped": ("counter", "calls that could not be scored", self.calls_skipped),
            "live_alerts_raised": ("counter", "live alerts raised", self.alerts_raised),
            "live_alerts_unstored": (
                "counter",
                "live alerts the alerts table could not take (logged and posted still)",
                self.alerts_unstored,
            ),
            "live_state_save_errors": (
                "counter",
                "saves of the live state that failed",
                self.state_save_errors,
            ),
            "live_calls_ahead": ("counter", "calls stamped too far ahead", self.calls_ahead),
            "live_streams_evicted": (
                "counter",
                "open streams closed early at max_open_streams",
                self.streams_evicted,
            ),
            "live_open_streams": (
                "gauge",
                "streams the live scorer holds open",
                self.scorer.open_streams,
            ),
            **webhook_metrics(self.poster),
        }

    def _evicted(self, key: StreamKey) -> None:
        """A stream closed early (the cap): forget at once which thresholds it is above, so a
        new stream of the same key starts clean in this very batch."""
        self._above.pop(key, None)
        if self.novelty is not None:
            self.novelty.streams.pop(key, None)

    def process(self, table: pa.Table, *, clock_us: int | None = None) -> list[dict[str, Any]]:
        """Score a stored batch of calls; returns the alerts it raised (also stored/posted).

        ``clock_us``: when the batch arrived, for the ``clock_ahead_s`` guard (default this
        machine's clock; a replay has none, so it gives its own: the newest arrival in the
        batch, :mod:`toolwatch.injection.experiment.replay_clock`)."""
        if table.num_rows == 0:
            return []
        alerts: list[dict[str, Any]] = []
        now = datetime.now(UTC)
        observe = self.on_scored
        provenance = self.provenance
        latest = None
        if self.clock_ahead_s is not None:
            latest = (
                int((time.time() + self.clock_ahead_s) * 1e6)
                if clock_us is None
                else clock_us + int(self.clock_ahead_s * 1e6)
            )
        ahead, ahead_us = 0, 0
        evicted = self.scorer.counts["evicted"]
        window = self.window
        calls = self._calls(table)
        if calls and not self.age_checked:
            first = calls[0][0].start_us if latest is None else min(calls[0][0].start_us, latest)
            model_age.first_call(self.scorer, first / 1e6, skip=self.fade_from_first_call)
            self.age_checked = True
        for call, span_id, learn, source in calls:
            t = call.start_us
            if latest is not None and t > latest:
                ahead, ahead_us = ahead + 1, max(ahead_us, t - latest)
                t = latest
            if t // TICK_US > self.scorer.now_us // TICK_US:  # past a boundary: act now
                self._advance(self.scorer.now_us)
            index, scores, mask = self.scorer.score(call, learn=learn, latest_us=latest)
            self.calls_scored += 1
            if window is not None:
                window.add(span_id, call.start_us)
            if observe is not None:
                observe(call, index, scores, mask)
            if provenance is not None and call.egress != EGRESS_NONE:  # most calls send nothing
                verdict = provenance.check(call.egress, call.payload_longest, call.payload_total)
                if verdict is None:
                    self.provenance_unmeasured += 1
                elif verdict.exceeds:
                    _, value, limit = verdict.measure
                    cell = (PROVENANCE_CUE_SET, PROVENANCE_DETECTOR, value, limit, None, now)
                    why = verdict.explain(*source)
                    alerts.append(self._alert(call, span_id, index, *cell, explanation=why))
            if self.novelty is not None:
                crossed = self.novelty.update(call)
                if crossed is not None:
                    statistic, threshold, why = crossed
                    crossing = ("novelty", self.novelty.detector, statistic, threshold, None, now)
                    alerts.append(self._alert(call, span_id, index, *crossing, explanation=why))
            key = (call.session_id, call.agent_id)
            above = self._above.get(key, 0)
            if mask & ~above:
                for bit, (name, cue_set, detector, _) in enumerate(self.watch):
                    if mask >> bit & 1 and not above >> bit & 1:
                        threshold = self.scorer.thresholds[bit]
                        alerts.append(
                            self._alert(
                                call,
                                span_id,
                                index,
                                cue_set,
                                detector,
                                scores[name],
                                threshold,
                                scores,
                                now,
                            )
                        )
            if mask or above:
                self._above[key] = mask
        if ahead:
            self.calls_ahead += ahead
            log.log(
                logging.WARNING if clock_us is None else logging.DEBUG,  # a replay counts them
                "live scoring: %s stamped up to %.0f s after %s (+%g s allowed): "
                "scored, but their time moves no stream's clock and their streams are never "
                "learnt",
                counted(ahead, "call"),
                ahead_us / 1e6 + (self.clock_ahead_s or 0.0),
                "this machine's clock" if clock_us is None else "their arrival",
                self.clock_ahead_s,
            )
        evicted = self.scorer.counts["evicted"] - evicted
        if evicted:
            self._limited.log(
                logging.WARNING,
                "evicted",
                "live scoring: %s evicted, the least recently active, to hold "
                "max_open_streams = %d (%d evicted since start): each closed as if idle; a sender "
                "inventing a session id per call?",
                counted(evicted, "open stream"),
                self.scorer.max_open,
                self.streams_evicted,
            )
        self._advance(self._acted_us)  # as of the last boundary passed: nothing new closes
        self._note_arrival(table)
        if alerts:
            self._record(alerts)
        # a crossing (model or novelty; provenance alerts hold no state) is saved at once: a
        # collector killed before the next periodic save would otherwise raise it again
        stateful = any(a["cue_set"] != PROVENANCE_CUE_SET for a in alerts)
        elapsed = time.monotonic() - self._saved_at
        if self.state_path is not None and (stateful or elapsed >= self.save_every_s):
            self.save_state()
        return alerts

    def _note_arrival(self, table: pa.Table) -> None:
        """Remember the batch's arrival mark (the collector's writes carry one): the catch-up
        after a kill re-scores the writes after it."""
        if RECEIVED not in table.column_names:
            return
        marks = table.column(RECEIVED).cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        newest = pc.max(marks).as_py()
        if newest is not None:
            self.received_us = max(self.received_us or 0, int(newest))

    def _advance(self, at_us: int) -> None:
        """Close idle streams (adaptive: pool, fold, refresh) as of ``at_us`` and forget their
        above-threshold bits; a failed fold is logged, never raised."""
        self._acted_us = at_us
        try:
            closed = self.scorer.advance(at_us=at_us)
        except Exception as exc:  # a failed fold must not break ingest
            log.error("live scoring: could not fold closed streams: %s", exc)
            self.scorer.counts["fold_errors"] += 1
            closed = []
        for c in closed:
            if c.key not in self.scorer.tracks:  # else evicted, then open again: a new stream
                self._evicted(c.key)

    def save_state(self) -> Path | None:
        """Write the scorer's state (temp file, fsync, rename, directory fsync: a power cut
        leaves the old state or the new, never an empty one); logged, never raised, on
        failure."""
        if self.state_path is None:
            return None
        self._saved_at = time.monotonic()
        try:
            doc = self.scorer.state()
            doc["above"] = [[k[0], k[1], v] for k, v in self._above.items()]
            doc["acted_us"] = self._acted_us
            doc["received_us"] = self.received_us
            if self.window is not None:
                self.window.prune(self.scorer.now_us)
            doc["caught"] = None if self.window is None else self.window.to_json()
            if self.novelty is not None:
                doc["novelty"] = self.novelty.to_json()
            write_state(self.state_path, doc)
        except (OSError, ValueError, TypeError) as exc:
            self.state_save_errors += 1
            log.error("live scoring: could not save the state to %s: %s", self.state_path, exc)
            return None
        return self.state_path

    def _resume(self) -> None:
        path = self.state_path
        if path is None or not path.exists():
            return
        try:
            doc = read_state(path)
            self.scorer.restore(doc)  # evicts down to max_open_streams if it was lowered
            self._evicted_before = int(doc["counts"].get("evicted", 0))
            caught = doc.get("caught")  # absent: saved before catch-up existed
            self.window = None if caught is None else ScoredWindow.from_json(caught)
            self._above = {(str(s), a): int(v) for s, a, v in doc["above"]}
            self._acted_us = int(doc.get("acted_us", self.scorer.now_us))  # absent: older
            received = doc.get("received_us")  # absent: saved before arrival marks
            self.received_us = None if received is None else int(received)
            if self.novelty is not None:
                self.novelty.load_json(doc.get("novelty", []))
            for key in [k for k in self._above if k not in self.scorer.tracks]:
                self._evicted(key)
            if self.novelty is not None:
                for key in [k for k in self.novelty.streams if k not in self.scorer.tracks]:
                    self._evicted(key)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ModelError) as exc:
            set_aside(path, exc)
            self.scorer = self._make_scorer()
            self._evicted_before = 0
            self.window = None
            self._above = {}
            self._acted_us = 0
            self.received_us = None
            if self.novelty is not None:
                self.novelty.streams = {}
            return
        log.info(
            "live scoring resumed from %s: %s, %d in quarantine",
            path,
            counted(len(self.scorer.tracks), "open stream"),
            len(self.scorer.pending),
        )

    def _catch_up(self) -> None:
        """Re-score the stored calls the saved state never saw (a kill between saves): the
        writes after its arrival mark, one by one; a state from before arrival marks, by event
        time (:mod:`.readback`). With no window yet, the calls already stored count as seen.
        Logged, never raised."""
        if self.store is None or self.state_path is None:
            return
        ahead = self.clock_ahead_s
        latest = None if ahead is None else int((time.time() + ahead) * 1e6)
        raised = self.alerts_raised
        try:
            if self.window is None:
                self.window = readback.baseline(self.store, latest)
                self.received_us = readback.newest_received(self.store)
                self.save_state()  # a kill before the first periodic save is caught up too
                return
            newest = None
            if self.received_us is None:  # saved before arrival marks: once, by event time
                newest = readback.newest_received(self.store)
                batches = [readback.missed_calls(self.store, self.window, latest)]
            else:  # rows without a mark (not received: appended by code) as before, first
                unmarked = readback.missed_calls(self.store, self.window, latest, unmarked=True)
                batches = [unmarked, *readback.arrived_since(self.store, self.received_us)]
            missed = sum(b.num_rows for b in batches)
            if missed:
                ids = [i for b in batches for i in b.column("span_id").to_pylist()]
                self._raised = readback.raised_before(self.store, ids)
                for batch in batches:
                    self.process(batch)  # an empty one is nothing
            if newest is not None:
                self.received_us = max(self.received_us or 0, newest)
            if missed or newest is not None:
                self.save_state()
            if missed:
                log.info(
                    "live scoring caught up %s stored after its state was last saved "
                    "(%s raised, %d raised before the restart not repeated)",
                    counted(missed, "call"),
                    counted(self.alerts_raised - raised, "alert"),
                    len(self._raised),
                )
        except Exception as exc:  # the collector starts anyway, as before catch-up existed
            log.error(
                "live scoring: could not re-score the calls stored since the last save: %s", exc
            )
        finally:
            self._raised = set()

    def close(self) -> None:
        """Save the state, deliver what the webhook still holds (briefly), stop its thread,
        then log the counters (the webhook's last outcome among them)."""
        self.save_state()
        if self.poster is not None:
            self.poster.close()
        log.info(
            "live scoring stopped: %s",
            metrics_line(self.metrics()),
        )

    def __enter__(self) -> LiveScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- internals

    def _calls(self, table: pa.Table) -> list[BatchCall]:
        """The batch's calls to score (:func:`~.live_batch.batch_calls`); skips counted."""
        calls, skipped = batch_calls(table)
        self.calls_skipped += skipped
        return calls

    def _alert(
        self,
        call: Call,
        span_id: str | None,
        index: int,
        cue_set: str,
        detector: str,
        value: float,
        threshold: float,
        scores: Any,
        now: datetime,
        *,
        explanation: str | None = None,
    ) -> dict[str, Any]:
        statistic = (cue_set, detector, value, threshold)
        return alert_row(call, span_id, index, statistic, scores, now, self.model_id, explanation)

    def _record(self, alerts: list[dict[str, Any]]) -> None:
        if self._raised:  # a catch-up: an alert stored before the kill is not raised twice
            alerts = [a for a in alerts if alert_key(a) not in self._raised]
        self.alerts_raised += len(alerts)
        if self.record:
            self.alerts_unstored += deliver(alerts, self.store, self.poster)
