"""The study's injection experiment (BRIEF §3), end to end, on any store's calls.

Protocol, step by step (every choice is in :class:`ExperimentConfig`, saved with the results):

1. **Split by time**, never shuffled: sessions (streams: a subagent is a session of its own)
   are assigned by their first call to train / calibration / test, either by date (the study's
   dates by default) or by shares of sessions ordered by start time.
2. **Fit** the normal model on train; its operating point comes from calibration.
3. **Test sessions** are the test-split sessions with at least ``min_calls`` calls.
4. **Inject**: per seed and test session one insertion point (between call ``head`` and
   ``tail`` calls before the end, at a response boundary) shared by every kind; per kind one
   injected copy of the session. All injected sessions of a kind are scored in one batch; every
   session is its own stream, so its scores depend on that session only.
5. **Thresholds** per cue set × detector, two modes: ``fa_target`` — from one grid (the normal
   test sessions' maxima), the smallest threshold at which at most ``target_fa`` of normal test
   sessions ever alarm (the level actually reached is reported); ``operating_point`` — the
   model's calibration thresholds, with the false-alarm rate they reach on the test sessions.
6. **Metrics** (:mod:`toolwatch.injection.experiment.metrics`): detection within the window,
   latency, bootstrap intervals over sessions, per-call AUC (inserted calls vs the other calls
   of the injected sessions, ranked by the cue set's per-call score).
7. **Ablation** ``no_response_ids``: the same injected sessions with every response id dropped
   (train and calibration too): every gap becomes a different-response gap.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
from tqdm import tqdm

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.config import THIN_TEST, VARIANTS, ExperimentConfig
from toolwatch.injection.experiment.outcomes import evaluate_kind, normal_outcomes
from toolwatch.injection.experiment.results import (
    CellResult,
    ExperimentResult,
    RunOutcomes,
    Threshold,
)
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.scoring import (
    NOVELTY,
    STATISTICS,
    STUDY_STATISTICS,
    drop_response_ids,
    fit_model,
    operating_thresholds,
    score_groups,
)
from toolwatch.injection.experiment.split import normal_sessions, split_by_time
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.kinds import PROVENANCE_KINDS
from toolwatch.injection.spans.session_arrays import SessionCalls


def run_experiment(
    calls: pa.Table,
    config: ExperimentConfig | None = None,
    *,
    progress: Callable[[int], Any] | None = None,
    run_id: str | None = None,
) -> ExperimentResult:
    """Run the whole protocol on a call table (e.g. everything in a store)."""
    config = config or ExperimentConfig()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = timings.get(name, 0.0) + now - clock
        clock = now

    sessions = normal_sessions(calls)
    split = split_by_time(sessions, config)
    measured = _provenance_measured(split.train)
    config = dataclasses.replace(  # the default split resolved: a saved run repeats exactly
        config,
        split_dates=split.spec.dates,
        split_shares=split.spec.shares,
        kinds=config.kinds
        if measured
        else tuple(k for k in config.kinds if k not in PROVENANCE_KINDS),
    )
    statistics = STATISTICS if measured else (*STUDY_STATISTICS, *NOVELTY)
    context = InjectionContext.from_sessions(split.train)
    lap("load_split")

    all_runs = list(build_runs(split.test, context, config, progress=progress).values())
    lap("inject")

    normal = list(split.test)
    variants = VARIANTS if config.ablation else VARIANTS[:1]
    thresholds: dict[tuple[str, str, str, str], Threshold] = {}
    cells: list[CellResult] = []
    outcomes: list[RunOutcomes] = []
    weights = M.bootstrap_weights(len(split.test), config.bootstrap, config.bootstrap_seed)
    artefacts = [
        (quirk, s) for quirk, groups in split.artefacts.items() for g in groups.values() for s in g
    ]
    summary = split.summary()
    lengths = np.array([len(s) for s in normal], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for variant in variants:
        ablate = variant == "no_response_ids"
        train = drop_response_ids(split.train) if ablate else split.train
        calib = drop_response_ids(split.calibration) if ablate else split.calibration
        model = fit_model(train, calib, config)
        op = operating_thresholds(model)
        lap("fit")
        groups = [normal, *(r.sessions for r in all_runs), [s for _, s in artefacts]]
        if ablate:
            groups = [drop_response_ids(g) for g in groups]
        normal_stats, *kind_stats, artefact_stats = score_groups(model, groups)
        lap("score")
        normal_max: dict[str, np.ndarray] = {}
        for cue, det in statistics:
            col = f"{cue}_{det}"
            normal_max[col] = M.session_max(normal_stats[col], starts)
            choice = M.threshold_for_false_alarm(normal_max[col], config.target_fa)
            thresholds[(variant, cue, det, "fa_target")] = Threshold(
                choice.threshold, choice.reached
            )
            if len(normal) < THIN_TEST and config.target_fa < 1:
                above = M.threshold_above_false_alarm(normal_max[col], config.target_fa)
                thresholds[(variant, cue, det, "fa_next")] = Threshold(
                    above.threshold, above.reached
                )
            thresholds[(variant, cue, det, "operating_point")] = Threshold(
                op[col], M.false_alarm_rate(normal_max[col], op[col])
            )
        outcomes.append(
            normal_outcomes(variant, split.test, normal_max, thresholds, config, statistics)
        )
        if variant == "standard" and artefacts:
            _score_artefacts(summary, artefacts, artefact_stats, thresholds, config)
        for runs, stats in zip(all_runs, kind_stats, strict=True):
            if runs.sessions:
                new_cells, run_out = evaluate_kind(
                    variant, runs, stats, thresholds, weights, len(split.test), config, statistics
                )
                cells.extend(new_cells)
                outcomes.append(run_out)
            if progress:
                progress(1)
        lap("metrics")

    notes = {
        r.kind: {**r.note_counts(), **{f"skipped: {k}": v for k, v in r.skipped.items()}}
        for r in all_runs
    }
    return ExperimentResult(
        run_id=run_id or uuid.uuid4().hex[:12],
        created=datetime.now(UTC),
        config=config,
        split=summary,
        thresholds=thresholds,
        cells=cells,
        notes=notes,
        timings=timings,
        runs=outcomes,
    )


def _provenance_measured(train: list[SessionCalls]) -> bool:
    """Whether training calls carry provenance. Without it (a store imported without it, the
    simulator) the provenance kinds and the provenance cue are left out: they need measured
    carriers and thresholds, and would measure nothing."""
    return any("egress" in s.columns and any(e is not None for e in s["egress"]) for s in train)


def _score_artefacts(
    summary: dict[str, Any],
    artefacts: list[tuple[str, SessionCalls]],
    stats: dict[str, np.ndarray],
    thresholds: dict[tuple[str, str, str, str], Threshold],
    config: ExperimentConfig,
) -> None:
    """How the flagged client artefacts (kept out of the normal streams) score: per quirk, how
    many of the long ones alarm at the all·CUSUM thresholds, and the largest statistic."""
    lengths = np.array([len(s) for _, s in artefacts], dtype=np.int64)
    maxima = M.session_max(stats["all_cusum"], np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    fa = thresholds[("standard", "all", "cusum", "fa_target")].value
    op = thresholds[("standard", "all", "cusum", "operating_point")].value
    for quirk in sorted({q for q, _ in artefacts}):
        flagged = np.array([q == quirk for q, _ in artefacts])
        mine = flagged & (lengths >= config.min_calls)
        summary["artefacts"][quirk]["scored"] = {
            "long": int(mine.sum()),
            "alarming_fa_target": int((maxima[mine] > fa).sum()),
            "alarming_operating_point": int((maxima[mine] > op).sum()),
            "largest_all_cusum": float(maxima[flagged].max()),
        }


def progress_steps(config: ExperimentConfig) -> int:
    """Steps reported through ``progress``: one per seed injected, one per kind scored."""
    variants = 2 if config.ablation else 1
    return len(config.seeds) + len(config.kinds) * variants


def run_with_progress(
    calls: pa.Table,
    config: ExperimentConfig,
    *,
    run_id: str | None = None,
    leave: bool = True,
) -> ExperimentResult:
    """:func:`run_experiment` with a progress bar on stderr (shared by ``toolwatch experiment``
    and ``toolwatch demo``)."""
    with tqdm(
        total=progress_steps(config),
        desc="experiment",
        unit="step",
        file=sys.stderr,
        disable=None,
        leave=leave,
    ) as bar:
        return run_experiment(calls, config, progress=bar.update, run_id=run_id)
