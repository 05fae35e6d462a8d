"""Steps 5 and 6 per kind: whether each run was detected within its window and how soon, at
every threshold, with bootstrap intervals and per-call AUC (:mod:`.metrics`); one seed at a
time (:func:`evaluate_seed`), then the seeds merged (:func:`merge_kind`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.config import MODES, ExperimentConfig
from toolwatch.injection.experiment.pooled_auc import Alignment, PooledAUC
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


def evaluate_seed(
    variant: str,
    runs: KindRuns,
    stats: Mapping[str, np.ndarray],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    aucs: Mapping[str, PooledAUC],
    normal_lengths: np.ndarray,
    statistics: Sequence[Statistic] = STATISTICS,
) -> RunOutcomes:
    """One seed's runs of a kind: per run detected and latency at every threshold and the
    window maxima; its calls' point scores go into ``aucs`` (per cue set). Only these
    summaries outlive the seed's scores."""
    layout = runs.layout
    starts = np.concatenate([[0], np.cumsum(normal_lengths)[:-1]]).astype(np.int64)
    alignment = Alignment.build(layout, runs.session_index, starts, normal_lengths)
    for cue, pooled in aucs.items():
        pooled.add(stats[f"{cue}_point"], alignment, runs.session_index)
    detected_out: dict[tuple[str, str, str], np.ndarray] = {}
    latency_out: dict[tuple[str, str, str], np.ndarray] = {}
    for cue, det in statistics:
        for mode in MODES:
            if (variant, cue, det, mode) not in thresholds:
                continue  # fa_next: only for a thin test split
            thr = thresholds[(variant, cue, det, mode)].value
            detected, latency = M.window_outcomes(stats[f"{cue}_{det}"], layout, thr)
            detected_out[(cue, det, mode)] = detected
            latency_out[(cue, det, mode)] = latency
    return RunOutcomes(
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


def merge_kind(
    pieces: Sequence[RunOutcomes],
    aucs: Mapping[str, PooledAUC],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    weights: np.ndarray,
    n_sessions: int,
) -> tuple[list[CellResult], RunOutcomes]:
    """One kind's cells (per cue set × detector × threshold mode) and its runs, from its
    seeds' outcomes in seed order (the runs' order had they been evaluated at once)."""
    first = pieces[0]
    out = RunOutcomes(
        variant=first.variant,
        kind=first.kind,
        session_ids=[s for p in pieces for s in p.session_ids],
        agent_ids=[a for p in pieces for a in p.agent_ids],
        streams=np.concatenate([p.streams for p in pieces]),
        seed=np.concatenate([p.seed for p in pieces]),
        positions=np.concatenate([p.positions for p in pieces]),
        inserted=np.concatenate([p.inserted for p in pieces]),
        notes=[n for p in pieces for n in p.notes],
        detected={k: np.concatenate([p.detected[k] for p in pieces]) for k in first.detected},
        latency={k: np.concatenate([p.latency[k] for p in pieces]) for k in first.latency},
        window_max={k: np.concatenate([p.window_max[k] for p in pieces]) for k in first.window_max},
    )
    auc = {cue: pooled.value() for cue, pooled in aucs.items()}
    keys = list(out.detected)
    flags = [out.detected[k] for k in keys]
    rates, lo, hi = M.stream_rates(flags, [out.streams] * len(flags), n_sessions, weights)
    cells = []
    for j, (cue, det, mode) in enumerate(keys):
        thr = thresholds[(out.variant, cue, det, mode)]
        detected, latency = out.detected[(cue, det, mode)], out.latency[(cue, det, mode)]
        cells.append(
            CellResult(
                variant=out.variant,
                kind=out.kind,
                cue_set=cue,
                detector=det,
                mode=mode,
                threshold=thr.value,
                fa_reached=thr.fa_reached,
                runs=len(detected),
                detected=int(detected.sum()),
                rate=float(rates[j]),
                ci_low=float(lo[j]),
                ci_high=float(hi[j]),
                median_latency=M.median_or_nan(latency[detected]),
                auc=auc[cue],
            )
        )
    return cells, out
