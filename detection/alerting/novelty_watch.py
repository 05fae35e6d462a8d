"""The novelty cue set on the live path (``novelty_alert``, off by default): per open stream the
tools already used, its position and the detector's running value, and an alert per excursion
above the operating point. Kept apart from :mod:`toolwatch.detection.alerting.live`, which
drives it call by call, drops a stream's state when the stream closes and saves it with the
live state."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from toolwatch.detection.cues.base import Call, StreamContext
from toolwatch.detection.model.normal_model import NormalModel
from toolwatch.detection.scoring.online import StreamKey
from toolwatch.words import counted

log = logging.getLogger(__name__)


class NoveltyWatch:
    """The novelty cue set on the live path (``novelty_alert``): per stream the keys used, the
    position and the detector's running value, exactly the batch recursion of
    :meth:`NormalModel.novelty_statistics`; an alert per excursion above the operating point."""

    def __init__(self, model: NormalModel, detector: str) -> None:
        assert model.novelty is not None
        self.set = model.novelty
        self.detector = detector
        self.threshold = model.novelty.thresholds[detector]
        cfg = model.config
        self.alpha, self.k, self.first = cfg.ewma_alpha, cfg.cusum_k, cfg.ewma_start == "first"
        #: stream -> [keys used, context, running value, above]
        self.streams: dict[StreamKey, list[Any]] = {}

    @classmethod
    def of(cls, model: NormalModel) -> NoveltyWatch | None:
        det = model.config.novelty_alert
        if det is None:
            return None
        if model.novelty is None or not model.novelty.thresholds:
            log.warning("live scoring: novelty_alert is set but the model has no novelty cue")
            return None
        return cls(model, det)

    def update(self, call: Call) -> tuple[float, float, str] | None:
        """Fold ``call`` in; (value, threshold, explanation) when its stream crosses."""
        key = (call.session_id, call.agent_id)
        state = self.streams.get(key)
        if state is None:
            state = self.streams[key] = [self.set.cue.new_state(), StreamContext(), 0.0, False]
        seen, ctx, running, above = state
        index = ctx.index
        raw = self.set.cue.score_one(call, ctx, seen)
        ctx.advance(call)
        mean, sd = self.set.standardisation
        z = (raw - mean) / sd
        if self.detector == "point":
            value = z
        elif self.detector == "ewma":
            value = z if self.first and index == 0 else self.alpha * z + (1 - self.alpha) * running
        else:
            value = max(0.0, running + z - self.k)
        state[2] = value
        now_above = value > self.threshold
        state[3] = now_above
        if not now_above or above:
            return None
        cue = self.set.cue
        used = cue.df.get(cue.key_of(call.tool), 0)
        why = (
            f"novelty·{self.detector} {value:.2f} > {self.threshold:.2f} at call #{index} "
            f"({call.tool}: {'a first use, ' if raw > 0 else ''}used by {used} of "
            f"{counted(cue.streams, 'training stream')})"
        )
        return value, self.threshold, why

    def to_json(self) -> list[list[Any]]:
        """Every open stream's state (saved with the live state, so a restart neither re-arms
        the warm-up nor forgets the keys a stream already used)."""
        cue = self.set.cue
        return [
            [key[0], key[1], cue.state_to_json(seen), ctx.to_json(), running, above]
            for key, (seen, ctx, running, above) in self.streams.items()
        ]

    def load_json(self, rows: Sequence[Sequence[Any]]) -> None:
        """Inverse of :meth:`to_json`."""
        cue = self.set.cue
        self.streams = {
            (str(s), None if a is None else str(a)): [
                cue.state_from_json(seen),
                StreamContext.from_json(ctx),
                float(running),
                bool(above),
            ]
            for s, a, seen, ctx, running, above in rows
        }
