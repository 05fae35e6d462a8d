"""What an experiment returns: thresholds, one :class:`CellResult` per (variant, kind, cue set,
detector, threshold mode) and per-run outcomes, all in one :class:`ExperimentResult`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Final

import numpy as np

from toolwatch.injection.experiment.config import ExperimentConfig

#: The kind of the uninjected test sessions in ``experiment_runs`` (detected = alarmed).
NORMAL: Final = "normal"
#: The statistic the study headlines (and every report leads with): all cues, CUSUM.
HEADLINE: Final = ("all", "cusum")


@dataclass(frozen=True)
class Threshold:
    """A chosen threshold and the share of normal test sessions that alarm at it."""

    value: float
    fa_reached: float


@dataclass
class CellResult:
    """One (variant, kind, cue set, detector, threshold mode)."""

    variant: str
    kind: str
    cue_set: str
    detector: str
    mode: str
    threshold: float
    fa_reached: float
    runs: int
    detected: int
    rate: float
    ci_low: float
    ci_high: float
    median_latency: float
    auc: float

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.variant, self.kind, self.cue_set, self.detector, self.mode)


@dataclass
class RunOutcomes:
    """Per-run outcomes of one (variant, kind) for the ``experiment_runs`` table."""

    variant: str
    kind: str
    session_ids: list[str]
    #: per run, the stream's agent (``None``: the main agent) and its index in the test split,
    #: the order the bootstrap resamples (the dashboard recomputes the intervals from both)
    agent_ids: list[str | None]
    streams: np.ndarray
    seed: np.ndarray
    positions: np.ndarray
    inserted: np.ndarray
    notes: list[str]
    detected: dict[tuple[str, str, str], np.ndarray]  # (cue, det, mode) -> bool per run
    latency: dict[tuple[str, str, str], np.ndarray]
    #: (cue, det) -> per run, the largest statistic inside the detection window (normal
    #: sessions: the session maximum), so any threshold / false-alarm target and the
    #: detection-vs-false-alarm (ROC) curve can be evaluated from the stored rows (dashboard)
    window_max: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)


@dataclass
class ExperimentResult:
    run_id: str
    created: datetime
    config: ExperimentConfig
    split: dict[str, Any]
    thresholds: dict[tuple[str, str, str, str], Threshold]  # (variant, cue, det, mode)
    cells: list[CellResult]
    notes: dict[str, dict[str, int]]  # kind -> note/skip counts
    timings: dict[str, float]
    runs: list[RunOutcomes] = field(default_factory=list)

    def cell(
        self, kind: str, cue: str, det: str, mode: str = "fa_target", variant: str = "standard"
    ) -> CellResult | None:
        for c in self.cells:
            if c.key() == (variant, kind, cue, det, mode):
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "created": self.created.isoformat(),
            "config": self.config.to_dict(),
            "split": self.split,
            "thresholds": [
                {
                    "variant": v,
                    "cue_set": c,
                    "detector": d,
                    "mode": m,
                    "threshold": finite(t.value),
                    "fa_reached": t.fa_reached,
                }
                for (v, c, d, m), t in self.thresholds.items()
            ],
            "cells": [{k: finite(v) for k, v in asdict(c).items()} for c in self.cells],
            "notes": self.notes,
            "timings_s": self.timings,
        }


def finite(v: Any) -> Any:
    """``v`` with NaN / ±inf as ``None`` (JSON and the stored tables hold no non-finite float)."""
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def finite_tree(v: Any) -> Any:
    """``v`` (dicts and lists of JSON values) with every NaN / ±inf as ``None``: what a strict
    JSON reader (``jq``, ``JSON.parse``) accepts, where ``json.dumps`` writes ``Infinity``."""
    if isinstance(v, dict):
        return {k: finite_tree(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite_tree(x) for x in v]
    return finite(v)
