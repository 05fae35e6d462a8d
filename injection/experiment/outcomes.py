"""Steps 5 and 6 per kind: whether each run was detected within its window and how soon, at
every threshold, with bootstrap intervals and per-call AUC (:mod:`.metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.config import MODES, ExperimentConfig
from toolwatch.injection.experiment.results import NORMAL, CellResult, RunOutcomes, Threshold
from toolwatch.injection.experiment.runs import KindRuns
from toolwatch.injection.experiment.scoring import STATISTICS, Statistic
from toolwatch.injection.experiment.split import stream_name
from toolwatch.injection.spans.session_arrays import SessionCalls


def normal_outcomes(
    variant: str,
    test: Sequence[SessionCalls],
    normal_max: Mapping[str, np.ndarray],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    config: ExperimentConfig,
    statistics: Sequence[Statistic] = STATISTICS,
) -> RunOutcomes:
    """The uninjected test sessions as runs of kind ``normal`` (detected = alarmed)."""
    n = len(test)
    detected: dict[tuple[str, str, str], np.ndarray] = {}
    latency: dict[tuple[str, str, str], np.ndarray] = {}
    for cue, det in statistics:
        for mode in MODES:
            if (variant, cue, det, mode) not in thresholds:
                continue  # fa_next: only for a thin test split
            thr = thresholds[(variant, cue, det, mode)].value
            detected[(cue, det, mode)] = normal_max[f"{cue}_{det}"] > thr
            latency[(cue, det, mode)] = np.zeros(n, dtype=np.int64)
    return RunOutcomes(
        variant=variant,
        kind=NORMAL,
        session_ids=[stream_name(s) for s in test],
        agent_ids=[s["agent_id"][0] for s in test],
        streams=np.arange(n, dtype=np.int64),
        seed=np.full(n, -1, dtype=np.int64),
        positions=np.full(n, -1, dtype=np.int64),
        inserted=np.zeros(n, dtype=np.int64),
        notes=[""] * n,
        detected=detected,
        latency=latency,
        window_max={(c, d): normal_max[f"{c}_{d}"] for c, d in statistics},
    )


def evaluate_kind(
    variant: str,
    runs: KindRuns,
    stats: Mapping[str, np.ndarray],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    weights: np.ndarray,
    n_sessions: int,
    config: ExperimentConfig,
    statistics: Sequence[Statistic] = STATISTICS,
) -> tuple[list[CellResult], RunOutcomes]:
    """One kind's cells (per cue set × detector × threshold mode) and per-run outcomes."""
    layout = runs.layout
    positive = layout.injected_mask()
    keys: list[tuple[str, str, str]] = []
    pending: list[dict[str, Any]] = []
    detected_out: dict[tuple[str, str, str], np.ndarray] = {}
    latency_out: dict[tuple[str, str, str], np.ndarray] = {}
    cue_sets = dict.fromkeys(cue for cue, _ in statistics)  # each once: an AUC sorts every call
    aucs = {cue: M.auc(stats[f"{cue}_point"], positive) for cue in cue_sets}
    for cue, det in statistics:
        col = f"{cue}_{det}"
        for mode in MODES:
            if (variant, cue, det, mode) not in thresholds:
                continue  # fa_next: only for a thin test split
            thr = thresholds[(variant, cue, det, mode)]
            detected, latency = M.window_outcomes(stats[col], layout, thr.value)
            detected_out[(cue, det, mode)] = detected
            latency_out[(cue, det, mode)] = latency
            keys.append((cue, det, mode))
            pending.append(
                {
                    "threshold": thr.value,
                    "fa_reached": thr.fa_reached,
                    "runs": len(detected),
                    "detected": int(detected.sum()),
                    "median_latency": M.median_or_nan(latency[detected]),
                    "auc": aucs[cue],
                }
            )
    flags = [detected_out[k] for k in keys]
    rates, lo, hi = M.stream_rates(flags, [runs.session_index] * len(flags), n_sessions, weights)
    cells = [
        CellResult(
            variant=variant,
            kind=runs.kind,
            cue_set=cue,
            detector=det,
            mode=mode,
            rate=float(rates[j]),
            ci_low=float(lo[j]),
            ci_high=float(hi[j]),
            **pending[j],
        )
        for j, (cue, det, mode) in enumerate(keys)
    ]
    out = RunOutcomes(
        variant=variant,
        kind=runs.kind,
        session_ids=[stream_name(s) for s in runs.sessions],
        agent_ids=[s["agent_id"][0] for s in runs.sessions],
        streams=np.asarray(runs.session_index, dtype=np.int64),
        seed=runs.seed,
        positions=runs.positions,
        inserted=runs.inserted,
        notes=runs.notes,
        detected=detected_out,
        latency=latency_out,
        window_max={(c, d): M.window_max(stats[f"{c}_{d}"], layout) for c, d in statistics},
    )
    return cells, out
