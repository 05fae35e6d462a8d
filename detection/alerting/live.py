"""Live alerts: score each call as the collector stores it and record what crosses a threshold.

``toolwatch collector --model FILE`` builds one :class:`LiveScorer` and calls
:meth:`LiveScorer.process` with every batch right after it was durably written. Each call is
scored online (:class:`~toolwatch.detection.scoring.online.OnlineScorer`) and every statistic in the
model's ``alert_on`` (default ``all_cusum``) is compared with its operating-point threshold;
an alert is raised when a stream *crosses* the threshold (see
:mod:`toolwatch.detection.alerting.alerts`). Alerts are appended to the store's ``alerts`` table
(partitioned by alert time), logged at WARNING, and optionally POSTed to a webhook by a
background thread (:mod:`toolwatch.detection.alerting.webhook`).

Nothing here may break ingest: a call that cannot be scored is logged and skipped, a failed
alert write is logged (the alerts are still returned and posted), the webhook never blocks.
Calls are scored in ``(start_time, seq)`` order within a batch; a stream idle for
``max_idle_s`` of event time is forgotten (a late call then starts a fresh stream).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.alerts import ALERTS_SCHEMA, ALERTS_TABLE, describe
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.detection.calls.frame import REQUIRED_COLUMNS, SCORING_COLUMNS
from toolwatch.detection.cues.base import Call
from toolwatch.detection.detectors.base import parse_statistic
from toolwatch.detection.model.normal_model import VERSION, ModelError, NormalModel
from toolwatch.detection.scoring.explain import dominant_cue
from toolwatch.detection.scoring.online import OnlineScorer, StreamKey

log = logging.getLogger(__name__)

_FIELDS = (*SCORING_COLUMNS, "span_id")


class LiveScorer:
    """Score stored batches online and record alerts (see the module docstring).

    ``model_path``: a calibrated model artifact; ``store``: a :class:`Store` or its path;
    ``webhook``: an http(s) URL to POST alerts to; ``alert_on``: statistics to alert on
    (``"<cue set>_<detector>"``; default the model's ``alert_on``); ``poster``: a ready
    :class:`WebhookPoster` (overrides ``webhook``).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        store: Store | str | os.PathLike[str],
        webhook: str | None = None,
        *,
        alert_on: Sequence[str] | None = None,
        max_idle_s: float = 6 * 3600.0,
        poster: WebhookPoster | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.model = NormalModel.load(self.model_path)
        if not self.model.calibrated:
            raise ModelError(
                f"model file {self.model_path} has no thresholds (it was never calibrated)"
            )
        self.store = store if isinstance(store, Store) else Store(store)
        self.scorer = OnlineScorer(self.model)
        self.watch: list[tuple[str, str, str, float]] = []
        for name in alert_on or self.model.config.alert_on:
            cue_set, detector = parse_statistic(name)
            self.watch.append((name, cue_set, detector, self.model.threshold(cue_set, detector)))
        self.max_idle_s = max_idle_s
        self.poster = poster or (WebhookPoster(webhook) if webhook else None)
        self._above: dict[StreamKey, int] = {}  # bit i set: stream is above watch[i]
        self.alerts_raised = 0
        self.calls_scored = 0
        self.calls_skipped = 0

    def process(self, table: pa.Table) -> list[dict[str, Any]]:
        """Score a stored batch of calls; returns the alerts it raised (also stored/posted)."""
        if table.num_rows == 0:
            return []
        alerts: list[dict[str, Any]] = []
        now = datetime.now(UTC)
        for call, span_id in self._calls(table):
            index, scores = self.scorer.score(call)
            self.calls_scored += 1
            key = (call.session_id, call.agent_id)
            mask = self._above.get(key, 0)
            new_mask = 0
            for bit, (name, cue_set, detector, threshold) in enumerate(self.watch):
                value = scores[name]
                if value > threshold:
                    new_mask |= 1 << bit
                    if not mask >> bit & 1:
                        alerts.append(
                            self._alert(
                                call,
                                span_id,
                                index,
                                cue_set,
                                detector,
                                value,
                                threshold,
                                scores,
                                now,
                            )
                        )
            if new_mask or mask:
                self._above[key] = new_mask
        for key in self.scorer.evict_idle(self.max_idle_s):
            self._above.pop(key, None)
        if alerts:
            self._record(alerts)
        return alerts

    def close(self) -> None:
        """Deliver what the webhook still holds (briefly) and stop its thread."""
        if self.poster is not None:
            self.poster.close()

    def __enter__(self) -> LiveScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- internals

    def _calls(self, table: pa.Table) -> list[tuple[Call, str | None]]:
        """The batch's calls in (start_time, seq) order; unreadable rows are logged, skipped."""
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            log.error(
                "live scoring: batch lacks column(s) %s; %d call(s) not scored",
                missing,
                table.num_rows,
            )
            self.calls_skipped += table.num_rows
            return []
        try:
            keys = [
                (c, "ascending", "at_start")
                for c in ("start_time", "seq")
                if c in table.column_names
            ]
            table = table.take(pc.sort_indices(table, sort_keys=keys))
            cols: dict[str, list[Any]] = {}
            for name in _FIELDS:
                if name not in table.column_names:
                    cols[name] = [None] * table.num_rows
                elif name == "start_time":
                    cols[name] = (
                        table.column(name)
                        .cast(pa.timestamp("us", tz="UTC"), safe=False)
                        .cast(pa.int64())
                        .to_pylist()
                    )
                else:
                    cols[name] = table.column(name).to_pylist()
        except (pa.ArrowException, ValueError, TypeError) as exc:
            log.error("live scoring: unreadable batch of %d call(s): %s", table.num_rows, exc)
            self.calls_skipped += table.num_rows
            return []
        out: list[tuple[Call, str | None]] = []
        for i in range(table.num_rows):
            row = {name: cols[name][i] for name in _FIELDS}
            try:
                out.append((Call.from_mapping(row), row["span_id"]))
            except (ValueError, TypeError) as exc:
                self.calls_skipped += 1
                log.error(
                    "live scoring: skipped call %s of session %s: %s",
                    row.get("span_id"),
                    row.get("session_id"),
                    exc,
                )
        return out

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
    ) -> dict[str, Any]:
        return {
            "alert_time": now,
            "session_id": call.session_id,
            "agent_id": call.agent_id,
            "seq": call.seq,
            "call_index": index,
            "call_time": datetime.fromtimestamp(call.start_us / 1e6, UTC),
            "span_id": span_id,
            "tool": call.tool,
            "cue_set": cue_set,
            "detector": detector,
            "cue": dominant_cue(cue_set, detector, scores),
            "score": float(value),
            "threshold": float(threshold),
            "model_id": self.model.model_id,
            "model_version": VERSION,
        }

    def _record(self, alerts: list[dict[str, Any]]) -> None:
        self.alerts_raised += len(alerts)
        for alert in alerts:
            log.warning(describe(alert))
        try:
            self.store.append(ALERTS_TABLE, alerts, schema=ALERTS_SCHEMA, partition_by="alert_time")
        except Exception as exc:  # never break ingest over an alert write
            log.error("could not store %d alert(s) in %s: %s", len(alerts), self.store.root, exc)
        if self.poster is not None:
            self.poster.post(alerts)
